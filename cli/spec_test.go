package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const calendarSpecForTest = `verifiers:
  - id: VER-T01
    task: TASK-T01
    name: Team meeting created
    checks:
      - id: check-event-created
        type: state
        table: events
        asserts:
          - comparator: eq
            function: object_contains
            function_args: ["_result[*]", {"title": "Team Meeting"}]
            value: true
`

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSpecCheck(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, filepath.Join(dir, "good.yaml"), calendarSpecForTest)
	bad := writeFile(t, filepath.Join(dir, "bad.yaml"), strings.Replace(calendarSpecForTest, "comparator: eq", "comparator: equals", 1))
	for _, tc := range []struct {
		name   string
		args   []string
		want   int
		stdout string
	}{
		{"valid", []string{"spec", "check", good}, 0, "ok: 1 verifiers"},
		{"invalid", []string{"spec", "check", good, bad}, 2, "bad.yaml:10:25: unknown comparator \"equals\""},
		{"no file", []string{"spec", "check"}, 2, ""},
		{"missing file", []string{"spec", "check", filepath.Join(dir, "nope.yaml")}, 2, ""},
		{"binds a built-in task", []string{"spec", "check", writeFile(t, filepath.Join(dir, "dup.yaml"), strings.Replace(calendarSpecForTest, "TASK-T01", "TASK-001", 1))}, 2, ""},
		{"unknown subcommand", []string{"spec", "lint"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.want || !strings.Contains(stdout, tc.stdout) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and stdout containing %q", code, stdout, stderr, tc.want, tc.stdout)
			}
		})
	}
}

func TestGradeWithSpec(t *testing.T) {
	dir := t.TempDir()
	specFile := writeFile(t, filepath.Join(dir, "cal.yaml"), calendarSpecForTest)
	input := writeFile(t, filepath.Join(dir, "in.jsonl"),
		`{"rollout_id": "a", "task_id": "TASK-T01", "final_state": {"events": [{"title": "Team Meeting"}]}}`+"\n"+
			`{"rollout_id": "b", "task_id": "TASK-T01", "final_state": {"events": []}}`+"\n"+
			`{"rollout_id": "c", "task_id": "TASK-C01", "final_state": {"events": []}}`+"\n")
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, "grade", "--quiet", "--format", "jsonl", "--out", out, "--spec", specFile, input)
	if code != 0 {
		t.Fatalf("grade exit %d: %s%s", code, stdout, stderr)
	}
	rewards := mustRead(t, filepath.Join(out, "rewards", "part-00000.jsonl"))
	var statuses []string
	for _, line := range strings.Split(strings.TrimSpace(rewards), "\n") {
		var r struct {
			Status     string `json:"status"`
			VerifierID string `json:"verifier_id"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, r.VerifierID+":"+r.Status)
	}
	if got, want := strings.Join(statuses, " "), "VER-T01:passed VER-T01:failed VER-C01:failed"; got != want {
		t.Errorf("rewards = %s, want %s", got, want)
	}
	manifest := mustRead(t, filepath.Join(out, "manifest.json"))
	if !strings.Contains(manifest, "VER-T01") {
		t.Errorf("manifest does not list the spec verifier:\n%s", manifest)
	}

	// An invalid spec: exit 2, nothing graded or written.
	badSpec := writeFile(t, filepath.Join(dir, "bad.yaml"), strings.Replace(calendarSpecForTest, "type: state", "type: sql", 1))
	out2 := filepath.Join(dir, "out2")
	code, _, stderr = runCLI(t, "grade", "--quiet", "--out", out2, "--spec", badSpec, input)
	if code != 2 || !strings.Contains(stderr, "bad.yaml:7:15: unknown check type \"sql\"") || !strings.Contains(stderr, "nothing graded") {
		t.Errorf("grade with an invalid spec: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(out2); !os.IsNotExist(err) {
		t.Errorf("grade with an invalid spec wrote %s", out2)
	}
}

func TestVerifierAddSpec(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "specs.yaml")
	code, stdout, stderr := runCLI(t, "verifier", "add", "VER-T02", "--task", "TASK-T02", "--name", "Meeting moved", "--spec", file)
	if code != 0 {
		t.Fatalf("verifier add: exit %d: %s%s", code, stdout, stderr)
	}
	writeFile(t, file+".2", calendarSpecForTest)
	code, _, stderr = runCLI(t, "verifier", "add", "VER-T03", "--task", "TASK-T03", "--name", "x", "--spec", file+".2")
	if code != 0 {
		t.Fatalf("verifier add to an existing file: exit %d: %s", code, stderr)
	}
	if text := mustRead(t, file+".2"); !strings.HasPrefix(text, calendarSpecForTest) || !strings.Contains(text, "VER-T03") {
		t.Errorf("existing spec not kept as it was:\n%s", text)
	}
	code, _, stderr = runCLI(t, "verifier", "add", "VER-T03", "--task", "TASK-T09", "--name", "x", "--spec", file+".2")
	if code != 2 || !strings.Contains(stderr, "already exists") {
		t.Errorf("adding an existing id: exit %d, stderr %q", code, stderr)
	}

	// The scaffold's only check is required and fails on purpose.
	input := writeFile(t, filepath.Join(dir, "in.jsonl"), `{"task_id": "TASK-T02"}`+"\n")
	out := filepath.Join(dir, "out")
	code, stdout, stderr = runCLI(t, "grade", "--quiet", "--format", "jsonl", "--out", out, "--spec", file, input)
	if code != 0 {
		t.Fatalf("grade: exit %d: %s%s", code, stdout, stderr)
	}
	checks := mustRead(t, filepath.Join(out, "checks", "part-00000.jsonl"))
	for _, want := range []string{`"label":"TODO: define success condition"`, `"required":true`, `"status":"fail"`, `is not implemented yet`} {
		if !strings.Contains(checks, want) {
			t.Errorf("scaffold check lacks %s:\n%s", want, checks)
		}
	}
}

func TestGenCalendar(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "new", "cal.jsonl") // gen creates the directory
	code, stdout, stderr := runCLI(t, "gen", "--env", "calendar", "--out", data, "--rollouts", "700", "--seed", "2", "--quiet")
	if code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	var exp struct {
		Totals struct{ Rollouts, Passed, Failed, ChecksPassed int64 } `json:"totals"`
	}
	if err := json.Unmarshal([]byte(mustRead(t, data+".expected.json")), &exp); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr = runCLI(t, "grade", "--quiet", "--format", "jsonl", "--out", out, data)
	if code != 0 {
		t.Fatalf("grade: exit %d: %s%s", code, stdout, stderr)
	}
	var sum struct{ Rollouts, Passed, Failed int64 }
	if err := json.Unmarshal([]byte(mustRead(t, filepath.Join(out, "summary.json"))), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Rollouts != exp.Totals.Rollouts || sum.Passed != exp.Totals.Passed || sum.Failed != exp.Totals.Failed || exp.Totals.Passed == 0 || exp.Totals.Failed == 0 {
		t.Errorf("summary %+v, expected %+v", sum, exp.Totals)
	}
	if code, _, stderr := runCLI(t, "gen", "--env", "calendar", "--out", data, "--tasks-mode"); code != 2 || !strings.Contains(stderr, "not supported with --env calendar") {
		t.Errorf("gen --env calendar --tasks-mode: exit %d, %s", code, stderr)
	}
	if code, _, _ := runCLI(t, "gen", "--env", "erp"); code != 2 {
		t.Errorf("gen --env erp: exit %d, want 2", code)
	}
}

// TestSpecDirWithFixtures: a spec directory holding its fixtures beside
// its spec file (fixtures/ID/pass/*.json, as gavel verifier test reads
// them) loads as the spec file alone: the fixtures are not specs.
func TestSpecDirWithFixtures(t *testing.T) {
	dir := t.TempDir()
	specs := filepath.Join(dir, "specs")
	for _, d := range []string{"pass", "fail"} {
		if err := os.MkdirAll(filepath.Join(specs, "fixtures", "VER-X", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(specs, "answer.yaml"), `verifiers:
  - id: VER-X
    task: TASK-X
    name: answered yes
    checks:
      - {id: yes, type: expr, expr: "output == 'yes'"}
`)
	writeFile(t, filepath.Join(specs, "fixtures", "VER-X", "pass", "a.json"), `{"rollout_id":"a","task_id":"TASK-X","output":"yes"}`)
	writeFile(t, filepath.Join(specs, "fixtures", "VER-X", "fail", "b.json"), `{"rollout_id":"b","task_id":"TASK-X","output":"no"}`)
	if code, stdout, stderr := runCLI(t, "spec", "check", specs); code != 0 {
		t.Errorf("spec check %s: exit %d\n%s%s", specs, code, stdout, stderr)
	}
	code, stdout, stderr := runCLI(t, "verifier", "test", "VER-X", "--spec", specs)
	if code != 0 || !strings.Contains(stdout+stderr, "VER-X") {
		t.Errorf("verifier test VER-X --spec %s: exit %d\n%s%s", specs, code, stdout, stderr)
	}
	input := writeFile(t, filepath.Join(dir, "in.jsonl"), `{"rollout_id":"r","task_id":"TASK-X","output":"yes"}`+"\n")
	if code, stdout, stderr := runCLI(t, "grade", "--quiet", "--out", filepath.Join(dir, "out"), "--spec", specs, input); code != 0 {
		t.Errorf("grade --spec %s: exit %d\n%s%s", specs, code, stdout, stderr)
	}
}
