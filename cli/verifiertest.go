package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	iofs "io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/selftest"
	"github.com/gavelhq/gavel/verifiers/spec"
)

const verifierTestSynopsis = `gavel verifier test [flags] [ID...]

Runs every verifier (or those named) on its fixtures, rollouts it must pass,
fail or end in error on, and on an automatic no-op rollout per task (final state
equal to the initial state, empty output and log), which it must not pass. A
required check that passes on the no-op is reported as vacuous: it passes
whatever the agent does.

Fixtures of verifier ID are ID/pass/*.json, ID/fail/*.json and ID/error/*.json
under a fixtures root: those of the verifiers compiled into gavel are compiled
in with them (each package's testdata/fixtures); a spec file's are in the
fixtures directory beside it; --fixtures DIR is searched first. Each is one rollout as a JSON object
(task_id, initial_state, final_state, output, log), read as gavel grade reads
a JSON Lines row: a state may be JSON text in a string, --map renames fields
and --tasks gives the tasks table. A fail fixture may list
"expect_failed": [check ids] that must fail.

Run inside a verifier module of your own (gavel verifier init) by a gavel not
built from it, it builds the module's gavel (go build in the module's root) and
runs this command with it: the module's code is compiled and run.

Exit status: 0 every case as expected; 1 a case failed (or, with --strict, a
check is vacuous or a verifier has no fixtures); 2 usage error.`

const verifierTestExamples = `  gavel verifier test
  gavel verifier test VER-002 VER-006
  gavel verifier test --fixtures my-fixtures/ --spec specs/
  gavel verifier test --tasks tasks.parquet --map final_state=world_after
  gavel verifier test --json`

func runVerifierTest(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("verifier test", verifierTestSynopsis, verifierTestExamples, stdout)
	fixtures := fs.String("fixtures", "", "fixtures root `DIR` searched before the built-in fixtures")
	var specs listFlag
	fs.Var(&specs, "spec", "declarative verifier `FILE` or directory to test too (repeatable)")
	strict := fs.Bool("strict", false, "also fail on vacuous checks and verifiers without fixtures")
	asJSON := fs.Bool("json", false, "print the outcomes as JSON")
	tasks := fs.String("tasks", "", "tasks table `FILE` giving the fixtures' tasks, as in gavel grade")
	mapping := fs.String("map", "", "read fixture fields from other members: `K=COL,...`, as in gavel grade")
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	// Inside a verifier module of its own (one whose go.mod requires
	// gavel and whose main calls cli.Main) that this binary was not built
	// from, the module's gavel, built from its source, runs the test.
	if m, err := ownModule(); err != nil {
		return err
	} else if m != nil {
		return runInModule(m, append([]string{"verifier", "test"}, args...), stdout, stderr)
	}
	fields, err := parseMap(*mapping)
	if err != nil {
		return err
	}
	dec, err := pipeline.NewRowDecoder(fields, *tasks)
	var ce *inputs.ConfigError
	if errors.As(err, &ce) {
		return usagef("gavel verifier test --tasks tasks.parquet", "--tasks: %s", ce.Msg)
	}
	type target struct {
		v     *verifiers.Verifier
		roots []iofs.FS
	}
	var extra []iofs.FS
	if *fixtures != "" {
		if st, err := os.Stat(*fixtures); err != nil || !st.IsDir() {
			return usagef("gavel verifier test --fixtures DIR", "--fixtures %s is not a directory", *fixtures)
		}
		extra = append(extra, os.DirFS(*fixtures))
	}
	var targets []target
	for _, v := range compiledIn() {
		roots := slices.Clone(extra)
		if v.Fixtures != nil {
			roots = append(roots, v.Fixtures)
		}
		targets = append(targets, target{v, roots})
	}
	if len(specs) > 0 {
		vs, err := spec.Load(specs)
		if err != nil {
			return usagef("gavel spec check FILE", "%v", err)
		}
		files, err := spec.ExpandPaths(specs)
		if err != nil {
			return usagef("gavel verifier test --spec FILE", "%v", err)
		}
		for _, v := range vs {
			roots := slices.Clone(extra)
			for _, f := range files {
				if strings.HasPrefix(v.Source, f+":") || v.Source == f {
					roots = append(roots, os.DirFS(filepath.Join(filepath.Dir(f), spec.FixturesDir)))
					break
				}
			}
			targets = append(targets, target{v, roots})
		}
	}
	if fs.NArg() > 0 {
		var picked []target
		for _, id := range fs.Args() {
			i := slices.IndexFunc(targets, func(t target) bool { return t.v.ID == id })
			if i < 0 {
				return usagef("gavel verifier list", "no verifier %s", id)
			}
			picked = append(picked, targets[i])
		}
		targets = picked
	}

	var outcomes []selftest.Outcome
	var noFixtures []string
	for _, t := range targets {
		var fx []selftest.Fixture
		found := false
		for _, root := range t.roots {
			if !selftest.HasFixtures(root, t.v.ID) {
				continue
			}
			var err error
			if fx, err = selftest.LoadFixtures(root, t.v.ID); err != nil {
				return err
			}
			found = true
			break
		}
		if !found {
			noFixtures = append(noFixtures, t.v.ID)
		}
		outcomes = append(outcomes, selftest.Test(t.v, fx, dec.Decode)...)
	}

	failures, vacuous := 0, 0
	for _, o := range outcomes {
		if !o.OK {
			failures++
		}
		vacuous += len(o.Vacuous)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Outcomes   []selftest.Outcome `json:"outcomes"`
			NoFixtures []string           `json:"verifiers_without_fixtures"`
			Failures   int                `json:"failures"`
			Vacuous    int                `json:"vacuous_checks"`
		}{outcomes, append([]string{}, noFixtures...), failures, vacuous}); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERIFIER\tCASE\tWANT\tGOT\tRESULT\tNOTE")
		for _, o := range outcomes {
			result := "ok"
			if !o.OK {
				result = "FAIL"
			}
			note := o.Problem
			if len(o.Vacuous) > 0 {
				v := "vacuous required checks (pass on a no-op): " + strings.Join(o.Vacuous, "; ")
				if note != "" {
					note += "; "
				}
				note += v
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", o.Verifier, o.Case, o.Want, o.Got, result, note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\n%d verifiers, %d cases: %d failed, %d vacuous required checks", len(targets), len(outcomes), failures, vacuous)
		if len(noFixtures) > 0 {
			fmt.Fprintf(stdout, ", no fixtures for %s", strings.Join(noFixtures, ", "))
		}
		fmt.Fprintln(stdout)
	}
	switch {
	case failures > 0:
		return &exitError{code: 1, msg: fmt.Sprintf("verifier test: %d cases failed", failures)}
	case *strict && vacuous > 0:
		return &exitError{code: 1, msg: fmt.Sprintf("verifier test: %d vacuous required checks (--strict)", vacuous)}
	case *strict && len(noFixtures) > 0:
		return &exitError{code: 1, msg: fmt.Sprintf("verifier test: no fixtures for %s (--strict)", strings.Join(noFixtures, ", "))}
	}
	return nil
}

// runInModule builds the gavel of module m, whose verifiers this binary
// does not have, runs it with args, and exits as it does.
func runInModule(m *verifierModule, args []string, stdout, stderr io.Writer) error {
	tmp, err := os.MkdirTemp("", "gavel-module-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "gavel")
	fmt.Fprintf(stderr, "gavel: the verifiers of module %s are not compiled into this gavel; building it (go build in %s) to run: gavel %s\n", m.path, m.root, strings.Join(args, " "))
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = m.root
	build.Stdout, build.Stderr = stderr, stderr
	if err := build.Run(); err != nil {
		return &exitError{code: 1, msg: fmt.Sprintf("go build in %s: %v", m.root, err)}
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return &exitError{code: ee.ExitCode()}
	}
	return fmt.Errorf("run the module's gavel: %w", err)
}

// ownModule returns the verifier module around the working directory when
// it is one of a team's own, not this binary's: its go.mod requires gavel,
// its root holds a main package that imports gavel's cli, and its main
// module path is not this binary's. nil otherwise (gavel's own tree, no
// module, a module that is not a gavel).
func ownModule() (*verifierModule, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, nil
	}
	root, modPath, err := nearestModule(wd, false)
	if err != nil || modPath == mainModule() || modPath == gavelModule {
		return nil, nil
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !requiresGavel(gomod) || !mainImportsCLI(root) {
		return nil, nil
	}
	m, err := registryOf(root, modPath)
	if err != nil {
		if errors.Is(err, errNoRegistry) {
			return nil, fmt.Errorf("module %s (%s) builds a gavel but has no verifier registry (no Go file with the line %q)", modPath, root, registryMarker)
		}
		return nil, err
	}
	return m, nil
}

// requiresGavel reports whether go.mod has a require of gavel's module.
func requiresGavel(gomod []byte) bool {
	inRequire := false
	for line := range bytes.Lines(gomod) {
		text, _, _ := strings.Cut(string(line), "//")
		f := strings.Fields(text)
		switch {
		case len(f) == 0:
		case inRequire && f[0] == ")":
			inRequire = false
		case inRequire:
			if f[0] == gavelModule {
				return true
			}
		case f[0] == "require" && len(f) == 2 && f[1] == "(":
			inRequire = true
		case f[0] == "require" && len(f) >= 3 && f[1] == gavelModule:
			return true
		}
	}
	return false
}

// mainImportsCLI reports whether a main package in dir imports gavel's cli.
func mainImportsCLI(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
		if err != nil || f.Name.Name != "main" {
			continue
		}
		for _, imp := range f.Imports {
			if imp.Path.Value == strconv.Quote(gavelModule+"/cli") {
				return true
			}
		}
	}
	return false
}
