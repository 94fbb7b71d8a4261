package columnar

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// benchRollout is the benchmark's row: two ~5 KB JSON states, ids and a
// little metadata, as rollout datasets hold them.
type benchRollout struct {
	RolloutID string `parquet:"rollout_id"`
	TaskID    string `parquet:"task_id,dict"`
	Final     string `parquet:"final_state,optional"`
	Initial   string `parquet:"initial_state,optional"`
	Output    string `parquet:"output,optional"`
	Model     string `parquet:"model,dict"`
	Sample    int64  `parquet:"sample"`
}

// benchState returns JSON text of about size bytes: a table of records with
// varied numbers and words, compressible about as much as real states.
func benchState(rng *rand.Rand, size int) string {
	words := []string{"alpha", "beta", "gamma", "delta", "open", "closed", "pending", "north", "south", "acme", "globex", "initech"}
	var sb strings.Builder
	sb.WriteString(`{"accounts":[`)
	for i := 0; sb.Len() < size-2; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":"A%06d","name":"%s %s","stage":"%s","amount":%d.%02d,"region":"%s"}`,
			rng.IntN(1_000_000), words[rng.IntN(len(words))], words[rng.IntN(len(words))],
			words[rng.IntN(len(words))], rng.IntN(100_000), rng.IntN(100), words[rng.IntN(len(words))])
	}
	sb.WriteString("]}")
	return sb.String()
}

// writeBenchParquet writes rows rollouts to path (zstd, 5000-row row
// groups) and returns the bytes of state text written.
func writeBenchParquet(b *testing.B, path string, rows int) int64 {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := parquet.NewGenericWriter[benchRollout](f, parquet.Compression(&parquet.Zstd), parquet.MaxRowsPerRowGroup(5000))
	rng := rand.New(rand.NewPCG(1, 2))
	var stateBytes int64
	buf := make([]benchRollout, 0, 100)
	for i := range rows {
		r := benchRollout{
			RolloutID: fmt.Sprintf("run-%08d", i),
			TaskID:    fmt.Sprintf("task-%03d", i%200),
			Final:     benchState(rng, 5000),
			Initial:   benchState(rng, 5000),
			Output:    "done",
			Model:     "model-a",
			Sample:    int64(i % 8),
		}
		stateBytes += int64(len(r.Final) + len(r.Initial))
		if buf = append(buf, r); len(buf) == cap(buf) || i == rows-1 {
			if _, err := w.Write(buf); err != nil {
				b.Fatal(err)
			}
			buf = buf[:0]
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return stateBytes
}

// BenchmarkParquetRead reads a 20k-row file of two ~5 KB zstd-compressed
// state columns end to end, releasing each batch, and reports rows/s,
// state bytes/s and allocations per row. mode=zerocopy is the reader as
// built (cells point into retained pages). mode=copy adds what the rejected
// design costs: that design released each page as soon as it was consumed
// and copied every byte-array value into the batch's arena, so that cells
// pointed into the arena. The reader no longer has that mode; copyStrings
// performs the same copy, one value at a time into a reused arena, on the
// batches of the reader as built.
func BenchmarkParquetRead(b *testing.B) {
	const rows = 20_000
	path := filepath.Join(b.TempDir(), "bench.parquet")
	stateBytes := writeBenchParquet(b, path, rows)
	for _, mode := range []string{"zerocopy", "copy"} {
		for _, size := range []int{256, 1024} {
			b.Run(fmt.Sprintf("mode=%s/batch=%d", mode, size), func(b *testing.B) {
				b.SetBytes(stateBytes)
				b.ReportAllocs()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				b.ResetTimer()
				for b.Loop() {
					r, err := OpenParquet(path, Options{})
					if err != nil {
						b.Fatal(err)
					}
					var arena []byte
					n := 0
					for {
						batch, err := r.Next(size)
						if err == io.EOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
						n += len(batch.Rows)
						if mode == "copy" {
							arena = copyStrings(arena[:0], batch)
						}
						batch.Release()
					}
					if n != rows {
						b.Fatalf("read %d rows, want %d", n, rows)
					}
					r.Close()
				}
				b.StopTimer()
				runtime.ReadMemStats(&after)
				total := float64(rows) * float64(b.N)
				b.ReportMetric(total/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/total, "allocs/row")
			})
		}
	}
}

// copyStrings appends the bytes of every string cell of b to arena and
// points the cells at the copies, as the rejected design's reader did.
func copyStrings(arena []byte, b *Batch) []byte {
	copyCell := func(c *Cell) {
		if c.Kind != CellString {
			return
		}
		start := len(arena)
		arena = append(arena, c.Data...)
		c.Data = arena[start:len(arena):len(arena)]
		c.Stable = false
	}
	for i := range b.Rows {
		row := &b.Rows[i]
		copyCell(&row.ID)
		copyCell(&row.Task)
		copyCell(&row.Final)
		copyCell(&row.Initial)
		copyCell(&row.Output)
		copyCell(&row.Log)
		for j := range row.Meta {
			copyCell(&row.Meta[j])
		}
	}
	return arena
}
