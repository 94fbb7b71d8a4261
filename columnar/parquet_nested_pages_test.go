package columnar

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/cespare/xxhash/v2"
)

// rawCells reads every row of the Parquet file at path and returns, per
// row, its cells' kinds and texts and its error; pages reports whether
// its nested columns were read by the page reader (pgNested) rather than
// pqarrow.
func rawCells(t *testing.T, path string, opts Options) (rows []string, pages bool) {
	t.Helper()
	r, err := OpenParquet(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return appendRawCells(t, nil, r), r.nested != nil && r.nested.pg != nil
}

// appendRawCells appends the rows r reads, as rawCells gives them.
func appendRawCells(t *testing.T, rows []string, r Reader) []string {
	t.Helper()
	for {
		b, err := r.Next(5)
		if errors.Is(err, io.EOF) {
			return rows
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Rows {
			row := &b.Rows[i]
			var s strings.Builder
			for _, c := range append([]Cell{row.ID, row.Task, row.Final, row.Initial, row.Output, row.Log}, row.Meta...) {
				fmt.Fprintf(&s, "%d:%s|", c.Kind, c.Data)
			}
			if row.Err != nil {
				fmt.Fprintf(&s, "err:%v", row.Err)
			}
			rows = append(rows, s.String())
		}
		b.Release()
	}
}

// bothPaths reads path through the page reader and through pqarrow and
// fails unless every row's cells and error are the same. It returns
// whether the page reader read it.
func bothPaths(t *testing.T, path string, opts Options) bool {
	t.Helper()
	got, pages := rawCells(t, path, opts)
	pgOff = true
	want, arrowPages := rawCells(t, path, opts)
	pgOff = false
	if arrowPages {
		t.Fatal("pgOff did not turn the page reader off")
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows through pages, %d through pqarrow", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("row %d:\npages   %s\npqarrow %s", i, got[i], want[i])
		}
	}
	return pages
}

// writeNestedParquet writes rec with pqarrow, in row groups of at most
// groupRows rows and data pages of about pageBytes.
func writeNestedParquet(t testing.TB, path string, rec arrow.RecordBatch, groupRows int64, pageBytes int64, dict bool) {
	t.Helper()
	if err := tryWriteNestedParquet(path, rec, groupRows, pageBytes, dict); err != nil {
		t.Fatal(err)
	}
}

// tryWriteNestedParquet is writeNestedParquet returning pqarrow's error.
func tryWriteNestedParquet(path string, rec arrow.RecordBatch, groupRows int64, pageBytes int64, dict bool) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fw, err := pqarrow.NewFileWriter(rec.Schema(), f,
		parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(groupRows), parquet.WithDataPageSize(pageBytes),
			parquet.WithBatchSize(3), parquet.WithDictionaryDefault(dict)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return err
	}
	if err := fw.Write(rec); err != nil {
		fw.Close()
		return err
	}
	return fw.Close()
}

// TestNestedPagesTwins reads the nested twins (every shape of
// nestedSchema, nulls at every level) through both readers, also with
// fields mapped inside a struct column. The schema has a fixed-size list
// and a map with integer keys, which the page reader leaves to pqarrow;
// without them it reads the file itself.
func TestNestedPagesTwins(t *testing.T) {
	_, pqPath, _ := writeNestedTwins(t, t.TempDir())
	for _, opts := range []Options{{}, {Fields: FieldNames{Final: "world.after", Initial: "world.before"}}} {
		if bothPaths(t, pqPath, opts) {
			t.Errorf("%+v: the page reader read a fixed-size list", opts.Fields)
		}
	}
	// Without final_state's fixed-size list and integer-keyed map.
	mem := memory.NewGoAllocator()
	rec := nestedRecord(t, mem)
	defer rec.Release()
	var cols []arrow.Array
	var fields []arrow.Field
	for i, f := range rec.Schema().Fields() {
		if f.Name != "final_state" {
			cols, fields = append(cols, rec.Column(i)), append(fields, f)
		}
	}
	sub := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer sub.Release()
	path := filepath.Join(t.TempDir(), "sub.parquet")
	writeNestedParquet(t, path, sub, 2, 1<<20, true)
	for _, opts := range []Options{{Fields: FieldNames{Final: "world.after", Initial: "world.before"}}, {Fields: FieldNames{Final: "world"}}} {
		if !bothPaths(t, path, opts) {
			t.Errorf("%+v: the page reader did not read the file", opts.Fields)
		}
	}
}

// pagedTypes are the shapes and leaf types the page reader reads: for
// each, random values are written and read through both readers.
var pagedTypes = func() []arrow.DataType {
	s := func(fs ...arrow.Field) arrow.DataType { return arrow.StructOf(fs...) }
	f := func(name string, dt arrow.DataType, nullable bool) arrow.Field {
		return arrow.Field{Name: name, Type: dt, Nullable: nullable}
	}
	leaf := s(f("b", arrow.FixedWidthTypes.Boolean, true), f("i8", arrow.PrimitiveTypes.Int8, true),
		f("i16", arrow.PrimitiveTypes.Int16, false), f("i32", arrow.PrimitiveTypes.Int32, true),
		f("i64", arrow.PrimitiveTypes.Int64, true), f("u8", arrow.PrimitiveTypes.Uint8, true),
		f("u16", arrow.PrimitiveTypes.Uint16, true), f("u32", arrow.PrimitiveTypes.Uint32, true),
		f("u64", arrow.PrimitiveTypes.Uint64, true), f("f32", arrow.PrimitiveTypes.Float32, true),
		f("f64", arrow.PrimitiveTypes.Float64, true), f("s", arrow.BinaryTypes.String, true),
		f("ls", arrow.BinaryTypes.LargeString, true), f("bin", arrow.BinaryTypes.Binary, true))
	return []arrow.DataType{
		leaf,
		arrow.ListOf(arrow.BinaryTypes.String),
		arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int64),
		arrow.LargeListOf(arrow.ListOf(arrow.PrimitiveTypes.Float64)),
		arrow.MapOf(arrow.BinaryTypes.String, arrow.ListOf(leaf)),
		arrow.MapOf(arrow.BinaryTypes.String, arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32)),
		s(f("a", arrow.ListOf(s(f("x", arrow.ListOf(arrow.BinaryTypes.String), true), f("y", leaf, true))), true),
			f("m", arrow.MapOf(arrow.BinaryTypes.String, s(f("z", arrow.PrimitiveTypes.Int64, false))), true),
			f("req", s(f("w", arrow.BinaryTypes.String, true)), false)),
	}
}()

// randomRecord draws rows of a record of columns rollout_id, task_id and
// final_state of type dt, from a stream of pseudo-random bytes seeded by
// seed.
func randomRecord(t testing.TB, dt arrow.DataType, rows int, seed uint64) arrow.RecordBatch {
	t.Helper()
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "rollout_id", Type: arrow.BinaryTypes.String},
		{Name: "task_id", Type: arrow.BinaryTypes.String},
		{Name: "final_state", Type: dt, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	src := rand.New(rand.NewPCG(seed, 0))
	z := &fuzzGen{}
	for i := range rows {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprint("r", i))
		b.Field(1).(*array.StringBuilder).Append("T")
		if len(z.b)-z.i < 4096 {
			z.b, z.i = make([]byte, 1<<14), 0
			for k := range z.b {
				z.b[k] = byte(src.Uint32())
			}
			// Strings with quotes, backslashes, controls and multi-byte
			// UTF-8 (valid and not) now and then.
			copy(z.b[100:], "\"\\\x01\xc3\xa9\xff\xe2\x82")
		}
		z.value(b.Field(2), true)
	}
	return b.NewRecordBatch()
}

// twoStates is randomRecord with its final state also as the initial
// state: two nested columns, the second assembled on a goroutine of its
// own.
func twoStates(t testing.TB, dt arrow.DataType, rows int, seed uint64) arrow.RecordBatch {
	t.Helper()
	one := randomRecord(t, dt, rows, seed)
	defer one.Release()
	fields := append(slices.Clone(one.Schema().Fields()), arrow.Field{Name: "initial_state", Type: dt, Nullable: true})
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), append(slices.Clone(one.Columns()), one.Column(2)), one.NumRows())
}

// TestNestedPagesRandom writes random values of every shape the page
// reader reads, with nulls, empty lists and maps, strings with escapes and
// invalid UTF-8, in small row groups and pages (so that a row's values
// cross pages), plain and dictionary-encoded, and reads them through both
// readers.
func TestNestedPagesRandom(t *testing.T) {
	dir := t.TempDir()
	for k, dt := range pagedTypes {
		for _, dict := range []bool{false, true} {
			name := fmt.Sprintf("type%d-dict%v", k, dict)
			t.Run(name, func(t *testing.T) {
				rec := randomRecord(t, dt, 300, uint64(k))
				defer rec.Release()
				path := filepath.Join(dir, name+".parquet")
				writeNestedParquet(t, path, rec, 37, 128, dict)
				if !bothPaths(t, path, Options{}) {
					t.Fatalf("%s: read through pqarrow, want the page reader", dt)
				}
			})
		}
	}
}

// TestNestedPagesBadNumbers checks that NaN and infinities deep in a
// nested value fail their row with the same error, naming the same path,
// through both readers, and that the rows after them read on.
func TestNestedPagesBadNumbers(t *testing.T) {
	dt := arrow.StructOf(
		arrow.Field{Name: "rates", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
		arrow.Field{Name: "accounts", Type: arrow.ListOf(arrow.StructOf(arrow.Field{Name: "balance", Type: arrow.PrimitiveTypes.Float32, Nullable: true})), Nullable: true})
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "rollout_id", Type: arrow.BinaryTypes.String}, {Name: "final_state", Type: dt, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	st := b.Field(1).(*array.StructBuilder)
	rates := st.FieldBuilder(0).(*array.MapBuilder)
	accounts := st.FieldBuilder(1).(*array.ListBuilder)
	balance := accounts.ValueBuilder().(*array.StructBuilder)
	for i, v := range []float64{1, math.NaN(), math.Inf(1), math.Inf(-1), 0.5} {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprint("r", i))
		st.Append(true)
		rates.Append(true)
		rates.KeyBuilder().(*array.StringBuilder).Append("ok")
		rates.ItemBuilder().(*array.Float64Builder).Append(0.25)
		rates.KeyBuilder().(*array.StringBuilder).Append("usd")
		rates.ItemBuilder().(*array.Float64Builder).Append(v)
		accounts.Append(true)
		balance.Append(true)
		balance.FieldBuilder(0).(*array.Float32Builder).Append(float32(-v))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "bad.parquet")
	writeNestedParquet(t, path, rec, 3, 1<<20, false)
	if !bothPaths(t, path, Options{}) {
		t.Fatal("read through pqarrow, want the page reader")
	}
	rows, _ := rawCells(t, path, Options{})
	for i, want := range []string{"", "final_state.rates.usd: NaN is not a JSON number", "final_state.rates.usd: +Inf is not a JSON number", "final_state.rates.usd: -Inf is not a JSON number", ""} {
		if !strings.Contains(rows[i], want) || want == "" && strings.Contains(rows[i], "err:") {
			t.Errorf("row %d: %s, want the error %q", i, rows[i], want)
		}
	}
}

// FuzzNestedPages draws a nested type and its values from the input,
// writes them with pqarrow in small row groups and pages, and requires
// the same cells from both readers, whichever reads the type, with null
// struct fields as members and as absent.
func FuzzNestedPages(f *testing.F) {
	f.Add([]byte{6, 2, 0, 1, 3, 8, 1, 11, 2, 9, 4, 10, 2, 5})
	f.Add([]byte{11, 7, 1, 0, 0, 200, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("a longer seed that draws many things at once, 0123456789"))
	f.Add([]byte{8, 11, 6, 2, 8, 1, 0, 0, 7, 7, 7, 14, 21, 0, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		z := &fuzzGen{b: data}
		dt := z.typ(0)
		if !isNestedType(dt) {
			dt = arrow.StructOf(arrow.Field{Name: "v", Type: dt, Nullable: true})
		}
		rec := randomRecord(t, dt, 1+int(data[0])%40, xxhash.Sum64(data))
		defer rec.Release()
		path := filepath.Join(t.TempDir(), "fuzz.parquet")
		if err := tryWriteNestedParquet(path, rec, 1+int64(data[len(data)-1]%9), 64+int64(data[0]), data[0]%2 == 0); err != nil {
			t.Skipf("pqarrow cannot write %s: %v", dt, err) // a limit of the writer, not of the readers
		}
		bothPaths(t, path, Options{})
		bothPaths(t, path, Options{StructNulls: StructNullsAbsent})
	})
}

// TestNestedPagesMemo reads initial states that repeat, in row groups of
// their own, with dictionary-encoded and plain leaves: every state reads
// back as written, through both readers, and the page reader hands most
// repeated ones out of its memo (Stable cells, which the initial-state
// cache recognizes by address).
func TestNestedPagesMemo(t *testing.T) {
	const typ = "struct<names: list<string>, n: int64, m: map<string, float64>>"
	states := []string{
		`{"names":["a","b"],"n":1,"m":{"x":0.5}}`, `{"names":["b"],"n":2,"m":{}}`,
		`{"names":["b","a"],"n":1,"m":{"x":0.5}}`, `{"names":["a"],"n":3,"m":{"x":0.5,"y":null}}`, `{"names":[],"n":null,"m":null}`,
	}
	for _, dict := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "memo.parquet")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		cols := []DatasetColumn{
			{Name: "rollout_id", Type: DatasetString},
			{Name: "initial_state", Type: DatasetNested, Nested: typ, Dictionary: dict},
		}
		w, err := NewDatasetWriter(f, DatasetParquet, cols, DatasetOptions{RowGroupRows: 150})
		if err != nil {
			t.Fatal(err)
		}
		const rows = 600
		for i := range rows {
			s := states[(i*7/3)%len(states)]
			if err := w.Write([]DatasetValue{{Kind: DatasetText, Bytes: fmt.Appendf(nil, "r%d", i)}, {Kind: DatasetRaw, Bytes: []byte(s)}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if !bothPaths(t, path, Options{}) {
			t.Fatal("read through pqarrow, want the page reader")
		}
		r, err := OpenParquet(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		stable, i := 0, 0
		for {
			b, err := r.Next(64)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range b.Rows {
				want, _ := decodeJSON(states[(i*7/3)%len(states)])
				got, err := decodeJSON(string(row.Initial.Data))
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("dictionary %v, row %d: %s, want %s", dict, i, row.Initial.Data, states[(i*7/3)%len(states)])
				}
				if row.Initial.Stable {
					stable++
				}
				i++
			}
			b.Release()
		}
		r.Close()
		if stable < rows/2 {
			t.Errorf("dictionary %v: %d of %d initial states from the memo, want most", dict, stable, rows)
		}
	}
}

// TestNestedPagesGoroutines checks that the nested leaves' prefetch
// goroutines end with the file, and with Close when reading stops early.
func TestNestedPagesGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.parquet")
	rec := randomRecord(t, pagedTypes[6], 40, 9)
	defer rec.Release()
	writeNestedParquet(t, path, rec, 15, 256, false)
	readerGoroutinesEnd(t, path, 40, func(r *ParquetReader) {
		if r.nested == nil || r.nested.pg == nil {
			t.Fatal("read through pqarrow, want the page reader")
		}
	})
}

// TestNestedPagesCorrupt damages the pages of a nested file byte by byte
// (every 97th byte of its data, one at a time): reading it through the
// page reader must end, with rows or with an error, never with a panic
// or a hang. The file has two nested columns, so that one is assembled on
// a goroutine of its own, and is written plain and dictionary-encoded
// (parquet-go's value readers do not check dictionary indices, and panic
// on a bad one).
func TestNestedPagesCorrupt(t *testing.T) {
	dir := t.TempDir()
	rec := twoStates(t, pagedTypes[4], 60, 4)
	defer rec.Release()
	for _, dict := range []bool{false, true} {
		good := filepath.Join(dir, "good.parquet")
		writeNestedParquet(t, good, rec, 20, 512, dict)
		data, err := os.ReadFile(good)
		if err != nil {
			t.Fatal(err)
		}
		errs := 0
		for at := 4; at < len(data)-2000; at += 97 {
			bad := slices.Clone(data)
			bad[at] ^= 0x5a
			path := filepath.Join(dir, "bad.parquet")
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := OpenParquet(path, Options{})
			if err != nil {
				errs++
				continue
			}
			for {
				b, err := r.Next(16)
				if err != nil {
					if !errors.Is(err, io.EOF) {
						errs++
					}
					break
				}
				b.Release()
			}
			r.Close()
		}
		if errs == 0 {
			t.Errorf("dictionary %v: no damaged file was refused", dict)
		}
	}
}

// TestNestedPagesUnits reads a nested file by units of row groups (as
// sharded and parallel runs do): the rows of the units, in order, are the
// rows of the whole file, through the page reader.
func TestNestedPagesUnits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "units.parquet")
	rec := randomRecord(t, pagedTypes[6], 70, 12)
	defer rec.Release()
	writeNestedParquet(t, path, rec, 9, 256, false) // 8 row groups
	whole, pages := rawCells(t, path, Options{})
	if !pages {
		t.Fatal("read through pqarrow, want the page reader")
	}
	for _, per := range []int{1, 3} {
		in, err := Describe(path, DescribeOptions{RowGroupsPerUnit: per})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, u := range in.Units {
			r, err := in.Open(u, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got = appendRawCells(t, got, r)
			r.Close()
		}
		if len(got) != len(whole) {
			t.Fatalf("%d row groups a unit: %d rows, want %d", per, len(got), len(whole))
		}
		for i := range got {
			if got[i] != whole[i] {
				t.Fatalf("%d row groups a unit, row %d:\nunits %s\nwhole %s", per, i, got[i], whole[i])
			}
		}
	}
}

// TestNestedPagesPanic makes the assembly of a column that runs on a
// goroutine of its own panic (a node of no kind, as a decoder's panic on
// a corrupt page would): Next returns an error naming the column, and the
// process goes on.
func TestNestedPagesPanic(t *testing.T) {
	rec := twoStates(t, pagedTypes[0], 40, 2)
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "two.parquet")
	writeNestedParquet(t, path, rec, 100, 1<<20, false)
	r, err := OpenParquet(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := r.Next(4)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	if r.nested == nil || r.nested.pg == nil || len(r.nested.pg.cols) != 2 {
		t.Fatal("want two nested columns through the page reader")
	}
	second := r.nested.pg.cols[1]
	second.node.kids[0].kind = 0 // its first member, a leaf: no kind to render
	_, err = r.Next(4)
	if err == nil || !strings.Contains(err.Error(), "corrupt page") || !strings.Contains(err.Error(), second.c.name) {
		t.Fatalf("Next after a panic in %s: %v, want an error naming it", second.c.name, err)
	}
}

// TestNestedPagesDuration reads durations inside a struct and a list (which
// pqarrow refuses in nested columns) as numbers of their unit: the rows
// are those of the same values stored as int64, read by pqarrow.
func TestNestedPagesDuration(t *testing.T) {
	mem := memory.NewGoAllocator()
	record := func(leaf arrow.DataType) arrow.RecordBatch {
		dt := arrow.StructOf(arrow.Field{Name: "dur", Type: leaf, Nullable: true},
			arrow.Field{Name: "laps", Type: arrow.ListOf(leaf), Nullable: true})
		schema := arrow.NewSchema([]arrow.Field{
			{Name: "rollout_id", Type: arrow.BinaryTypes.String},
			{Name: "task_id", Type: arrow.BinaryTypes.String},
			{Name: "final_state", Type: dt, Nullable: true},
		}, nil)
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		st := b.Field(2).(*array.StructBuilder)
		for i := range 40 {
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprint("r", i))
			b.Field(1).(*array.StringBuilder).Append("T")
			if i%7 == 6 {
				st.AppendNull()
				continue
			}
			st.Append(true)
			appendInt := func(fb array.Builder, v int64) {
				switch fb := fb.(type) {
				case *array.DurationBuilder:
					fb.Append(arrow.Duration(v))
				case *array.Int64Builder:
					fb.Append(v)
				}
			}
			if i%5 == 4 {
				st.FieldBuilder(0).AppendNull()
			} else {
				appendInt(st.FieldBuilder(0), int64(i*1000-7))
			}
			lb := st.FieldBuilder(1).(*array.ListBuilder)
			lb.Append(true)
			for k := range i % 4 {
				appendInt(lb.ValueBuilder(), int64(-k*i))
			}
		}
		return b.NewRecordBatch()
	}
	// pqarrow writes no durations: the file holds the int64 values, and
	// the Arrow schema it stores (as pyarrow writes it) says durations.
	dir := t.TempDir()
	dur, ints := filepath.Join(dir, "dur.parquet"), filepath.Join(dir, "int.parquet")
	rec := record(arrow.PrimitiveTypes.Int64)
	defer rec.Release()
	writeNestedParquet(t, ints, rec, 16, 256, false)
	durSchema := record(arrow.FixedWidthTypes.Duration_ms)
	durSchema.Release()
	f, err := os.Create(dur)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(rec.Schema(), f,
		parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(16), parquet.WithDataPageSize(256), parquet.WithDictionaryDefault(false)),
		pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.AppendKeyValueMetadata("ARROW:schema", base64.StdEncoding.EncodeToString(flight.SerializeSchema(durSchema.Schema(), mem))); err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, pages := rawCells(t, dur, Options{})
	if !pages {
		t.Fatal("the page reader did not read the durations")
	}
	pgOff = true
	want, _ := rawCells(t, ints, Options{})
	pgOff = false
	if !slices.Equal(got, want) {
		t.Errorf("durations:\n%s\nwant (int64):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(strings.Join(got, "\n"), `"dur":1993`) {
		t.Errorf("no duration of 1993 ms among %s", got[:3])
	}
}
