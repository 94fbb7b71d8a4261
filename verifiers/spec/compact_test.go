package spec

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestAppendCompact(t *testing.T) {
	for _, in := range []string{
		`1`, `"a b"`, ` { "a" : [ 1 , 2 ] , "b\" c" : "x\ty" } `,
		"[\n\t{\"id\": 1, \"title\": \"Team \\u0041 Meeting\\\\\"},\r\n null, true, -1.5e3 ]",
		`"<&>"`, `{"k": "\u2028"}`, `[]`, `{}`,
	} {
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(in)); err != nil {
			t.Fatal(err)
		}
		if got := appendCompact([]byte("prefix"), []byte(in)); string(got) != "prefix"+want.String() {
			t.Errorf("appendCompact(%q) = %q, want %q", in, got, want.String())
		}
	}
}

// FuzzAppendCompact checks appendCompact against encoding/json.Compact on
// valid JSON.
func FuzzAppendCompact(f *testing.F) {
	f.Add([]byte(` { "a" : [ 1 , "x \" y" ] } `))
	f.Fuzz(func(t *testing.T, in []byte) {
		var want bytes.Buffer
		if json.Compact(&want, in) != nil {
			return
		}
		if got := appendCompact(nil, in); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("appendCompact(%q) = %q, want %q", in, got, want.Bytes())
		}
	})
}
