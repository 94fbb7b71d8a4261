package cli

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
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
	markerAt int    // the offset of its marker comment
	pkgDir   string // the registry's package directory
	pkgName  string // its package name
}

// nearestModule returns the directory and module path of the nearest
// go.mod at or above start (start itself when exact).
func nearestModule(start string, exact bool) (root, modPath string, err error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", "", err
	}
	for {
		gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			p := modulePath(gomod)
			if p == "" {
				return "", "", fmt.Errorf("%s: no module line", filepath.Join(dir, "go.mod"))
			}
			return dir, p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
		parent := filepath.Dir(dir)
		if exact || parent == dir {
			where := "at or above " + start
			if exact {
				where = "in " + start
			}
			return "", "", fmt.Errorf("no Go module %s (no go.mod): make a verifier module with gavel verifier init DIR --module PATH, or run from one", where)
		}
		dir = parent
	}
}

// findVerifierModule finds the verifier module around start: the nearest
// module at or above it (start itself when exact) whose Go files hold a
// registry marker line, going up past modules that hold none (a nested
// module of gavel's tree, say).
func findVerifierModule(start string, exact bool) (*verifierModule, error) {
	root, modPath, err := nearestModule(start, exact)
	if err != nil {
		return nil, err
	}
	none := fmt.Errorf("module %s (%s) has no verifier registry: no Go file with the line %q; make a verifier module with gavel verifier init DIR --module PATH", modPath, root, registryMarker)
	for {
		m, err := registryOf(root, modPath)
		if !errors.Is(err, errNoRegistry) {
			return m, err
		}
		parent := filepath.Dir(root)
		if exact || parent == root {
			return nil, none
		}
		if root, modPath, err = nearestModule(parent, false); err != nil {
			return nil, none // no module above
		}
	}
}

var errNoRegistry = errors.New("no verifier registry")

// registryOf finds the registry of the module at root: the one Go file
// (tests aside) with a comment line that starts with the marker.
func registryOf(root, modPath string) (*verifierModule, error) {
	m := &verifierModule{root: root, path: modPath}
	type hit struct {
		file string
		at   int
	}
	var found []hit
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != root {
				return filepath.SkipDir // unreadable: not where a registry is kept
			}
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if p != root {
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
		for _, at := range markerComments(data) {
			found = append(found, hit{p, at})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("looking for the verifier registry of module %s: %w", modPath, err)
	}
	switch len(found) {
	case 0:
		return nil, errNoRegistry
	case 1:
	default:
		var where []string
		for _, h := range found {
			where = append(where, h.file)
		}
		return nil, fmt.Errorf("module %s has %d comment lines %q (%s): keep one, in the registry", modPath, len(found), registryMarker, strings.Join(where, ", "))
	}
	m.registry, m.markerAt = found[0].file, found[0].at
	m.pkgDir = filepath.Dir(m.registry)
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

// markerComments returns the offsets of the line comments of src, a Go
// file, that start with the registry marker and begin their line (after
// indentation): comments only, never text in a string.
func markerComments(src []byte) []int {
	if !bytes.Contains(src, []byte(registryMarker)) {
		return nil
	}
	var s scanner.Scanner
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	s.Init(file, src, nil, scanner.ScanComments)
	var out []int
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok != token.COMMENT || !strings.HasPrefix(lit, registryMarker) {
			continue
		}
		at := file.Offset(pos)
		lineStart := bytes.LastIndexByte(src[:at], '\n') + 1
		if len(bytes.TrimLeft(src[lineStart:at], " \t")) == 0 {
			out = append(out, at)
		}
	}
}

// packageNames returns the names declared at package scope in the Go files
// of dir, tests included, and the names its files import packages as: what
// a new declaration must not be called.
func packageNames(dir string) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := p[strings.LastIndexByte(p, '/')+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = true
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							names[n.Name] = true
						}
					case *ast.TypeSpec:
						names[sp.Name.Name] = true
					}
				}
			}
		}
	}
	return names, nil
}

// checkIdent refuses the identifiers of a new verifier (its variable and
// its grade function) that are not Go identifiers a package may declare,
// or that taken holds already.
func checkIdent(id string, taken map[string]bool, idents ...string) error {
	for _, ident := range idents {
		switch {
		case ident == "" || !token.IsIdentifier(ident) || token.IsKeyword(ident):
			return fmt.Errorf("verifier id %q gives the Go name %q, which is not one a verifier can have: choose another id", id, ident)
		case ident == "init" || ident == "main" || taken[ident]:
			return fmt.Errorf("verifier id %q gives the Go name %q, which the package already uses: choose another id", id, ident)
		}
	}
	return nil
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
