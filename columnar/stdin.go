package columnar

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// stdinName names standard input in errors.
const stdinName = "standard input"

// streamMetadataLimit bounds the metadata of a message of a stream read
// as it arrives: no file size bounds it.
const streamMetadataLimit = 64 << 20

// streamBodyLimit bounds the body of a message of a stream read as it
// arrives: record batches far larger than arrow-go's default limit (256
// MiB) pass, and a corrupt length cannot ask for any size at all. A
// variable so that fuzzing can keep within a test machine's memory.
var streamBodyLimit int64 = 1 << 30

// CheckStdinFormat checks the format standard input is read in (gavel
// grade --input-format): "" tells JSON Lines and Arrow IPC streams apart
// by the first bytes (Resolve); InputJSONL or InputArrowStream fixes
// it.
func CheckStdinFormat(format string) error {
	switch format {
	case "", InputJSONL, InputArrowStream:
		return nil
	}
	return fmt.Errorf("unknown input format %q (want %s or %s)", format, InputJSONL, InputArrowStream)
}

// DescribeStdin describes standard input, read from r and named name in
// rows (source_file, default rollout ids), as Describe describes a file:
// JSON Lines or an Arrow IPC stream, as format says ("" sniffs the first
// bytes, Resolve). For a stream it reads the schema message, whose
// fields are the input's columns, and nothing more; JSON Lines is not
// read ahead and has no columns. The Input's Open reads r once, from its
// start, and its reader ends a batch at the end of each record batch of a
// stream (Batch.EndsRecordBatch). Errors name standard input and, for a
// stream, the byte offset of the message at fault.
//
// A stream must end with its end-of-stream marker, which every Arrow
// writer writes when it is closed: standard input that ends without it,
// even between two messages, is an error. The Arrow format lets a stream
// end without the marker, but on a pipe that is what a writer that died
// leaves, and its rows would be graded as if they were all.
func DescribeStdin(name string, r io.Reader, format string) (*Input, error) {
	if err := CheckStdinFormat(format); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(r, 1<<16)
	var head []byte
	if format == "" {
		head, _ = br.Peek(4)
	}
	format, _ = Resolve(Source{Stdin: true, Format: format, Head: head})
	in := &Input{Path: name, Format: format, Size: -1, Rows: -1, Units: []InputUnit{{Rows: -1}}, stream: br}
	if format == InputJSONL {
		return in, nil
	}
	first, err := checkSchemaMessage(br)
	if err != nil {
		return nil, fmt.Errorf("read %s: not an arrow ipc stream (schema message at byte 0): %w", stdinName, err)
	}
	cr := &countingReader{r: io.MultiReader(bytes.NewReader(first), br)}
	opts := []ipc.Option{
		ipc.WithAllocator(&bodyAllocator{}),
		ipc.WithMetadataSizeLimit(streamMetadataLimit),
		ipc.WithBodySizeLimit(streamBodyLimit),
	}
	// NewReaderFromMessageReader, unlike NewReader, applies the limits.
	msgs := ipc.NewMessageReader(cr, opts...)
	sr, err := ipc.NewReaderFromMessageReader(msgs, opts...) // releases msgs on failure
	if err != nil {
		if cr.n == 0 {
			return nil, fmt.Errorf("read %s: not an arrow ipc stream: it is empty", stdinName)
		}
		return nil, fmt.Errorf("read %s: not an arrow ipc stream (schema message at byte 0): %w", stdinName, err)
	}
	in.arrowIn = &arrowStreamIn{reader: sr, in: cr}
	for _, f := range sr.Schema().Fields() {
		in.Columns = append(in.Columns, f.Name)
	}
	return in, nil
}

// arrowStreamIn is an Arrow IPC stream whose schema DescribeStdin read,
// until the Input's Open takes it.
type arrowStreamIn struct {
	reader *ipc.Reader
	in     *countingReader
}

// newArrowStreamReader makes the reader of the stream s, named standard
// input in errors, with the columns of opts.
func newArrowStreamReader(s *arrowStreamIn, opts Options) (*ArrowReader, error) {
	r := &ArrowReader{
		chunkReader: chunkReader[arrow.RecordBatch]{path: stdinName, end: -1, aligned: true, unhold: arrow.RecordBatch.Release},
		stream:      s.reader,
		in:          s.in,
	}
	if err := r.planColumns(s.reader.Schema(), opts); err != nil {
		r.Close()
		return nil, fmt.Errorf("read %s: %w", stdinName, err)
	}
	return r, nil
}

// streamError words an error reading the message of record batch idx of
// a stream, which starts at byte at.
func streamError(name string, idx int, at int64, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("read %s: record batch %d at byte %d: the stream ends inside the message (truncated): %w", name, idx, at, err)
	}
	return fmt.Errorf("read %s: record batch %d at byte %d: %w", name, idx, at, err)
}

// countingReader counts the bytes read through it, and notes when the
// reader under it ended: a stream read to its end-of-stream marker never
// reads past the marker.
type countingReader struct {
	r   io.Reader
	n   int64
	eof bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err == io.EOF {
		c.eof = true
	}
	return n, err
}

// checkSchemaMessage reads the first message of a stream, the schema, as
// far as its metadata goes, and returns the bytes read, for the stream's
// reader to read again. arrow-go sizes the slices of a schema's fields,
// children and metadata by the lengths their flatbuffer vectors declare,
// before reading them: a corrupt length would ask for any memory at all.
// So the metadata is checked first: every such vector must lie within it.
// A message too short or of another kind is left to arrow-go to report.
func checkSchemaMessage(br *bufio.Reader) ([]byte, error) {
	head, _ := br.Peek(8)
	if len(head) < 8 {
		return nil, nil
	}
	prefix, length := 4, int64(int32(binary.LittleEndian.Uint32(head)))
	if uint32(length) == 0xFFFFFFFF {
		prefix, length = 8, int64(int32(binary.LittleEndian.Uint32(head[4:])))
	}
	if length < 4 || length > streamMetadataLimit {
		return nil, nil
	}
	buf := make([]byte, int64(prefix)+length)
	n, _ := io.ReadFull(br, buf)
	if n < len(buf) {
		return buf[:n], nil
	}
	if !schemaFits(buf[prefix:]) {
		return nil, errors.New("corrupt schema: a list of fields, children or metadata is longer than the message")
	}
	return buf, nil
}

// schemaFits reports whether the vectors of the Schema message meta (if
// it is one) lie within it: its fields and metadata, and recursively each
// field's children and metadata (vectorsFit). Offsets are followed as the
// flatbuffers library follows them, added modulo 2^32: an offset that
// leads out of meta is corrupt, even where that library would wrap
// around into it.
func schemaFits(meta []byte) bool {
	msg, ok := fbRoot(meta)
	if !ok {
		return true // arrow-go reports it
	}
	// Message: version 0, header_type 1, header 2; header type 1 is Schema.
	if typ, ok := msg.scalar(1, 1); !ok || typ[0] != 1 {
		return true
	}
	p, ok := msg.field(2)
	if !ok {
		return true
	}
	schema, ok := fbFollow(msg.buf, p)
	// Schema: endianness 0, fields 1, custom_metadata 2.
	return ok && vectorsFit(schema, 1, 2, 0)
}

// vectorsFit reports whether the vector of tables children and the
// vector metadata of t lie within its buffer, and recursively those of
// each child (a Field: children 5, custom_metadata 6), at most 64 deep.
func vectorsFit(t fbTable, children, metadata, depth int) bool {
	if depth > 64 {
		return false
	}
	if _, _, fits := fbVector(t, metadata); !fits {
		return false
	}
	start, n, fits := fbVector(t, children)
	if !fits {
		return false
	}
	for k := range n {
		child, ok := fbFollow(t.buf, start+4*k)
		if !ok || !vectorsFit(child, 5, 6, depth+1) {
			return false
		}
	}
	return true
}

// fbVector returns where the elements of vector field i of t start and
// how many there are (0 when the field is absent), and whether its n
// offsets of 4 bytes lie within the buffer.
func fbVector(t fbTable, i int) (start, n int, fits bool) {
	p, ok := t.field(i)
	if !ok {
		return 0, 0, true
	}
	v, ok := fbOffset(t.buf, p)
	if !ok || v+4 > len(t.buf) {
		return 0, 0, false
	}
	n = int(binary.LittleEndian.Uint32(t.buf[v:]))
	start = v + 4
	return start, n, start+4*n <= len(t.buf)
}

// fbFollow returns the table whose offset is stored at p.
func fbFollow(buf []byte, p int) (fbTable, bool) {
	v, ok := fbOffset(buf, p)
	if !ok {
		return fbTable{}, false
	}
	return fbAt(buf, v)
}

// fbOffset returns the position the offset stored at p leads to, added
// modulo 2^32 as the flatbuffers library adds it, and whether it lies in
// buf.
func fbOffset(buf []byte, p int) (int, bool) {
	if p < 0 || p+4 > len(buf) {
		return 0, false
	}
	v := int(uint32(p) + binary.LittleEndian.Uint32(buf[p:]))
	return v, v < len(buf)
}
