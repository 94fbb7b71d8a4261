package columnar

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/go-cmp/cmp"
)

func TestResolveStdin(t *testing.T) {
	tests := []struct {
		name string
		head []byte
		want string
	}{
		{"continuation marker", []byte{0xFF, 0xFF, 0xFF, 0xFF}, InputArrowStream},
		{"legacy message length", []byte{0x10, 0x01, 0, 0}, InputArrowStream},
		{"object", []byte(`{"ro`), InputJSONL},
		{"blank line first", []byte("\n{\"r"), InputJSONL},
		{"spaces", []byte("  {\""), InputJSONL},
		{"byte order mark", []byte("\xEF\xBB\xBF{"), InputJSONL},
		{"empty", nil, InputJSONL},
		{"short", []byte("{}"), InputJSONL},
		{"text", []byte("task"), InputJSONL},
		{"too long for a message", []byte{0, 0, 0, 0x10}, InputJSONL},
	}
	for _, tt := range tests {
		if got, ok := Resolve(Source{Stdin: true, Head: tt.head}); got != tt.want || !ok {
			t.Errorf("%s: Resolve(stdin, head %q) = %s, %v; want %s", tt.name, tt.head, got, ok, tt.want)
		}
	}
	// --from and --input-format come before the first bytes.
	arrow := []byte{0xFF, 0xFF, 0xFF, 0xFF}
	if got, _ := Resolve(Source{Stdin: true, From: InputNemoGym, Head: arrow}); got != InputNemoGym {
		t.Errorf("Resolve(stdin, from nemo-gym) = %s, want %s", got, InputNemoGym)
	}
	if got, _ := Resolve(Source{Stdin: true, Format: InputJSONL, Head: arrow}); got != InputJSONL {
		t.Errorf("Resolve(stdin, format jsonl) = %s, want %s", got, InputJSONL)
	}
}

// stdinStream returns an Arrow IPC stream of rows rows of task_id, model
// and a struct column world, in record batches of the given sizes, and
// the offset of each record batch's message (but the first's, which the
// schema message precedes: 0).
func stdinStream(t *testing.T, sizes ...int) ([]byte, []int) {
	t.Helper()
	world := arrow.StructOf(arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int64})
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "task_id", Type: arrow.BinaryTypes.String},
		{Name: "model", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "world", Type: world, Nullable: true},
	}, nil)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
	defer b.Release()
	var offsets []int
	row := 0
	for _, n := range sizes {
		for range n {
			b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("T%d", row))
			b.Field(1).(*array.StringBuilder).Append("m")
			sb := b.Field(2).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int64Builder).Append(int64(row))
			row++
		}
		rec := b.NewRecordBatch()
		offsets = append(offsets, buf.Len())
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), offsets
}

// TestStdinArrowStream checks that an Arrow IPC stream on standard input
// is told from its first bytes, read with the fields mapped (a struct
// column as a state) and its columns described, and that its batches end
// where its record batches do, so that no batch waits for the next
// record batch.
func TestStdinArrowStream(t *testing.T) {
	stream, _ := stdinStream(t, 3, 5, 2)
	for _, format := range []string{"", InputArrowStream} {
		in, err := DescribeStdin("-", bytes.NewReader(stream), format)
		if err != nil {
			t.Fatal(err)
		}
		if in.Format != InputArrowStream {
			t.Errorf("format %q: described as %s, want %s", format, in.Format, InputArrowStream)
		}
		if diff := cmp.Diff([]string{"task_id", "model", "world"}, in.Columns); diff != "" {
			t.Errorf("columns (-want +got):\n%s", diff)
		}
		rd, err := in.Open(in.Units[0], Options{Fields: FieldNames{Final: "world"}})
		if err != nil {
			t.Fatal(err)
		}
		var lens []int
		var ends []bool
		var tasks, finals []string
		for {
			b, err := rd.Next(4)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			lens = append(lens, len(b.Rows))
			ends = append(ends, b.EndsRecordBatch)
			for _, r := range b.Rows {
				tasks = append(tasks, string(r.Task.Data))
				finals = append(finals, string(r.Final.Data))
			}
			b.Release()
		}
		rd.Close()
		if diff := cmp.Diff([]int{3, 4, 1, 2}, lens); diff != "" {
			t.Errorf("batch lengths (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]bool{true, false, true, true}, ends); diff != "" {
			t.Errorf("batches ending a record batch (-want +got):\n%s", diff)
		}
		if tasks[9] != "T9" || finals[9] != `{"n":9}` {
			t.Errorf("row 9: task %q, final state %q; want T9, {\"n\":9}", tasks[9], finals[9])
		}
		if _, err := in.Open(in.Units[0], Options{}); err == nil {
			t.Errorf("standard input opened twice")
		}
	}
}

// TestStdinReadsAhead checks that the reader of a stream on standard input
// reads the next record batch while the rows of the current one are being
// graded (the writer's second record batch crosses the pipe with no Next
// call after the first batch), but not the one after it (bounded memory);
// and that Close returns while a read is blocked on the pipe.
func TestStdinReadsAhead(t *testing.T) {
	stream, offsets := stdinStream(t, 2, 2, 2)
	pr, pw := io.Pipe()
	defer pr.Close()
	wrote := make(chan int, 4) // bytes of the stream written so far, after each write
	go func() {
		// The schema message and the first record batch, then each
		// record batch in its own write; the end-of-stream marker is
		// never sent, so the last read blocks.
		cuts := []int{offsets[1], offsets[2], len(stream) - 8}
		at := 0
		for _, c := range cuts {
			if _, err := pw.Write(stream[at:c]); err != nil {
				return
			}
			at = c
			wrote <- c
		}
	}()
	in, err := DescribeStdin("-", pr, InputArrowStream)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := in.Open(in.Units[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := rd.Next(10)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Rows) != 2 || string(b.Rows[0].Task.Data) != "T0" {
		t.Fatalf("first batch: %d rows; want T0 and T1", len(b.Rows))
	}
	if got := <-wrote; got != offsets[1] {
		t.Fatalf("first write ends at %d, want %d", got, offsets[1])
	}
	select {
	case got := <-wrote:
		if got != offsets[2] {
			t.Fatalf("second write ends at %d, want %d", got, offsets[2])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second record batch was not read while the first was held")
	}
	select {
	case <-wrote:
		t.Fatal("the third record batch was read before the reader took the second: more than one ahead")
	case <-time.After(50 * time.Millisecond):
	}
	b.Release()
	closed := make(chan error, 1)
	go func() { closed <- rd.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for a read blocked on the pipe")
	}
}

func TestStdinJSONLines(t *testing.T) {
	data := "{\"task_id\":\"a\"}\n\n{\"task_id\":\"b\"}\n"
	for _, format := range []string{"", InputJSONL} {
		in, err := DescribeStdin("-", strings.NewReader(data), format)
		if err != nil {
			t.Fatal(err)
		}
		if in.Format != InputJSONL || in.Columns != nil {
			t.Errorf("format %q: described as %s with columns %v, want jsonl without", format, in.Format, in.Columns)
		}
		rd, err := in.Open(in.Units[0], Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := rd.Next(10)
		if err != nil {
			t.Fatal(err)
		}
		// The blank line is skipped, and counted.
		if last := b.Rows[len(b.Rows)-1]; len(b.Rows) != 2 || last.Index != 2 || string(last.Line) != `{"task_id":"b"}` {
			t.Errorf("%d rows, the last %d %q; want 2, the last 2 {\"task_id\":\"b\"}", len(b.Rows), last.Index, last.Line)
		}
		b.Release()
		rd.Close()
	}
}

// TestStdinArrowStreamErrors checks that a stream cut short names
// standard input and the byte offset of the message cut, or where it
// ends without its end-of-stream marker, and that input that is no
// stream, read as one, says so.
func TestStdinArrowStreamErrors(t *testing.T) {
	stream, offsets := stdinStream(t, 3, 5, 2)
	cut := stream[:offsets[2]+20]
	in, err := DescribeStdin("-", bytes.NewReader(cut), "")
	if err != nil {
		t.Fatal(err)
	}
	rd, err := in.Open(in.Units[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	rows := 0
	for {
		b, err := rd.Next(100)
		if err != nil {
			want := fmt.Sprintf("read standard input: record batch 2 at byte %d: the stream ends inside the message (truncated): ", offsets[2])
			if !strings.HasPrefix(err.Error(), want) || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("error %q, want it to start with %q", err, want)
			}
			break
		}
		rows += len(b.Rows)
		b.Release()
	}
	if rows != 8 {
		t.Errorf("%d rows before the error, want 8", rows)
	}

	// Cut between two messages: the end-of-stream marker is missing.
	if eos := stream[len(stream)-8:]; !bytes.Equal(eos, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0}) {
		t.Fatalf("the stream ends in % x, not in an end-of-stream marker", eos)
	}
	in, err = DescribeStdin("-", bytes.NewReader(stream[:len(stream)-8]), "")
	if err != nil {
		t.Fatal(err)
	}
	rd2, err := in.Open(in.Units[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd2.Close()
	rows = 0
	for {
		b, err := rd2.Next(100)
		if err != nil {
			want := fmt.Sprintf("read standard input: the stream ends at byte %d without its end-of-stream marker", len(stream)-8)
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q, want it to start with %q", err, want)
			}
			break
		}
		rows += len(b.Rows)
		b.Release()
	}
	if rows != 10 {
		t.Errorf("%d rows before the missing marker, want 10", rows)
	}

	for _, tt := range []struct {
		name, data, want string
	}{
		{"json lines", "{\"task_id\":1}\n", "read standard input: not an arrow ipc stream (schema message at byte 0): "},
		{"empty", "", "read standard input: not an arrow ipc stream: it is empty"},
		{"unknown format", "", `unknown input format "csv"`},
	} {
		format := InputArrowStream
		if tt.name == "unknown format" {
			format = "csv"
		}
		_, err := DescribeStdin("-", strings.NewReader(tt.data), format)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: DescribeStdin = %v, want an error starting with %q", tt.name, err, tt.want)
		}
	}
}

// FuzzStdin reads arbitrary bytes as standard input: whatever they are,
// describing and reading them ends in rows or an error naming standard
// input, never in a panic.
func FuzzStdin(f *testing.F) {
	stream, offsets := stdinStream(&testing.T{}, 2, 3)
	f.Add(stream)
	f.Add(stream[:offsets[1]+10])
	f.Add([]byte("{\"task_id\":\"a\"}\n"))
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFF, 8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	defer func(limit int64) { streamBodyLimit = limit }(streamBodyLimit)
	streamBodyLimit = 1 << 20
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := DescribeStdin("-", bytes.NewReader(data), "")
		if err != nil {
			if !strings.Contains(err.Error(), "standard input") {
				t.Errorf("error %q does not name standard input", err)
			}
			return
		}
		rd, err := in.Open(in.Units[0], Options{})
		if err != nil {
			return
		}
		defer rd.Close()
		// A record batch may claim any number of rows of columns that
		// need no buffers (none, or of type null): read a few.
		for rows := 0; rows < 1000; {
			b, err := rd.Next(100)
			if err != nil {
				return
			}
			rows += len(b.Rows)
			b.Release()
		}
	})
}
