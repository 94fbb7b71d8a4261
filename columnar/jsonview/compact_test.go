package jsonview

import (
	"bytes"
	"encoding/json"
	"testing"
)

// writes is an io.Writer that keeps what it is given and counts the
// calls.
type writes struct {
	bytes.Buffer
	n int
}

func (w *writes) Write(p []byte) (int, error) {
	w.n++
	return w.Buffer.Write(p)
}

// checkCompact checks that WriteCompact writes v and every value in it as
// encoding/json.Compact writes its text.
func checkCompact(t *testing.T, data []byte, v Value) {
	t.Helper()
	var want bytes.Buffer
	if err := json.Compact(&want, v.Raw()); err != nil {
		t.Fatalf("%q: json.Compact(%q): %v", data, v.Raw(), err)
	}
	var got writes
	v.WriteCompact(&got)
	if got.String() != want.String() {
		t.Fatalf("%q: WriteCompact of %q = %q, want %q", data, v.Raw(), got.String(), want.String())
	}
	for c := v.First(); c.Exists(); c = c.Next() {
		checkCompact(t, data, c)
	}
}

// FuzzWriteCompact checks WriteCompact and WriteCompactText against
// encoding/json.Compact, on every value of a text, and on the root of a
// ParseSkipping that left members out.
func FuzzWriteCompact(f *testing.F) {
	for _, s := range []string{
		`{}`, ` [ 1 , 2.50 ,"a b" ] `, `{"a\"":"x\\", "b" : [true,null]}`, `"\\\" \\"`,
		"{\n\t\"k\": \"v\\n\"\r\n}", `{"s" : {"x": [1, "]"]}, "m":{"y" :2},"t":[ ]}`,
		`{"a":{"b":[1,2]},"c" :{ "d":3}}`,
	} {
		f.Add([]byte(s))
	}
	var d, d2 Doc
	cache := NewCache(1 << 20)
	f.Fuzz(func(t *testing.T, data []byte) {
		root, err := d.Parse(data)
		if err != nil {
			return
		}
		checkCompact(t, data, root)
		var want, got bytes.Buffer
		json.Compact(&want, data)
		WriteCompactText(&got, data)
		if got.String() != want.String() {
			t.Fatalf("WriteCompactText(%q) = %q, want %q", data, got.String(), want.String())
		}
		for m := root.First(); m.Exists(); m = m.Next() {
			if k := m.Kind(); k == Object || k == Array {
				cache.Lookup(m.Raw())
				cache.Lookup(m.Raw())
			}
		}
		skipped, _, _, err := d2.ParseSkipping(data, Skips{Cache: cache, Scan: "s", Match: "m"})
		if err != nil {
			return
		}
		checkCompact(t, data, skipped)
	})
}

// TestWriteCompactPieces: a value without whitespace is written in one
// piece, also inside a text that has whitespace elsewhere; one with
// whitespace is written in the pieces between it.
func TestWriteCompactPieces(t *testing.T) {
	root := parse(t, ` { "a" : {"b":[1,"x y"]}, "c": [ 1 ,2 ] } `)
	tests := []struct {
		v     Value
		want  string
		calls int
	}{
		{root.Get("a"), `{"b":[1,"x y"]}`, 1},
		{root.Get("c"), `[1,2]`, 4},
		{root, `{"a":{"b":[1,"x y"]},"c":[1,2]}`, 10},
		{Value{}, ``, 0},
	}
	for _, tt := range tests {
		var got writes
		tt.v.WriteCompact(&got)
		if got.String() != tt.want || got.n != tt.calls {
			t.Errorf("WriteCompact of %q = %q in %d writes, want %q in %d", tt.v.Raw(), got.String(), got.n, tt.want, tt.calls)
		}
	}
}
