package cli

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/verifiers"
)

// registryMarker is the line of a verifier module's registry file above
// which `gavel verifier add` registers a new verifier.
const registryMarker = "// gavel:registry"

// verifierModule is a Go module holding Go verifiers: gavel's own source
// tree, or a module made by `gavel verifier init`. It is found by its
// registry file, the one Go file with the marker line.
type verifierModule struct {
	root     string // the directory of go.mod
	path     string // the module path
	registry string // the registry file
	pkgDir   string // the registry's package directory
	pkgName  string // its package name
}

// findVerifierModule finds the verifier module around start: the nearest
// directory at or above it with a go.mod (start itself when exact), whose
// Go files hold exactly one registry marker line.
func findVerifierModule(start string, exact bool) (*verifierModule, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return nil, err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if exact || parent == dir {
			where := "at or above " + start
			if exact {
				where = "in " + start
			}
			return nil, fmt.Errorf("no Go module %s (no go.mod): make a verifier module with gavel verifier init DIR --module PATH, or run from one", where)
		}
		dir = parent
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, err
	}
	modPath := modulePath(gomod)
	if modPath == "" {
		return nil, fmt.Errorf("%s: no module line", filepath.Join(dir, "go.mod"))
	}
	m := &verifierModule{root: dir, path: modPath}
	var found []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if p != dir {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for line := range bytes.Lines(data) {
			if bytes.HasPrefix(bytes.TrimSpace(line), []byte(registryMarker)) {
				found = append(found, p)
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("module %s (%s) has no verifier registry: no Go file with the line %q; make a verifier module with gavel verifier init DIR --module PATH", m.path, dir, registryMarker)
	case 1:
	default:
		return nil, fmt.Errorf("module %s has %d files with the line %q (%s): keep one", m.path, len(found), registryMarker, strings.Join(found, ", "))
	}
	m.registry = found[0]
	m.pkgDir = filepath.Dir(found[0])
	f, err := parser.ParseFile(token.NewFileSet(), m.registry, nil, parser.PackageClauseOnly)
	if err != nil {
		return nil, err
	}
	m.pkgName = f.Name.Name
	if m.pkgName == "verifiers" {
		return nil, fmt.Errorf("%s: the registry's package is named verifiers, which new verifiers import gavel's verifiers package as; rename it", m.registry)
	}
	return m, nil
}

// registered returns the verifiers the registry's package declares, as
// far as their source says: each composite literal of verifiers.Verifier
// with its ID and Tasks string literals, and Source its file and line.
func (m *verifierModule) registered() ([]*verifiers.Verifier, error) {
	entries, err := os.ReadDir(m.pkgDir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []*verifiers.Verifier
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(m.pkgDir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || !isVerifierType(lit.Type) {
				return true
			}
			v := &verifiers.Verifier{Source: relSource(m.root, fset.Position(lit.Pos()))}
			for _, el := range lit.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				key, _ := kv.Key.(*ast.Ident)
				if !ok || key == nil {
					continue
				}
				switch key.Name {
				case "ID":
					v.ID = stringLit(kv.Value)
				case "Tasks":
					if tl, ok := kv.Value.(*ast.CompositeLit); ok {
						for _, t := range tl.Elts {
							if s := stringLit(t); s != "" {
								v.Tasks = append(v.Tasks, s)
							}
						}
					}
				}
			}
			if v.ID != "" {
				out = append(out, v)
			}
			return true
		})
	}
	return out, nil
}

func isVerifierType(t ast.Expr) bool {
	sel, ok := t.(*ast.SelectorExpr)
	if ok {
		return sel.Sel.Name == "Verifier"
	}
	id, ok := t.(*ast.Ident)
	return ok && id.Name == "Verifier"
}

func stringLit(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return s
}

func relSource(root string, pos token.Position) string {
	file := pos.Filename
	if r, err := filepath.Rel(root, file); err == nil {
		file = filepath.ToSlash(r)
	}
	return file + ":" + strconv.Itoa(pos.Line)
}

// modulePath returns the path of go.mod's module line ("" when none).
func modulePath(gomod []byte) string {
	for line := range bytes.Lines(gomod) {
		rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("module"))
		if !ok || len(rest) == 0 || (rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		if i := bytes.Index(rest, []byte("//")); i >= 0 {
			rest = rest[:i]
		}
		p := string(bytes.TrimSpace(rest))
		if u, err := strconv.Unquote(p); err == nil {
			p = u
		}
		return p
	}
	return ""
}
