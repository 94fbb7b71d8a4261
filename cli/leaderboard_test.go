package cli

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// yesSpec binds TASK-Y: a required check that the output is not empty and
// an optional one that it says yes, so that the reward of a "no" is 0.5
// by fraction and 0 by all.
const yesSpec = `verifiers:
  - id: VER-Y
    task: TASK-Y
    name: says yes
    checks:
      - {id: answered, type: expr, expr: "output != ''"}
      - {id: says-yes, type: expr, expr: "output == 'yes'", optional: true}
`

// gradeYes grades rollouts of TASK-Y, one JSON Lines input file per
// element of files (each a list of outputs; ids r0, r1... across files),
// with extra grade arguments, and returns the result directory.
func gradeYes(t *testing.T, dir, name string, files [][]any, extra ...string) string {
	t.Helper()
	spec := writeFile(t, filepath.Join(dir, "yes.yaml"), yesSpec)
	args := append([]string{"grade", "--quiet", "--spec", spec, "--format", "jsonl", "--out", filepath.Join(dir, name)}, extra...)
	n := 0
	for f, outputs := range files {
		var b strings.Builder
		for _, o := range outputs {
			out := fmt.Sprintf("%q", o)
			if _, ok := o.(string); !ok {
				out = fmt.Sprint(o)
			}
			fmt.Fprintf(&b, `{"rollout_id":"r%d","task_id":"TASK-Y","output":%s}`+"\n", n, out)
			n++
		}
		args = append(args, writeFile(t, filepath.Join(dir, fmt.Sprintf("%s-%d.jsonl", name, f)), b.String()))
	}
	if code, _, stderr := runCLI(t, args...); code != 0 && code != 3 {
		t.Fatalf("grade %s: exit %d: %s", name, code, stderr)
	}
	return filepath.Join(dir, name)
}

func TestLeaderboardWithoutModel(t *testing.T) {
	dir := t.TempDir()
	res := gradeYes(t, dir, "res", [][]any{{"yes", "no", "yes"}})
	code, stdout, stderr := runCLI(t, "leaderboard", res)
	if code != 0 {
		t.Fatalf("leaderboard without --by or model: exit %d: %s", code, stderr)
	}
	rows := regexp.MustCompile(`(?m)^\d+ +\S+ +\d+`).FindAllString(stdout, -1)
	if len(rows) != 1 || !regexp.MustCompile(`^1 +\(none\) +3$`).MatchString(rows[0]) {
		t.Errorf("leaderboard rows %q, want one group (none) of 3 rollouts:\n%s", rows, stdout)
	}
	for _, out := range []string{stdout, stderr} {
		if !strings.Contains(out, "no rollout has a model column, so all rows are one group") || !strings.Contains(out, "--set model=NAME") {
			t.Errorf("leaderboard does not say it made one group and how to add a model:\n%s", out)
		}
	}
	code, stdout, _ = runCLI(t, "leaderboard", "--format", "json", res)
	if code != 0 || !strings.Contains(stdout, `"one_group": true`) {
		t.Errorf("leaderboard --format json: exit %d, want one_group true:\n%s", code, stdout)
	}

	// Results with a model are grouped by it, and say nothing of it.
	withModel := gradeYes(t, dir, "model", [][]any{{"yes", "no"}}, "--set", "model=m1")
	code, stdout, stderr = runCLI(t, "leaderboard", withModel)
	if code != 0 || !regexp.MustCompile(`(?m)^1 +m1 +2`).MatchString(stdout) || strings.Contains(stdout+stderr, "one group") {
		t.Errorf("leaderboard of results with a model: exit %d:\n%s\n%s", code, stdout, stderr)
	}

	for _, args := range [][]string{{"--by", "model"}, {"--by", "run_id"}, {"--by", ""}} {
		code, _, stderr := runCLI(t, append(append([]string{"leaderboard"}, args...), res)...)
		if code == 0 || !strings.Contains(stderr, "gavel grade --set model=NAME") {
			t.Errorf("leaderboard %v: exit %d, stderr %q; want a failure naming --set model=NAME at grade time", args, code, stderr)
		}
	}
}
