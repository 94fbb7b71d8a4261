package columnar_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pgo "github.com/parquet-go/parquet-go"
	pgenc "github.com/parquet-go/parquet-go/encoding"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
)

// BenchmarkNestedRead compares three ways of reading every column of a
// Parquet file of nested states (gen's unique worlds, TASK-002 and
// TASK-004, --nested): pqarrow's record batches, which gavel reads today;
// arrow-go's column chunk readers, levels and values without assembling
// anything; and parquet-go's pages, levels and values as each page
// decodes them. It is the choice of item 2 of the state view's work
// (nested columns indexed without JSON): what reading the levels and
// values costs before anything is built from them. Each reports its bytes
// as the file's decompressed value bytes, so MB/s compare.
//
//	go test -run '^$' -bench NestedRead -benchtime 3x -count 3 ./columnar/
func BenchmarkNestedRead(b *testing.B) {
	path := filepath.Join(b.TempDir(), "nested.parquet")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	cfg := gen.Config{Format: columnar.DatasetParquet, Rollouts: 20000, Seed: 1, UniqueWorlds: true, Nested: true,
		Tasks: []string{"TASK-002", "TASK-004"}}
	if _, err := gen.Generate(context.Background(), cfg, gen.Outputs{Data: f}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	size := readArrowColumns(b, path) // string value bytes, for MB/s
	b.Run("pqarrow", func(b *testing.B) {
		for b.Loop() {
			rdr, err := file.OpenParquetFile(path, false)
			if err != nil {
				b.Fatal(err)
			}
			fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.NewGoAllocator())
			if err != nil {
				b.Fatal(err)
			}
			rr, err := fr.GetRecordReader(context.Background(), nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			for rr.Next() {
			}
			if err := rr.Err(); err != nil {
				b.Fatal(err)
			}
			rr.Release()
			rdr.Close()
		}
		b.SetBytes(size)
	})
	b.Run("arrow-column-readers", func(b *testing.B) {
		for b.Loop() {
			readArrowColumns(b, path)
		}
		b.SetBytes(size)
	})
	b.Run("parquet-go-pages", func(b *testing.B) {
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			st, _ := f.Stat()
			pf, err := pgo.OpenFile(f, st.Size(), pgo.SkipPageIndex(true), pgo.SkipBloomFilters(true))
			if err != nil {
				b.Fatal(err)
			}
			for _, rg := range pf.RowGroups() {
				for _, cc := range rg.ColumnChunks() {
					pages := cc.Pages()
					for {
						pg, err := pages.ReadPage()
						if err == io.EOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
						_, _ = pg.DefinitionLevels(), pg.RepetitionLevels()
						if d := pg.Data(); d.Kind() == pgenc.ByteArray {
							d.ByteArray()
						}
						pgo.Release(pg)
					}
					pages.Close()
				}
			}
			f.Close()
		}
		b.SetBytes(size)
	})
}

// readArrowColumns reads the levels and values of every column of the
// Parquet file at path with arrow-go's column chunk readers, and returns
// the bytes of its string values.
func readArrowColumns(b *testing.B, path string) (size int64) {
	const n = 4096
	def, rep := make([]int16, n), make([]int16, n)
	ba := make([]parquet.ByteArray, n)
	i64, i32 := make([]int64, n), make([]int32, n)
	f64, bl := make([]float64, n), make([]bool, n)
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		b.Fatal(err)
	}
	defer rdr.Close()
	for rg := range rdr.NumRowGroups() {
		rgr := rdr.RowGroup(rg)
		for c := range rgr.NumColumns() {
			cr, err := rgr.Column(c)
			if err != nil {
				b.Fatal(err)
			}
			for {
				var total int64
				var got int
				switch r := cr.(type) {
				case *file.ByteArrayColumnChunkReader:
					total, got, err = r.ReadBatch(n, ba, def, rep)
					for _, v := range ba[:got] {
						size += int64(len(v))
					}
				case *file.Int64ColumnChunkReader:
					total, _, err = r.ReadBatch(n, i64, def, rep)
				case *file.Int32ColumnChunkReader:
					total, _, err = r.ReadBatch(n, i32, def, rep)
				case *file.Float64ColumnChunkReader:
					total, _, err = r.ReadBatch(n, f64, def, rep)
				case *file.BooleanColumnChunkReader:
					total, _, err = r.ReadBatch(n, bl, def, rep)
				default:
					b.Fatalf("column %d: no case for %T", c, cr)
				}
				if err != nil {
					b.Fatal(err)
				}
				if total == 0 {
					break
				}
			}
		}
	}
	return size
}
