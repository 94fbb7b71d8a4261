package columnar

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pgo "github.com/parquet-go/parquet-go"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// nestedSchema covers the shapes of the issue: large lists, fixed-size
// lists, maps with integer keys, a struct of structs for --map paths, and
// a list of structs as a log; nulls at every level.
var nestedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "rollout_id", Type: arrow.BinaryTypes.String},
	{Name: "task_id", Type: arrow.BinaryTypes.String},
	{Name: "final_state", Nullable: true, Type: arrow.StructOf(
		arrow.Field{Name: "accounts", Nullable: true, Type: arrow.LargeListOf(arrow.StructOf(
			arrow.Field{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "balance", Type: arrow.PrimitiveTypes.Float64, Nullable: true}))},
		arrow.Field{Name: "pair", Nullable: true, Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int64)},
		arrow.Field{Name: "ports", Nullable: true, Type: arrow.MapOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String)},
	)},
	{Name: "world", Nullable: true, Type: arrow.StructOf(
		arrow.Field{Name: "before", Nullable: true, Type: arrow.StructOf(arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true})},
		arrow.Field{Name: "after", Nullable: true, Type: arrow.StructOf(arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true})},
	)},
	{Name: "log", Nullable: true, Type: arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "role", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "content", Type: arrow.BinaryTypes.String, Nullable: true}))},
	{Name: "tags", Nullable: true, Type: arrow.ListOf(arrow.BinaryTypes.String)},
}, nil)

// nestedRows are the rows of nestedSchema in arrow-go's JSON form, and
// the same rows as gavel JSON Lines (maps as objects).
var nestedRows = []struct{ arrow, jsonl string }{
	{`{"rollout_id": "r0", "task_id": "T", "final_state": {"accounts": [{"id": "a", "balance": 1.5}, null, {"id": null, "balance": null}], "pair": [1, -2], "ports": [{"key": 80, "value": "http"}, {"key": 80, "value": "again"}, {"key": -1, "value": null}]}, "world": {"before": {"n": 1}, "after": {"n": 2}}, "log": [{"role": "user", "content": "hi"}, null], "tags": ["x", null]}`,
		`{"rollout_id":"r0","task_id":"T","final_state":{"accounts":[{"id":"a","balance":1.5},null,{"id":null,"balance":null}],"pair":[1,-2],"ports":{"80":"http","80":"again","-1":null}},"world":{"before":{"n":1},"after":{"n":2}},"log":[{"role":"user","content":"hi"},null],"tags":["x",null]}`},
	{`{"rollout_id": "r1", "task_id": "T", "final_state": null, "world": {"before": null, "after": {"n": null}}, "log": [], "tags": null}`,
		`{"rollout_id":"r1","task_id":"T","final_state":null,"world":{"before":null,"after":{"n":null}},"log":[],"tags":null}`},
	{`{"rollout_id": "r2", "task_id": "T", "final_state": {"accounts": null, "pair": null, "ports": []}, "world": null, "log": null, "tags": []}`,
		`{"rollout_id":"r2","task_id":"T","final_state":{"accounts":null,"pair":null,"ports":{}},"world":null,"log":null,"tags":[]}`},
}

// nestedRecord builds nestedRows as a record batch.
func nestedRecord(t *testing.T, mem memory.Allocator) arrow.RecordBatch {
	t.Helper()
	var b strings.Builder
	b.WriteByte('[')
	for i, r := range nestedRows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(r.arrow)
	}
	b.WriteByte(']')
	rec, _, err := array.RecordFromJSON(mem, nestedSchema, strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// cellValues reads every row of path and returns, per row, each rollout
// field and metadata column as its decoded JSON value (strings of
// CellString fields of JSON text decoded as JSON), and the row's error.
func cellValues(t *testing.T, path string, opts Options) []map[string]any {
	t.Helper()
	r, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fields := opts.Fields.WithDefaults()
	var out []map[string]any
	var doc jsonview.Doc
	for {
		b, err := r.Next(2)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Rows {
			row := &b.Rows[i]
			var meta []Cell
			m := map[string]any{}
			if b.JSONLines {
				root, err := DecodeLine(row, &fields, &doc)
				if err != nil {
					t.Fatal(err)
				}
				for mem := root.First(); mem.Exists(); mem = mem.Next() {
					if k := string(mem.Key()); !fields.Is(k) {
						v, err := decodeJSON(string(mem.Raw()))
						if err != nil {
							t.Fatal(err)
						}
						m[k] = v
					}
				}
			} else {
				meta = row.Meta
			}
			val := func(c Cell) any {
				switch c.Kind {
				case CellNull:
					return nil
				case CellString, CellBool:
					return string(c.Data)
				}
				v, err := decodeJSON(string(c.Data))
				if err != nil {
					t.Fatalf("%s row %d: %q: %v", path, row.Index, c.Data, err)
				}
				return v
			}
			for name, c := range map[string]Cell{"id": row.ID, "task": row.Task, "final": row.Final, "log": row.Log, "initial": row.Initial} {
				m[name] = val(c)
			}
			for k, name := range b.MetaNames {
				m[name] = val(meta[k])
			}
			if row.Err != nil {
				m["err"] = row.Err.Error()
			}
			out = append(out, m)
		}
		b.Release()
	}
	return out
}

func writeNestedTwins(t *testing.T, dir string) (arrowPath, pqPath, jsonlPath string) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := nestedRecord(t, mem)
	defer rec.Release()

	arrowPath = filepath.Join(dir, "nested.arrow")
	f, err := os.Create(arrowPath)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(nestedSchema), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	pqPath = filepath.Join(dir, "nested.parquet")
	f, err = os.Create(pqPath)
	if err != nil {
		t.Fatal(err)
	}
	// Two row groups of unequal size: the nested reader keeps step.
	fw, err := pqarrow.NewFileWriter(nestedSchema, f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(2), parquet.WithAllocator(mem)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem)))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}

	jsonlPath = filepath.Join(dir, "twin.jsonl")
	var lines []string
	for _, r := range nestedRows {
		lines = append(lines, r.jsonl)
	}
	if err := os.WriteFile(jsonlPath, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return arrowPath, pqPath, jsonlPath
}

// TestNestedTwins reads nested Arrow and Parquet (pqarrow) files and
// checks every field and metadata column against the same rows as JSON
// Lines, also with a field mapped to a path inside a struct column.
func TestNestedTwins(t *testing.T) {
	arrowPath, pqPath, jsonlPath := writeNestedTwins(t, t.TempDir())
	for _, opts := range []Options{{}, {Fields: FieldNames{Final: "world.after", Initial: "world.before"}}} {
		want := cellValues(t, jsonlPath, opts)
		if len(want) != len(nestedRows) {
			t.Fatalf("%s: %d rows, want %d", filepath.Base(jsonlPath), len(want), len(nestedRows))
		}
		for _, path := range []string{arrowPath, pqPath} {
			got := cellValues(t, path, opts)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s with %+v:\n got %v\nwant %v", filepath.Base(path), opts.Fields, got, want)
			}
		}
	}
}

// TestNestedMapPathErrors checks that a path that leaves the schema is
// refused when the file is opened, naming it.
func TestNestedMapPathErrors(t *testing.T) {
	arrowPath, pqPath, _ := writeNestedTwins(t, t.TempDir())
	for _, tt := range []struct{ field, want string }{
		{"world.during", `struct "world" has no field "during"`},
		{"world.after.n.x", `"world.after.n" is a int64, not a struct`},
		{"rollout_id.x", `not a struct`},
	} {
		for _, path := range []string{arrowPath, pqPath} {
			r, err := Open(path, Options{Fields: FieldNames{Final: tt.field}})
			if err == nil {
				r.Close()
				t.Errorf("Open(%s) with final_state=%s succeeded, want an error", filepath.Base(path), tt.field)
				continue
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("Open(%s) with final_state=%s: %v, want it to say %q", filepath.Base(path), tt.field, err, tt.want)
			}
		}
	}
	// An absent column stays a null field, as in JSON Lines.
	r, err := Open(pqPath, Options{Fields: FieldNames{Final: "nowhere.after"}})
	if err != nil {
		t.Fatalf("Open with an absent column: %v", err)
	}
	r.Close()
}

// pgoRollout is a rollout as parquet-go writes Go structs and maps.
type pgoRollout struct {
	RolloutID  string `parquet:"rollout_id"`
	TaskID     string `parquet:"task_id"`
	FinalState *struct {
		Count  int64            `parquet:"count"`
		Scores map[string]int64 `parquet:"scores"`
		Items  []struct {
			Name string  `parquet:"name"`
			Qty  float64 `parquet:"qty"`
		} `parquet:"items,list"`
	} `parquet:"final_state,optional"`
}

// TestNestedParquetGo reads structs, maps and lists written by parquet-go
// as the JSON values they hold.
func TestNestedParquetGo(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pgo.parquet")
	rows := make([]pgoRollout, 3)
	for i := range rows {
		rows[i].RolloutID, rows[i].TaskID = "r"+string(rune('0'+i)), "T"
	}
	rows[0].FinalState = &struct {
		Count  int64            `parquet:"count"`
		Scores map[string]int64 `parquet:"scores"`
		Items  []struct {
			Name string  `parquet:"name"`
			Qty  float64 `parquet:"qty"`
		} `parquet:"items,list"`
	}{Count: 9007199254740993, Scores: map[string]int64{"a": 1}}
	rows[0].FinalState.Items = append(rows[0].FinalState.Items, struct {
		Name string  `parquet:"name"`
		Qty  float64 `parquet:"qty"`
	}{"bolt", 0.1})
	rows[2].FinalState = &struct {
		Count  int64            `parquet:"count"`
		Scores map[string]int64 `parquet:"scores"`
		Items  []struct {
			Name string  `parquet:"name"`
			Qty  float64 `parquet:"qty"`
		} `parquet:"items,list"`
	}{}
	if err := pgo.WriteFile(path, rows); err != nil {
		t.Fatal(err)
	}
	got := cellValues(t, path, Options{})
	var finals []any
	for _, g := range got {
		finals = append(finals, g["final"])
	}
	want := []any{}
	for _, s := range []string{`{"count":9007199254740993,"scores":{"a":1},"items":[{"name":"bolt","qty":0.1}]}`, `null`, `{"count":0,"scores":{},"items":[]}`} {
		v, err := decodeJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, v)
	}
	if !reflect.DeepEqual(finals, want) {
		t.Errorf("final states = %v, want %v", finals, want)
	}
}

// TestNestedParquetDictionaries reads a dataset whose initial states have
// dictionary-encoded leaves, in row groups with dictionaries of their own:
// the initial state's string leaves are read as dictionary arrays (the
// final state's, plain, are not), and every state reads back as written.
func TestNestedParquetDictionaries(t *testing.T) {
	const typ = "struct<names: list<string>, n: int64>"
	path := filepath.Join(t.TempDir(), "dict.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	cols := []DatasetColumn{
		{Name: "rollout_id", Type: DatasetString},
		{Name: "initial_state", Type: DatasetNested, Nested: typ, Dictionary: true},
		{Name: "final_state", Type: DatasetNested, Nested: typ},
	}
	w, err := NewDatasetWriter(f, DatasetParquet, cols, DatasetOptions{RowGroupRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	states := []string{
		`{"names":["a","b"],"n":1}`, `{"names":["b"],"n":2}`, `{"names":["a","b"],"n":1}`,
		`{"names":["b","c"],"n":1}`, `{"names":["a","b"],"n":1}`, `{"names":["c"],"n":3}`,
		`{"names":["b"],"n":2}`, `{"names":[],"n":null}`, `{"names":["a","b"],"n":1}`,
	}
	for i, s := range states {
		id := fmt.Sprintf("r%d", i)
		row := []DatasetValue{{Kind: DatasetText, Bytes: []byte(id)}, {Kind: DatasetRaw, Bytes: []byte(s)}, {Kind: DatasetRaw, Bytes: []byte(s)}}
		if err := w.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	// Through the page reader, then through pqarrow, whose dictionary
	// arrays are checked below.
	defer func() { pgOff = false }()
	for _, off := range []bool{false, true} {
		pgOff = off
		rows := cellValues(t, path, Options{})
		if len(rows) != len(states) {
			t.Errorf("pqarrow %v: %d rows, want %d", off, len(rows), len(states))
		}
		for i, row := range rows {
			want, err := decodeJSON(states[i])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(row["initial"], want) || !reflect.DeepEqual(row["final"], want) {
				t.Errorf("pqarrow %v: row %d: initial %v, final %v, want %v", off, i, row["initial"], row["final"], want)
			}
		}
	}

	r, err := OpenParquet(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := r.Next(2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	schema := r.nested.rec.Schema()
	for _, c := range []struct {
		name string
		dict bool
	}{{"initial_state", true}, {"final_state", false}} {
		dt := schema.Field(schema.FieldIndices(c.name)[0]).Type
		if got := strings.Contains(dt.String(), "dictionary"); got != c.dict {
			t.Errorf("%s read as %s: dictionary %v, want %v", c.name, dt, got, c.dict)
		}
	}
}
