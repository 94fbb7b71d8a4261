package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/verifiers"
)

// TestRubricChecks: a rubric check carries its rubric, its query (text or
// CEL) and its context (CEL values as JSON, copied out of the rollout),
// and stays pending; a failing expression makes it an error.
func TestRubricChecks(t *testing.T) {
	r := ro{final: `{"events": [{"title": "Team Meeting"}]}`, output: "done", task: `{"instruction": "make it"}`, meta: `{"who": "ann"}`}
	tests := []struct {
		name, check string
		want        verifiers.Check
	}{
		{"text query", "- {id: c, type: rubric, rubric: Be kind., query: Say hi.}",
			verifiers.Check{ID: "c", Label: "c", Required: true, Status: verifiers.Pending, Detail: "Be kind.",
				Rubric: &verifiers.Rubric{Text: "Be kind.", Query: "Say hi."}}},
		{"no query", "- {id: c, type: rubric, rubric: r}",
			verifiers.Check{ID: "c", Label: "c", Required: true, Status: verifiers.Pending, Detail: "r", Rubric: &verifiers.Rubric{Text: "r"}}},
		{"CEL query and context map", "- id: c\n  type: rubric\n  rubric: r\n  query: {expr: \"'ask ' + meta.who\"}\n  context: {titles: \"final.events.map(e, e.title)\", n: \"size(final.events)\"}",
			verifiers.Check{ID: "c", Label: "c", Required: true, Status: verifiers.Pending, Detail: "r",
				Rubric: &verifiers.Rubric{Text: "r", Query: "ask ann", Context: []verifiers.RubricContext{{Name: "titles", Value: `["Team Meeting"]`}, {Name: "n", Value: "1"}}}}},
		{"context list", "- id: c\n  type: rubric\n  rubric: r\n  context: [{who: meta.who}, {events: final.events}]",
			verifiers.Check{ID: "c", Label: "c", Required: true, Status: verifiers.Pending, Detail: "r",
				Rubric: &verifiers.Rubric{Text: "r", Context: []verifiers.RubricContext{{Name: "who", Value: `"ann"`}, {Name: "events", Value: `[{"title":"Team Meeting"}]`}}}}},
		{"context fails", "- id: c\n  type: rubric\n  rubric: r\n  context: {x: \"final.nothing.deeper\"}",
			verifiers.Check{ID: "c", Label: "c", Required: true, Status: verifiers.Error}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := grade(t, oneCheck(tt.check), r)[0]
			if tt.want.Status == verifiers.Error {
				if got.Status != verifiers.Error || !strings.HasPrefix(got.Detail, "context x: ") {
					t.Errorf("check = %+v, want an error naming context x", got)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("check (-want +got):\n%s", diff)
			}
		})
	}
	v := mustParse(t, oneCheck("- {id: c, type: rubric, rubric: r}"))[0]
	if !v.Judged {
		t.Error("a verifier with a rubric check is not Judged")
	}
	if v := mustParse(t, oneCheck("- {id: c, type: expr, expr: 'true'}"))[0]; v.Judged {
		t.Error("a verifier without a rubric check is Judged")
	}
}

// TestJudgeSettings: judge: {model, threshold, template} is read, the
// template resolved from the spec file's directory, and the template's
// content is part of the definition.
func TestJudgeSettings(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "t.tmpl")
	os.WriteFile(tmpl, []byte("one"), 0o644)
	text := "verifiers:\n  - id: V\n    task: T\n    name: n\n    judge: {model: m1, threshold: 0.6, template: t.tmpl}\n    checks: [{id: c, type: rubric, rubric: r}]\n"
	parse := func() *verifiers.Verifier {
		vs, err := Parse(filepath.Join(dir, "s.yaml"), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return vs[0]
	}
	v := parse()
	if diff := cmp.Diff(verifiers.JudgeSettings{Model: "m1", Threshold: 0.6, Template: tmpl}, v.Judge); diff != "" {
		t.Errorf("judge settings (-want +got):\n%s", diff)
	}
	os.WriteFile(tmpl, []byte("two"), 0o644)
	if parse().Definition == v.Definition {
		t.Error("the definition did not change with the template file")
	}
	for _, tc := range []struct{ judge, want string }{
		{"{model: m, threshold: 1.5}", "5:34: threshold of judge of verifier \"V\" must be a number in (0, 1]"},
		{"{model: m, template: missing.tmpl}", "5:33: template of judge of verifier \"V\""},
		{"{modle: m}", "5:13: unknown field \"modle\" in judge of verifier \"V\""},
	} {
		spec := strings.Replace(text, "{model: m1, threshold: 0.6, template: t.tmpl}", tc.judge, 1)
		_, err := Parse(filepath.Join(dir, "s.yaml"), []byte(spec))
		var ps Problems
		if !errors.As(err, &ps) || !strings.Contains(ps[0].Error(), tc.want) {
			t.Errorf("judge %s: %v, want %q", tc.judge, err, tc.want)
		}
	}
	for _, tc := range []struct{ check, want string }{
		{"- {id: c, type: rubric, rubric: r, query: [1]}", "query of check \"c\" must be a non-empty string or {expr: ...}"},
		{"- {id: c, type: rubric, rubric: r, context: {x: 'final.'}}", "CEL expression does not compile"},
		{"- {id: c, type: rubric, rubric: r, context: [a, b]}", "an item of the context of check \"c\" must be one NAME: expression"},
		{"- {id: c, type: expr, expr: 'true', query: q}", "query is not a field of expr checks"},
	} {
		_, err := Parse("test.yaml", []byte(oneCheck(tc.check)))
		var ps Problems
		if !errors.As(err, &ps) || !strings.Contains(ps[0].Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.check, err, tc.want)
		}
	}
}

// TestJudgeModelList: judge: {model: [a, b]} names several judge models,
// in order; a list of one is the single model; an empty list or a
// repeated model is a problem.
func TestJudgeModelList(t *testing.T) {
	text := "verifiers:\n  - id: V\n    task: T\n    name: n\n    judge: {model: [m1, 'm2@x:y']}\n    checks: [{id: c, type: rubric, rubric: r}]\n"
	vs, err := Parse("s.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(verifiers.JudgeSettings{Model: "m1", Models: []string{"m1", "m2@x:y"}}, vs[0].Judge); diff != "" {
		t.Errorf("judge settings (-want +got):\n%s", diff)
	}
	one := strings.Replace(text, "[m1, 'm2@x:y']", "[m1]", 1)
	if vs, err := Parse("s.yaml", []byte(one)); err != nil || vs[0].Judge.Model != "m1" || vs[0].Judge.Models != nil {
		t.Errorf("a list of one model: %+v, %v; want model m1 alone", vs, err)
	}
	for _, bad := range []string{"[]", "[m1, m1]", "[m1, '']"} {
		_, err := Parse("s.yaml", []byte(strings.Replace(text, "[m1, 'm2@x:y']", bad, 1)))
		var ps Problems
		if !errors.As(err, &ps) || !strings.Contains(ps[0].Error(), "model") {
			t.Errorf("model: %s: %v, want a problem", bad, err)
		}
	}
}
