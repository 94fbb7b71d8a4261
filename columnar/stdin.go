package columnar

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// InputArrowStream is the format of an Arrow IPC stream read as it
// arrives, from standard input (DescribeStdin). A file holding a stream is
// InputArrow, read as files are.
const InputArrowStream = "arrow-stream"

// stdinName names standard input in errors.
const stdinName = "standard input"

// Limits of the messages of a stream read as it arrives: no file size
// bounds them. The body limit lets through record batches far larger than
// arrow-go's default (256 MiB) while keeping a corrupt length from asking
// for any size at all.
const (
	streamMetadataLimit = 64 << 20
	streamBodyLimit     = 1 << 30
)

// CheckStdinFormat checks the format standard input is read in (gavel
// grade --input-format): "" tells JSON Lines and Arrow IPC streams apart
// by the first bytes (SniffStdin); InputJSONL or InputArrowStream fixes
// it.
func CheckStdinFormat(format string) error {
	switch format {
	case "", InputJSONL, InputArrowStream:
		return nil
	}
	return fmt.Errorf("unknown input format %q (want %s or %s)", format, InputJSONL, InputArrowStream)
}

// SniffStdin returns the format of a stream by its first bytes, head (up
// to 4 of them): InputArrowStream when they are the continuation marker
// 0xFFFFFFFF that starts every message of an Arrow IPC stream, or, from
// writers older than Arrow 0.15, a message length (a little-endian int32
// of at least 4 and under 64 MiB whose first byte cannot start a JSON
// Lines stream); InputJSONL otherwise. JSON Lines starts with whitespace,
// '{' or a UTF-8 byte order mark, and any four bytes of printable text
// read as a length exceed 512 MiB, so text is never taken for a stream;
// an empty stream is JSON Lines without lines.
func SniffStdin(head []byte) string {
	if len(head) < 4 {
		return InputJSONL
	}
	n := binary.LittleEndian.Uint32(head)
	if n == 0xFFFFFFFF {
		return InputArrowStream
	}
	switch head[0] {
	case ' ', '\t', '\r', '\n', '{', 0xEF:
		return InputJSONL
	}
	if n >= 4 && n < streamMetadataLimit {
		return InputArrowStream
	}
	return InputJSONL
}

// DescribeStdin describes standard input, read from r and named name in
// rows (source_file, default rollout ids), as Describe describes a file:
// JSON Lines or an Arrow IPC stream, as format says ("" sniffs the first
// bytes, SniffStdin). For a stream it reads the schema message, whose
// fields are the input's columns, and nothing more; JSON Lines is not
// read ahead and has no columns. The Input's Open reads r once, from its
// start, and its reader ends a batch at the end of each record batch of a
// stream (Batch.EndsRecordBatch). Errors name standard input and, for a
// stream, the byte offset of the message at fault.
func DescribeStdin(name string, r io.Reader, format string) (*Input, error) {
	if err := CheckStdinFormat(format); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(r, 1<<16)
	if format == "" {
		head, _ := br.Peek(4)
		format = SniffStdin(head)
	}
	in := &Input{Path: name, Format: format, Size: -1, Rows: -1, Units: []InputUnit{{Rows: -1}}, stream: br}
	if format == InputJSONL {
		return in, nil
	}
	cr := &countingReader{r: br}
	opts := []ipc.Option{
		ipc.WithAllocator(memory.NewGoAllocator()),
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
	if err := r.planColumns(s.reader.Schema(), opts.Fields.WithDefaults(), opts.Columns); err != nil {
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

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
