package columnar

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/gavelhq/gavel/columnar/harness"
	"github.com/gavelhq/gavel/columnar/jsonview"
)

// IsHarnessFormat reports whether format is one of the harness formats.
func IsHarnessFormat(format string) bool {
	_, err := harness.ParseFormat(format)
	return err == nil
}

// CheckFrom checks the name of a harness format given to read inputs in
// (gavel grade --from); "" is no format.
func CheckFrom(from string) error {
	if from == "" {
		return nil
	}
	_, err := harness.ParseFormat(from)
	return err
}

// describeHarness reads the log's first trajectory that could be mapped:
// its members are the input's columns.
func (in *Input) describeHarness(f File) error {
	rollout, err := harness.First(in.Path, f, harness.Format(in.Format))
	if err != nil {
		return err
	}
	in.Units = []InputUnit{{Rows: -1}}
	in.setColumns(rollout)
	return nil
}

// setColumns takes the input's columns from the members of rollout, the
// log's first trajectory that could be mapped; nil (none could, or the
// log cannot be read that far) leaves none, for the unit's reader to
// report.
func (in *Input) setColumns(rollout []byte) {
	var doc jsonview.Doc
	root, err := doc.Parse(rollout)
	if rollout == nil || err != nil {
		return
	}
	for m := root.First(); m.Exists(); m = m.Next() {
		in.Columns = append(in.Columns, string(m.Key()))
	}
}

// maxStreamPeek bounds the bytes of a stream DescribeStream reads ahead,
// and keeps, to find its first trajectory.
const maxStreamPeek = 64 << 20

// errPeekLimit stops the reading ahead of DescribeStream.
var errPeekLimit = errors.New("read ahead limit")

// DescribeStream describes a harness's log in format read from r, a
// stream (standard input) named name, as Describe describes a log in a
// file: it reads r as far as the first trajectory that could be mapped,
// whose members are the input's columns, keeping the bytes read (at most
// 64 MiB: a stream whose first trajectory ends later has no columns).
// The Input's Open reads the log once, from its start: the bytes kept,
// then the rest of r.
//
// An Inspect stream that is an .eval archive (a zip, by its first bytes)
// is read at random, as a file: it is copied whole into a temporary file
// first, which the Input reads, and spool names; the caller removes it
// once the Input is read (also on an error, when spool is not "").
func DescribeStream(name string, r io.Reader, format string) (in *Input, spool string, err error) {
	if err := CheckFrom(format); err != nil || format == "" {
		return nil, "", fmt.Errorf("describe %s: %q is not a harness format", name, format)
	}
	br := bufio.NewReader(r)
	if format == InputInspect {
		if magic, _ := br.Peek(4); harness.IsZip(magic) {
			return spoolArchive(name, br)
		}
	}
	var kept bytes.Buffer
	hr, err := harness.NewReader(name, &peekReader{r: br, kept: &kept, max: maxStreamPeek}, harness.Format(format))
	if err != nil {
		return nil, "", err
	}
	var rollout []byte
	for {
		it, err := hr.Next()
		if err != nil {
			break
		}
		if it.Err == nil {
			rollout = it.Rollout
			break
		}
	}
	in = &Input{Path: name, Format: format, Size: -1, Rows: -1, Units: []InputUnit{{Rows: -1}}, from: format}
	in.setColumns(rollout)
	in.stream = io.MultiReader(&kept, br)
	return in, "", nil
}

// spoolArchive copies the .eval archive read from r into a temporary
// file and describes it, named name.
func spoolArchive(name string, r io.Reader) (in *Input, spool string, err error) {
	f, err := os.CreateTemp("", "gavel-stdin-*.eval")
	if err != nil {
		return nil, "", fmt.Errorf("spool %s: %w", name, err)
	}
	spool = f.Name()
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, spool, fmt.Errorf("spool %s to %s: %w", name, spool, err)
	}
	open := func(string) (File, error) { return os.Open(spool) }
	in, err = describe(name, InputInspect, DescribeOptions{Open: open, From: InputInspect})
	return in, spool, err
}

// openStream returns the reader of an input read from a stream, once:
// standard input as JSON Lines or an Arrow IPC stream (DescribeStdin), or
// a harness's log (DescribeStream).
func (in *Input) openStream(opts Options) (Reader, error) {
	if in.streamed {
		return nil, fmt.Errorf("read %s: a stream is read once", in.Path)
	}
	s, a := in.stream, in.arrowIn
	in.stream, in.arrowIn, in.streamed = nil, nil, true
	switch in.Format {
	case InputJSONL:
		return NewJSONLReader(in.Path, s, opts)
	case InputArrowStream:
		return newArrowStreamReader(a, opts)
	}
	h, err := NewHarnessReader(in.Path, s, in.Format)
	if err != nil {
		return nil, err
	}
	h.hr.SetTurns(opts.Turns)
	return h, nil
}

// peekReader reads r, keeping what it reads in kept, and fails once kept
// holds max bytes.
type peekReader struct {
	r    io.Reader
	kept *bytes.Buffer
	max  int
}

func (p *peekReader) Read(b []byte) (int, error) {
	room := p.max - p.kept.Len()
	if room <= 0 {
		return 0, errPeekLimit
	}
	if len(b) > room {
		b = b[:room]
	}
	n, err := p.r.Read(b)
	p.kept.Write(b[:n])
	return n, err
}

// HarnessReader reads a harness's log (package harness) as batches of
// JSON Lines rows, one per trajectory, each line a rollout in gavel's
// JSON Lines schema: its rows are decoded and graded as those of a JSON
// Lines file. A trajectory that could not be mapped is a row whose Err
// names the file and the trajectory (with the rollout's ids in its line
// when known); a log that cannot be read to the end (a truncated archive
// or array) is an error of Next, after the rows read before it.
type HarnessReader struct {
	path string
	hr   *harness.Reader
	next int64 // index of the next trajectory
	err  error // sticky

	mu   sync.Mutex
	free []*Batch
}

// NewHarnessReader reads a stream of a harness's log in format (one of
// the harness formats; an Inspect stream is a .json log: an .eval archive
// needs its file, see Input.Open); name is used in messages and ids.
// Closing the reader does not close r.
func NewHarnessReader(name string, r io.Reader, format string) (*HarnessReader, error) {
	hr, err := harness.NewReader(name, r, harness.Format(format))
	if err != nil {
		return nil, err
	}
	return &HarnessReader{path: name, hr: hr}, nil
}

// newHarnessFileReader reads the log in file f, which it takes over.
func newHarnessFileReader(path, format string, f File) (*HarnessReader, error) {
	hr, err := harness.OpenFile(path, f, harness.Format(format))
	if err != nil {
		f.Close()
		return nil, err
	}
	return &HarnessReader{path: path, hr: hr}, nil
}

// Rows returns -1: a log is not counted before it is read.
func (h *HarnessReader) Rows() int64 { return -1 }

// Close releases the file.
func (h *HarnessReader) Close() error { return h.hr.Close() }

func (h *HarnessReader) getBatch() *Batch {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := popFree(&h.free); b != nil {
		return b
	}
	return &Batch{JSONLines: true, Mapped: true, release: h.put}
}

func (h *HarnessReader) put(b *Batch) {
	clear(b.Rows)
	b.Rows = b.Rows[:0]
	b.arena = b.arena[:0]
	h.mu.Lock()
	h.free = append(h.free, b)
	h.mu.Unlock()
}

// Next returns the next batch of at most max rows.
func (h *HarnessReader) Next(max int) (*Batch, error) {
	if h.err != nil {
		return nil, h.err
	}
	if max <= 0 {
		max = 1
	}
	b := h.getBatch()
	spans := b.spans[:0]
	for len(b.Rows) < max {
		it, err := h.hr.Next()
		if err != nil {
			h.err = err
			break
		}
		row := Row{Index: h.next, Offset: -1, TaskRow: it.Task}
		h.next++
		switch {
		case it.Err == nil:
		case strings.HasPrefix(it.Err.Error(), it.Where+":"):
			row.Err = fmt.Errorf("%s: %w", h.path, it.Err)
		default:
			row.Err = fmt.Errorf("%s: %s: %w", h.path, it.Where, it.Err)
		}
		start := len(b.arena)
		b.arena = append(b.arena, it.Rollout...)
		spans = append(spans, struct{ start, end int }{start, len(b.arena)})
		b.Rows = append(b.Rows, row)
	}
	// The arena may have moved while it grew: take the line slices last.
	for i, s := range spans {
		b.Rows[i].Line = b.arena[s.start:s.end:s.end]
	}
	b.spans = spans[:0]
	if len(b.Rows) == 0 {
		b.Release()
		return nil, h.err
	}
	return b, nil
}

// newMessagesTableReader reads the rows of a Parquet or Arrow chat dataset
// (read by rd, which it takes over) in the messages format: each row, its
// columns the members of a JSON object (a nested column the value it
// holds, so that messages may be a list of structs), is mapped as a line
// of a messages JSON Lines file would be.
func newMessagesTableReader(path string, rd Reader) *HarnessReader {
	t := &tableRows{rd: rd, fields: FieldNames{}.WithDefaults()}
	return &HarnessReader{path: path, hr: harness.NewMessageRowReader(path, t.next, t)}
}

// tableRows hands the rows of a columnar reader over one at a time as
// the texts of JSON objects.
type tableRows struct {
	rd     Reader
	fields FieldNames
	b      *Batch
	i      int
	buf    []byte
}

func (t *tableRows) next() (harness.MessageRow, error) {
	for t.b == nil || t.i == len(t.b.Rows) {
		if t.b != nil {
			t.b.Release()
			t.b = nil
		}
		b, err := t.rd.Next(256)
		if err != nil {
			return harness.MessageRow{}, err
		}
		t.b, t.i = b, 0
	}
	row := &t.b.Rows[t.i]
	t.i++
	t.buf = AppendRowObject(t.buf[:0], row, t.b.MetaNames, &t.fields)
	return harness.MessageRow{Object: t.buf, Index: row.Index, Err: row.Err}, nil
}

// Close releases the batch held and closes the reader.
func (t *tableRows) Close() error {
	if t.b != nil {
		t.b.Release()
		t.b = nil
	}
	return t.rd.Close()
}

// AppendRowObject appends a columnar row as the text of a JSON object:
// its fields under the names fields gives them, then its metadata
// columns; strings (states and logs held as JSON text too) quoted,
// numbers, booleans and nested values as they are, nulls left out.
func AppendRowObject(buf []byte, row *Row, metaNames []string, fields *FieldNames) []byte {
	buf = append(buf, '{')
	n := 0
	add := func(name string, c Cell) {
		if c.Kind == CellNull {
			return
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		n++
		buf = jsonview.AppendJSONString(buf, name)
		buf = append(buf, ':')
		if c.Kind == CellString {
			buf = jsonview.AppendJSONString(buf, c.Data)
		} else {
			buf = append(buf, c.Data...)
		}
	}
	add(fields.ID, row.ID)
	add(fields.Task, row.Task)
	add(fields.Final, row.Final)
	add(fields.Initial, row.Initial)
	add(fields.Output, row.Output)
	add(fields.Log, row.Log)
	for i, name := range metaNames {
		add(name, row.Meta[i])
	}
	return append(buf, '}')
}
