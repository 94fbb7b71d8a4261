package columnar

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pqa "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// readerCell is a Cell as tests compare it.
type readerCell struct {
	Kind CellKind
	Text string
}

// readerRow is a Row as tests compare it.
type readerRow struct {
	Index, Offset                         int64
	ID, Task, Final, Initial, Output, Log readerCell
	Meta                                  []readerCell
}

func snapCell(c Cell) readerCell { return readerCell{Kind: c.Kind, Text: string(c.Data)} }

func snapRow(r *Row) readerRow {
	out := readerRow{
		Index: r.Index, Offset: r.Offset,
		ID: snapCell(r.ID), Task: snapCell(r.Task), Final: snapCell(r.Final),
		Initial: snapCell(r.Initial), Output: snapCell(r.Output), Log: snapCell(r.Log),
	}
	for _, c := range r.Meta {
		out.Meta = append(out.Meta, snapCell(c))
	}
	return out
}

// Cell constructors for expectations.
func nullC() readerCell            { return readerCell{} }
func strC(s string) readerCell     { return readerCell{Kind: CellString, Text: s} }
func numC(s string) readerCell     { return readerCell{Kind: CellNumber, Text: s} }
func boolC(b bool) readerCell      { return readerCell{Kind: CellBool, Text: strconv.FormatBool(b)} }
func optStrC(s *string) readerCell { return optC(s, strC) }
func jsonC(s string) readerCell    { return readerCell{Kind: CellJSON, Text: s} }

func optC[T any](p *T, f func(T) readerCell) readerCell {
	if p == nil {
		return nullC()
	}
	return f(*p)
}

// readAllRows reads r to the end in batches of at most max rows, checking
// batch sizes and meta names, and releases every batch.
func readAllRows(t *testing.T, r Reader, max int, metaNames []string) []readerRow {
	t.Helper()
	var rows []readerRow
	for {
		b, err := r.Next(max)
		if err == io.EOF {
			if b != nil {
				t.Fatalf("Next at EOF returned a batch")
			}
			break
		}
		if err != nil {
			t.Fatalf("Next(%d): %v", max, err)
		}
		if len(b.Rows) == 0 || len(b.Rows) > max {
			t.Fatalf("Next(%d) returned %d rows", max, len(b.Rows))
		}
		if diff := cmp.Diff(metaNames, b.MetaNames); diff != "" {
			t.Fatalf("MetaNames (-want +got):\n%s", diff)
		}
		for i := range b.Rows {
			rows = append(rows, snapRow(&b.Rows[i]))
		}
		b.Release()
	}
	if _, err := r.Next(max); err != io.EOF {
		t.Fatalf("Next after EOF: %v, want io.EOF", err)
	}
	return rows
}

// readHeldRows reads r to the end keeping every batch unreleased until all
// are read, then snapshots and releases them: any buffer reused while a
// batch still pointed into it shows as a wrong row.
func readHeldRows(t *testing.T, r Reader, max int) []readerRow {
	t.Helper()
	var held []*Batch
	for {
		b, err := r.Next(max)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next(%d): %v", max, err)
		}
		held = append(held, b)
	}
	var rows []readerRow
	for _, b := range held {
		for i := range b.Rows {
			rows = append(rows, snapRow(&b.Rows[i]))
		}
		b.Release()
	}
	return rows
}

// readConcurrently reads r to the end while another goroutine snapshots
// and releases the batches, as the pipeline's reorder stage does.
func readConcurrently(t *testing.T, r Reader, max int) []readerRow {
	t.Helper()
	ch := make(chan *Batch, 3)
	done := make(chan []readerRow)
	go func() {
		var rows []readerRow
		for b := range ch {
			for i := range b.Rows {
				rows = append(rows, snapRow(&b.Rows[i]))
			}
			b.Release()
		}
		done <- rows
	}()
	for {
		b, err := r.Next(max)
		if err == io.EOF {
			break
		}
		if err != nil {
			close(ch)
			<-done
			t.Fatalf("Next(%d): %v", max, err)
		}
		ch <- b
	}
	close(ch)
	return <-done
}

// pgoRow is a rollout row written with parquet-go, all strings optional.
type pgoRow struct {
	RolloutID *string  `parquet:"rollout_id,optional"`
	TaskID    *string  `parquet:"task_id,optional"`
	Final     *string  `parquet:"final_state,optional"`
	Initial   *string  `parquet:"initial_state,optional"`
	Output    *string  `parquet:"output,optional"`
	Log       *string  `parquet:"log,optional"`
	Model     string   `parquet:"model"`
	Sample    int64    `parquet:"sample"`
	Score     *float64 `parquet:"score,optional"`
	Passed    bool     `parquet:"passed"`
	Tags      []string `parquet:"tags,list"`
}

// pgoDictRow is pgoRow with dictionary-encoded strings.
type pgoDictRow struct {
	RolloutID *string  `parquet:"rollout_id,optional,dict"`
	TaskID    *string  `parquet:"task_id,optional,dict"`
	Final     *string  `parquet:"final_state,optional,dict"`
	Initial   *string  `parquet:"initial_state,optional,dict"`
	Output    *string  `parquet:"output,optional,dict"`
	Log       *string  `parquet:"log,optional,dict"`
	Model     string   `parquet:"model,dict"`
	Sample    int64    `parquet:"sample"`
	Score     *float64 `parquet:"score,optional"`
	Passed    bool     `parquet:"passed"`
	Tags      []string `parquet:"tags,list"`
}

var pgoMetaNames = []string{"model", "sample", "score", "passed", "tags"}

func pgoPtr[T any](v T) *T { return &v }

// testRollouts returns n rollout rows with nulls, empty strings, repeated
// values (for dictionaries) and states of varied length (for page splits).
func testRollouts(n int) []pgoRow {
	rows := make([]pgoRow, n)
	for i := range rows {
		r := &rows[i]
		if i%5 != 3 {
			r.RolloutID = pgoPtr(fmt.Sprintf("r-%03d", i))
		}
		if i%7 != 6 {
			r.TaskID = pgoPtr(fmt.Sprintf("task-%d", i%3))
		}
		r.Final = pgoPtr(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", i*37%300)))
		if i%2 == 0 {
			r.Initial = pgoPtr(`{"i":0}`)
		}
		switch i % 4 {
		case 0:
			r.Output = pgoPtr("")
		case 1:
			r.Output = pgoPtr(fmt.Sprintf("answer %d é", i))
		}
		if i%3 != 2 {
			r.Log = pgoPtr(fmt.Sprintf(`[{"step":%d}]`, i))
		}
		r.Model = fmt.Sprintf("model-%d", i%2)
		r.Sample = int64(i) - 10
		if i%4 != 1 {
			r.Score = pgoPtr(float64(i) / 4)
		}
		r.Passed = i%3 == 0
		r.Tags = []string{"a", fmt.Sprint(i)}
	}
	return rows
}

func wantRollouts(rows []pgoRow) []readerRow {
	want := make([]readerRow, len(rows))
	for i, r := range rows {
		want[i] = readerRow{
			Index: int64(i), Offset: -1,
			ID: optStrC(r.RolloutID), Task: optStrC(r.TaskID), Final: optStrC(r.Final),
			Initial: optStrC(r.Initial), Output: optStrC(r.Output), Log: optStrC(r.Log),
			Meta: []readerCell{
				strC(r.Model),
				numC(strconv.FormatInt(r.Sample, 10)),
				optC(r.Score, func(f float64) readerCell { return numC(strconv.FormatFloat(f, 'f', -1, 64)) }),
				boolC(r.Passed),
				jsonC(fmt.Sprintf(`[%q,%q]`, r.Tags[0], r.Tags[1])),
			},
		}
	}
	return want
}

func writePGO[T any](t testing.TB, path string, rows []T, opts ...parquet.WriterOption) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f, opts...)
	for len(rows) > 0 {
		// Small writes let the row group limit cut where it likes.
		k := min(len(rows), 5)
		if _, err := w.Write(rows[:k]); err != nil {
			t.Fatal(err)
		}
		rows = rows[k:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func toDictRows(rows []pgoRow) []pgoDictRow {
	out := make([]pgoDictRow, len(rows))
	for i, r := range rows {
		out[i] = pgoDictRow(r)
	}
	return out
}

func TestParquetReaderParquetGo(t *testing.T) {
	rows := testRollouts(61)
	want := wantRollouts(rows)
	small := []parquet.WriterOption{parquet.MaxRowsPerRowGroup(13), parquet.PageBufferSize(40)}
	const v1, v2 = format.DataPage, format.DataPageV2
	tests := []struct {
		name     string
		dict     bool
		opts     []parquet.WriterOption
		page     format.PageType
		codec    format.CompressionCodec
		oneGroup bool
	}{
		{"plain/uncompressed/v2", false, []parquet.WriterOption{parquet.Compression(&parquet.Uncompressed)}, v2, format.Uncompressed, false},
		{"plain/zstd/v2", false, []parquet.WriterOption{parquet.Compression(&parquet.Zstd)}, v2, format.Zstd, false},
		{"plain/snappy/v1", false, []parquet.WriterOption{parquet.Compression(&parquet.Snappy), parquet.DataPageVersion(1)}, v1, format.Snappy, false},
		{"plain/gzip/v1", false, []parquet.WriterOption{parquet.Compression(&parquet.Gzip), parquet.DataPageVersion(1)}, v1, format.Gzip, false},
		{"dict/zstd/v2", true, []parquet.WriterOption{parquet.Compression(&parquet.Zstd)}, v2, format.Zstd, false},
		{"dict/snappy/v1", true, []parquet.WriterOption{parquet.Compression(&parquet.Snappy), parquet.DataPageVersion(1)}, v1, format.Snappy, false},
		{"dict/uncompressed/v1/one-group", true, []parquet.WriterOption{parquet.DataPageVersion(1), parquet.MaxRowsPerRowGroup(1000)}, v1, format.Uncompressed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rollouts.parquet")
			opts := append(append([]parquet.WriterOption{}, small...), tt.opts...)
			if tt.dict {
				writePGO(t, path, toDictRows(rows), opts...)
			} else {
				writePGO(t, path, rows, opts...)
			}
			checkLayout(t, path, tt.page, tt.dict, tt.codec, tt.oneGroup)
			checkParquetFile(t, path, Options{}, want, pgoMetaNames)
		})
	}
}

// parquetLayout is what a test file holds, to check that a case exercises
// what it claims.
type parquetLayout struct {
	groups    int
	pages     map[format.PageType]int // over all chunks of one column
	dict      bool                    // that column has dictionary pages
	compress  format.CompressionCodec
	maxPerRow int // most data pages in one chunk
}

// layoutOf walks the page headers of column name in every row group.
func layoutOf(t testing.TB, path, name string) parquetLayout {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(strings.NewReader(string(data)), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	leaf, ok := pf.Schema().Lookup(name)
	if !ok {
		t.Fatalf("%s: no column %q", path, name)
	}
	l := parquetLayout{groups: len(pf.Metadata().RowGroups), pages: map[format.PageType]int{}}
	for _, rg := range pf.Metadata().RowGroups {
		md := rg.Columns[leaf.ColumnIndex].MetaData
		l.compress = md.Codec
		start := md.DataPageOffset
		if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
			start = md.DictionaryPageOffset
		}
		chunk := strings.NewReader(string(data[start : start+md.TotalCompressedSize]))
		dec := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(chunk))
		perChunk := 0
		for chunk.Len() > 0 {
			var h format.PageHeader
			if err := dec.Decode(&h); err != nil {
				t.Fatalf("%s: page header: %v", path, err)
			}
			l.pages[h.Type]++
			if h.Type == format.DictionaryPage {
				l.dict = true
			} else {
				perChunk++
			}
			if _, err := chunk.Seek(int64(h.CompressedPageSize), io.SeekCurrent); err != nil {
				t.Fatal(err)
			}
		}
		l.maxPerRow = max(l.maxPerRow, perChunk)
	}
	return l
}

// checkLayout fails unless the final_state column of path has the given
// data page type, dictionary use, codec, several row groups (unless
// oneGroup) and a chunk of several pages.
func checkLayout(t *testing.T, path string, page format.PageType, dict bool, codec format.CompressionCodec, oneGroup bool) {
	t.Helper()
	l := layoutOf(t, path, "final_state")
	if l.pages[page] == 0 || l.pages[format.DataPage]+l.pages[format.DataPageV2] != l.pages[page] {
		t.Errorf("data pages by type = %v, want only %v", l.pages, page)
	}
	if l.dict != dict {
		t.Errorf("dictionary pages: %v, want %v", l.dict, dict)
	}
	if l.compress != codec {
		t.Errorf("codec %v, want %v", l.compress, codec)
	}
	if (l.groups == 1) != oneGroup || l.maxPerRow < 2 {
		t.Errorf("%d row groups, at most %d pages a chunk: want several of each", l.groups, l.maxPerRow)
	}
}

// checkParquetFile reads path with several batch sizes, then holding every
// batch, and compares the rows with want.
func checkParquetFile(t *testing.T, path string, opts Options, want []readerRow, metaNames []string) {
	t.Helper()
	for _, size := range []int{1, 3, 1000} {
		r, err := OpenParquet(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Rows(); got != int64(len(want)) {
			t.Errorf("Rows() = %d, want %d", got, len(want))
		}
		got := readAllRows(t, r, size, metaNames)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("batch size %d: rows (-want +got):\n%s", size, diff)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	r, err := OpenParquet(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, readHeldRows(t, r, 4)); diff != "" {
		t.Errorf("held batches: rows (-want +got):\n%s", diff)
	}
	r.Close()
}

// writePQArrow writes rec with arrow-go's Parquet writer.
func writePQArrow(t testing.TB, path string, rec arrow.RecordBatch, props ...pqa.WriterProperty) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, pqa.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil { // closes f
		t.Fatal(err)
	}
}

// arrowRollouts builds a record of n rollouts in the shapes Arrow writers
// use: int64 ids, string, large_string and binary states, a dictionary
// metadata column, numbers of several widths and a nested column.
func arrowRollouts(t testing.TB, mem memory.Allocator, n int) (arrow.RecordBatch, []readerRow, []string) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "rollout_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "task_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "final_state", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "initial_state", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "output", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "model", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "n32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	want := make([]readerRow, n)
	for i := range n {
		w := &want[i]
		*w = readerRow{Index: int64(i), Offset: -1}
		b.Field(0).(*array.Int64Builder).Append(int64(i * 7))
		w.ID = numC(strconv.Itoa(i * 7))
		if i%4 == 3 {
			b.Field(1).(*array.StringBuilder).AppendNull()
		} else {
			s := fmt.Sprintf("task-%d", i%3)
			b.Field(1).(*array.StringBuilder).Append(s)
			w.Task = strC(s)
		}
		if i%6 == 5 {
			b.Field(2).(*array.LargeStringBuilder).AppendNull()
		} else {
			s := fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("y", i*53%400))
			b.Field(2).(*array.LargeStringBuilder).Append(s)
			w.Final = strC(s)
		}
		if i%2 == 1 {
			b.Field(3).(*array.BinaryBuilder).AppendNull()
		} else {
			s := fmt.Sprintf(`{"start":%d}`, i%5)
			b.Field(3).(*array.BinaryBuilder).Append([]byte(s))
			w.Initial = strC(s)
		}
		s := ""
		if i%3 != 0 {
			s = fmt.Sprintf("out %d", i)
		}
		b.Field(4).(*array.StringBuilder).Append(s)
		w.Output = strC(s)
		mb := b.Field(5).(*array.BinaryDictionaryBuilder)
		if i%5 == 4 {
			mb.AppendNull()
			w.Meta = append(w.Meta, nullC())
		} else {
			m := fmt.Sprintf("model-%d", i%3)
			if err := mb.AppendString(m); err != nil {
				t.Fatal(err)
			}
			w.Meta = append(w.Meta, strC(m))
		}
		lb := b.Field(6).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).Append("tag")
		w.Meta = append(w.Meta, jsonC(`["tag"]`))
		b.Field(7).(*array.Int32Builder).Append(int32(-i))
		w.Meta = append(w.Meta, numC(strconv.Itoa(-i)))
		b.Field(8).(*array.Uint32Builder).Append(math.MaxUint32 - uint32(i))
		w.Meta = append(w.Meta, numC(strconv.FormatUint(uint64(math.MaxUint32-uint32(i)), 10)))
		if i%7 == 0 {
			b.Field(9).(*array.Float32Builder).AppendNull()
			w.Meta = append(w.Meta, nullC())
		} else {
			f := float32(i) / 10
			b.Field(9).(*array.Float32Builder).Append(f)
			w.Meta = append(w.Meta, numC(strconv.FormatFloat(float64(f), 'f', -1, 32)))
		}
		if i%8 == 0 {
			b.Field(10).(*array.BooleanBuilder).AppendNull()
			w.Meta = append(w.Meta, nullC())
		} else {
			b.Field(10).(*array.BooleanBuilder).Append(i%3 == 1)
			w.Meta = append(w.Meta, boolC(i%3 == 1))
		}
	}
	return b.NewRecordBatch(), want, []string{"model", "tags", "n32", "u32", "f32", "ok"}
}

func TestParquetReaderPQArrow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec, want, metaNames := arrowRollouts(t, mem, 45)
	defer rec.Release()
	small := []pqa.WriterProperty{pqa.WithMaxRowGroupLength(4), pqa.WithDataPageSize(256), pqa.WithBatchSize(3)}
	const v1, v2 = format.DataPage, format.DataPageV2
	tests := []struct {
		name     string
		props    []pqa.WriterProperty
		page     format.PageType
		dict     bool
		codec    format.CompressionCodec
		oneGroup bool
	}{
		{"dict/snappy/v1", []pqa.WriterProperty{pqa.WithCompression(compress.Codecs.Snappy), pqa.WithDataPageVersion(pqa.DataPageV1)}, v1, true, format.Snappy, false},
		{"dict/zstd/v2", []pqa.WriterProperty{pqa.WithCompression(compress.Codecs.Zstd), pqa.WithDataPageVersion(pqa.DataPageV2)}, v2, true, format.Zstd, false},
		{"plain/gzip/v1", []pqa.WriterProperty{pqa.WithCompression(compress.Codecs.Gzip), pqa.WithDictionaryDefault(false)}, v1, false, format.Gzip, false},
		{"plain/uncompressed/v2", []pqa.WriterProperty{pqa.WithDictionaryDefault(false), pqa.WithDataPageVersion(pqa.DataPageV2)}, v2, false, format.Uncompressed, false},
		{"dict/zstd/v2/one-group", []pqa.WriterProperty{pqa.WithCompression(compress.Codecs.Zstd), pqa.WithDataPageVersion(pqa.DataPageV2), pqa.WithMaxRowGroupLength(1000)}, v2, true, format.Zstd, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rollouts.parquet")
			props := append(append([]pqa.WriterProperty{}, small...), tt.props...)
			writePQArrow(t, path, rec, props...)
			checkLayout(t, path, tt.page, tt.dict, tt.codec, tt.oneGroup)
			checkParquetFile(t, path, Options{}, want, metaNames)
			checkStable(t, path, tt.dict)
		})
	}
}

// checkStable checks that the string cells of the file's final states are
// marked Stable exactly when the column is dictionary-encoded.
func checkStable(t *testing.T, path string, dict bool) {
	t.Helper()
	r, err := OpenParquet(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	strings := 0
	for {
		b, err := r.Next(7)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Rows {
			c := &b.Rows[i].Final
			if c.Kind != CellString {
				continue
			}
			strings++
			if c.Stable != dict {
				t.Errorf("row %d: final state Stable = %v, want %v", b.Rows[i].Index, c.Stable, dict)
			}
		}
		b.Release()
	}
	if strings == 0 {
		t.Error("no string final states")
	}
}

// typesRow covers the conversions of numeric and special columns.
type typesRow struct {
	ID      int32    `parquet:"rollout_id"`
	Task    *int64   `parquet:"task_id,optional"`
	World   string   `parquet:"world_after"`
	Final   string   `parquet:"final_state"`
	F32     float32  `parquet:"f32"`
	F64     float64  `parquet:"f64"`
	U32     uint32   `parquet:"u32"`
	U64     uint64   `parquet:"u64"`
	Dec     int32    `parquet:"price,decimal(2:9)"`
	Dec64   *int64   `parquet:"big_price,optional,decimal(3:18)"`
	UUID    [16]byte `parquet:"uuid,uuid"`
	Bytes   []byte   `parquet:"blob"`
	Nested  struct{ A, B string }
	Numbers []int64 `parquet:"numbers"`
}

func TestParquetReaderTypesAndMapping(t *testing.T) {
	rows := []typesRow{
		{ID: 7, Task: pgoPtr(int64(-3)), World: `{"w":1}`, Final: `{"f":1}`, F32: 0.1, F64: 7, U32: math.MaxUint32, U64: math.MaxUint64,
			Dec: 12345, Dec64: pgoPtr(int64(-5)), UUID: [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8}, Bytes: []byte{0, 1, 255}},
		{ID: -1, World: `{"w":2}`, F32: float32(math.Inf(1)), F64: math.NaN(), Dec: 700, Dec64: pgoPtr(int64(1200)), Bytes: []byte{}},
		{ID: 0, Task: pgoPtr(int64(0)), F32: -2.5, F64: math.Inf(-1), Dec: -1, Dec64: pgoPtr(int64(math.MinInt64)), Numbers: []int64{1, 2}},
		{F64: 1e21, Dec: 0},
	}
	path := filepath.Join(t.TempDir(), "types.parquet")
	writePGO(t, path, rows, parquet.MaxRowsPerRowGroup(3))

	meta := []string{"final_state", "f32", "f64", "u32", "u64", "price", "big_price", "uuid", "blob", "Nested", "numbers"}
	base := func(i int, id, task, world, final readerCell, rest ...readerCell) readerRow {
		numbers := `[]`
		if i == 2 {
			numbers = `[1,2]`
		}
		rest = append(rest, jsonC(`{"A":"","B":""}`), jsonC(numbers))
		return readerRow{Index: int64(i), Offset: -1, ID: id, Task: task, Final: world, Meta: append([]readerCell{final}, rest...)}
	}
	want := []readerRow{
		base(0, numC("7"), numC("-3"), strC(`{"w":1}`), strC(`{"f":1}`),
			numC("0.1"), numC("7"), numC("4294967295"), numC("18446744073709551615"), numC("123.45"), numC("-0.005"),
			strC("12345678-9abc-def0-0102-030405060708"), strC("\x00\x01\xff")),
		base(1, numC("-1"), nullC(), strC(`{"w":2}`), strC(""),
			strC("+Inf"), strC("NaN"), numC("0"), numC("0"), numC("7"), numC("1.2"),
			strC("00000000-0000-0000-0000-000000000000"), strC("")),
		base(2, numC("0"), numC("0"), strC(""), strC(""),
			numC("-2.5"), strC("-Inf"), numC("0"), numC("0"), numC("-0.01"), numC("-9223372036854775.808"),
			strC("00000000-0000-0000-0000-000000000000"), strC("")),
		base(3, numC("0"), nullC(), strC(""), strC(""),
			numC("0"), numC("1000000000000000000000"), numC("0"), numC("0"), numC("0"), nullC(),
			strC("00000000-0000-0000-0000-000000000000"), strC("")),
	}
	checkParquetFile(t, path, Options{Fields: FieldNames{Final: "world_after"}}, want, meta)
}

func TestParquetReaderMissingFields(t *testing.T) {
	type slim struct {
		Task  string `parquet:"task_id"`
		Final string `parquet:"final_state"`
		Extra string `parquet:"note"`
	}
	path := filepath.Join(t.TempDir(), "slim.parquet")
	writePGO(t, path, []slim{{"a", "{}", "x"}, {"b", "[]", "y"}})
	want := []readerRow{
		{Index: 0, Offset: -1, Task: strC("a"), Final: strC("{}"), Meta: []readerCell{strC("x")}},
		{Index: 1, Offset: -1, Task: strC("b"), Final: strC("[]"), Meta: []readerCell{strC("y")}},
	}
	checkParquetFile(t, path, Options{}, want, []string{"note"})

	// Two fields read from one column; the other fields are absent.
	want = []readerRow{
		{Index: 0, Offset: -1, Task: strC("a"), Final: strC("x"), Initial: strC("x"), Meta: []readerCell{strC("{}")}},
		{Index: 1, Offset: -1, Task: strC("b"), Final: strC("y"), Initial: strC("y"), Meta: []readerCell{strC("[]")}},
	}
	checkParquetFile(t, path, Options{Fields: FieldNames{Final: "note", Initial: "note"}}, want, []string{"final_state"})
}

// TestParquetReaderBatchReuse checks that a released batch's buffers are
// reused and that reuse does not touch batches still held.
func TestParquetReaderBatchReuse(t *testing.T) {
	rows := testRollouts(40)
	want := wantRollouts(rows)
	path := filepath.Join(t.TempDir(), "reuse.parquet")
	writePGO(t, path, rows, parquet.MaxRowsPerRowGroup(6), parquet.PageBufferSize(256), parquet.Compression(&parquet.Zstd))
	r, err := OpenParquet(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	next := func() *Batch {
		t.Helper()
		b, err := r.Next(5)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b1 := next()
	b2 := next()
	b1.Release()
	b1.Release() // a second release is ignored
	b3 := next()
	if b3 != b1 {
		t.Errorf("Next after Release did not reuse the released batch")
	}
	b4 := next()
	if b4 == b1 || b4 == b2 || b4 == b3 {
		t.Errorf("Next returned a batch still in use")
	}
	var got []readerRow
	for _, b := range []*Batch{b2, b3, b4} {
		for i := range b.Rows {
			got = append(got, snapRow(&b.Rows[i]))
		}
		b.Release()
	}
	if diff := cmp.Diff(want[5:20], got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}

	r2, err := OpenParquet(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if diff := cmp.Diff(want, readConcurrently(t, r2, 3)); diff != "" {
		t.Errorf("released by another goroutine: rows (-want +got):\n%s", diff)
	}
}

// TestParquetReaderGoroutines checks that the page prefetch goroutines end
// with the file, and with Close when reading stops early.
func TestParquetReaderGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.parquet")
	writePGO(t, path, testRollouts(40), parquet.MaxRowsPerRowGroup(15))
	readerGoroutinesEnd(t, path, 40, nil)
}

// readerGoroutinesEnd reads the first 1, 20 and all rows of the Parquet
// file at path, which has all of them, and checks that the reader's
// goroutines have ended after the last row and after Close. check, when
// not nil, looks at the reader before Close.
func readerGoroutinesEnd(t *testing.T, path string, all int, check func(*ParquetReader)) {
	t.Helper()
	// A goroutine of an earlier test may still be ending when base is
	// taken: the count must come back to base or below, never stay above.
	settle := func(want int) int {
		n := runtime.NumGoroutine()
		for i := 0; i < 200 && n > want; i++ {
			time.Sleep(5 * time.Millisecond)
			n = runtime.NumGoroutine()
		}
		return n
	}
	base := runtime.NumGoroutine()
	for _, stop := range []int{1, 20, all} {
		r, err := OpenParquet(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for read := 0; read < stop; {
			b, err := r.Next(7)
			if err != nil {
				t.Fatal(err)
			}
			read += len(b.Rows)
			b.Release()
		}
		if stop == all {
			if n := settle(base); n > base {
				t.Errorf("after the last row: %d goroutines, want at most %d", n, base)
			}
		}
		if check != nil {
			check(r)
		}
		r.Close()
		if n := settle(base); n > base {
			t.Errorf("after Close at row %d: %d goroutines, want at most %d", stop, n, base)
		}
	}
}

func TestParquetReaderErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.parquet")
	writePGO(t, good, testRollouts(30), parquet.Compression(&parquet.Zstd))
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	nested := filepath.Join(dir, "nested.parquet")
	writePGO(t, nested, []typesRow{{}})

	tests := []struct {
		name string
		path string
		opts Options
		want string
	}{
		{"truncated", write("truncated.parquet", data[:len(data)/2]), Options{}, "truncated"},
		{"footer cut", write("cut.parquet", data[:len(data)-3]), Options{}, "truncated"},
		{"not parquet", write("text.parquet", []byte(`{"task_id":"a","final_state":{}}`+"\n")), Options{}, "not a parquet file"},
		{"tiny", write("tiny.parquet", []byte("PAR1")), Options{}, "not a parquet file"},
		{"footer length", write("footer.parquet", []byte("PAR1\x00\x00\x00\x00\xff\xff\xff\x7fPAR1")), Options{}, "corrupt parquet file"},
		{"empty", write("empty.parquet", nil), Options{}, "not a parquet file"},
		{"missing", filepath.Join(dir, "absent.parquet"), Options{}, "no such file"},
		{"path in a flat column", nested, Options{Fields: FieldNames{Final: "final_state.x"}}, `"final_state" is a`},
		{"path not in a struct", nested, Options{Fields: FieldNames{Log: "Nested.C"}}, `struct "Nested" has no field "C"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := OpenParquet(tt.path, tt.opts)
			if err == nil {
				r.Close()
				t.Fatalf("OpenParquet(%s) succeeded, want an error", tt.path)
			}
			if !strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("OpenParquet error = %q, want it to name %s and say %q", err, tt.path, tt.want)
			}
		})
	}
}

// TestParquetReaderCorruptPage damages the first data page of final_state
// and checks that the error names the file, row group and column.
func TestParquetReaderCorruptPage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "corrupt.parquet")
	writePGO(t, path, testRollouts(30), parquet.Compression(&parquet.Zstd), parquet.MaxRowsPerRowGroup(10))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	col, _ := pf.Schema().Lookup("final_state")
	md := pf.Metadata().RowGroups[1].Columns[col.ColumnIndex].MetaData
	f.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
	}
	// Overwrite the chunk past its first page header with garbage.
	for i := start + 20; i < start+md.TotalCompressedSize; i++ {
		data[i] = 0xA5
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenParquet(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		b, err := r.Next(4)
		if err == io.EOF {
			t.Fatal("read a corrupt file without error")
		}
		if err != nil {
			for _, s := range []string{path, "row group 1", `column "final_state"`} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if _, err2 := r.Next(4); !errors.Is(err2, err) && err2.Error() != err.Error() {
				t.Errorf("Next after error = %v, want the same error", err2)
			}
			return
		}
		b.Release()
	}
}

func TestAppendDecimal(t *testing.T) {
	tests := []struct {
		v     int64
		scale int
		want  string
	}{
		{0, 2, "0"}, {5, 2, "0.05"}, {50, 3, "0.05"}, {-5, 2, "-0.05"}, {12345, 2, "123.45"},
		{700, 2, "7"}, {-700, 2, "-7"}, {1200, 3, "1.2"}, {1, 1, "0.1"}, {10, 1, "1"},
		{math.MinInt64, 0, "-9223372036854775808"}, {math.MaxInt64, 19, "0.9223372036854775807"},
	}
	for _, tt := range tests {
		if got := string(appendDecimal(nil, tt.v, tt.scale)); got != tt.want {
			t.Errorf("appendDecimal(%d, %d) = %q, want %q", tt.v, tt.scale, got, tt.want)
		}
	}
}

// TestParquetDictionaryNotReused guards what Cell.Stable and the address
// lookup of jsonview.Cache.ParseStable rely on: the bytes of a
// dictionary-encoded value keep their content, while anything points to
// them, after their batch is released, after later pages and row groups
// are decoded (into pooled buffers that may be the same ones), and after
// garbage collections. It fails if parquet-go starts decoding dictionaries
// into pooled or reused memory.
func TestParquetDictionaryNotReused(t *testing.T) {
	rows := testRollouts(120)
	dir := t.TempDir()
	pgoDict := filepath.Join(dir, "pgo-dict.parquet")
	writePGO(t, pgoDict, toDictRows(rows), parquet.MaxRowsPerRowGroup(17), parquet.PageBufferSize(64), parquet.Compression(&parquet.Zstd))
	plain := filepath.Join(dir, "plain.parquet")
	writePGO(t, plain, rows, parquet.MaxRowsPerRowGroup(17), parquet.PageBufferSize(64), parquet.Compression(&parquet.Zstd))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec, _, _ := arrowRollouts(t, mem, 90)
	defer rec.Release()
	arrowDict := filepath.Join(dir, "arrow-dict.parquet")
	writePQArrow(t, arrowDict, rec, pqa.WithMaxRowGroupLength(11), pqa.WithDataPageSize(256), pqa.WithBatchSize(3),
		pqa.WithCompression(compress.Codecs.Zstd), pqa.WithDataPageVersion(pqa.DataPageV2))

	// churn reads a file to the end, releasing every batch at once, so
	// that the pools its pages come from are drained and refilled.
	churn := func(path string) {
		t.Helper()
		r, err := OpenParquet(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		readAllRows(t, r, 5, r.MetaNames())
	}
	for _, path := range []string{pgoDict, arrowDict} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			type kept struct {
				row  int64
				data []byte // the cell's bytes, where the reader put them
				text string // a copy taken when the batch was read
			}
			var all []kept
			groups := map[int]bool{}
			r, err := OpenParquet(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for {
				b, err := r.Next(3)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				for i := range b.Rows {
					row := &b.Rows[i]
					for _, c := range []Cell{row.ID, row.Task, row.Final, row.Initial, row.Output, row.Log} {
						if c.Stable && len(c.Data) > 0 {
							all = append(all, kept{row.Index, c.Data, string(c.Data)})
							groups[r.rg] = true
						}
					}
				}
				b.Release()
				churn(plain)
			}
			r.Close()
			if len(groups) < 2 {
				t.Fatalf("stable cells in %d row groups, want several", len(groups))
			}
			for range 3 {
				runtime.GC()
				churn(plain)
				churn(path)
			}
			bad := 0
			for _, k := range all {
				if string(k.data) != k.text {
					if bad++; bad <= 3 {
						t.Errorf("row %d: dictionary value changed from %q to %q", k.row, k.text, k.data)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d dictionary values changed after their batch was released", bad, len(all))
			}
		})
	}
}
