package columnar

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// Result parts compress with the 1 MiB-window codec, and what it writes
// decodes with a stock zstd decoder, also for pages larger than the window.
func TestResultZstd(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*resultZstd); !ok {
		t.Fatalf("arrow-go's zstd codec is %T, want *resultZstd", c)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"pass", "fail", "VER-002", `{"ownerId":"USR-003"}`, "3 of 5 moved"}
	var src bytes.Buffer
	for src.Len() < 3*resultWindow {
		src.WriteString(words[rng.IntN(len(words))])
		src.WriteByte(byte(rng.IntN(256)))
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, n := range []int{0, 1, 1000, resultWindow + 17, src.Len()} {
		in := src.Bytes()[:n]
		enc := c.EncodeLevel(nil, in, 3)
		if again := c.Encode(make([]byte, 5), in); !bytes.Equal(again, enc) {
			t.Errorf("%d bytes: two encodings differ", n)
		}
		out, err := dec.DecodeAll(enc, nil)
		if err != nil || !bytes.Equal(out, in) {
			t.Errorf("%d bytes: round trip: %v", n, err)
		}
		if back := c.Decode(nil, enc); !bytes.Equal(back, in) {
			t.Errorf("%d bytes: arrow-go decode differs", n)
		}
	}
}
