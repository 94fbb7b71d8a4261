package spec

import (
	"errors"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// FuzzParse feeds arbitrary spec texts to the loader: it must return
// verifiers or positioned problems, never panic, and loaded verifiers must
// grade any rollout without panicking.
func FuzzParse(f *testing.F) {
	f.Add(string(calendarSpec))
	f.Add(oneCheck("- id: c\n  type: expr\n  expr: count(final.events) > 0\n  detail: string(count(log))"))
	f.Add(stateAssert(`{comparator: in, function: get, function_args: ["_result[0].a"], value: [1, {expr: "2"}]}`))
	f.Add(`{"verifiers": [{"id": "V", "task": "T", "name": "n", "checks": [{"id": "c", "type": "log", "asserts": [{"comparator": "regex", "value": "a+"}]}]}]}`)
	f.Add("verifiers:\n  - &a {id: V, task: T, name: n, checks: [{id: c, type: rubric, rubric: r}]}\n  - *a\n")
	f.Add("verifiers: [")
	r := ro{final: calendarFinal, initial: `{"events": []}`, log: `[{"eventType": "click"}]`, output: "3 events"}
	f.Fuzz(func(t *testing.T, text string) {
		vs, err := Parse("f.yaml", []byte(text))
		if err != nil {
			var ps Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("Parse error %v is not a Problems", err)
			}
			for _, p := range ps {
				if !strings.HasPrefix(p.Error(), "f.yaml") || p.Msg == "" {
					t.Fatalf("problem %q lacks its file or message", p.Error())
				}
			}
			return
		}
		rollout := r.rollout(t)
		for _, v := range vs {
			var c verifiers.Checks
			if err := v.Grade(rollout, &c); err != nil {
				t.Fatalf("Grade: %v", err)
			}
		}
	})
}

// FuzzParsePath checks that the path parser never panics and that a parsed
// path prints as it was written.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"_result", "_result[*]", "_result[*].a.b", "_result[12]", "_result[0].x", "_result[", "_result[*]..", "_result[99999999999999999999]"} {
		f.Add(s)
	}
	rows := []string{`{"a": {"b": 1}}`, `[1]`, `"s"`}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			return
		}
		if p.String() != s {
			t.Fatalf("ParsePath(%q).String() = %q", s, p.String())
		}
		in := make([]jsonview.Value, 0, len(rows))
		for _, r := range rows {
			in = append(in, state(t, r))
		}
		p.selectValues(nil, in)
	})
}
