package columnar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

type lineRow struct {
	Index, Offset int64
	Line          string
	Err           string
}

func readAllLines(t *testing.T, r Reader, max int) []lineRow {
	t.Helper()
	var got []lineRow
	for {
		b, err := r.Next(max)
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if !b.JSONLines {
			t.Fatalf("batch.JSONLines = false, want true")
		}
		for _, row := range b.Rows {
			lr := lineRow{Index: row.Index, Offset: row.Offset, Line: string(row.Line)}
			if row.Err != nil {
				lr.Err = row.Err.Error()
			}
			got = append(got, lr)
		}
		b.Release()
	}
}

func TestJSONLReaderLines(t *testing.T) {
	const text = "{\"a\":1}\n\n  \n{\"b\":2}\r\n{\"c\":3}"
	want := []lineRow{
		{Index: 0, Offset: 0, Line: `{"a":1}`},
		{Index: 3, Offset: 12, Line: `{"b":2}`},
		{Index: 4, Offset: 21, Line: `{"c":3}`},
	}
	for _, max := range []int{1, 2, 100} {
		r, err := NewJSONLReader("x.jsonl", strings.NewReader(text), Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := readAllLines(t, r, max)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("max %d: lines (-want +got):\n%s", max, diff)
		}
	}
}

func TestJSONLReaderLineLimit(t *testing.T) {
	long := `{"x":"` + strings.Repeat("a", 5000) + `"}`
	text := `{"a":1}` + "\n" + long + "\n" + `{"b":2}` + "\n"
	r, err := NewJSONLReader("x.jsonl", strings.NewReader(text), Options{MaxLineBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	got := readAllLines(t, r, 10)
	want := []lineRow{
		{Index: 0, Offset: 0, Line: `{"a":1}`},
		{Index: 1, Offset: 8, Err: "line 2 is longer than the limit of 100 bytes"},
		{Index: 2, Offset: int64(8 + len(long) + 1), Line: `{"b":2}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

// A line of exactly the limit is kept and one byte more is too long,
// whatever terminates it: the terminator does not count.
func TestJSONLReaderLineLimitExact(t *testing.T) {
	const limit = 100
	line := func(n int) string { return `{"x":"` + strings.Repeat("a", n-8) + `"}` }
	for _, term := range []string{"\n", "\r\n", ""} {
		for _, tt := range []struct {
			n    int
			keep bool
		}{{limit - 1, true}, {limit, true}, {limit + 1, false}, {limit + 2, false}} {
			text := line(tt.n) + term
			r, err := NewJSONLReader("x.jsonl", strings.NewReader(text), Options{MaxLineBytes: limit})
			if err != nil {
				t.Fatal(err)
			}
			want := []lineRow{{Index: 0, Offset: 0, Line: line(tt.n)}}
			if !tt.keep {
				want = []lineRow{{Index: 0, Offset: 0, Err: "line 1 is longer than the limit of 100 bytes"}}
			}
			if diff := cmp.Diff(want, readAllLines(t, r, 10)); diff != "" {
				t.Errorf("line of %d bytes ending %q (-want +got):\n%s", tt.n, term, diff)
			}
		}
	}
}

func TestJSONLReaderCompressed(t *testing.T) {
	var lines []string
	for i := range 3000 {
		lines = append(lines, `{"i":`+strings.Repeat("1", i%7+1)+`}`)
	}
	text := strings.Join(lines, "\n") + "\n"
	dir := t.TempDir()
	write := func(name string, compress func(io.Writer) io.WriteCloser) string {
		var buf bytes.Buffer
		w := compress(&buf)
		if _, err := io.WriteString(w, text); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	paths := []string{
		write("a.jsonl", func(w io.Writer) io.WriteCloser { return nopCloser{w} }),
		write("a.jsonl.zst", func(w io.Writer) io.WriteCloser { z, _ := zstd.NewWriter(w); return z }),
		write("a.ndjson.gz", func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) }),
	}
	for _, p := range paths {
		r, err := Open(p, Options{})
		if err != nil {
			t.Fatalf("Open(%s): %v", p, err)
		}
		got := readAllLines(t, r, 256)
		r.Close()
		if len(got) != len(lines) {
			t.Fatalf("%s: %d lines, want %d", p, len(got), len(lines))
		}
		for i, g := range got {
			if g.Line != lines[i] || g.Index != int64(i) {
				t.Fatalf("%s: line %d = %+v, want %q", p, i, g, lines[i])
			}
		}
	}
}

func TestJSONLReaderCorruptStream(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.jsonl.gz")
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	io.WriteString(w, strings.Repeat(`{"a":1}`+"\n", 10000))
	w.Close()
	data := buf.Bytes()
	data = data[:len(data)/2]
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		b, err := r.Next(100)
		if err == nil {
			b.Release()
			continue
		}
		if errors.Is(err, io.EOF) {
			t.Fatal("truncated gzip stream read to the end without error")
		}
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not name the file", err)
		}
		return
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func TestDecodeLine(t *testing.T) {
	fields := FieldNames{}.WithDefaults()
	type cellWant struct {
		Kind CellKind
		Data string
	}
	tests := []struct {
		name    string
		line    string
		wantErr string
		id, out cellWant
		final   cellWant
	}{
		{name: "strings", line: `{"rollout_id":"r1","output":"hi \"there\"","final_state":"{\"a\":1}"}`,
			id: cellWant{CellString, "r1"}, out: cellWant{CellString, `hi "there"`}, final: cellWant{CellString, `{"a":1}`}},
		{name: "objects and numbers", line: `{"rollout_id":7,"final_state":{"a":[1,2]},"output":null}`,
			id: cellWant{CellNumber, "7"}, final: cellWant{CellJSON, `{"a":[1,2]}`}},
		{name: "first key wins", line: `{"rollout_id":"a","rollout_id":"b"}`, id: cellWant{CellString, "a"}},
		{name: "not an object", line: `[1,2]`, wantErr: "line 1: not a JSON object"},
		{name: "invalid", line: `{"a":}`, wantErr: "line 1: invalid JSON at byte 5 of the line"},
		{name: "bool output", line: `{"output":true}`, out: cellWant{CellBool, "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := Row{Line: []byte(tt.line)}
			var doc jsonview.Doc
			_, err := DecodeLine(&row, &fields, &doc)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("DecodeLine(%s) error = %v, want prefix %q", tt.line, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeLine(%s): %v", tt.line, err)
			}
			for _, c := range []struct {
				name string
				got  Cell
				want cellWant
			}{{"id", row.ID, tt.id}, {"output", row.Output, tt.out}, {"final", row.Final, tt.final}} {
				if c.got.Kind != c.want.Kind || string(c.got.Data) != c.want.Data {
					t.Errorf("%s = %v %q, want %v %q", c.name, c.got.Kind, c.got.Data, c.want.Kind, c.want.Data)
				}
			}
		})
	}
}

// FuzzDecodeLine checks that any line decodes or fails cleanly, and that
// a decoded string cell holds what encoding/json reads.
func FuzzDecodeLine(f *testing.F) {
	for _, s := range []string{
		`{"rollout_id":"r1","task_id":"TASK-001","final_state":{"users":{}},"output":"x"}`,
		`{"task_id":7,"final_state":"{\"a\":1}","log":[{"eventType":"click"}]}`,
		`[]`, `{"a":}`, `{"output":"\u00e9\ud83d\ude00"}`, ``,
		`{"initial_state":{"a":[1,"}"]},"final_state":{"a":[1,"}"]},"initial_state":[]}`,
		`{"initial_state":{"a":[1,"}"]},"final_state":{"b":1}}`,
		`{"initial_state":{"a":01},"final_state":{"b":}}`,
		`{"model":"m","initial_state":[{"x":"\"]"}],"log":[]}`,
		`{"initial_state":"{\"a\":1}"}`,
		`{"rollout_id":"r","final_state":{"k":"` + strings.Repeat("v", 300) + `"},"initial_state":{"k":"` + strings.Repeat("v", 300) + `"},"model":"m","sample":1}`,
		`{"rollout_id":"r","initial_state":{"k":"` + strings.Repeat("v", 300) + `"},"final_state":{"k":"` + strings.Repeat("v", 300) + `"}}`,
	} {
		f.Add([]byte(s))
	}
	fields := FieldNames{}.WithDefaults()
	var doc, doc2, initDoc jsonview.Doc
	cache := jsonview.NewCache(1 << 20)
	f.Fuzz(func(t *testing.T, line []byte) {
		// DecodeLineCached, three times so that the cache holds the
		// states, must decode the line as DecodeLine does, and give as
		// metadata the members that are not rollout fields.
		row := Row{Line: line}
		root, err := DecodeLine(&row, &fields, &doc)
		var wantMeta []byte
		if err == nil {
			wantMeta = append(wantMeta, '{')
			for m := root.First(); m.Exists(); m = m.Next() {
				if m.KeyIs(fields.ID) || m.KeyIs(fields.Task) || m.KeyIs(fields.Final) || m.KeyIs(fields.Initial) || m.KeyIs(fields.Output) || m.KeyIs(fields.Log) {
					continue
				}
				if len(wantMeta) > 1 {
					wantMeta = append(wantMeta, ',')
				}
				wantMeta = append(wantMeta, m.RawMember()...)
			}
			wantMeta = append(wantMeta, '}')
			if !json.Valid(wantMeta) {
				t.Fatalf("metadata %q is not valid JSON", wantMeta)
			}
		}
		for range 3 {
			got := Row{Line: line}
			meta, gotErr := DecodeLineCached(&got, &fields, StateSkips(&fields, cache), &doc2, &initDoc, nil)
			if fmt.Sprint(gotErr) != fmt.Sprint(err) {
				t.Fatalf("DecodeLineCached error %v, DecodeLine error %v", gotErr, err)
			}
			if err != nil {
				continue
			}
			if !bytes.Equal(meta, wantMeta) {
				t.Fatalf("metadata %q, want %q", meta, wantMeta)
			}
			gc, wc := []Cell{got.ID, got.Task, got.Final, got.Initial, got.Output, got.Log}, []Cell{row.ID, row.Task, row.Final, row.Initial, row.Output, row.Log}
			for i := range gc {
				if gc[i].Kind != wc[i].Kind || !bytes.Equal(gc[i].Data, wc[i].Data) || !bytes.Equal(gc[i].V.Raw(), wc[i].V.Raw()) {
					t.Fatalf("cell %d: DecodeLineCached %v %q, DecodeLine %v %q", i, gc[i].Kind, gc[i].Data, wc[i].Kind, wc[i].Data)
				}
			}
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line 1: ") {
				t.Fatalf("error %q does not name the line", err)
			}
			return
		}
		if root.Kind() != jsonview.Object {
			t.Fatalf("root kind %v, want object", root.Kind())
		}
		for _, c := range []Cell{row.ID, row.Task, row.Final, row.Initial, row.Output, row.Log} {
			switch c.Kind {
			case CellNull, CellString:
			case CellJSON, CellNumber, CellBool:
				if !bytes.Equal(c.Data, c.V.Raw()) {
					t.Fatalf("cell data %q != raw %q", c.Data, c.V.Raw())
				}
			}
		}
	})
}

// oneByteReader returns at most n bytes per Read, so that lines straddle
// reads anywhere.
type oneByteReader struct {
	r io.Reader
	n int
}

func (o *oneByteReader) Read(p []byte) (int, error) {
	return o.r.Read(p[:min(len(p), o.n)])
}

// FuzzJSONLReaderLines checks the reader's split of a stream into lines
// against a model (split at '\n', drop one '\r' before it, skip blank
// lines, refuse lines over the limit), for any batch size, read size and
// limit: indexes, byte offsets, texts and errors.
func FuzzJSONLReaderLines(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n\n  \n{\"b\":2}\r\n{\"c\":3}"), uint8(2), uint8(3), uint8(5))
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaaaaaa\nb\n\r\ncccccccccccccccccccc"), uint8(1), uint8(1), uint8(4))
	f.Add([]byte("x\n"+strings.Repeat("y", 300)+"\n"+strings.Repeat(" ", 40)+"\nz"), uint8(3), uint8(17), uint8(30))
	f.Fuzz(func(t *testing.T, data []byte, maxRows, readSize, maxLine uint8) {
		limit := int(maxLine) + 1
		var want []lineRow
		off := int64(0)
		rest := data
		for i := int64(0); len(rest) > 0; i++ {
			n := bytes.IndexByte(rest, '\n') + 1
			if n == 0 {
				n = len(rest)
			}
			text := rest[:n]
			rest = rest[n:]
			line := bytes.TrimSuffix(bytes.TrimSuffix(text, []byte{'\n'}), []byte{'\r'})
			switch {
			case len(line) > limit:
				want = append(want, lineRow{Index: i, Offset: off, Err: fmt.Sprintf("line %d is longer than the limit of %d bytes", i+1, limit)})
			case len(bytes.TrimSpace(line)) > 0:
				want = append(want, lineRow{Index: i, Offset: off, Line: string(line)})
			}
			off += int64(n)
		}
		r, err := NewJSONLReader("x.jsonl", &oneByteReader{bytes.NewReader(data), int(readSize) + 1}, Options{MaxLineBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		got := readAllLines(t, r, int(maxRows)%7+1)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("lines (-want +got):\n%s", diff)
		}
	})
}
