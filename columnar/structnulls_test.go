package columnar

import (
	"bytes"
	"encoding/json"
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
)

func TestParseStructNulls(t *testing.T) {
	for _, n := range []StructNulls{StructNullsMember, StructNullsAbsent} {
		got, err := ParseStructNulls(n.String())
		if err != nil || got != n {
			t.Errorf("ParseStructNulls(%q) = %v, %v, want %v", n.String(), got, err, n)
		}
	}
	if _, err := ParseStructNulls("null"); err == nil || !strings.Contains(err.Error(), "want member or absent") {
		t.Errorf("ParseStructNulls(\"null\") = %v, want an error naming the values", err)
	}
}

// TestNestedJSONStructNullsAbsent renders structs whose fields are null
// in every position and through every kind of array with
// StructNullsAbsent: such a field is no member, the commas stay right,
// and nulls that are not struct fields (list elements, map values, the
// value itself) stay.
func TestNestedJSONStructNullsAbsent(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f := func(name string, dt arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: dt, Nullable: true}
	}
	i64, str := arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String
	abc := arrow.StructOf(f("a", i64), f("b", i64), f("c", i64))
	tests := []struct {
		name string
		dt   arrow.DataType
		in   string // arrow-go's JSON form of the array
		want []string
	}{
		{"positions", abc,
			`[{"a": null, "b": 1, "c": 2}, {"a": 1, "b": null, "c": 2}, {"a": 1, "b": 2, "c": null}, {"a": null, "b": null, "c": 3}, {"a": null, "b": null, "c": null}, null]`,
			[]string{`{"b":1,"c":2}`, `{"a":1,"c":2}`, `{"a":1,"b":2}`, `{"c":3}`, `{}`, `null`}},
		{"keyed records", arrow.StructOf(f("OPP-1", arrow.StructOf(f("id", str), f("amount", arrow.PrimitiveTypes.Float64))), f("OPP-2", arrow.StructOf(f("id", str), f("amount", arrow.PrimitiveTypes.Float64)))),
			`[{"OPP-1": {"id": "OPP-1", "amount": 72000}, "OPP-2": null}, {"OPP-1": null, "OPP-2": {"id": "OPP-2", "amount": null}}]`,
			[]string{`{"OPP-1":{"id":"OPP-1","amount":72000}}`, `{"OPP-2":{"id":"OPP-2"}}`}},
		{"list elements and map values stay", arrow.StructOf(f("l", arrow.ListOf(i64)), f("m", arrow.MapOf(str, i64)), f("s", abc)),
			`[{"l": [1, null], "m": [{"key": "k", "value": null}], "s": {"a": null, "b": null, "c": null}}, {"l": null, "m": null, "s": null}]`,
			[]string{`{"l":[1,null],"m":{"k":null},"s":{}}`, `{}`}},
		{"in a list", arrow.ListOf(abc), `[[{"a": 1, "b": null, "c": null}, null, {"a": null, "b": null, "c": 4}]]`,
			[]string{`[{"a":1},null,{"c":4}]`}},
		{"null type", arrow.StructOf(f("n", arrow.Null), f("x", str)), `[{"n": null, "x": "null"}]`, []string{`{"x":"null"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arr, _, err := array.FromJSON(mem, tt.dt, strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("FromJSON: %v", err)
			}
			defer arr.Release()
			got := renderAllNulls(arr, StructNullsAbsent)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("render %s = %q, want %q", tt.dt, got, tt.want)
			}
			for _, s := range got {
				if !json.Valid([]byte(s)) {
					t.Errorf("render %s gave invalid JSON %q", tt.dt, s)
				}
			}
		})
	}
}

// TestNestedJSONStructNullsDictionary renders a null field read through a
// dictionary (a null index, and a valid index to a null value), and a
// slice of the struct: both nulls are no member.
func TestNestedJSONStructNullsDictionary(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	values, _, err := array.FromJSON(mem, arrow.BinaryTypes.String, strings.NewReader(`["user", null]`))
	if err != nil {
		t.Fatal(err)
	}
	defer values.Release()
	indices, _, err := array.FromJSON(mem, arrow.PrimitiveTypes.Int8, strings.NewReader(`[0, 1, null, 0]`))
	if err != nil {
		t.Fatal(err)
	}
	defer indices.Release()
	role := array.NewDictionaryArray(dictType, indices, values)
	defer role.Release()
	n, _, err := array.FromJSON(mem, arrow.PrimitiveTypes.Int64, strings.NewReader(`[1, 2, 3, null]`))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Release()
	st, err := array.NewStructArray([]arrow.Array{role, n}, []string{"role", "n"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Release()
	got, want := renderAllNulls(st, StructNullsAbsent), []string{`{"role":"user","n":1}`, `{"n":2}`, `{"n":3}`, `{"role":"user"}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("render = %q, want %q", got, want)
	}
	s := array.NewSlice(st, 1, 4)
	defer s.Release()
	if got, want := renderAllNulls(s, StructNullsAbsent), want[1:]; !reflect.DeepEqual(got, want) {
		t.Errorf("render slice = %q, want %q", got, want)
	}
}

// ordered is a JSON value with its object members in their order.
type ordered struct {
	kind   byte // '{', '[', or 's' for a scalar
	keys   []string
	vals   []ordered
	scalar string
	null   bool
}

// decodeOrdered decodes text, keeping members in order (encoding/json's
// maps do not).
func decodeOrdered(text string) (ordered, error) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	return readOrdered(d)
}

func readOrdered(d *json.Decoder) (ordered, error) {
	tok, err := d.Token()
	if err != nil {
		return ordered{}, err
	}
	switch tok {
	case json.Delim('{'), json.Delim('['):
		v := ordered{kind: byte(tok.(json.Delim))}
		for d.More() {
			if v.kind == '{' {
				k, err := d.Token()
				if err != nil {
					return v, err
				}
				v.keys = append(v.keys, k.(string))
			}
			e, err := readOrdered(d)
			if err != nil {
				return v, err
			}
			v.vals = append(v.vals, e)
		}
		_, err := d.Token()
		return v, err
	}
	return ordered{kind: 's', scalar: fmt.Sprintf("%T %v", tok, tok), null: tok == nil}, nil
}

// nullsDropped reports where absent is not member with some members
// whose value is null left out, in order ("" when it is).
func nullsDropped(member, absent ordered, at string) string {
	if member.kind != absent.kind {
		return at + ": not the same kind of value"
	}
	switch member.kind {
	case 's':
		if member.scalar != absent.scalar {
			return at + ": " + member.scalar + " became " + absent.scalar
		}
	case '[':
		if len(member.vals) != len(absent.vals) {
			return at + ": array lengths differ"
		}
		for i := range member.vals {
			if w := nullsDropped(member.vals[i], absent.vals[i], fmt.Sprintf("%s[%d]", at, i)); w != "" {
				return w
			}
		}
	case '{':
		j := 0
		for i, k := range member.keys {
			if j < len(absent.keys) && absent.keys[j] == k {
				if w := nullsDropped(member.vals[i], absent.vals[j], at+"."+k); w != "" {
					return w
				}
				j++
				continue
			}
			if !member.vals[i].null {
				return at + "." + k + ": a member that is not null is missing"
			}
		}
		if j != len(absent.keys) {
			return at + "." + absent.keys[j] + ": a member that the member rendering lacks"
		}
	}
	return ""
}

// TestNestedPagesStructNulls reads random values of every shape the page
// reader reads (and those it leaves to pqarrow: the nested twins), in
// small row groups and pages, as final and initial states (the initial
// state's memo), with StructNullsAbsent: the page reader and pqarrow give
// the same cells, and each state is its StructNullsMember rendering
// without some null members, other states unchanged.
func TestNestedPagesStructNulls(t *testing.T) {
	dir := t.TempDir()
	absent := Options{StructNulls: StructNullsAbsent}
	dropped := 0
	for k, dt := range pagedTypes {
		for _, dict := range []bool{false, true} {
			name := fmt.Sprintf("type%d-dict%v", k, dict)
			t.Run(name, func(t *testing.T) {
				rec := twoStates(t, dt, 300, uint64(k))
				defer rec.Release()
				path := filepath.Join(dir, name+".parquet")
				writeNestedParquet(t, path, rec, 37, 128, dict)
				if !bothPaths(t, path, absent) {
					t.Fatalf("%s: read through pqarrow, want the page reader", dt)
				}
				dropped += compareNulls(t, stateTexts(t, path, Options{}), stateTexts(t, path, absent))
			})
		}
	}
	if dropped == 0 {
		t.Error("no state lost a null member: the random values have no null struct field")
	}
	_, twins, _ := writeNestedTwins(t, dir)
	if bothPaths(t, twins, absent) {
		t.Error("the nested twins were read by the page reader, want pqarrow")
	}
	compareNulls(t, stateTexts(t, twins, Options{}), stateTexts(t, twins, absent))
}

// stateTexts returns the final and initial state texts of every row of the
// Parquet file at path, read with opts.
func stateTexts(t *testing.T, path string, opts Options) [][2]string {
	t.Helper()
	r, err := OpenParquet(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out [][2]string
	for {
		b, err := r.Next(64)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range b.Rows {
			out = append(out, [2]string{string(row.Final.Data), string(row.Initial.Data)})
		}
		b.Release()
	}
}

// compareNulls fails unless each absent text is its member text without
// some null members, and returns how many differ.
func compareNulls(t *testing.T, member, absent [][2]string) int {
	t.Helper()
	if len(member) != len(absent) {
		t.Fatalf("%d rows as members, %d as absent", len(member), len(absent))
	}
	n := 0
	for i := range member {
		for k := range 2 {
			m, a := member[i][k], absent[i][k]
			if m == a {
				continue
			}
			n++
			mv, err := decodeOrdered(m)
			if err != nil {
				t.Fatalf("row %d: %q: %v", i, m, err)
			}
			av, err := decodeOrdered(a)
			if err != nil {
				t.Fatalf("row %d: %q: %v", i, a, err)
			}
			if w := nullsDropped(mv, av, "$"); w != "" {
				t.Fatalf("row %d: %s\nmember %s\nabsent %s", i, w, m, a)
			}
		}
	}
	return n
}

// TestArrowStructNulls reads a state of structs whose fields are the union
// of the rows' members (as pyarrow.json infers them) from an Arrow IPC
// file and an Arrow IPC stream: with StructNullsAbsent each row's state
// is its own object, with the default it has the other rows' members as
// nulls. A metadata column of the same type is rendered the same way.
func TestArrowStructNulls(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f := func(name string, dt arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: dt, Nullable: true}
	}
	rec := arrow.StructOf(f("id", arrow.BinaryTypes.String), f("n", arrow.PrimitiveTypes.Int64), f("tag", arrow.BinaryTypes.String))
	state := arrow.StructOf(f("items", arrow.StructOf(f("A", rec), f("B", rec))))
	schema := arrow.NewSchema([]arrow.Field{f("rollout_id", arrow.BinaryTypes.String), f("final_state", state), f("extra", state)}, nil)
	rows := `[{"rollout_id": "a", "final_state": {"items": {"A": {"id": "A", "n": 1}}}, "extra": {"items": {"A": {"id": "A", "n": 1}}}},
		{"rollout_id": "b", "final_state": {"items": {"B": {"id": "B", "n": 2, "tag": "x"}}}},
		{"rollout_id": "c", "final_state": null}]`
	r, _, err := array.RecordFromJSON(mem, schema, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	dir := t.TempDir()
	file, stream := filepath.Join(dir, "rows.arrow"), filepath.Join(dir, "rows.arrows")
	var fb, sb bytes.Buffer
	fw, err := ipc.NewFileWriter(&fb, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	sw := ipc.NewWriter(&sb, ipc.WithSchema(schema))
	for _, w := range []interface{ Write(arrow.RecordBatch) error }{fw, sw} {
		for _, s := range [][2]int64{{0, 1}, {1, 3}} { // two record batches, sliced
			part := r.NewSlice(s[0], s[1])
			if err := w.Write(part); err != nil {
				t.Fatal(err)
			}
			part.Release()
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string][]byte{file: fb.Bytes(), stream: sb.Bytes()} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		nulls StructNulls
		want  []string
	}{
		{StructNullsAbsent, []string{
			`a|{"items":{"A":{"id":"A","n":1}}}|{"items":{"A":{"id":"A","n":1}}}`,
			`b|{"items":{"B":{"id":"B","n":2,"tag":"x"}}}|`,
			`c||`,
		}},
		{StructNullsMember, []string{
			`a|{"items":{"A":{"id":"A","n":1,"tag":null},"B":null}}|{"items":{"A":{"id":"A","n":1,"tag":null},"B":null}}`,
			`b|{"items":{"A":null,"B":{"id":"B","n":2,"tag":"x"}}}|`,
			`c||`,
		}},
	}
	for _, path := range []string{file, stream} {
		for _, tt := range tests {
			ar, err := OpenArrow(path, Options{StructNulls: tt.nulls})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for {
				b, err := ar.Next(2)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				for _, row := range b.Rows {
					got = append(got, fmt.Sprintf("%s|%s|%s", row.ID.Data, row.Final.Data, row.Meta[0].Data))
				}
				b.Release()
			}
			ar.Close()
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s with struct nulls %s:\n got %q\nwant %q", filepath.Base(path), tt.nulls, got, tt.want)
			}
		}
	}
}
