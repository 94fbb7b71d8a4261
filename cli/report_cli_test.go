package cli

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gradedPair generates a small dataset, grades it into base and cur (JSON
// Lines), and returns the input and both directories.
func gradedPair(t *testing.T) (input, base, cur string) {
	t.Helper()
	dir := t.TempDir()
	input = filepath.Join(dir, "rollouts.parquet")
	if code, _, stderr := runCLI(t, "gen", "--quiet", "--out", input, "--rollouts", "300", "--seed", "3"); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	base, cur = filepath.Join(dir, "base"), filepath.Join(dir, "cur")
	for _, out := range []string{base, cur} {
		if code, _, stderr := runCLI(t, "grade", "--quiet", "--format", "jsonl", "--out", out, input); code != 0 && code != 3 {
			t.Fatalf("grade: exit %d: %s", code, stderr)
		}
	}
	return input, base, cur
}

// flipToPassed rewrites n failed rows of a JSON Lines result directory as
// passed, so that grading again shows n regressions against it.
func flipToPassed(t *testing.T, dir string, n int) {
	t.Helper()
	path := filepath.Join(dir, "rewards", "part-00000.jsonl")
	lines := strings.Split(strings.TrimSuffix(mustRead(t, path), "\n"), "\n")
	for i := range lines {
		if n > 0 && strings.Contains(lines[i], `"status":"failed"`) {
			lines[i] = strings.Replace(strings.Replace(lines[i], `"status":"failed"`, `"status":"passed"`, 1), `"passed":false`, `"passed":true`, 1)
			n--
		}
	}
	if n > 0 {
		t.Fatalf("not enough failed rows to flip")
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDiffCLI(t *testing.T) {
	input, base, cur := gradedPair(t)
	flipped := t.TempDir()
	if code, _, stderr := runCLI(t, "grade", "--quiet", "--format", "jsonl", "--out", flipped, input); code != 0 && code != 3 {
		t.Fatalf("grade: exit %d: %s", code, stderr)
	}
	flipToPassed(t, flipped, 3)
	tests := []struct {
		name   string
		args   []string
		want   int
		stdout string
		stderr string
	}{
		{"identical", []string{"diff", base, cur}, 0, "regressions: 0 of 300", ""},
		{"regressions", []string{"diff", flipped, cur}, 1, "regressions: 3 of 300", "3 regressions"},
		{"count limit not exceeded", []string{"diff", "--fail-on", "3", flipped, cur}, 0, "--fail-on 3: ok", ""},
		{"rate limit exceeded", []string{"diff", "--fail-on", "0.5%", flipped, cur}, 1, "FAILED", ""},
		{"rate limit not exceeded", []string{"diff", flipped, cur, "--fail-on", "0.01"}, 0, "--fail-on 1%: ok", ""},
		{"markdown", []string{"diff", "--markdown", flipped, cur}, 1, "| verifier | paired |", ""},
		{"one directory", []string{"diff", base}, 2, "", "two result directories"},
		{"bad limit", []string{"diff", "--fail-on", "lots", base, cur}, 2, "", "want a count"},
		{"not a result directory", []string{"diff", base, t.TempDir()}, 1, "", "read manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.want || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("gavel %v: exit %d, want %d\nstdout: %s\nstderr: %s", tt.args, code, tt.want, stdout, stderr)
			}
		})
	}

	code, stdout, _ := runCLI(t, "diff", "--json", flipped, cur)
	var d struct {
		Regressions int64 `json:"regressions"`
		Failed      bool  `json:"failed"`
		Verifiers   []struct {
			PassToFail int64   `json:"pass_to_fail"`
			McNemarP   float64 `json:"mcnemar_p"`
		} `json:"verifiers"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || code != 1 || d.Regressions != 3 || !d.Failed {
		t.Errorf("diff --json: exit %d, %+v, %v", code, d, err)
	}
	var flips int64
	for _, v := range d.Verifiers {
		flips += v.PassToFail
	}
	if flips != 3 {
		t.Errorf("pass_to_fail over verifiers = %d, want 3", flips)
	}
}

func TestGradeBaseline(t *testing.T) {
	input, base, _ := gradedPair(t)
	flipToPassed(t, base, 2)
	tests := []struct {
		name   string
		args   []string
		want   int
		stdout string
		stderr string
	}{
		{"regressions exit 1 over status 3", []string{"--baseline", base}, 1, "compared with baseline", "2 regressions"},
		{"under the limit: status 3 for error rows", []string{"--baseline", base, "--fail-on", "2"}, 3, "--fail-on 2: ok", "rows have status error"},
		{"baseline is not a result directory", []string{"--baseline", t.TempDir()}, 2, "", "not a result directory"},
		{"bad limit", []string{"--baseline", base, "--fail-on", "-3"}, 2, "", "--fail-on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"grade", "--quiet", "--format", "jsonl", "--out", out}, append(tt.args, input)...)
			code, stdout, stderr := runCLI(t, args...)
			if code != tt.want || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("gavel %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, tt.want, stdout, stderr)
			}
		})
	}
	code, _, stderr := runCLI(t, "grade", "--quiet", "--out", base, "--baseline", base, input)
	if code != 2 || !strings.Contains(stderr, "same directory") {
		t.Errorf("--out equal to --baseline: exit %d, %s", code, stderr)
	}
}

func TestLeaderboardCLI(t *testing.T) {
	_, base, cur := gradedPair(t)
	code, stdout, stderr := runCLI(t, "leaderboard", base)
	if code != 0 || !strings.Contains(stdout, "pass@5") || !strings.Contains(stdout, "Wilson") {
		t.Fatalf("leaderboard: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, "leaderboard", "--format", "csv", "--by", "model,task", "--k", "1,3", base, cur)
	recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if code != 0 || err != nil || len(recs) < 2 || strings.Join(recs[0][:4], ",") != "rank,model,task,rollouts" {
		t.Fatalf("leaderboard --format csv: exit %d, %v\n%s", code, err, stdout)
	}
	// Two directories of the same results: every rollout counted twice.
	total := 0
	for _, r := range recs[1:] {
		n := 0
		for _, c := range r[3] {
			n = n*10 + int(c-'0')
		}
		total += n
	}
	if total != 600 {
		t.Errorf("rollouts over groups = %d, want 600", total)
	}
	// --out may name a directory that does not exist yet.
	page := filepath.Join(t.TempDir(), "site", "lb.html")
	if code, _, stderr := runCLI(t, "leaderboard", "--format", "html", "--out", page, base); code != 0 {
		t.Fatalf("leaderboard --format html: exit %d: %s", code, stderr)
	}
	if html := mustRead(t, page); !strings.Contains(html, "<svg") || !strings.Contains(html, `class="whisker"`) {
		t.Errorf("HTML page lacks the chart")
	}
	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no directory", []string{"leaderboard"}, "at least one result directory"},
		{"bad format", []string{"leaderboard", "--format", "pdf", base}, "unknown format"},
		{"bad k", []string{"leaderboard", "--k", "0", base}, "--k"},
		{"not results", []string{"leaderboard", t.TempDir()}, "not a result directory"},
	} {
		if code, _, stderr := runCLI(t, tt.args...); code != 2 || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("%s: exit %d, stderr %s", tt.name, code, stderr)
		}
	}
}

func TestVerifierTestCLI(t *testing.T) {
	code, stdout, stderr := runCLI(t, "verifier", "test")
	if code != 0 || !strings.Contains(stdout, "0 failed") || !strings.Contains(stdout, "no-op TASK-006") {
		t.Fatalf("verifier test: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, _ := runCLI(t, "verifier", "test", "--strict"); code != 1 {
		t.Errorf("verifier test --strict: exit %d, want 1 (VER-006 has a vacuous guard check)", code)
	}
	// A fixture that must pass but does not: exit 1.
	dir := t.TempDir()
	bad := filepath.Join(dir, "VER-004", "pass")
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "wrong.json"), []byte(`{"task_id": "TASK-004", "initial_state": {"opportunities": {}, "stages": {}}, "final_state": {}, "output": "42"}`), 0o644)
	code, stdout, stderr = runCLI(t, "verifier", "test", "--fixtures", dir, "VER-004")
	if code != 1 || !strings.Contains(stdout, "pass/wrong.json") || !strings.Contains(stderr, "1 cases failed") {
		t.Errorf("verifier test with a bad fixture: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "verifier", "test", "VER-999"); code != 2 || !strings.Contains(stderr, "no verifier VER-999") {
		t.Errorf("unknown verifier: exit %d, %s", code, stderr)
	}
}

// TestVerifierTestRowPath tests a fixture written as a row of a real
// dataset: its final state as JSON text in a string, its initial state in a
// tasks table. verifier test reads it as gavel grade would.
func TestVerifierTestRowPath(t *testing.T) {
	var fx map[string]any
	readJSONInto(t, filepath.Join("..", "verifiers", "crm", "testdata", "fixtures", "VER-004", "pass", "plain-answer.json"), &fx)
	dir := t.TempDir()
	task, err := json.Marshal(map[string]any{"task_id": fx["task_id"], "initial_state": fx["initial_state"]})
	if err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(dir, "tasks.jsonl")
	if err := os.WriteFile(tasks, append(task, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	final, err := json.Marshal(fx["final_state"])
	if err != nil {
		t.Fatal(err)
	}
	delete(fx, "initial_state")
	fx["final_state"] = string(final)
	row, err := json.Marshal(fx)
	if err != nil {
		t.Fatal(err)
	}
	fixtures := filepath.Join(dir, "fixtures")
	os.MkdirAll(filepath.Join(fixtures, "VER-004", "pass"), 0o755)
	if err := os.WriteFile(filepath.Join(fixtures, "VER-004", "pass", "row.json"), row, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "verifier", "test", "--fixtures", fixtures, "--tasks", tasks, "VER-004")
	if code != 0 || !strings.Contains(stdout, "pass/row.json") {
		t.Errorf("verifier test --tasks: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI(t, "verifier", "test", "--fixtures", fixtures, "VER-004"); code != 1 {
		t.Errorf("verifier test without the tasks table: exit %d, want 1 (no initial state)\n%s", code, stdout)
	}
	if code, _, stderr := runCLI(t, "verifier", "test", "--tasks", filepath.Join(dir, "nope.jsonl")); code != 2 || !strings.Contains(stderr, "--tasks: ") {
		t.Errorf("verifier test with a missing tasks table: exit %d, %s", code, stderr)
	}
}
