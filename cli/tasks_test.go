package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// patternSpec binds airline tasks by prefix, airline/7 by its id and the
// retail/1... tasks by a longer prefix.
const patternSpec = `verifiers:
  - id: AIR
    tasks: [airline/*]
    name: airline
    checks: [{id: c, type: expr, expr: 'true'}]
  - id: AIR7
    task: airline/7
    name: airline 7
    checks: [{id: c, type: expr, expr: 'false'}]
  - id: RET1
    task: retail/1*
    name: retail 1x
    checks: [{id: c, type: expr, expr: 'true'}]
`

func TestSpecCheckTasks(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, filepath.Join(dir, "p.yaml"), patternSpec)
	tasks := writeFile(t, filepath.Join(dir, "tasks.jsonl"), strings.Join([]string{
		`{"task_id": "airline/7"}`, `{"task_id": "airline/20"}`, `{"task_id": "airline/1"}`,
		`{"task_id": "retail/12"}`, `{"task_id": "retail/2"}`, `{"task_id": "TASK-001"}`, `{"task_id": "other"}`,
	}, "\n")+"\n")
	code, stdout, stderr := runCLI(t, "spec", "check", "--tasks", tasks, spec)
	if code != 0 {
		t.Fatalf("spec check --tasks: exit %d: %s%s", code, stdout, stderr)
	}
	want := spec + ":2\tAIR\tairline\tairline/*\n" +
		spec + ":6\tAIR7\tairline 7\t1 task\n" +
		spec + ":10\tRET1\tretail 1x\tretail/1*\n" +
		"ok: 3 verifiers\n" +
		tasks + ": 7 tasks\n" +
		"VER-001\tbinds 1 task\t1 task\n" +
		"AIR\tbinds 2 tasks\tairline/*\n" +
		"AIR7\tbinds 1 task\t1 task\n" +
		"RET1\tbinds 1 task\tretail/1*\n" +
		"no verifier binds 2 tasks:\n\tother\n\tretail/2\n"
	if stdout != want {
		t.Errorf("spec check --tasks printed\n%s\nwant\n%s", stdout, want)
	}

	// With all, every task is bound.
	all := writeFile(t, filepath.Join(dir, "all.yaml"), strings.Replace(patternSpec, "task: retail/1*", "tasks: all", 1))
	code, stdout, _ = runCLI(t, "spec", "check", "--tasks", tasks, all)
	if code != 0 || !strings.Contains(stdout, "RET1\tbinds 3 tasks\tall\n") || !strings.HasSuffix(stdout, "every task is bound\n") {
		t.Errorf("spec check with all: exit %d, stdout\n%s", code, stdout)
	}
}

func TestSpecCheckInputFrom(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, filepath.Join(dir, "tau.yaml"), `verifiers:
  - id: TAU-0
    task: "0"
    name: task 0
    checks: [{id: c, type: expr, expr: 'true'}]
`)
	tau := filepath.Join(harnessData, "tau-bench", "tool-calling-gpt-4o-0.0_range_0--1.json")
	code, stdout, stderr := runCLI(t, "spec", "check", "--input", tau, "--from", "tau-bench", spec)
	if code != 0 {
		t.Fatalf("spec check --input --from: exit %d: %s%s", code, stdout, stderr)
	}
	want := "ok: 1 verifiers\n" + tau + ": 2 tasks\n" + tau + ": 1 rollout without a valid task id\n" +
		"TAU-0\tbinds 1 task\t1 task\nno verifier binds 1 task:\n\t3\n"
	if !strings.HasSuffix(stdout, want) {
		t.Errorf("spec check --input --from printed\n%s\nwant it to end with\n%s", stdout, want)
	}

	// JSON Lines rollouts, read as grade reads them.
	in := writeFile(t, filepath.Join(dir, "in.jsonl"), `{"task_id": "0"}`+"\n"+`{"task_id": 0}`+"\n"+`{"task_id": 4}`+"\n")
	code, stdout, _ = runCLI(t, "spec", "check", "--input", in, spec)
	if want := in + ": 2 tasks\nTAU-0\tbinds 1 task\t1 task\nno verifier binds 1 task:\n\t4\n"; code != 0 || !strings.HasSuffix(stdout, want) {
		t.Errorf("spec check --input: exit %d, stdout\n%s\nwant it to end with\n%s", code, stdout, want)
	}

	// --from without --input is a usage error.
	if code, _, stderr := runCLI(t, "spec", "check", "--from", "tau-bench", spec); code != 2 || !strings.Contains(stderr, "no --input") {
		t.Errorf("--from without --input: exit %d, stderr %q", code, stderr)
	}
}

func TestSpecCheckRefusesEqualPatterns(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, second, want string
	}{
		{"equal prefixes", "tasks: [airline/*]", "task pattern airline/* is bound by two verifiers: AIR (" + filepath.Join(dir, "equal-prefixes.yaml") + ":2) and TWO ("},
		{"equal ids", "task: airline/7", "task airline/7 is bound by two verifiers: AIR7 ("},
		{"two alls", "tasks: all", "all tasks are bound by two verifiers: ONE ("},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := patternSpec + "  - id: TWO\n    " + tc.second + "\n    name: two\n    checks: [{id: c, type: expr, expr: 'true'}]\n"
			if tc.name == "two alls" {
				text = "verifiers:\n  - {id: ONE, tasks: all, name: one, checks: [{id: c, type: expr, expr: 'true'}]}\n" +
					"  - {id: TWO, task: all, name: two, checks: [{id: c, type: expr, expr: 'true'}]}\n"
			}
			file := writeFile(t, filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml"), text)
			code, _, stderr := runCLI(t, "spec", "check", file)
			if code != 2 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "TWO") {
				t.Errorf("exit %d, stderr %q; want exit 2 naming %q", code, stderr, tc.want)
			}
		})
	}
}

// TestGradeTaskPatterns grades rollouts whose tasks bind by id, by prefix
// and by all, and checks each row's verifier.
func TestGradeTaskPatterns(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, filepath.Join(dir, "p.yaml"), patternSpec+`  - id: REST
    tasks: all
    name: anything else
    checks: [{id: c, type: expr, expr: 'true'}]
`)
	var lines []string
	for _, task := range []string{"airline/7", "airline/70", "retail/15", "retail/5", "TASK-001", "zzz"} {
		lines = append(lines, `{"rollout_id": "`+task+`", "task_id": "`+task+`"}`)
	}
	input := writeFile(t, filepath.Join(dir, "in.jsonl"), strings.Join(lines, "\n")+"\n")
	out, _, stderr := gradeFrom(t, "--spec", spec, input)
	rows := rewardRows(t, out)
	want := map[string]string{"airline/7": "AIR7", "airline/70": "AIR", "retail/15": "RET1", "retail/5": "REST", "TASK-001": "VER-001", "zzz": "REST"}
	for id, v := range want {
		if got := rows[id]["verifier_id"]; got != v {
			t.Errorf("rollout %s: verifier_id %v, want %s (stderr %s)", id, got, v, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	if m := mustRead(t, filepath.Join(out, "manifest.json")); !strings.Contains(m, `"airline/*"`) || !strings.Contains(m, `"*"`) {
		t.Errorf("manifest does not record the task patterns:\n%s", m)
	}
}
