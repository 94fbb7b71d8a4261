package spec

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// FuzzParse feeds arbitrary spec texts to the loader: it must return
// verifiers or positioned problems, never panic, and loaded verifiers must
// grade any rollout without panicking. It also reads each text with a
// plain YAML decode (plainSpec): a spec the loader accepts must decode
// plainly to the same verifiers (ids, names, tasks) whose grading lists
// the same checks (ids, labels, required, rubric checks pending) in
// order; a text the plain decode finds without a verifier's or a check's
// required fields, or with a repeated verifier id, must be refused.
func FuzzParse(f *testing.F) {
	f.Add(string(calendarSpec))
	f.Add(oneCheck("- id: c\n  type: expr\n  expr: count(final.events) > 0\n  detail: string(count(log))"))
	f.Add(stateAssert(`{comparator: in, function: get, function_args: ["_result[0].a"], value: [1, {expr: "2"}]}`))
	f.Add(`{"verifiers": [{"id": "V", "task": "T", "name": "n", "checks": [{"id": "c", "type": "log", "asserts": [{"comparator": "regex", "value": "a+"}]}]}]}`)
	f.Add("verifiers:\n  - &a {id: V, task: T, name: n, checks: [{id: c, type: rubric, rubric: r}]}\n  - *a\n")
	f.Add("verifiers: [")
	f.Add("verifiers:\n  - {id: V, tasks: [A, all], name: n, checks: [{id: c, label: L, type: rubric, rubric: r}, {id: d, optional: true, type: expr, expr: 'true'}]}\n  - {id: W, tasks: all, name: m, checks: [{id: c, type: rubric, rubric: r}]}\n")
	f.Add("verifiers:\n  - {id: V, task: T, name: n, checks: [{type: rubric, rubric: r}]}\n")
	f.Add("verifiers:\n  - {id: V, task: T, name: n, checks: [{id: c, type: rubric, rubric: r}, {id: c, type: rubric, rubric: s}]}\n")
	r := ro{final: calendarFinal, initial: `{"events": []}`, log: `[{"eventType": "click"}]`, output: "3 events"}
	f.Fuzz(func(t *testing.T, text string) {
		vs, err := Parse("f.yaml", []byte(text))
		want, plainErr := plainSpec([]byte(text))
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
		if errors.Is(plainErr, errSkip) {
			return
		}
		if plainErr != nil {
			t.Fatalf("Parse accepted a spec the plain decode refuses: %v", plainErr)
		}
		if len(vs) != len(want) {
			t.Fatalf("Parse gave %d verifiers, the plain decode %d", len(vs), len(want))
		}
		rollout := r.rollout(t)
		for i, v := range vs {
			w := want[i]
			if v.ID != w.id || v.Name != w.name || !slices.Equal(v.Tasks, w.tasks) {
				t.Fatalf("verifier %d: id %q name %q tasks %q; the plain decode's: %q %q %q", i, v.ID, v.Name, v.Tasks, w.id, w.name, w.tasks)
			}
			var c verifiers.Checks
			if err := v.Grade(rollout, &c); err != nil {
				t.Fatalf("Grade: %v", err)
			}
			got := c.List()
			if len(got) != len(w.checks) {
				t.Fatalf("verifier %q grades %d checks, the plain decode has %d", v.ID, len(got), len(w.checks))
			}
			for j, ch := range got {
				wc := w.checks[j]
				if ch.ID != wc.id || ch.Label != wc.label || ch.Required != wc.required || (wc.typ == "rubric") != (ch.Status == verifiers.Pending) {
					t.Fatalf("verifier %q check %d: id %q label %q required %v status %v; the plain decode's: id %q label %q required %v type %q",
						v.ID, j, ch.ID, ch.Label, ch.Required, ch.Status, wc.id, wc.label, wc.required, wc.typ)
				}
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
