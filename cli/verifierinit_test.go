package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/verifiers"
)

// TestVerifierInit makes a module with verifier init --gavel (this
// checkout), runs its tests, builds its gavel, grades a file with it, adds
// a verifier inside it with this gavel, and tests it there.
func TestVerifierInit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a gavel")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(t.TempDir(), "graders-mod")
	code, stdout, stderr := runCLI(t, "verifier", "init", mod, "--module", "example.com/team/graders-mod", "--gavel", root,
		"--id", "TEAM-001", "--task", "team/*", "--name", "Ticket closed")
	if code != 0 {
		t.Fatalf("verifier init: exit %d\n%s%s", code, stdout, stderr)
	}
	gomod := mustRead(t, filepath.Join(mod, "go.mod"))
	if !strings.Contains(gomod, "module example.com/team/graders-mod\n") || !strings.Contains(gomod, "replace github.com/gavelhq/gavel => "+root+"\n") {
		t.Errorf("go.mod:\n%s", gomod)
	}
	// Every go command here, and the go build of verifier test, runs in
	// the environment a user has (cgo as go env says), as the docs'
	// examples do: one build of gavel's packages serves them all, and
	// internal/doctest's module example.
	goCmd := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	bin := filepath.Join(mod, "team-gavel")
	goCmd(mod, "build", "-o", bin, ".")

	list, err := exec.Command(bin, "verifier", "list").CombinedOutput()
	if err != nil || !strings.Contains(string(list), "TEAM-001") || !strings.Contains(string(list), "graders/team001.go:") || strings.Contains(string(list), "VER-001") {
		t.Fatalf("verifier list of the module's gavel (its verifiers only): %v\n%s", err, list)
	}
	in := filepath.Join(mod, "in.jsonl")
	os.WriteFile(in, []byte(`{"rollout_id":"r1","task_id":"team/1","final_state":{},"output":"done"}`+"\n"+
		`{"rollout_id":"r2","task_id":"TASK-001","final_state":{},"output":"done"}`+"\n"), 0o644)
	out := filepath.Join(mod, "out")
	grade := exec.Command(bin, "grade", "--quiet", "--format", "jsonl", "--out", out, in)
	b, err := grade.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		// TASK-001 has no verifier in this gavel: an error row, exit 3.
		t.Fatalf("grade with the module's gavel: %v, want exit 3\n%s", err, b)
	}
	rewards := mustRead(t, filepath.Join(out, "rewards", "part-00000.jsonl"))
	if !strings.Contains(rewards, `"rollout_id":"r1","task_id":"team/1","verifier_id":"TEAM-001","status":"failed"`) ||
		!strings.Contains(rewards, `"rollout_id":"r2","task_id":"TASK-001","verifier_id":null,"status":"error"`) {
		t.Errorf("rewards:\n%s", rewards)
	}

	// verifier add, run inside the module by this gavel, finds it by its
	// registry marker and refuses what the module already has.
	t.Chdir(filepath.Join(mod, "graders"))
	code, stdout, stderr = runCLI(t, "verifier", "add", "TEAM-002", "--task", "team/special", "--name", "Escalated")
	if code != 0 || !strings.Contains(stdout, "Registered team002 in graders/registry.go") {
		t.Fatalf("verifier add in the module: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "verifier", "add", "TEAM-001", "--task", "team/other", "--name", "x"); code != 2 || !strings.Contains(stderr, "verifier TEAM-001 already exists (graders/team001.go:") {
		t.Errorf("add of an existing id: exit %d: %s", code, stderr)
	}
	// Its tests run the fixtures, and the Version check asks for the new
	// verifier's code to be recorded; -update records it.
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir = mod
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "TEAM-002: no recorded source hash: run go test ./graders -run TestVersions -update") ||
		strings.Contains(string(b), "TEAM-001:") {
		t.Errorf("go test after add: %v\n%s", err, b)
	}
	goCmd(mod, "test", "./graders", "-run", "TestVersions", "-update")
	// verifier test, run by this gavel inside the module, tests the
	// module's verifiers with a gavel built from it.
	code, stdout, stderr = runCLI(t, "verifier", "test")
	if code != 0 || !strings.Contains(stdout, "TEAM-002") || strings.Contains(stdout, "VER-001") {
		t.Errorf("verifier test in the module: exit %d\n%s%s", code, stdout, stderr)
	}
}

func TestVerifierInitRefuses(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	os.MkdirAll(full, 0o755)
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join(dir, "a")}, "needs --module PATH"},
		{[]string{"--module", "example.com/a"}, "needs one DIR"},
		{[]string{filepath.Join(dir, "a"), "--module", "example.com/a"}, "development build"},
		{[]string{full, "--module", "example.com/a", "--gavel", ".."}, "exists and is not empty"},
		{[]string{filepath.Join(dir, "a"), "--module", "/bad path", "--gavel", ".."}, "is not a module path"},
		{[]string{filepath.Join(dir, "a"), "--module", "github.com/gavelhq/gavel/x", "--gavel", ".."}, "not gavel's"},
		{[]string{filepath.Join(dir, "a"), "--module", "example.com/a", "--gavel", dir}, "is not a checkout of gavel's source"},
	} {
		code, _, stderr := runCLI(t, append([]string{"verifier", "init"}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("verifier init %v: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Error("a refused init wrote its directory")
	}
}

func TestVerifierAddOutsideModule(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI(t, "verifier", "add", "V-1", "--task", "T", "--name", "n", "--dir", dir)
	if code == 0 || !strings.Contains(stderr, "no Go module in "+dir) || !strings.Contains(stderr, "gavel verifier init") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/x\n"), 0o644)
	code, _, stderr = runCLI(t, "verifier", "add", "V-1", "--task", "T", "--name", "n", "--dir", dir)
	if code == 0 || !strings.Contains(stderr, `module example.com/x (`+dir+`) has no verifier registry`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

func TestReleaseVersion(t *testing.T) {
	for v, want := range map[string]bool{
		"v1.2.3": true, "v0.1.0": true, "v1.2.3-rc.1": true,
		"(devel)": false, "v0.0.0-20261206003335-8db6652fdc47": false, "v1.2.4-0.20261206003335-8db6652fdc47": false,
		"v1.2.3+dirty": false, "": false,
	} {
		if got := releaseVersion.MatchString(v) && !pseudoVersion.MatchString(v); got != want {
			t.Errorf("%q: release = %v, want %v", v, got, want)
		}
	}
	for in, want := range map[string]string{"go1.26.8": "1.26.0", "go1.27rc1": "1.27.0", "go1.26": "1.26.0"} {
		if got := goDirective(in); got != want {
			t.Errorf("goDirective(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"module a.b/c\n": "a.b/c", "// x\nmodule \"q/r\" // c\n": "q/r", "go 1.2\n": "", "modules x\n": ""} {
		if got := modulePath([]byte(in)); got != want {
			t.Errorf("modulePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGradeSource(t *testing.T) {
	if got := gradeSource(gradeForSourceTest, "github.com/gavelhq/gavel"); !strings.HasPrefix(got, "cli/verifierinit_test.go:") {
		t.Errorf("in the main module: %q", got)
	}
	if got := gradeSource(gradeForSourceTest, "example.com/other"); !strings.HasPrefix(got, "github.com/gavelhq/gavel/cli/verifierinit_test.go:") {
		t.Errorf("another module's: %q", got)
	}
	if got := gradeSource(nil, ""); got != "" {
		t.Errorf("nil: %q", got)
	}
	defer setGoVerifiers(referenceForTests())
	for _, tt := range []struct {
		vs   []*verifiers.Verifier
		want string
	}{
		{[]*verifiers.Verifier{nil}, "verifier 1 of 1 is nil"},
		{[]*verifiers.Verifier{{Tasks: []string{"T"}, Grade: gradeForSourceTest}}, "verifier 1 of 1 has no ID"},
		{[]*verifiers.Verifier{{ID: "A", Grade: gradeForSourceTest}}, "verifier A binds no tasks"},
		{[]*verifiers.Verifier{{ID: "A", Tasks: []string{"T"}}}, "verifier A has no Grade function"},
	} {
		if err := setGoVerifiers(tt.vs); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("setGoVerifiers: %v, want %q", err, tt.want)
		}
	}
	if err := setGoVerifiers([]*verifiers.Verifier{{ID: "A", Tasks: []string{"T"}, Grade: gradeForSourceTest}, {ID: "B", Tasks: []string{"U"}, Grade: gradeForSourceTest, Source: "kept:1"}}); err != nil {
		t.Fatal(err)
	}
	got := compiledIn()
	if len(got) != 2 || !strings.HasPrefix(got[0].Source, "cli/verifierinit_test.go:") || got[1].Source != "kept:1" {
		t.Errorf("compiledIn = %+v", got)
	}
}

func gradeForSourceTest(r *verifiers.Rollout, c *verifiers.Checks) error { return nil }

func TestRegistryMarker(t *testing.T) {
	src := []byte("package g\n\n// see the line \"// gavel:registry\" below\nvar s = `\n// gavel:registry in a string`\n\nfunc registry() []int {\n\treturn []int{\n\t\t// gavel:registry (new verifiers are added above this line)\n\t}\n}\n")
	got := markerComments(src)
	if len(got) != 1 || !strings.HasPrefix(string(src[got[0]:]), "// gavel:registry (new") {
		t.Fatalf("markerComments = %v", got)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/two\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "a.go"), src, 0o644)
	os.WriteFile(filepath.Join(dir, "b.go"), src, 0o644)
	if _, err := findVerifierModule(dir, true); err == nil || !strings.Contains(err.Error(), "has 2 comment lines") {
		t.Errorf("two registries: %v", err)
	}
	// A nested module without a registry: the module above it is used.
	os.Remove(filepath.Join(dir, "b.go"))
	nested := filepath.Join(dir, "tools")
	os.MkdirAll(nested, 0o755)
	os.WriteFile(filepath.Join(nested, "go.mod"), []byte("module example.com/two/tools\n"), 0o644)
	m, err := findVerifierModule(nested, false)
	if err != nil || m.path != "example.com/two" || m.registry != filepath.Join(dir, "a.go") {
		t.Errorf("from a nested module: %+v, %v", m, err)
	}
}

func TestVerifierAddNames(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/names\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "registry.go"), []byte("package names\n\nimport \"flag\"\n\nvar _ = flag.Bool\n\nvar total = 1\n\nfunc registry() []int {\n\treturn []int{\n\t\t"+registryMarker+"\n\t}\n}\n"), 0o644)
	for id, want := range map[string]string{
		"Type":  `gives the Go name "type", which is not one`,
		"TOTAL": `gives the Go name "total", which the package already uses`,
		"Flag":  `gives the Go name "flag", which the package already uses`,
		"Init":  `gives the Go name "init", which the package already uses`,
	} {
		code, _, stderr := runCLI(t, "verifier", "add", id, "--task", "T-"+id, "--name", "n", "--dir", dir)
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("add %s: exit %d, %q; want %q", id, code, stderr, want)
		}
	}
	code, stdout, stderr := runCLI(t, "verifier", "add", "V-9", "--task", "T-9", "--name", "n", "--dir", dir)
	if code != 0 || !strings.Contains(stdout, "go build -o gavel-names .") {
		t.Fatalf("add V-9: exit %d\n%s%s", code, stdout, stderr)
	}
	if reg := mustRead(t, filepath.Join(dir, "registry.go")); !strings.Contains(reg, "\t\tv9,\n\t\t"+registryMarker) {
		t.Errorf("registry:\n%s", reg)
	}
	for mod, want := range map[string]string{"example.com/a/graders": "gavel-graders", "example.com/x/v2": "gavel-x", "tool": "gavel-tool"} {
		if got := binaryName(mod); got != want {
			t.Errorf("binaryName(%q) = %q, want %q", mod, got, want)
		}
	}
}
