package cli

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/internal/gaveltest"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

var badRows = filepath.Join("..", "testdata", "badrows", "input.jsonl")

func TestGradeExitStatus(t *testing.T) {
	dir := t.TempDir()
	line, _, _ := strings.Cut(mustRead(t, badRows), "\n")
	good := filepath.Join(dir, "good.jsonl")
	if err := os.WriteFile(good, []byte(line+"\n"+line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unsupported := filepath.Join(dir, "rollouts.csv")
	os.WriteFile(unsupported, []byte("a,b\n"), 0o644)
	tests := []struct {
		name      string
		args      []string
		want      int
		stderr    string
		writesOut bool
	}{
		{"all graded", []string{"grade", "--quiet", good}, 0, "", true},
		{"rows with status error", []string{"grade", "--quiet", badRows}, 3, "rows have status error", true},
		{"no input", []string{"grade"}, 2, "no input given", false},
		{"unknown flag", []string{"grade", "--frobnicate", good}, 2, "grade: unknown flag --frobnicate", false},
		{"unsupported file", []string{"grade", unsupported}, 2, "unsupported file type", false},
		{"missing file", []string{"grade", filepath.Join(dir, "nope.parquet")}, 2, "no such file", false},
		{"bad format", []string{"grade", "--format", "csv", good}, 2, `unknown output format "csv"`, false},
		{"bad map", []string{"grade", "--map", "answer", good}, 2, "want FIELD=COLUMN", false},
		{"bad shard", []string{"grade", "--shard", "4/4", good}, 2, "--shard 4/4: the index must be between 0 and 3", false},
		{"bad timeout", []string{"grade", "--timeout", "0s", good}, 2, "--timeout 0s: want a positive duration", false},
		{"max errors", []string{"grade", "--quiet", "--max-errors", "2", badRows}, 1, "too many rows with status error", true},
		{"line limit", []string{"grade", "--quiet", "--max-line-bytes", "100", good}, 3, "2 rows have status error", true},
		{"bad line limit", []string{"grade", "--max-line-bytes", "-1", good}, 2, "want a positive number", false},
		{"struct nulls absent", []string{"grade", "--quiet", "--struct-nulls", "absent", good}, 0, "", true},
		{"bad struct nulls", []string{"grade", "--struct-nulls", "null", good}, 2, `--struct-nulls: unknown value "null" (want member or absent)`, false},
		{"unknown command", []string{"frob"}, 2, "unknown command", false},
		{"flags after the input", []string{"grade", good, "--quiet", "--format", "jsonl"}, 0, "", true},
		{"flag after the input checked", []string{"grade", good, "--format", "csv"}, 2, `unknown output format "csv"`, false},
		{"an input after --", []string{"grade", "--quiet", "--", "-nope.jsonl"}, 2, "-nope.jsonl", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{tt.args[0], "--out", out}, tt.args[1:]...)
			if tt.args[0] != "grade" {
				args = tt.args
			}
			code, _, stderr := runCLI(t, args...)
			if code != tt.want {
				t.Errorf("gavel %v: exit %d, want %d\nstderr: %s", tt.args, code, tt.want, stderr)
			}
			if !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr, tt.stderr)
			}
			_, err := os.Stat(out)
			if wrote := err == nil; wrote != tt.writesOut && tt.args[0] == "grade" {
				t.Errorf("output directory written = %v, want %v", wrote, tt.writesOut)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"grade", "--help"}, {"gen", "--help"}, {"verifier", "--help"}, {"verifier", "list", "--help"}, {"verifier", "add", "--help"}} {
		code, stdout, _ := runCLI(t, args...)
		if code != 0 {
			t.Errorf("gavel %v: exit %d, want 0", args, code)
		}
		if !strings.Contains(stdout, "Examples:") || !strings.Contains(stdout, "Usage:") {
			t.Errorf("gavel %v: help lacks usage or examples:\n%s", args, stdout)
		}
	}
}

func TestVerifierList(t *testing.T) {
	code, stdout, _ := runCLI(t, "verifier", "list")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"VER-001", "VER-002", "VER-003", "VER-004", "VER-006", "TASK-006", "verifiers/crm/crm.go:", "VER-C01", "verifiers/spec/calendar.yaml:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("verifier list lacks %q:\n%s", want, stdout)
		}
	}
}

// TestVerifierAdd scaffolds a verifier in a copy of the source tree, builds
// gavel there and checks that the new verifier is registered and fails on
// purpose.
func TestVerifierAdd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gavel")
	}
	// Parallel: it changes and builds a copy of the tree only.
	t.Parallel()
	root, err := filepath.Abs(filepath.Join(".."))
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	copyTree(t, root, tree)
	code, stdout, stderr := runCLI(t, "verifier", "add", "VER-900", "--task", "TASK-900", "--name", "Widget filed", "--dir", tree)
	if code != 0 {
		t.Fatalf("verifier add: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "Registered ver900 in verifiers/crm/registry.go") {
		t.Errorf("verifier add output:\n%s", stdout)
	}
	// A second add of the same id is refused.
	if code, _, _ := runCLI(t, "verifier", "add", "VER-900", "--task", "TASK-901", "--name", "x", "--dir", tree); code != 2 {
		t.Errorf("second add: exit %d, want 2", code)
	}
	bin := filepath.Join(tree, "gavel")
	// Built as gaveltest builds this checkout's gavel: -trimpath lets the
	// packages verifier add left alone share its build cache.
	if err := gaveltest.GoBuild(tree, bin, "./cmd/gavel", gaveltest.Options{}); err != nil {
		t.Fatalf("build after verifier add: %v", err)
	}
	list, err := exec.Command(bin, "verifier", "list").Output()
	if err != nil || !strings.Contains(string(list), "VER-900") || !strings.Contains(string(list), "verifiers/crm/ver900.go:") {
		t.Fatalf("verifier list after add: %v\n%s", err, list)
	}
	in := filepath.Join(tree, "in.jsonl")
	os.WriteFile(in, []byte(`{"rollout_id":"r1","task_id":"TASK-900","final_state":{},"output":"done"}`+"\n"), 0o644)
	out := filepath.Join(tree, "out")
	cmd := exec.Command(bin, "grade", "--quiet", "--format", "jsonl", "--out", out, in)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("grade with the new verifier: %v\n%s", err, b)
	}
	rewards := mustRead(t, filepath.Join(out, "rewards", "part-00000.jsonl"))
	if !strings.Contains(rewards, `"verifier_id":"VER-900","status":"failed","passed":false,"reward":0`) {
		t.Errorf("the scaffold must fail on purpose; rewards:\n%s", rewards)
	}
	checks := mustRead(t, filepath.Join(out, "checks", "part-00000.jsonl"))
	if !strings.Contains(checks, `"label":"TODO: define success condition","required":true,"status":"fail"`) {
		t.Errorf("checks:\n%s", checks)
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "demo", "testdata", "gavel-out":
				// The reference verifiers' fixtures are embedded: keep them.
				if rel != "." && rel != filepath.Join("verifiers", "crm", "testdata") && rel != filepath.Join("verifiers", "spec", "testdata") {
					return filepath.SkipDir
				}
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		embedded := strings.HasSuffix(path, ".json") || strings.HasSuffix(path, ".yaml") // files that go:embed reads
		source := strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".s")        // assembly: jsonview's stage 1
		if !source && !embedded && d.Name() != "go.mod" && d.Name() != "go.sum" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestProgressBar forces the progress bar and checks that it shows the
// rate and, for Parquet input whose footer gives the total, the total.
func TestProgressBar(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "sub", "r.parquet") // gen creates the directory
	if code, _, stderr := runCLI(t, "gen", "--quiet", "--out", data, "--rollouts", "3000"); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	// Exit 3: generated TASK-003 worlds without a won stage are errors.
	code, _, stderr := runCLI(t, "grade", "--progress", "--batch-size", "16", "--out", filepath.Join(dir, "out"), data)
	if code != 3 {
		t.Fatalf("grade: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"grading", "rollouts/s", "/3000"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("progress output lacks %q:\n%q", want, stderr)
		}
	}
	code, _, stderr = runCLI(t, "grade", "--quiet", "--out", filepath.Join(dir, "out2"), data)
	if code != 3 || strings.Contains(stderr, "rollouts/s") {
		t.Errorf("--quiet: exit %d, stderr %q, want 3 and no progress bar", code, stderr)
	}
}

// TestGenCalendarChecks checks that gen --env calendar validates its flags
// as the CRM environment does and writes files readable by others.
func TestGenCalendarChecks(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "cal.parquet")
	for _, args := range [][]string{
		{"gen", "--env", "calendar", "--out", out, "--format", "bogus"},
		{"gen", "--env", "calendar", "--out", out, "--row-group-rows", "-5"},
		{"gen", "--env", "calendar", "--out", filepath.Join(dir, "cal.txt")},
		{"gen", "--env", "calendar", "--out", out, "--worlds", "3"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2: %s", args, code, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "gen", "--env", "calendar", "--out", out, "--rollouts", "20", "--quiet"); code != 0 {
		t.Fatalf("gen --env calendar: exit %d: %s", code, stderr)
	}
	for _, p := range []string{out, out + ".expected.json"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644", p, st.Mode().Perm())
		}
	}
}

// TestVerifierAddRefusesSpecBuiltins refuses a Go verifier whose id or
// task the built-in calendar spec already has.
func TestVerifierAddRefusesSpecBuiltins(t *testing.T) {
	// A tree of gavel's module (the one this test binary was built from),
	// so what the binary has compiled in counts.
	tree := func() string {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module github.com/gavelhq/gavel\n"), 0o644)
		os.MkdirAll(filepath.Join(dir, "env"), 0o755)
		os.WriteFile(filepath.Join(dir, "env", "registry.go"), []byte("package env\n\nvar _ = []int{\n\t"+registryMarker+"\n}\n"), 0o644)
		return dir
	}
	for _, args := range [][]string{
		{"verifier", "add", "VER-C01", "--task", "TASK-990", "--name", "x", "--dir", tree()},
		{"verifier", "add", "VER-990", "--task", "TASK-C01", "--name", "x", "--dir", tree()},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 || !strings.Contains(stderr, "calendar") {
			t.Errorf("%q: exit %d, want 2 naming the calendar spec: %s", args, code, stderr)
		}
	}
}

// TestGradeReuse checks that --reuse naming --out is refused with exit 2,
// and that a run reusing an unchanged result says what it reused.
func TestGradeReuse(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "rollouts.jsonl")
	if code, _, stderr := runCLI(t, "gen", "--out", data, "--rollouts", "50", "--seed", "2"); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	first := filepath.Join(dir, "first")
	if code, _, stderr := runCLI(t, "grade", "--quiet", "--out", first, data); code != 0 && code != 3 {
		t.Fatalf("grade: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "grade", "--quiet", "--out", first, "--reuse", first+"/", data); code != 2 || !strings.Contains(stderr, "--reuse") {
		t.Errorf("--reuse naming --out: exit %d, want 2: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "grade", "--quiet", "--out", filepath.Join(dir, "again"), "--reuse", first, data)
	if code != 0 && code != 3 {
		t.Fatalf("grade --reuse: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "reused 50 rollouts (1 parts copied whole), graded 0") || !strings.HasPrefix(stdout, "reused 50 rollouts (") {
		t.Errorf("grade --reuse printed:\n%s", stdout)
	}
}
