package judge

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

func TestParseVerdict(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Verdict
		ok   bool
	}{
		{`{"score": 0.5, "issues": ["a", "b"], "suggestion": "c"}`, Verdict{Score: 0.5, Issues: []string{"a", "b"}, Suggestion: "c"}, true},
		{`{"score": 1}`, Verdict{Score: 1, Issues: []string{}, Suggestion: ""}, true},
		{`{"score": 0, "issues": null, "suggestion": null}`, Verdict{Score: 0, Issues: []string{}, Suggestion: ""}, true},
		{"Sure! {not json} then {\"score\": 0.25, \"x\": {\"y\": \"}\"}}", Verdict{Score: 0.25, Issues: []string{}, Suggestion: ""}, true},
		{"```json\n{\"score\": 1e-1, \"issues\": [], \"suggestion\": \"\"}\n```", Verdict{Score: 0.1, Issues: []string{}, Suggestion: ""}, true},
		{``, Verdict{}, false},
		{`{}`, Verdict{}, false},
		{`{"score": "1"}`, Verdict{}, false},
		{`{"score": 1.01}`, Verdict{}, false},
		{`{"score": -1e-9}`, Verdict{}, false},
		{`{"score": NaN}`, Verdict{}, false},
		{`{"score": 1e999}`, Verdict{}, false},
		{`{"score": 0.5, "issues": "a"}`, Verdict{}, false},
		{`{"score": 0.5, "issues": [1]}`, Verdict{}, false},
		{`{"score": 0.5, "suggestion": ["a"]}`, Verdict{}, false},
		{`[{"score": 0.5}]`, Verdict{Score: 0.5, Issues: []string{}, Suggestion: ""}, true},
	} {
		got, err := ParseVerdict([]byte(tc.in))
		if (err == nil) != tc.ok || (tc.ok && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("ParseVerdict(%q) = %+v, %v; want %+v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseVerdict(f *testing.F) {
	for _, s := range []string{
		`{"score": 0.5, "issues": ["a"], "suggestion": "b"}`,
		`text {"score": 1} more`,
		`{"score": "x"}`, `{{{`, `"{\"score\": 1}"`, `{"score": 2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseVerdict(b)
		if err != nil {
			return
		}
		if math.IsNaN(v.Score) || v.Score < 0 || v.Score > 1 || v.Issues == nil {
			t.Fatalf("ParseVerdict(%q) = %+v, want a score in [0, 1] and issues", b, v)
		}
		js, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseVerdict(js)
		if err != nil || !reflect.DeepEqual(again, v) {
			t.Fatalf("ParseVerdict(Marshal(%+v)) = %+v, %v", v, again, err)
		}
	})
}
