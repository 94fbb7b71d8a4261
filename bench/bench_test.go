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
// whole dataset. input=parquet-tasks is tasks mode: initial states come
// once per task from a tasks table.
func BenchmarkGrade(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	for _, rows := range []int{20000} {
		for _, in := range []struct {
			name  string
			ext   string
			tasks bool
		}{
			{"parquet", ".parquet", false},
			{"parquet-tasks", ".parquet", true},
			{"jsonl.zst", ".jsonl.zst", false},
		} {
			ds, err := DatasetConfig{Rollouts: rows, Ext: in.ext, TasksMode: in.tasks}.Generate(ctx, dir)
			if err != nil {
				b.Fatal(err)
			}
			for _, workers := range []int{1, 2} {
				name := fmt.Sprintf("input=%s/workers=%d/rows=%dk", in.name, workers, rows/1000)
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

// BenchmarkPeers runs the in-process peers on the same Parquet dataset as
// BenchmarkGrade, so that one -bench run compares them: floor reads and
// touches both state columns (the project's page reader, one consumer);
// jsonmaps grades VER-002 and VER-004 with encoding/json into maps. The
// out-of-process peers (DuckDB, Python, pqarrow) run under make bench.
func BenchmarkPeers(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	for _, rows := range []int{20000} {
		ds, err := DatasetConfig{Rollouts: rows}.Generate(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		zst, err := DatasetConfig{Rollouts: rows, Ext: ".jsonl.zst"}.Generate(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		peers := []struct {
			name    string
			workers int
			ds      *Dataset
			run     func() (Report, error)
		}{
			{"floor-parquet", 1, ds, func() (Report, error) { return ParquetFloor(ds.Path, 0) }},
			{"floor-jsonl.zst", 1, zst, func() (Report, error) { return JSONLFloor(zst.Path) }},
			{"jsonmaps", 2, ds, func() (Report, error) { return GradeMaps(ds.Path, 2) }},
		}
		for _, p := range peers {
			b.Run(fmt.Sprintf("peer=%s/workers=%d/rows=%dk", p.name, p.workers, rows/1000), func(b *testing.B) {
				b.SetBytes(p.ds.Bytes)
				var n int64
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for i := 0; i < b.N; i++ {
					rep, err := p.run()
					if err != nil {
						b.Fatal(err)
					}
					n += rep.Rows
				}
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rollouts/s")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(n), "allocs/rollout")
			})
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

// TestPeersAgree checks the in-process peers on a small dataset: the
// floors read every row, and the maps grader's pass counts are the
// generator's.
func TestPeersAgree(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	ds, err := DatasetConfig{Rollouts: 500}.Generate(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	zst, err := DatasetConfig{Rollouts: 500, Ext: ".jsonl.zst"}.Generate(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	floor, err := ParquetFloor(ds.Path, 64)
	if err != nil {
		t.Fatal(err)
	}
	if floor.Rows != 500 || floor.Bytes == 0 {
		t.Errorf("ParquetFloor = %d rows, %d bytes, want 500 rows and some bytes", floor.Rows, floor.Bytes)
	}
	lines, err := JSONLFloor(zst.Path)
	if err != nil {
		t.Fatal(err)
	}
	if lines.Rows != 500 {
		t.Errorf("JSONLFloor = %d rows, want 500", lines.Rows)
	}
	maps, err := GradeMaps(ds.Path, 2)
	if err != nil {
		t.Fatal(err)
	}
	for task, v := range map[string]string{"TASK-002": "VER-002", "TASK-004": "VER-004"} {
		want, _ := ds.VerifierPassed(v)
		if got := maps.Passed[task]; got != want {
			t.Errorf("GradeMaps passed %s = %d, want %d", task, got, want)
		}
	}
}
