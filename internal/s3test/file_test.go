package s3test_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "gocloud.dev/blob/fileblob"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// TestFileURLInputs grades file:// URLs (objects, a prefix, a glob):
// the results are those of the same files given as paths, byte for byte,
// with the URLs for the paths in the source column and the manifest.
func TestFileURLInputs(t *testing.T) {
	dir := t.TempDir()
	pq := genParquet(t, dir, 1000, 250)
	jl := filepath.Join(dir, "rollouts.jsonl")
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "badrows", "input.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jl, data, 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("skipped"), 0o644)
	cfg := pipeline.Config{Workers: 2, Format: columnar.FormatJSONL}
	want := gradeLocal(t, []string{jl, pq}, cfg)
	for _, tt := range []struct {
		name   string
		inputs []string
	}{
		{"objects", []string{"file://" + jl, "file://" + pq}},
		{"prefix", []string{"file://" + dir + "/"}},
		{"glob", []string{"file://" + dir + "/rollouts.*"}},
		{"localhost", []string{"file://localhost" + jl, "file://localhost" + pq}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg
			c.Inputs, c.Out, c.Verifiers = tt.inputs, filepath.Join(t.TempDir(), "out"), crm.Verifiers()
			if _, err := pipeline.Run(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			sameParts(t, want, c.Out, jl, "file://"+jl, pq, "file://"+pq)
			m, _ := os.ReadFile(filepath.Join(c.Out, "manifest.json"))
			for _, p := range []string{jl, pq} {
				if !bytes.Contains(m, []byte(`"path": "file://`+p+`"`)) {
					t.Errorf("the manifest does not name file://%s:\n%s", p, m)
				}
			}
		})
	}

	// A file URL with a host names no local file: refused, by name.
	_, _, err = inputs.Inputs([]string{"file://tmp" + jl}, "")
	if err == nil || !strings.Contains(err.Error(), "file://tmp"+jl) || !strings.Contains(err.Error(), "file:///path") {
		t.Errorf("Inputs(file://tmp%s) = %v, want an error naming it and the form of a file URL", jl, err)
	}
}

// TestFileURLOut grades into --out file:///dir: every file of the results
// is that of a run into the directory given as a path, byte for byte
// (summary.json but for its timings).
func TestFileURLOut(t *testing.T) {
	dir := t.TempDir()
	pq := genParquet(t, dir, 1000, 250)
	cfg := pipeline.Config{Workers: 2, Format: columnar.FormatJSONL, RowGroupsPerUnit: 2}
	want := gradeLocal(t, []string{pq}, cfg)
	out := filepath.Join(t.TempDir(), "out")
	cfg.Inputs, cfg.Out, cfg.Verifiers = []string{pq}, "file://"+out, crm.Verifiers()
	if _, err := pipeline.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	w, g := treeOf(t, want), treeOf(t, out)
	if len(w) == 0 {
		t.Fatal("the local run wrote nothing")
	}
	for name, a := range w {
		b, ok := g[name]
		switch {
		case !ok:
			t.Errorf("%s: missing from the file:// results", name)
		case name == "summary.json":
			if strip(a) != strip(b) {
				t.Errorf("summary.json differs:\n%s\nwant\n%s", b, a)
			}
		case !bytes.Equal(a, b):
			t.Errorf("%s differs from the local run's", name)
		}
	}
	for name := range g {
		if _, ok := w[name]; !ok {
			t.Errorf("%s: in the file:// results only", name)
		}
	}
}

// treeOf reads every file under dir, by slash-separated relative name.
func treeOf(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return files
}
