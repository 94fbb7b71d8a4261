package spec

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/verifiers"
)

func TestTaskPatternProblems(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       string // "line:col: message part" of the first problem
	}{
		{"task pattern with a star inside", taskSpec(`tasks: [airline/*, "air*line"]`), `3:24: tasks of verifier "V": task pattern "air*line": * may only end a pattern`},
		{"task pattern of two stars", taskSpec(`task: "**"`), `3:11: task of verifier "V": task pattern "**"`},
		{"empty task id", taskSpec(`tasks: [""]`), `3:13: tasks of verifier "V": a task id must be a non-empty string`},
		{"tasks neither a list nor all", taskSpec(`tasks: everything`), `3:12: tasks of verifier "V" must be a non-empty list of task ids or patterns, or all`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tc.spec))
			var ps Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("Parse = %v, want problems", err)
			}
			if got := ps[0].Error(); !strings.HasPrefix(got, "test.yaml:"+tc.want) {
				t.Errorf("problem = %q, want it to start with %q\nspec:\n%s", got, "test.yaml:"+tc.want, tc.spec)
			}
		})
	}
}

// taskSpec is a spec whose verifier binds its tasks by the line tasks.
func taskSpec(tasks string) string {
	return "verifiers:\n  - id: V\n    " + tasks + "\n    name: n\n    checks: [{id: c, type: expr, expr: 'true'}]\n"
}

func TestTaskPatterns(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"tasks: all", []string{verifiers.AllTasks}},
		{"task: all", []string{verifiers.AllTasks}},
		{`tasks: ["*"]`, []string{verifiers.AllTasks}},
		{`tasks: "*"`, []string{verifiers.AllTasks}},
		{"tasks: [airline/*, retail/3]", []string{"airline/*", "retail/3"}},
		{"task: airline/*", []string{"airline/*"}},
		{"tasks: [all, x]", []string{verifiers.AllTasks, "x"}},
	} {
		vs, err := Parse("test.yaml", []byte(taskSpec(tc.line)))
		if err != nil {
			t.Errorf("%s: %v", tc.line, err)
			continue
		}
		if got := vs[0].Tasks; !slices.Equal(got, tc.want) {
			t.Errorf("%s: Tasks = %q, want %q", tc.line, got, tc.want)
		}
	}
}
