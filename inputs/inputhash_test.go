package inputs

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// FuzzCompactHash: the content hash of a JSON text is the XXH64 of the
// text as encoding/json.Compact writes it (whitespace outside strings
// removed, every token as written).
func FuzzCompactHash(f *testing.F) {
	for _, s := range []string{`{}`, ` [ 1 , 2.50 ,"a b" ] `, `{"a\"":"x\\", "b" : [true,null]}`, `"\\\" \\"`, "{\n\t\"k\": \"v\\n\"\r\n}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var want bytes.Buffer
		if json.Compact(&want, []byte(text)) != nil {
			return
		}
		var h InputHasher
		if got := h.json([]byte(text)); got != xxhash.Sum64(want.Bytes()) {
			t.Errorf("hash of %q is not the hash of its compact form %q", text, want.String())
		}
	})
}
