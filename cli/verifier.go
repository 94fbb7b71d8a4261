package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/gavelhq/gavel/verifiers"
)

func runVerifier(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, `Usage: gavel verifier list | add | test | init

Subcommands:
  list   the verifiers compiled into gavel: id, name, tasks, where defined
  add    scaffold a Go verifier and register it
  test   run every verifier on its fixtures and on a no-op rollout per task
  init   write a Go module that builds a gavel with verifiers of your own

Examples:
  gavel verifier list
  gavel verifier add VER-007 --task TASK-007 --name "Invoice escalated"
  gavel verifier init my-graders --module example.com/my-graders --gavel ~/src/gavel
`)
		if len(args) == 0 {
			return usagef("gavel verifier list", "verifier: no subcommand given")
		}
		return nil
	}
	switch args[0] {
	case "list":
		return runVerifierList(args[1:], stdout, stderr)
	case "add":
		return runVerifierAdd(args[1:], stdout, stderr)
	case "test":
		return runVerifierTest(args[1:], stdout, stderr)
	case "init":
		return runVerifierInit(args[1:], stdout, stderr)
	}
	return usagef("gavel verifier --help", "verifier: unknown subcommand %q%s", args[0], didYouMean(args[0], []string{"list", "add", "test", "init"}, ""))
}

func runVerifierList(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("verifier list", "gavel verifier list\n\nLists the verifiers compiled into gavel.", "  gavel verifier list", stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("gavel verifier list", "verifier list takes no arguments")
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tTASKS\tDEFINED AT")
	for _, v := range compiledIn() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.ID, v.Name, strings.Join(v.Tasks, ","), v.Source)
	}
	return tw.Flush()
}

var verifierIDPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

func runVerifierAdd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("verifier add", "gavel verifier add ID --task TASK --name NAME [--dir MODULE | --spec FILE]\n\nWrites a Go verifier into the verifier module around the working directory\n(a module made by gavel verifier init, or gavel's own source tree), beside\nits registry, the Go file with the line \"// gavel:registry\", and registers\nit there; or with --spec appends a declarative verifier to a spec file. Its\nonly check is required and fails on purpose until you write the real ones;\nrebuild (or pass the spec to gavel grade --spec) to grade with it.", `  gavel verifier add VER-007 --task TASK-007 --name "Invoice escalated"
  gavel verifier add VER-C02 --task TASK-C02 --name "Meeting moved" --spec specs/calendar.yaml`, stdout)
	task := fs.String("task", "", "the task `ID` the verifier binds, or a pattern: a prefix ending in * (airline/*), or all (required)")
	name := fs.String("name", "", "what success means, in a few words (required)")
	dir := fs.String("dir", "", "root of the verifier module (default: found from the working directory)")
	specFile := fs.String("spec", "", "append the verifier to this spec `FILE` (YAML, created if absent) instead of writing Go")
	// The ID may come before or after the flags.
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if id == "" && fs.NArg() > 0 {
		id = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usagef("gavel verifier add --help", "unexpected argument %q", fs.Arg(0))
	}
	hint := `gavel verifier add VER-007 --task TASK-007 --name "Invoice escalated"`
	if id == "" || *task == "" || *name == "" {
		return usagef(hint, "verifier add needs an ID, --task and --name")
	}
	if *task == "all" {
		*task = verifiers.AllTasks
	}
	if err := verifiers.CheckTaskPattern(*task); err != nil {
		return usagef(hint, "--task: %v", err)
	}
	if !verifierIDPattern.MatchString(id) {
		return usagef(hint, "verifier id %q: use letters, digits, - and _, starting with a letter", id)
	}
	if *specFile != "" {
		return addSpecVerifier(*specFile, id, *task, *name, stdout)
	}
	start := *dir
	if start == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		start = wd
	}
	m, err := findVerifierModule(start, *dir != "")
	if err != nil {
		return err
	}
	// The verifiers of the module itself, parsed, count too: the running
	// binary may not have been built from it.
	existing, err := m.registered()
	if err != nil {
		return err
	}
	if m.path == mainModule() {
		// This gavel was built from the module: what it has compiled
		// in counts too (its spec verifiers, say).
		err = checkNewVerifier(id, *task, existing)
	} else {
		err = checkClash(id, *task, existing)
	}
	if err != nil {
		return err
	}
	ident := goIdent(id)
	taken, err := packageNames(m.pkgDir)
	if err != nil {
		return err
	}
	if err := checkIdent(id, taken, ident, gradeFunc(ident)); err != nil {
		return usagef(hint, "%v", err)
	}
	file := filepath.Join(m.pkgDir, ident+".go")
	reg, err := os.ReadFile(m.registry)
	if err != nil {
		return fmt.Errorf("read registry: %w", err)
	}
	marks := markerComments(reg)
	if len(marks) != 1 {
		return fmt.Errorf("%s: want one comment line %q, found %d", m.registry, registryMarker, len(marks))
	}
	if _, err := os.Stat(file); err == nil {
		return usagef("", "%s already exists", file)
	}
	lineStart := bytes.LastIndexByte(reg[:marks[0]], '\n') + 1
	indent := reg[lineStart:marks[0]]
	var nreg []byte
	nreg = append(nreg, reg[:lineStart]...)
	nreg = append(nreg, indent...)
	nreg = append(nreg, ident+",\n"...)
	nreg = append(nreg, reg[lineStart:]...)

	if err := os.WriteFile(file, verifierStub(m.pkgName, ident, id, *task, *name), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := os.WriteFile(m.registry, nreg, 0o644); err != nil {
		os.Remove(file)
		return fmt.Errorf("write %s: %w", m.registry, err)
	}
	rel := func(p string) string {
		if r, err := filepath.Rel(m.root, p); err == nil {
			return filepath.ToSlash(r)
		}
		return p
	}
	rebuild := "go build -o " + binaryName(m.path) + " ."
	if m.path == gavelModule {
		rebuild = "make build"
	}
	fmt.Fprintf(stdout, "Created %s\nRegistered %s in %s\nNext: replace the failing TODO check in %s, record its code (go test ./%s -run TestVersions -update), then rebuild (%s).\n",
		rel(file), ident, rel(m.registry), rel(file), rel(m.pkgDir), rebuild)
	return nil
}

// gavelModule is gavel's own module path.
const gavelModule = "github.com/gavelhq/gavel"

// verifierStub returns the Go source of a new verifier in package pkg:
// one required check that fails on purpose.
func verifierStub(pkg, ident, id, task, name string) []byte {
	return []byte(fmt.Sprintf(`package %[7]s

import "github.com/gavelhq/gavel/verifiers"

// %[1]s grades %[3]s: %[4]q.
var %[1]s = &verifiers.Verifier{
	ID:      %[2]q,
	Name:    %[4]q,
	Tasks:   []string{%[3]q},
	Version: 1,
	Grade:   %[6]s,
}

// %[6]s grades %[3]s. Raise %[1]s's Version whenever a change here may
// change a check.
func %[6]s(r *verifiers.Rollout, c *verifiers.Checks) error {
	// Derive what should have happened from r.Initial, then check
	// r.Final and r.Output; gavel's verifiers/crm has examples.
	c.Require("TODO: define success condition", false, %[5]q)
	return nil
}
`, ident, id, task, name, fmt.Sprintf("Verifier %q is not implemented yet.", id), gradeFunc(ident), pkg))
}

// gradeFunc is the name of a new verifier's grade function.
func gradeFunc(ident string) string { return "grade" + strings.ToUpper(ident) }

// binaryName is the name of the gavel a module builds: gavel-BASE, BASE
// the last element of its path before a major version suffix.
func binaryName(modPath string) string {
	elems := strings.Split(modPath, "/")
	base := elems[len(elems)-1]
	if len(elems) > 1 && len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		base = elems[len(elems)-2]
	}
	return "gavel-" + base
}

// goIdent turns a verifier id into a Go identifier: VER-007 -> ver007.
func goIdent(id string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(id) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}
