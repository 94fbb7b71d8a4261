package columnar

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// Input describes one input file as a run plans from it: its format, its
// columns, the units it is read in and its rows where the format records
// them. Describe makes it and is the only step of planning that opens the
// file; the reader of each unit is made from it (Input.Open) and opens the
// file once more.
//
// An Input holds no open file and no decoded footer. A run describes every
// input before it reads the first, and may have many thousands of them:
// holding each open until its turn would cost a file descriptor and the
// memory of a footer per input. The rejected alternative kept them and
// saved one open per unit; a reader reads again the footer it needs.
type Input struct {
	// Path is the file's path as given to Describe.
	Path string
	// Format is the input format: InputParquet, InputArrow, InputJSONL,
	// InputArrowStream (standard input) or a harness format
	// (InputInspect, ...).
	Format string
	// Size is the file's size in bytes.
	Size int64
	// Columns are the top-level column names: the schema of a Parquet or
	// Arrow file, or the keys of the first object line of a JSON Lines
	// file (nil when it has none, or when its lines cannot be read: the
	// reader of the unit says why).
	Columns []string
	// Rows is the number of rows recorded in a Parquet footer or in the
	// record batch headers of an Arrow IPC file, or -1.
	Rows int64
	// Units are the parts of the input that are read one at a time, in
	// order; together they hold every row once.
	Units []InputUnit

	open OpenFunc
	from string // DescribeOptions.From
	// stream is the log or the standard input read from a stream
	// (DescribeStream, DescribeStdin), until Open takes it; streamed is
	// set once it has. arrowIn is an Arrow IPC stream's reader, its schema
	// read.
	stream   io.Reader
	arrowIn  *arrowStreamIn
	streamed bool
}

// InputUnit is a part of an input read as one unit: a run of consecutive
// row groups of a Parquet file, or the whole input.
type InputUnit struct {
	// FirstRowGroup and RowGroups give the unit's row groups (0-based);
	// RowGroups 0 means the whole input.
	FirstRowGroup, RowGroups int
	// Rows is the number of rows of the unit, or -1 when the input does
	// not record it.
	Rows int64
}

// File is an input file open for reading: *os.File, or an object in
// object storage read with range requests.
type File interface {
	io.Reader
	io.ReaderAt
	io.Seeker
	io.Closer
	Stat() (fs.FileInfo, error)
}

// OpenFunc opens a file for reading, as os.Open does.
type OpenFunc func(name string) (File, error)

// osOpen is os.Open as an OpenFunc.
func osOpen(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// DescribeOptions tunes Describe. The zero value works.
type DescribeOptions struct {
	// RowGroupsPerUnit cuts a Parquet file of more row groups than this
	// into units of that many consecutive row groups (the last may hold
	// fewer); 0 keeps every input whole.
	RowGroupsPerUnit int
	// Open opens the file, to describe it and to read its units (os.Open
	// when nil).
	Open OpenFunc
	// From is the harness format .json files are read in, and with
	// messages JSON Lines files (Resolve); "" for none.
	From string
}

// Describe opens the input file at path, by its name's format
// (Resolve with opts.From), and describes it. It fails, with the
// error the file's reader would give, when the file cannot be opened or is
// not of its name's format.
func Describe(path string, opts DescribeOptions) (*Input, error) {
	format, ok := Resolve(Source{Name: path, From: opts.From})
	if !ok {
		return nil, unsupportedType(path)
	}
	return describe(path, format, opts)
}

// describe is Describe of a file in format.
func describe(path, format string, opts DescribeOptions) (*Input, error) {
	in := &Input{Path: path, Format: format, Rows: -1, open: opts.Open, from: opts.From}
	if in.open == nil {
		in.open = osOpen
	}
	f, err := in.open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	in.Size = st.Size()
	switch format {
	case InputParquet:
		err = in.describeParquet(f, opts.RowGroupsPerUnit)
	case InputArrow:
		err = in.describeArrow(f)
	case InputJSONL:
		err = in.describeJSONL(f)
	default:
		err = in.describeHarness(f)
	}
	if err != nil {
		return nil, err
	}
	return in, nil
}

// describeParquet reads the columns and row groups from the footer and
// cuts the units.
func (in *Input) describeParquet(f File, perUnit int) error {
	file, err := readParquetFooter(in.Path, f, in.Size)
	if err != nil {
		return err
	}
	for _, field := range file.Schema().Fields() {
		in.Columns = append(in.Columns, field.Name())
	}
	groups := file.RowGroups()
	rows := make([]int64, len(groups))
	var total int64
	for i, g := range groups {
		rows[i] = g.NumRows()
		total += rows[i]
	}
	// A footer whose row groups disagree with its row count is an error
	// of the reader; the counts stay unknown.
	known := total == file.NumRows()
	if known {
		in.Rows = total
	}
	if perUnit <= 0 || len(groups) <= perUnit {
		in.Units = []InputUnit{{Rows: in.Rows}}
		return nil
	}
	for first := 0; first < len(groups); first += perUnit {
		u := InputUnit{FirstRowGroup: first, RowGroups: min(perUnit, len(groups)-first), Rows: -1}
		if known {
			u.Rows = 0
			for _, n := range rows[first : first+u.RowGroups] {
				u.Rows += n
			}
		}
		in.Units = append(in.Units, u)
	}
	return nil
}

// describeArrow reads the schema, and for a file the row count of its
// record batch headers.
func (in *Input) describeArrow(f File) error {
	a, err := openArrowIPC(f, memory.NewGoAllocator())
	if err != nil {
		return fmt.Errorf("open %s: %w", in.Path, err)
	}
	defer a.close()
	for _, field := range a.schema.Fields() {
		in.Columns = append(in.Columns, field.Name)
	}
	in.Rows = a.rows
	in.Units = []InputUnit{{Rows: a.rows}}
	return nil
}

// describeJSONL reads the keys of the first object line.
func (in *Input) describeJSONL(f File) error {
	r, err := NewJSONLReader(in.Path, f, Options{})
	if err != nil {
		return err
	}
	defer r.Close()
	in.Units = []InputUnit{{Rows: -1}}
	var doc jsonview.Doc
	for {
		b, err := r.Next(1)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil // the unit's reader reports it, where it occurs
		}
		for _, row := range b.Rows {
			root, err := doc.Parse(row.Line)
			if err != nil || root.Kind() != jsonview.Object {
				continue
			}
			for m := root.First(); m.Exists(); m = m.Next() {
				in.Columns = append(in.Columns, string(m.Key()))
			}
			b.Release()
			return nil
		}
		b.Release()
	}
}

// Open opens the file again and returns the reader of unit u, one of
// in.Units. Row indexes are those of the file whatever the unit, so rows
// read through units are numbered as when the whole file is read. A log
// or standard input read from a stream (DescribeStream, DescribeStdin) is
// read from its start, once.
func (in *Input) Open(u InputUnit, opts Options) (Reader, error) {
	if in.stream != nil || in.streamed {
		return in.openStream(opts)
	}
	f, err := in.open(in.Path)
	if err != nil {
		return nil, err
	}
	chat := in.from == InputMessages && (in.Format == InputParquet || in.Format == InputArrow)
	if chat {
		// Fields are mapped in the rollouts the rows become.
		opts = Options{StructNulls: opts.StructNulls, Turns: opts.Turns}
	}
	rd, err := newReader(in.Path, in.Format, f, opts)
	if err == nil && chat {
		if u.RowGroups > 0 {
			if err := rd.(*ParquetReader).restrict(u.FirstRowGroup, u.RowGroups); err != nil {
				rd.Close()
				return nil, err
			}
		}
		h := newMessagesTableReader(in.Path, rd)
		h.hr.SetTurns(opts.Turns)
		return h, nil
	}
	if err != nil || u.RowGroups == 0 {
		return rd, err
	}
	pr, ok := rd.(*ParquetReader)
	if !ok {
		rd.Close()
		return nil, fmt.Errorf("open %s: a %s file has no row groups", in.Path, in.Format)
	}
	if err := pr.restrict(u.FirstRowGroup, u.RowGroups); err != nil {
		pr.Close()
		return nil, err
	}
	return pr, nil
}
