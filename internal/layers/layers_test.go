package layers

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/gavelhq/gavel"

// row is a line of the map: a layer, and a package or a pattern ending in
// "/..." (the package and those below it).
type row struct {
	layer int
	pkg   string
}

var tableRow = regexp.MustCompile("^\\| *([0-9]+) *\\| *`([^`]+)` *\\|")

// readMap returns the rows of the table between the layers markers of
// docs/contributing.md.
func readMap(t *testing.T, path string) []row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []row
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.Contains(line, "<!-- layers: begin -->"):
			in = true
		case strings.Contains(line, "<!-- layers: end -->"):
			in = false
		case in && strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| Layer"):
			m := tableRow.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("%s:%d: not a row of the map: %s", path, n, line)
			}
			layer, _ := strconv.Atoi(m[1])
			rows = append(rows, row{layer, m[2]})
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no map between <!-- layers: begin --> and <!-- layers: end -->", path)
	}
	return rows
}

// layerOf returns the layer the map gives pkg (a path within the module),
// or -1.
func layerOf(rows []row, pkg string) int {
	best, layer := -1, -1
	for _, r := range rows {
		switch {
		case r.pkg == pkg:
			return r.layer
		case strings.HasSuffix(r.pkg, "/..."):
			base := strings.TrimSuffix(r.pkg, "/...")
			if (pkg == base || strings.HasPrefix(pkg, base+"/")) && len(base) > best {
				best, layer = len(base), r.layer
			}
		}
	}
	return layer
}

// TestLayers lists every package of the module with its imports (go list)
// and fails for a package the map lacks and for an import of a package
// of the same or a higher layer.
func TestLayers(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	rows := readMap(t, filepath.Join(root, "docs", "contributing.md"))
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var problems []string
	n := 0
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		mine := layerOf(rows, name)
		if mine < 0 {
			problems = append(problems, fmt.Sprintf("%s is not in the map of docs/contributing.md", name))
			continue
		}
		for _, imp := range p.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			theirs := layerOf(rows, dep)
			if theirs >= mine {
				problems = append(problems, fmt.Sprintf("%s (layer %d) imports %s (layer %d): a package imports only lower layers", name, mine, dep, theirs))
			}
		}
	}
	if n < 10 {
		t.Fatalf("go list found %d packages", n)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestLayersCatches checks the check: an import of a higher layer, or of
// the same layer, is found.
func TestLayersCatches(t *testing.T) {
	rows := []row{{1, "a"}, {2, "b"}, {2, "c/..."}}
	for _, tt := range []struct {
		pkg, dep string
		bad      bool
	}{
		{"b", "a", false},
		{"a", "b", true},
		{"b", "c/d", true},
		{"c/d", "a", false},
	} {
		if got := layerOf(rows, tt.dep) >= layerOf(rows, tt.pkg); got != tt.bad {
			t.Errorf("%s imports %s: flagged %v, want %v", tt.pkg, tt.dep, got, tt.bad)
		}
	}
	if layerOf(rows, "x") != -1 {
		t.Error("a package not in the map has a layer")
	}
}
