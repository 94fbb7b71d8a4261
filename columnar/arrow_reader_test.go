package columnar

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/go-cmp/cmp"
)

// writeIPC writes recs to path as an Arrow IPC file, or a stream.
func writeIPC(t testing.TB, path string, stream bool, recs []arrow.RecordBatch, opts ...ipc.Option) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opts = append(opts, ipc.WithSchema(recs[0].Schema()))
	type recWriter interface {
		Write(arrow.RecordBatch) error
		Close() error
	}
	var w recWriter
	if stream {
		w = ipc.NewWriter(f, opts...)
	} else if w, err = ipc.NewFileWriter(f, opts...); err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// splitRecord cuts rec into record batches of the given sizes (0 sizes
// give empty batches); the caller releases them.
func splitRecord(rec arrow.RecordBatch, sizes ...int64) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	var at int64
	for _, n := range sizes {
		out = append(out, rec.NewSlice(at, at+n))
		at += n
	}
	if at < rec.NumRows() {
		out = append(out, rec.NewSlice(at, rec.NumRows()))
	}
	return out
}

// arrowExtraTypes builds a record of the other types the reader accepts, and
// the meta cells expected for it.
func arrowExtraTypes(mem memory.Allocator, n int) (arrow.RecordBatch, [][]readerCell, []string) {
	fields := []arrow.Field{
		{Name: "task_id", Type: arrow.BinaryTypes.String},
		{Name: "sv", Type: arrow.BinaryTypes.StringView, Nullable: true},
		{Name: "bv", Type: arrow.BinaryTypes.BinaryView},
		{Name: "lb", Type: arrow.BinaryTypes.LargeBinary},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "f16", Type: arrow.FixedWidthTypes.Float16},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "date", Type: arrow.FixedWidthTypes.Date32},
		{Name: "nothing", Type: arrow.Null, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
		{Name: "point", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64})},
	}
	names := []string{"sv", "bv", "lb", "i8", "u64", "f16", "f64", "ts", "date", "nothing", "point"}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	floats := []float64{7, 0.1, math.NaN(), math.Inf(1), math.Inf(-1), -0.5, 1e21}
	want := make([][]readerCell, n)
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append("t")
		long := strings.Repeat("v", 5+i*3) // short ones are inlined in views
		if i%3 == 2 {
			b.Field(1).(*array.StringViewBuilder).AppendNull()
			want[i] = append(want[i], nullC())
		} else {
			b.Field(1).(*array.StringViewBuilder).Append(long)
			want[i] = append(want[i], strC(long))
		}
		b.Field(2).(*array.BinaryViewBuilder).Append([]byte(long + "b"))
		want[i] = append(want[i], strC(long+"b"))
		b.Field(3).(*array.BinaryBuilder).Append([]byte{byte(i), 0})
		want[i] = append(want[i], strC(string([]byte{byte(i), 0})))
		b.Field(4).(*array.Int8Builder).Append(int8(-i))
		want[i] = append(want[i], numC(strconv.Itoa(-i)))
		b.Field(5).(*array.Uint64Builder).Append(math.MaxUint64 - uint64(i))
		want[i] = append(want[i], numC(strconv.FormatUint(math.MaxUint64-uint64(i), 10)))
		b.Field(6).(*array.Float16Builder).Append(float16.New(float32(i) + 0.5))
		want[i] = append(want[i], numC(strconv.FormatFloat(float64(i)+0.5, 'f', -1, 32)))
		f := floats[i%len(floats)]
		b.Field(7).(*array.Float64Builder).Append(f)
		switch {
		case math.IsNaN(f):
			want[i] = append(want[i], strC("NaN"))
		case math.IsInf(f, 1):
			want[i] = append(want[i], strC("+Inf"))
		case math.IsInf(f, -1):
			want[i] = append(want[i], strC("-Inf"))
		default:
			want[i] = append(want[i], numC(strconv.FormatFloat(f, 'f', -1, 64)))
		}
		b.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + i))
		want[i] = append(want[i], numC(strconv.Itoa(1_700_000_000_000_000+i)))
		b.Field(9).(*array.Date32Builder).Append(arrow.Date32(19000 + i))
		want[i] = append(want[i], numC(strconv.Itoa(19000+i)))
		b.Field(10).(*array.NullBuilder).AppendNull()
		want[i] = append(want[i], nullC())
		b.Field(11).AppendEmptyValue()
		b.Field(12).AppendEmptyValue()
		want[i] = append(want[i], jsonC(`{"x":0}`))
	}
	return b.NewRecordBatch(), want, names
}

func TestArrowReader(t *testing.T) {
	tests := []struct {
		name   string
		stream bool
		sizes  []int64 // record batch sizes
		opts   []ipc.Option
	}{
		{"file/one-batch", false, nil, nil},
		{"file/many-batches", false, []int64{1, 4, 0, 7, 13}, nil},
		{"file/zstd", false, []int64{10, 10}, []ipc.Option{ipc.WithZstd()}},
		{"file/lz4", false, []int64{3, 0}, []ipc.Option{ipc.WithLZ4()}},
		{"stream/many-batches", true, []int64{2, 0, 9, 9}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rec, want, metaNames := arrowRollouts(t, mem, 37)
			path := filepath.Join(t.TempDir(), "rollouts.arrow")
			recs := splitRecord(rec, tt.sizes...)
			writeIPC(t, path, tt.stream, recs, append(tt.opts, ipc.WithAllocator(mem))...)
			for _, r := range recs {
				r.Release()
			}
			rec.Release()
			wantRows := int64(len(want))
			if tt.stream {
				wantRows = -1
			}
			checkArrowFile(t, path, mem, Options{}, want, metaNames, wantRows)
		})
	}
}

// checkArrowFile reads path with several batch sizes, then holding every
// batch, and compares the rows with want.
func checkArrowFile(t *testing.T, path string, mem memory.Allocator, opts Options, want []readerRow, metaNames []string, rows int64) {
	t.Helper()
	for _, size := range []int{1, 3, 1000} {
		r, err := openArrow(path, opts, mem)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Rows(); got != rows {
			t.Errorf("Rows() = %d, want %d", got, rows)
		}
		got := readAllRows(t, r, size, metaNames)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("batch size %d: rows (-want +got):\n%s", size, diff)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	r, err := openArrow(path, opts, mem)
	if err != nil {
		t.Fatal(err)
	}
	got := readHeldRows(t, r, 4)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("held batches: rows (-want +got):\n%s", diff)
	}
	r.Close()
}

func TestArrowReaderTypes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec, meta, names := arrowExtraTypes(mem, 12)
	path := filepath.Join(t.TempDir(), "types.feather")
	recs := splitRecord(rec, 5)
	writeIPC(t, path, false, recs, ipc.WithAllocator(mem))
	for _, r := range recs {
		r.Release()
	}
	rec.Release()
	want := make([]readerRow, len(meta))
	for i := range want {
		want[i] = readerRow{Index: int64(i), Offset: -1, Task: strC("t"), Meta: meta[i]}
	}
	checkArrowFile(t, path, mem, Options{}, want, names, int64(len(want)))

	// --map: the output field read from a metadata column.
	for i := range want {
		want[i].Output = meta[i][0]
		want[i].Meta = meta[i][1:]
	}
	checkArrowFile(t, path, mem, Options{Fields: FieldNames{Output: "sv"}}, want, names[1:], int64(len(want)))
}

// TestArrowCellSliced reads arrays with a non-zero offset, as a reader
// may be handed by a writer that sliced its columns.
func TestArrowCellSliced(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sb := array.NewStringBuilder(mem)
	lb := array.NewLargeStringBuilder(mem)
	for i := range 6 {
		sb.Append(fmt.Sprint("s", i))
		lb.Append(fmt.Sprint("l", i))
	}
	s, l := sb.NewArray(), lb.NewArray()
	sb.Release()
	lb.Release()
	ss, ls := array.NewSlice(s, 2, 5), array.NewSlice(l, 3, 6)
	defer func() {
		for _, a := range []arrow.Array{s, l, ss, ls} {
			a.Release()
		}
	}()
	var ab arrowBatch
	var got []readerCell
	for i := range 3 {
		got = append(got, snapCell(arrowCell(&ab, ss, i)), snapCell(arrowCell(&ab, ls, i)))
	}
	want := []readerCell{strC("s2"), strC("l3"), strC("s3"), strC("l4"), strC("s4"), strC("l5")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
}

func TestArrowReaderBatchReuse(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec, want, _ := arrowRollouts(t, mem, 30)
	path := filepath.Join(t.TempDir(), "reuse.arrow")
	recs := splitRecord(rec, 4, 4, 4, 4)
	writeIPC(t, path, false, recs, ipc.WithAllocator(mem))
	for _, r := range recs {
		r.Release()
	}
	rec.Release()
	r, err := openArrow(path, Options{}, mem)
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
	r.Close() // batches outlive their reader
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

	r2, err := openArrow(path, Options{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if diff := cmp.Diff(want, readConcurrently(t, r2, 3)); diff != "" {
		t.Errorf("released by another goroutine: rows (-want +got):\n%s", diff)
	}
}

func TestArrowReaderErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	rec, _, _ := arrowRollouts(t, mem, 10)
	good := filepath.Join(dir, "good.arrow")
	writeIPC(t, good, false, []arrow.RecordBatch{rec}, ipc.WithAllocator(mem))
	rec.Release()
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
	tests := []struct {
		name string
		path string
		opts Options
		want string
	}{
		{"truncated", write("truncated.arrow", data[:len(data)/2]), Options{}, "truncated"},
		{"not arrow", write("text.arrow", []byte("task_id,final_state\na,{}\n")), Options{}, "not an arrow ipc file or stream"},
		{"empty", write("empty.arrow", nil), Options{}, "not an arrow ipc file or stream"},
		{"feather v1", write("old.feather", []byte("FEA1\x00\x00\x00\x00FEA1")), Options{}, "feather v1"},
		{"missing", filepath.Join(dir, "absent.arrow"), Options{}, "no such file"},
		{"path in a list", good, Options{Fields: FieldNames{Log: "tags.x"}}, `"tags" is a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := openArrow(tt.path, tt.opts, mem)
			if err == nil {
				r.Close()
				t.Fatalf("OpenArrow(%s) succeeded, want an error", tt.path)
			}
			if !strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("OpenArrow error = %q, want it to name %s and say %q", err, tt.path, tt.want)
			}
		})
	}
}

// TestArrowReaderForeignFile checks that a file that is not Arrow, whose
// first bytes read as a huge message length, is rejected without
// allocating that much.
func TestArrowReaderForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "text.arrow")
	if err := os.WriteFile(path, []byte("task_id,final_state\na,{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := OpenArrow(path, Options{})
	runtime.ReadMemStats(&after)
	if err == nil {
		r.Close()
		t.Fatal("OpenArrow succeeded on a text file")
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("OpenArrow allocated %d bytes to reject a %d-byte file", n, 26)
	}
}
