package verifiers

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// forbiddenImport reports whether path is a package that verifiers may not
// depend on: verifiers read states through the state view
// (columnar/jsonview), never through the readers and writers of columnar
// or the Arrow and Parquet libraries behind them, and they leave judging
// (package judge, its client and cache) to the pipeline.
func forbiddenImport(module, path string) bool {
	return path == module+"/columnar" || path == module+"/judge" ||
		path == "github.com/apache/arrow-go" || strings.HasPrefix(path, "github.com/apache/arrow-go/") ||
		path == "github.com/parquet-go" || strings.HasPrefix(path, "github.com/parquet-go/")
}

// TestImportDirection checks that neither verifiers, nor any package below
// it, nor what they import within the module, imports columnar, arrow-go or
// parquet-go, directly or not. Test files are not counted.
func TestImportDirection(t *testing.T) {
	root, module := moduleRoot(t)
	var roots []string
	err := filepath.WalkDir(filepath.Join(root, "verifiers"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() && d.Name() == "verifiertest" {
			// Imported by verifiers' tests only: it reads fixtures as
			// gavel grade reads rows, through pipeline.
			return filepath.SkipDir
		}
		if d.IsDir() {
			rel, _ := filepath.Rel(root, path)
			roots = append(roots, module+"/"+filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(roots) < 2 {
		t.Fatalf("found packages %v, want verifiers and those below it", roots)
	}
	// via[p] is the package through which p was first reached.
	via := map[string]string{}
	var visit func(pkg, from string)
	visit = func(pkg, from string) {
		if _, seen := via[pkg]; seen {
			return
		}
		via[pkg] = from
		if forbiddenImport(module, pkg) {
			chain := []string{pkg}
			for p := from; p != ""; p = via[p] {
				chain = append(chain, p)
			}
			for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
				chain[i], chain[j] = chain[j], chain[i]
			}
			t.Errorf("%s depends on %s: %s", chain[0], pkg, strings.Join(chain, " -> "))
			return
		}
		if pkg != module && !strings.HasPrefix(pkg, module+"/") {
			return // outside the module: only its path is checked
		}
		dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")))
		p, err := build.ImportDir(dir, 0)
		if _, none := err.(*build.NoGoError); none {
			return
		}
		if err != nil {
			t.Errorf("read %s: %v", pkg, err)
			return
		}
		for _, imp := range p.Imports {
			visit(imp, pkg)
		}
	}
	for _, r := range roots {
		visit(r, "")
	}
	if _, ok := via[module+"/columnar/jsonview"]; !ok {
		t.Errorf("columnar/jsonview not reached from verifiers: the walk is broken")
	}
}

// moduleRoot returns the directory of the module holding this package and
// the module's path.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return dir, strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	t.Fatal("go.mod names no module")
	return "", ""
}
