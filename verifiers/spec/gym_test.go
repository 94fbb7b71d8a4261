package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/verifiers"
)

// The checks arrays of the three request examples of the Scale gym verifier
// API, copied verbatim into testdata/gym, load into a spec as they are and
// grade as the API describes: the success response's matching_results are
// the actual of the state check.
func TestGymExamples(t *testing.T) {
	const meeting = `{"id": 1, "title": "Team Meeting", "startTime": "2024-11-20T14:00:00Z"}`
	for _, tc := range []struct {
		file       string
		r          ro
		want       verifiers.Status
		wantActual string
	}{
		{"state_check.json", ro{final: `{"events": [` + meeting + `]}`}, verifiers.Pass,
			`[{"id":1,"title":"Team Meeting","startTime":"2024-11-20T14:00:00Z"}]`},
		{"state_check.json", ro{final: `{"events": []}`}, verifiers.Fail, `[]`},
		{"log_check.json", ro{log: `[{"eventType": "click", "clickId": "submit-button"}]`}, verifiers.Pass,
			`[{"eventType":"click","clickId":"submit-button"}]`},
		{"log_check.json", ro{log: `[{"eventType": "click", "clickId": "cancel"}]`}, verifiers.Fail, `[]`},
		{"manual_check.json", ro{final: `{"events": [` + meeting + `]}`}, verifiers.Pass, `1`},
		{"manual_check.json", ro{final: `{"events": [{"id": 2, "title": "x", "startTime": "2024-11-21T14:00:00Z"}]}`}, verifiers.Fail, `0`},
	} {
		t.Run(tc.file+"/"+tc.want.String(), func(t *testing.T) {
			checks, err := os.ReadFile(filepath.Join("testdata", "gym", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			spec := `{"verifiers": [{"id": "GYM", "task": "T", "name": "gym example", "checks": ` + string(checks) + `}]}`
			got := grade(t, spec, tc.r)
			if len(got) != 1 || got[0].Status != tc.want || !got[0].Required {
				t.Fatalf("checks = %+v, want one required check with status %v", got, tc.want)
			}
			if got[0].Actual != tc.wantActual {
				t.Errorf("actual = %s, want %s", got[0].Actual, tc.wantActual)
			}
		})
	}
}

func TestCalendarSpec(t *testing.T) {
	vs := Builtin()
	if len(vs) != 1 || vs[0].ID != "VER-C01" || vs[0].Tasks[0] != "TASK-C01" || vs[0].Source != "verifiers/spec/calendar.yaml:6" {
		t.Fatalf("Builtin() = %+v", vs)
	}
	v := vs[0]
	const (
		meeting = `{"id": "EVT-9", "title": "Team Meeting", "startTime": "2024-11-20T14:00:00Z", "endTime": "2024-11-20T15:00:00Z", "attendees": ["ana@example.com"]}`
		other   = `{"id": "EVT-1", "title": "Dentist", "startTime": "2024-11-18T09:00:00Z", "endTime": "2024-11-18T10:00:00Z", "attendees": []}`
		goodLog = `[{"eventType": "click", "clickId": "open-form"}, {"eventType": "type", "field": "title"}, {"eventType": "click", "clickId": "submit-button"}]`
	)
	for _, tc := range []struct {
		name string
		r    ro
		want string // statuses of the five checks
		out  verifiers.Outcome
	}{
		{"correct", ro{initial: `{"events": [` + other + `]}`, final: `{"events": [` + other + `,` + meeting + `]}`, log: goodLog}, "pass pass pass pass pass", verifiers.Passed},
		{"no clicks", ro{final: `{"events": [` + meeting + `]}`}, "pass pass fail fail pass", verifiers.Passed},
		{"submitted without opening", ro{final: `{"events": [` + meeting + `]}`, log: `[{"eventType": "click", "clickId": "submit-button"}]`}, "pass pass fail pass pass", verifiers.Passed},
		{"nothing created", ro{final: `{"events": [` + other + `]}`, log: goodLog}, "fail fail pass pass pass", verifiers.Failed},
		{"missing state", ro{}, "fail fail fail fail pass", verifiers.Failed},
		{"events not a list", ro{final: `{"events": "none"}`, log: goodLog}, "error error pass pass pass", verifiers.Errored},
		{"created and deleted another", ro{initial: `{"events": [` + other + `]}`, final: `{"events": [` + meeting + `]}`, log: goodLog}, "pass pass pass pass fail", verifiers.Failed},
		{"created and edited another", ro{initial: `{"events": [` + other + `]}`, final: `{"events": [` + strings.Replace(other, "Dentist", "Doctor", 1) + `,` + meeting + `]}`, log: goodLog}, "pass pass pass pass fail", verifiers.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c verifiers.Checks
			if err := v.Grade(tc.r.rollout(t), &c); err != nil {
				t.Fatal(err)
			}
			var got string
			for i, ch := range c.List() {
				if i > 0 {
					got += " "
				}
				got += ch.Status.String()
			}
			if got != tc.want {
				t.Errorf("statuses = %s, want %s (%+v)", got, tc.want, c.List())
			}
			if o := verifiers.Score(c.List(), nil).Outcome; o != tc.out {
				t.Errorf("outcome = %v, want %v", o, tc.out)
			}
		})
	}
}
