package pipeline

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
)

// fuzzExts are the input kinds FuzzReadInput reads its bytes as.
var fuzzExts = []string{".parquet", ".jsonl.zst", ".jsonl.gz", ".jsonl", ".arrow"}

// FuzzReadInput reads arbitrary bytes as every input format: opening and
// reading must end in rows or an error naming the file, never a panic or a
// hang, and a JSON Lines row must decode or fail cleanly.
func FuzzReadInput(f *testing.F) {
	line := []byte(`{"rollout_id":"r1","task_id":"TASK-001","final_state":{"users":{}},"output":"12"}` + "\n")
	var zb bytes.Buffer
	zw, _ := zstd.NewWriter(&zb)
	zw.Write(line)
	zw.Close()
	var gb bytes.Buffer
	gw := gzip.NewWriter(&gb)
	gw.Write(line)
	gw.Close()
	f.Add(zb.Bytes(), uint8(1))
	f.Add(gb.Bytes(), uint8(2))
	f.Add(line, uint8(3))
	f.Add(hugeWindowZstd(string(line)), uint8(1))
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"), uint8(0))
	dir := f.TempDir()
	fields := columnar.FieldNames{}.WithDefaults()
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		path := filepath.Join(dir, "in"+fuzzExts[int(kind)%len(fuzzExts)])
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		rd, err := columnar.Open(path, columnar.Options{MaxLineBytes: 1 << 16})
		if err != nil {
			return
		}
		defer rd.Close()
		var doc jsonview.Doc
		for {
			b, err := rd.Next(64)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if !bytes.Contains([]byte(err.Error()), []byte(path)) {
					t.Fatalf("error %q does not name the file", err)
				}
				return
			}
			for i := range b.Rows {
				if b.JSONLines {
					columnar.DecodeLine(&b.Rows[i], &fields, &doc)
				}
			}
			b.Release()
		}
	})
}
