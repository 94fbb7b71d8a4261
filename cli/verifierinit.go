package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/selftest"
)

const verifierInitSynopsis = `gavel verifier init DIR --module PATH [--gavel DIR] [flags]

Writes a new Go module in DIR that builds a gavel of your own: every command
and flag of gavel, with the Go verifiers of the module compiled in.

  go.mod                          requires gavel at this binary's release version
                                  (with --gavel, replaced by that checkout)
  main.go                         calls cli.Main with the module's verifiers
  graders/registry.go             the registry (gavel verifier add appends to it)
  graders/<id>.go                 one verifier, a stub that fails on purpose
  graders/verifiers_test.go       runs every verifier's fixtures and the Version check
  graders/testdata/fixtures/      the verifiers' fixtures, compiled in
  graders/testdata/versions.golden  each verifier's Version and the hash of its code
  README.md                       the commands

Then it runs go mod tidy in DIR (unless --tidy=false). A development build of
gavel (no release version) has no version to require: pass --gavel, a checkout
of gavel's source.`

const verifierInitExamples = `  gavel verifier init crm-graders --module example.com/crm-graders --gavel ~/src/gavel
  cd crm-graders && go test ./... && go build -o gavel-crm-graders . && ./gavel-crm-graders verifier list`

func runVerifierInit(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("verifier init", verifierInitSynopsis, verifierInitExamples, stdout)
	module := fs.String("module", "", "the new module's `PATH` (example.com/team/graders; required)")
	gavelDir := fs.String("gavel", "", "a checkout of gavel's source `DIR` to build against (a replace in go.mod)")
	id := fs.String("id", "VER-001", "the stub verifier's `ID`")
	task := fs.String("task", "TASK-001", "the task `ID` or pattern the stub binds")
	name := fs.String("name", "Replace with what success means", "the stub's `NAME`")
	tidy := fs.Bool("tidy", true, "run go mod tidy in the new module")
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	const hint = "gavel verifier init DIR --module example.com/team-graders --gavel GAVEL-CHECKOUT"
	if fs.NArg() != 1 {
		return usagef(hint, "verifier init needs one DIR")
	}
	dir := fs.Arg(0)
	if *module == "" {
		return usagef(hint, "verifier init needs --module PATH, the new module's path")
	}
	if !modulePathPattern.MatchString(*module) {
		return usagef(hint, "--module %q is not a module path (letters, digits and .-_~/, not starting or ending with /)", *module)
	}
	if *module == gavelModule || strings.HasPrefix(*module, gavelModule+"/") {
		return usagef(hint, "--module %s: choose a path of your own, not gavel's", *module)
	}
	if *task == "all" {
		*task = verifiers.AllTasks
	}
	if err := verifiers.CheckTaskPattern(*task); err != nil {
		return usagef(hint, "--task: %v", err)
	}
	if !verifierIDPattern.MatchString(*id) {
		return usagef(hint, "--id %q: use letters, digits, - and _, starting with a letter", *id)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return usagef(hint, "%s exists and is not empty", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}

	version, dev := gavelRelease()
	goLine := goDirective(runtime.Version())
	var replace, goSum string
	if *gavelDir != "" {
		abs, err := filepath.Abs(*gavelDir)
		if err != nil {
			return err
		}
		gomod, err := os.ReadFile(filepath.Join(abs, "go.mod"))
		if err != nil || modulePath(gomod) != gavelModule {
			return usagef(hint, "--gavel %s is not a checkout of gavel's source (no go.mod of module %s)", *gavelDir, gavelModule)
		}
		if g := goVersionLine(gomod); g != "" {
			goLine = g
		}
		replace = abs
		if sum, err := os.ReadFile(filepath.Join(abs, "go.sum")); err == nil {
			goSum = string(sum)
		}
		if version == "" {
			version = "v0.0.0-00010101000000-000000000000"
		}
	} else if version == "" {
		return usagef(hint, "this gavel is a development build (%s) with no release version for go.mod to require: pass --gavel DIR, a checkout of gavel's source", dev)
	}

	ident := goIdent(*id)
	// The names the generated package declares and imports.
	taken := map[string]bool{"embed": true, "fs": true, "verifiers": true, "registry": true, "fixtureFiles": true, "Verifiers": true,
		"flag": true, "testing": true, "verifiertest": true, "update": true, "TestVersions": true, "TestFixtures": true}
	if err := checkIdent(*id, taken, ident, gradeFunc(ident)); err != nil {
		return usagef(hint, "--id: %v", err)
	}
	stubFile := ident + ".go"
	stub := verifierStub("graders", ident, *id, *task, *name)
	hash, err := selftest.FileHash(stubFile, stub, gradeFunc(ident))
	if err != nil {
		return fmt.Errorf("hash the stub: %w", err)
	}
	bin := binaryName(*module)
	files := []struct {
		name string
		text string
	}{
		{"go.mod", goModText(*module, goLine, version, replace)},
		{"main.go", fmt.Sprintf(initMain, bin, *module)},
		{"graders/registry.go", fmt.Sprintf(initRegistry, ident, registryMarker)},
		{"graders/" + stubFile, string(stub)},
		{"graders/verifiers_test.go", initTest},
		{"graders/testdata/fixtures/README.md", strings.ReplaceAll(initFixturesReadme, "VER-001", *id)},
		{"graders/testdata/versions.golden", fmt.Sprintf(initGolden, *id, hash)},
		{"README.md", initReadme(bin, *module, *id, replace != "")},
	}
	if goSum != "" {
		files = append(files, struct{ name, text string }{"go.sum", goSum})
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(f.text), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "Created module %s in %s, with verifier %s (graders/%s), which fails on purpose\n", *module, dir, *id, stubFile)
	if *tidy {
		cmd := exec.Command("go", "mod", "tidy")
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return &exitError{code: 1, msg: fmt.Sprintf("verifier init: the module is written, but go mod tidy in %s failed (%v); run it again where the Go module proxy can serve gavel %s:\n%s", dir, err, version, strings.TrimSpace(out.String()))}
		}
	}
	tidyFirst := ""
	if !*tidy {
		tidyFirst = "go mod tidy && "
	}
	fmt.Fprintf(stdout, "Next: cd %s && %sgo test ./... && go build -o %s . && ./%s verifier list\n", dir, tidyFirst, bin, bin)
	return nil
}

// modulePathPattern is a loose check of a module path.
var modulePathPattern = regexp.MustCompile(`^[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*$`)

// releaseVersion matches a release (or pre-release) version, not a
// pseudo-version (v0.0.0-20261205000000-abcdef123456) nor a build with
// uncommitted changes (+dirty).
var (
	releaseVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
	pseudoVersion  = regexp.MustCompile(`[0-9]{14}-[0-9a-f]{12}$`)
)

// gavelRelease returns the release version of gavel this binary was built
// from, or "" and what it is instead ("(devel)", a pseudo-version, a
// replacement).
func gavelRelease() (version, dev string) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", "no build information"
	}
	m := &info.Main
	if m.Path != gavelModule {
		m = nil
		for _, d := range info.Deps {
			if d.Path == gavelModule {
				m = d
				break
			}
		}
		if m == nil {
			return "", "gavel's module is not in the build information"
		}
		if m.Replace != nil {
			return "", "gavel replaced by " + m.Replace.Path
		}
	}
	v := m.Version
	if releaseVersion.MatchString(v) && !pseudoVersion.MatchString(v) {
		return v, ""
	}
	return "", "module version " + v
}

// goDirective turns a Go release ("go1.26.8") into a go.mod go line value
// ("1.26.0").
func goDirective(release string) string {
	m := goRelease.FindStringSubmatch(release)
	if m == nil {
		return "1.26.0"
	}
	return m[1] + "." + m[2] + ".0"
}

var goRelease = regexp.MustCompile(`go([0-9]+)\.([0-9]+)`)

// goVersionLine returns the value of go.mod's go line ("" when none).
func goVersionLine(gomod []byte) string {
	for line := range bytes.Lines(gomod) {
		if rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("go ")); ok {
			return string(bytes.TrimSpace(rest))
		}
	}
	return ""
}

func goModText(module, goLine, version, replace string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\ngo %s\n\nrequire %s %s\n", module, goLine, gavelModule, version)
	if replace != "" {
		if strings.ContainsAny(replace, " \t\"'`\\") {
			replace = strconv.Quote(replace)
		}
		fmt.Fprintf(&b, "\n// A local checkout of gavel (gavel verifier init --gavel).\nreplace %s => %s\n", gavelModule, replace)
	}
	return b.String()
}

const initMain = `// Command %[1]s is gavel with this module's verifiers compiled in: every
// command and flag of gavel (gavel help), grading with graders.Verifiers()
// beside spec files, judges and remote verifiers.
package main

import (
	"github.com/gavelhq/gavel/cli"

	"%[2]s/graders"
)

func main() {
	cli.Main(graders.Verifiers()...)
}
`

const initRegistry = `// Package graders holds this module's Go verifiers. Write one with
// gavel verifier add ID --task TASK --name NAME, run inside the module; it
// appends to the registry below.
package graders

import (
	"embed"
	"io/fs"

	"github.com/gavelhq/gavel/verifiers"
)

// registry lists the verifiers compiled in. A verifier is not graded until
// it is named here. gavel verifier add appends to this list at the marker
// line; keep the marker.
func registry() []*verifiers.Verifier {
	return []*verifiers.Verifier{
		%s,
		%s (new verifiers are added above this line)
	}
}

// fixtureFiles holds the verifiers' fixtures, one directory per verifier
// id (testdata/fixtures/README.md says how they are written).
//
//go:embed testdata/fixtures
var fixtureFiles embed.FS

// Verifiers returns the module's verifiers in registry order, each with
// its fixtures. Every call returns new copies.
func Verifiers() []*verifiers.Verifier {
	fixtures, err := fs.Sub(fixtureFiles, "testdata/fixtures")
	if err != nil {
		panic("graders: fixtures: " + err.Error())
	}
	list := registry()
	out := make([]*verifiers.Verifier, len(list))
	for i, v := range list {
		cp := *v
		cp.Fixtures = fixtures
		out[i] = &cp
	}
	return out
}
`

const initTest = `package graders

import (
	"flag"
	"testing"

	"github.com/gavelhq/gavel/verifiers/verifiertest"
)

var update = flag.Bool("update", false, "record the code of verifiers whose Version was raised")

// TestVersions fails when a verifier's code changed and its Version did
// not (--reuse would keep the old checks of new code); -update records
// the code of verifiers whose Version was raised.
func TestVersions(t *testing.T) {
	verifiertest.Versions(t, Verifiers(), "testdata/versions.golden", *update, "go test ./graders -run TestVersions -update")
}

// TestFixtures runs every verifier on its fixtures, and on a no-op
// rollout per task, which it must not pass.
func TestFixtures(t *testing.T) {
	verifiertest.Fixtures(t, Verifiers())
}
`

const initFixturesReadme = `# Fixtures

Rollouts each verifier must pass, fail or end in error on, compiled into the
binary and run by go test ./graders and by gavel verifier test:

    VER-001/pass/*.json    rollouts whose verdict must be passed
    VER-001/fail/*.json    rollouts whose verdict must be failed
    VER-001/error/*.json   rollouts whose verdict must be error

Each file is one rollout as a JSON object with the fields of a JSON Lines row
(task_id, initial_state, final_state, output, log). A fail fixture may add
"expect_failed": the ids of checks that must fail.
`

const initGolden = `# Each Go verifier's Version and the sha256 of its code at that version
# (its grade function and the declarations of its file that it uses).
# Raise the Version with the code, then run: go test ./graders -run TestVersions -update
%s 1 %s
`

func initReadme(bin, module, id string, replaced bool) string {
	build := "It requires gavel at a released version, fetched through the Go module proxy like any dependency; `go mod tidy` and `go build` need that version to be published where your proxy can serve it."
	if replaced {
		build = "Its go.mod replaces gavel with a local checkout (gavel verifier init --gavel), so it builds wherever that checkout is, reaching only the Go module proxy for gavel's dependencies. To require a released gavel instead (one published where your Go module proxy can serve it): `go mod edit -dropreplace=github.com/gavelhq/gavel && go get github.com/gavelhq/gavel@VERSION`."
	}
	return fmt.Sprintf("# %[1]s\n\n"+
		"A gavel of your own: every command and flag of gavel, with this module's Go\n"+
		"verifiers (package graders) compiled in. %[4]s\n\n"+
		"```sh\n"+
		"go test ./...                     # every verifier's fixtures, and the Version check\n"+
		"go build -o %[2]s .\n"+
		"./%[2]s verifier list\n"+
		"./%[2]s grade rollouts.jsonl --out results\n"+
		"./%[2]s grade rollouts.jsonl --out results-new --reuse results   # nightly: regrade only what changed\n"+
		"```\n\n"+
		"Add a verifier (inside this module), write its checks, record its code, rebuild:\n\n"+
		"```sh\n"+
		"gavel verifier add VER-002 --task TASK-002 --name \"Invoice escalated\"\n"+
		"go test ./graders -run TestVersions -update\n"+
		"go build -o %[2]s .\n"+
		"./%[2]s verifier test\n"+
		"```\n\n"+
		"%[3]s is the stub gavel verifier init wrote: its one check fails on purpose\n"+
		"until you write the real ones. Raise a verifier's Version whenever its code\n"+
		"may change a check: its fingerprint covers the Version, so --reuse then\n"+
		"regrades its rollouts.\n", module, bin, id, build)
}
