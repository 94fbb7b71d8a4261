package verifiers

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "record the source hashes of verifiers whose Version was raised")

// versionsGolden records, per verifier compiled into gavel, its Version and
// the hash of its code (codeHash) at that version.
var versionsGolden = filepath.Join("testdata", "versions.golden")

const versionsHelp = "go test ./verifiers -run TestVersions -update"

// TestVersions fails when a Go verifier's code changed and its Version did
// not, so that a fingerprint (which covers the Version, not the code) never
// stays the same over a change of behaviour. -update records the hashes of
// verifiers whose Version was raised, and refuses the others.
func TestVersions(t *testing.T) {
	recorded := readVersions(t)
	next := map[string]versionRecord{}
	for _, v := range Builtin() {
		if v.Version < 1 {
			t.Errorf("%s: Version is %d; a Go verifier starts at Version: 1", v.ID, v.Version)
			continue
		}
		sum, err := codeHash(v.Grade)
		if err != nil {
			t.Errorf("%s: %v", v.ID, err)
			continue
		}
		got := versionRecord{v.Version, sum}
		old, ok := recorded[v.ID]
		next[v.ID] = got
		switch {
		case ok && got == old:
		case ok && got.hash != old.hash && got.version == old.version:
			// Refused with -update too: the old record stays.
			next[v.ID] = old
			file, _, _ := strings.Cut(v.Source, ":")
			t.Errorf("%s: its code changed (grade function at %s) but its Version is still %d: raise its Version in %s, then run %s",
				v.ID, v.Source, v.Version, file, versionsHelp)
		case ok && got.version < old.version:
			next[v.ID] = old
			t.Errorf("%s: Version %d is lower than the recorded %d: a Version only goes up", v.ID, got.version, old.version)
		case *update:
		case !ok:
			t.Errorf("%s: no recorded source hash: run %s", v.ID, versionsHelp)
		default:
			t.Errorf("%s: Version raised from %d to %d: run %s to record its code", v.ID, old.version, got.version, versionsHelp)
		}
	}
	for id := range recorded {
		if _, ok := next[id]; !ok && !*update {
			t.Errorf("%s is recorded in %s but not registered: run %s", id, versionsGolden, versionsHelp)
		}
	}
	if *update {
		writeVersions(t, next)
	}
}

type versionRecord struct {
	version int
	hash    string
}

// readVersions reads the golden file: lines "ID VERSION HASH", and
// comments starting with #.
func readVersions(t *testing.T) map[string]versionRecord {
	t.Helper()
	data, err := os.ReadFile(versionsGolden)
	if os.IsNotExist(err) && *update {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]versionRecord{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		version, err := strconv.Atoi(f[min(1, len(f)-1)])
		if len(f) != 3 || err != nil {
			t.Fatalf("%s:%d: want ID VERSION HASH, got %q", versionsGolden, n, line)
		}
		out[f[0]] = versionRecord{version, f[2]}
	}
	return out
}

func writeVersions(t *testing.T, recs map[string]versionRecord) {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Each Go verifier's Version and the sha256 of its code at that version\n")
	fmt.Fprintf(&b, "# (its grade function and the declarations of its file that it uses).\n")
	fmt.Fprintf(&b, "# Raise the Version with the code, then run: %s\n", versionsHelp)
	ids := make([]string, 0, len(recs))
	for id := range recs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, "%s %d %s\n", id, recs[id].version, recs[id].hash)
	}
	if err := os.WriteFile(versionsGolden, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// codeHash returns the hex sha256 of a verifier's code: its grade function,
// which must be a function declared in this package, and, transitively,
// every declaration of the same file that the code names (functions,
// methods, constants, variables and types), each printed by go/printer
// without comments, in name order. A name is matched by its text alone, so
// a local variable that shares a declaration's name brings it in too:
// the hash may cover more than the code uses, never less. Declarations of
// other files (the package's shared helpers) are not covered.
func codeHash(grade func(*Rollout, *Checks) error) (string, error) {
	fn := runtime.FuncForPC(reflect.ValueOf(grade).Pointer())
	if fn == nil {
		return "", fmt.Errorf("grade function not found")
	}
	file, _ := fn.FileLine(fn.Entry())
	name := fn.Name()[strings.LastIndexByte(fn.Name(), '.')+1:]
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path.Base(file), nil, parser.SkipObjectResolution)
	if err != nil {
		return "", err
	}

	// Every top-level declaration of the file, by name; methods under
	// their method name.
	decls := map[string][]ast.Node{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			decls[d.Name.Name] = append(decls[d.Name.Name], d)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						decls[n.Name] = append(decls[n.Name], s)
					}
				case *ast.TypeSpec:
					decls[s.Name.Name] = append(decls[s.Name.Name], s)
				}
			}
		}
	}
	root, ok := decls[name]
	if !ok {
		return "", fmt.Errorf("grade function %s is not declared in %s: declare it as a named function (func gradeX(r *Rollout, c *Checks) error)", fn.Name(), path.Base(file))
	}

	// Walk the names the code uses, from the grade function.
	seen := map[ast.Node]string{}
	queue := slices.Clone(root)
	for _, n := range root {
		seen[n] = name
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		ast.Inspect(n, func(x ast.Node) bool {
			id, ok := x.(*ast.Ident)
			if !ok {
				return true
			}
			for _, d := range decls[id.Name] {
				if _, ok := seen[d]; !ok {
					seen[d] = id.Name
					queue = append(queue, d)
				}
			}
			return true
		})
	}

	type printed struct{ name, text string }
	var out []printed
	for n, declName := range seen {
		var b bytes.Buffer
		if err := printer.Fprint(&b, fset, n); err != nil {
			return "", err
		}
		out = append(out, printed{declName, b.String()})
	}
	slices.SortFunc(out, func(a, b printed) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.text, b.text)
	})
	h := sha256.New()
	for _, p := range out {
		fmt.Fprintf(h, "%s %d\n%s\n", p.name, len(p.text), p.text)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
