package columnar

import (
	"bytes"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// memoKey returns the memo key of row i of arr.
func memoKey(t *testing.T, arr arrow.Array, i int) []byte {
	t.Helper()
	key, ok := appendMemoKey(nil, arr, i, i+1)
	if !ok {
		t.Fatalf("no memo key for %s", arr.DataType())
	}
	return key
}

// checkMemoKeys checks that rows of arr with equal keys render the same
// text, and that rows whose keys are wanted apart (same[i][j] false) have
// different keys.
func checkMemoKeys(t *testing.T, arr arrow.Array, same func(i, j int) bool) {
	t.Helper()
	texts := renderAll(arr)
	for i := range arr.Len() {
		for j := range arr.Len() {
			eq := bytes.Equal(memoKey(t, arr, i), memoKey(t, arr, j))
			if eq && texts[i] != texts[j] {
				t.Errorf("%s: rows %d and %d share a key, render %s and %s", arr.DataType(), i, j, texts[i], texts[j])
			}
			if same != nil && eq != same(i, j) {
				t.Errorf("%s: rows %d (%s) and %d (%s): equal keys = %v, want %v", arr.DataType(), i, texts[i], j, texts[j], eq, same(i, j))
			}
		}
	}
}

func TestNestedMemoKey(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	str := arrow.BinaryTypes.String
	tests := []struct {
		name string
		dt   arrow.DataType
		in   string
		// groups gives each row's group: rows of one group are the same
		// value, rows of different groups are not.
		groups []int
	}{
		{"string split", arrow.ListOf(str), `[["ab", "c"], ["a", "bc"], ["ab", "c"], ["abc"]]`, []int{0, 1, 0, 2}},
		{"null and empty", arrow.ListOf(str), `[[""], [null], [], null, [""]]`, []int{0, 1, 2, 3, 0}},
		{"nested lengths", arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int64)), `[[[1], []], [[], [1]], [[1], []]]`, []int{0, 1, 0}},
		{"struct nulls", arrow.StructOf(arrow.Field{Name: "a", Type: str, Nullable: true}, arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Float64, Nullable: true}),
			`[{"a": "x", "b": 1.5}, {"a": null, "b": 1.5}, {"a": "x", "b": 1.5}, {"a": "x", "b": -1.5}]`, []int{0, 1, 0, 2}},
		{"map entries", arrow.MapOf(str, arrow.FixedWidthTypes.Boolean),
			`[[{"key": "k", "value": true}], [{"key": "k", "value": false}], [{"key": "k", "value": true}], []]`, []int{0, 1, 0, 2}},
		{"fixed-size list", arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int32), `[[1, 2], [2, 1], [1, 2], [1, null]]`, []int{0, 1, 0, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arr, _, err := array.FromJSON(mem, tt.dt, strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			defer arr.Release()
			checkMemoKeys(t, arr, func(i, j int) bool { return tt.groups[i] == tt.groups[j] })
			// The same rows in a slice of the array, whose offsets do not
			// start at zero.
			s := array.NewSlice(arr, 1, int64(arr.Len()))
			defer s.Release()
			checkMemoKeys(t, s, func(i, j int) bool { return tt.groups[i+1] == tt.groups[j+1] })
		})
	}
}

// FuzzNestedMemoKey builds random nested Arrow values and checks that two
// rows with the same memo key render the same JSON text.
func FuzzNestedMemoKey(f *testing.F) {
	f.Add([]byte{6, 2, 0, 1, 3, 8, 1, 11, 2, 9, 4, 10, 2, 5})
	f.Add([]byte{8, 2, 4, 1, 0, 1, 0, 7, 1, 2, 3, 0})
	f.Add([]byte("a longer seed that draws many things at once, 0123456789"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		z := &fuzzGen{b: data}
		dt := z.typ(0)
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		for range 2 + z.next()%6 {
			z.value(b, true)
		}
		arr := b.NewArray()
		defer arr.Release()
		if _, ok := appendMemoKey(nil, arr, 0, 1); !ok {
			t.Fatalf("no memo key for %s", dt)
		}
		checkMemoKeys(t, arr, nil)
	})
}

// TestNestedMemoCells checks that the initial state's column hands out one
// stable text per distinct value, the text the value renders to.
func TestNestedMemoCells(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dt := arrow.StructOf(arrow.Field{Name: "users", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true})
	in := `[{"users": [{"key": "a", "value": 1}]}, {"users": [{"key": "b", "value": 1}]}, {"users": [{"key": "a", "value": 1}]}, null, {"users": [{"key": "a", "value": 1}]}]`
	arr, _, err := array.FromJSON(mem, dt, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	defer arr.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "initial_state", Type: dt, Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{arr}, int64(arr.Len()))
	defer rec.Release()

	for _, slot := range []int{slotInitial, slotFinal} {
		c := &arrowCol{name: "initial_state", slots: []int{slot}, nested: true}
		c.bind(rec)
		cb := &chunkBatch[struct{}]{}
		want := renderAll(arr)
		var cells []Cell
		for i := range arr.Len() {
			cell, err := colCell(c, cb, i, true)
			if err != nil {
				t.Fatal(err)
			}
			if cell.Kind != CellNull && string(cell.Data) != want[i] {
				t.Errorf("slot %d row %d: %s, want %s", slot, i, cell.Data, want[i])
			}
			cells = append(cells, cell)
		}
		same := unsafe.SliceData(cells[0].Data) == unsafe.SliceData(cells[2].Data) && unsafe.SliceData(cells[0].Data) == unsafe.SliceData(cells[4].Data)
		if slot == slotInitial && (!same || !cells[0].Stable || !cells[4].Stable) {
			t.Errorf("initial state: rows 0, 2 and 4 share memory %v, stable %v %v; want one stable text", same, cells[0].Stable, cells[4].Stable)
		}
		if slot == slotInitial && unsafe.SliceData(cells[0].Data) == unsafe.SliceData(cells[1].Data) {
			t.Errorf("initial state: rows 0 and 1 share a text")
		}
		if slot != slotInitial && (same || cells[0].Stable) {
			t.Errorf("final state: rows share memory %v, stable %v; want texts of their own", same, cells[0].Stable)
		}
	}
}

// TestNestedMemoDictionaries checks that the initial state's memo keys a
// value of dictionary arrays by the dictionary it indexes: the same
// indices into another record batch's dictionary are another value, also
// when that dictionary was seen before, and a dictionary with the same
// content as an earlier one finds its texts: right after it, and after a
// dictionary seen before, which does not empty the memo as a new one does.
func TestNestedMemoDictionaries(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	dt := arrow.StructOf(arrow.Field{Name: "names", Type: arrow.ListOf(dict), Nullable: true})
	schema := arrow.NewSchema([]arrow.Field{{Name: "initial_state", Type: dt, Nullable: true}}, nil)
	batch := func(values string, indices ...int32) arrow.RecordBatch {
		d, _, err := array.FromJSON(mem, arrow.BinaryTypes.String, strings.NewReader(values))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Release()
		b := array.NewStructBuilder(mem, dt)
		defer b.Release()
		lb := b.FieldBuilder(0).(*array.ListBuilder)
		db := lb.ValueBuilder().(*array.BinaryDictionaryBuilder)
		if err := db.InsertStringDictValues(d.(*array.String)); err != nil {
			t.Fatal(err)
		}
		for _, i := range indices {
			b.Append(true)
			lb.Append(true)
			db.AppendIndices([]int{int(i)}, nil)
		}
		arr := b.NewArray()
		defer arr.Release()
		return array.NewRecordBatch(schema, []arrow.Array{arr}, int64(arr.Len()))
	}
	batches := []struct {
		rec  arrow.RecordBatch
		want []string
	}{
		{batch(`["a", "b"]`, 0, 1, 0), []string{`{"names":["a"]}`, `{"names":["b"]}`, `{"names":["a"]}`}},
		{batch(`["b", "a"]`, 0, 1, 0), []string{`{"names":["b"]}`, `{"names":["a"]}`, `{"names":["b"]}`}},
		{batch(`["b", "a"]`, 0), []string{`{"names":["b"]}`}},
		{batch(`["a", "b"]`, 0), []string{`{"names":["a"]}`}},
		{batch(`["b", "a"]`, 0), []string{`{"names":["b"]}`}},
	}
	c := &arrowCol{name: "initial_state", slots: []int{slotInitial}, nested: true}
	cb := &chunkBatch[struct{}]{}
	var cells [][]Cell
	for k, b := range batches {
		defer b.rec.Release()
		c.bind(b.rec)
		var got []Cell
		for i := range b.want {
			cell, err := colCell(c, cb, i, true)
			if err != nil {
				t.Fatal(err)
			}
			if string(cell.Data) != b.want[i] || !cell.Stable {
				t.Errorf("batch %d row %d: %s (stable %v), want stable %s", k, i, cell.Data, cell.Stable, b.want[i])
			}
			got = append(got, cell)
		}
		cells = append(cells, got)
	}
	if unsafe.SliceData(cells[0][0].Data) != unsafe.SliceData(cells[0][2].Data) {
		t.Error("batch 0: rows 0 and 2 do not share a text")
	}
	if unsafe.SliceData(cells[1][0].Data) != unsafe.SliceData(cells[2][0].Data) {
		t.Error("batches 1 and 2, with the same dictionary, do not share a text")
	}
	// Batch 3's dictionary has batch 0's content: it is known again, so it
	// keeps the memo (only a new dictionary empties it), and batch 4, back
	// to batch 2's dictionary, finds batch 2's text again.
	if unsafe.SliceData(cells[4][0].Data) != unsafe.SliceData(cells[2][0].Data) {
		t.Error("batch 4 does not find batch 2's text again after batch 3's dictionary, seen before")
	}
}
