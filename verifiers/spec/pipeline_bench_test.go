package spec_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/crm"
	"github.com/gavelhq/gavel/verifiers/spec"
)

// BenchmarkGradeVER002 grades the same generated TASK-002 rollouts end to
// end (read JSON Lines, parse states, grade, write results) with the Go
// VER-002 and with VER-002 written as a spec in place of it, in one run.
func BenchmarkGradeVER002(b *testing.B) {
	dir := b.TempDir()
	input := filepath.Join(dir, "task002.jsonl")
	writeTask002(b, input, 20000)
	rows := countLines(b, input)

	var goOnly, withoutGo []*verifiers.Verifier
	for _, v := range crm.Verifiers() {
		goOnly = append(goOnly, v)
		if v.ID != "VER-002" {
			withoutGo = append(withoutGo, v)
		}
	}
	impls := []struct {
		name string
		vs   []*verifiers.Verifier
	}{{"impl=go", goOnly}}
	for _, sp := range []struct{ name, file string }{
		{"impl=spec-cel", "testdata/ver002.yaml"},
		{"impl=spec-let", "testdata/ver002_let.yaml"},
	} {
		vs, err := spec.Load([]string{sp.file})
		if err != nil {
			b.Fatal(err)
		}
		impls = append(impls, struct {
			name string
			vs   []*verifiers.Verifier
		}{sp.name, append(append([]*verifiers.Verifier(nil), withoutGo...), vs...)})
	}
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			out := filepath.Join(dir, impl.name)
			for b.Loop() {
				os.RemoveAll(out)
				res, err := pipeline.Run(context.Background(), pipeline.Config{
					Inputs: []string{input}, Out: out, Format: columnar.FormatJSONL,
					Verifiers: impl.vs, Workers: 2,
				})
				if err != nil {
					b.Fatal(err)
				}
				if res.ErrorRows != 0 {
					b.Fatalf("%d rows have status error", res.ErrorRows)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rollouts/s")
		})
	}
}

// writeTask002 generates a CRM dataset and writes its TASK-002 rows.
func writeTask002(tb testing.TB, path string, n int) {
	var data bytes.Buffer
	cfg := gen.Config{Rollouts: n, Seed: 7, Format: columnar.DatasetJSONL}
	if _, err := gen.Generate(context.Background(), cfg, gen.Outputs{Data: &data}); err != nil {
		tb.Fatal(err)
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(&data)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`"task_id":"TASK-002"`)) {
			out.Write(sc.Bytes())
			out.WriteByte('\n')
		}
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func countLines(tb testing.TB, path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}
