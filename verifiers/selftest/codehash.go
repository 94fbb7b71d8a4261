package selftest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path"
	"reflect"
	"runtime"
	"slices"
	"strings"

	"github.com/gavelhq/gavel/verifiers"
)

// CodeHash returns the hex sha256 of a Go verifier's code: its grade
// function, which must be a named function, and, transitively,
// every declaration of the same file that the code names (functions,
// methods, constants, variables and types), each printed by go/printer
// without comments, in name order. A name is matched by its text alone, so
// a local variable that shares a declaration's name brings it in too:
// the hash may cover more than the code uses, never less. Declarations of
// other files (the package's shared helpers) are not covered.
func CodeHash(grade func(*verifiers.Rollout, *verifiers.Checks) error) (string, error) {
	if grade == nil {
		return "", errors.New("no grade function")
	}
	fn := runtime.FuncForPC(reflect.ValueOf(grade).Pointer())
	if fn == nil {
		return "", errors.New("grade function not found")
	}
	file, _ := fn.FileLine(fn.Entry())
	// The compiled path, else (built with -trimpath) the file of that
	// name in the working directory, the package's under go test.
	src, err := os.ReadFile(file)
	if err != nil {
		if src, err = os.ReadFile(path.Base(file)); err != nil {
			return "", fmt.Errorf("read the grade function's file: %w", err)
		}
	}
	return FileHash(path.Base(file), src, fn.Name()[strings.LastIndexByte(fn.Name(), '.')+1:])
}

// FileHash is CodeHash of the function called name in the Go source src
// (the file named file): `gavel verifier init` records the hash of the
// stub it writes, as the module's test will compute it.
func FileHash(file string, src []byte, name string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
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
		return "", fmt.Errorf("grade function %s is not declared in %s: declare it as a named function (func gradeX(r *verifiers.Rollout, c *verifiers.Checks) error)", name, file)
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

// GradeFile returns where grade is defined.
func GradeFile(grade func(*verifiers.Rollout, *verifiers.Checks) error) (string, int) {
	fn := runtime.FuncForPC(reflect.ValueOf(grade).Pointer())
	if fn == nil {
		return "?", 0
	}
	return fn.FileLine(fn.Entry())
}
