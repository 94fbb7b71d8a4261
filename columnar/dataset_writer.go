package columnar

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	pqzstd "github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// DatasetFormat is a file format in which a DatasetWriter writes an input
// dataset (one of the input formats gavel grade reads by file name).
type DatasetFormat string

// Formats a DatasetWriter writes.
const (
	// DatasetParquet is Parquet with zstd-compressed pages.
	DatasetParquet DatasetFormat = InputParquet
	// DatasetJSONL is plain JSON Lines.
	DatasetJSONL DatasetFormat = InputJSONL
	// DatasetJSONLZst is JSON Lines in one zstd stream.
	DatasetJSONLZst DatasetFormat = "jsonl.zst"
)

// DatasetFormats lists the formats a DatasetWriter writes, in the order
// help texts show them.
var DatasetFormats = []DatasetFormat{DatasetParquet, DatasetJSONL, DatasetJSONLZst}

// DatasetFormatOf returns the format that path's extension names, and false
// when it names none a DatasetWriter writes. ".ndjson" counts as ".jsonl".
func DatasetFormatOf(path string) (DatasetFormat, bool) {
	p := strings.ToLower(path)
	switch {
	case strings.HasSuffix(p, ".parquet"):
		return DatasetParquet, true
	case strings.HasSuffix(p, ".jsonl"), strings.HasSuffix(p, ".ndjson"):
		return DatasetJSONL, true
	case strings.HasSuffix(p, ".jsonl.zst"), strings.HasSuffix(p, ".ndjson.zst"):
		return DatasetJSONLZst, true
	}
	return "", false
}

// Ext returns the file-name extension of the format, with its leading dot.
func (f DatasetFormat) Ext() string { return "." + string(f) }

// Valid reports whether f is one of DatasetFormats.
func (f DatasetFormat) Valid() bool {
	switch f {
	case DatasetParquet, DatasetJSONL, DatasetJSONLZst:
		return true
	}
	return false
}

// DatasetColumnType is the type of a dataset column.
type DatasetColumnType uint8

// Dataset column types.
const (
	// DatasetString is text: an optional UTF-8 string column in Parquet, a
	// JSON string in JSON Lines.
	DatasetString DatasetColumnType = iota
	// DatasetJSON is a JSON value (a state or a log): in Parquet an optional
	// string column holding its JSON text, in JSON Lines the value itself,
	// nested in the line.
	DatasetJSON
	// DatasetInt64 is an optional 64-bit integer column (a JSON number in
	// JSON Lines).
	DatasetInt64
	// DatasetNested is a JSON value stored in Parquet as a nested column of
	// the type DatasetColumn.Nested names (ParseNestedType); JSON Lines
	// writes it as DatasetJSON.
	DatasetNested
)

// DatasetColumn describes one column of a dataset.
type DatasetColumn struct {
	// Name is the column name (the key in JSON Lines).
	Name string
	// Type is the column's type.
	Type DatasetColumnType
	// Dictionary asks Parquet to dictionary-encode the column (every leaf
	// of a nested column). Use it for
	// columns with few distinct values (task ids, model names, initial states
	// shared by many rows); JSON Lines ignores it.
	Dictionary bool
	// Nested is the type of a DatasetNested column (ParseNestedType), for
	// example "list<struct<role: string, content: string>>".
	Nested string
}

// DatasetOptions tunes a DatasetWriter. The zero value works.
type DatasetOptions struct {
	// RowGroupRows is the number of rows per Parquet row group (0: 10000).
	RowGroupRows int
	// PageBytes is the size of Parquet's page buffers, at which a page is
	// cut (0: 4 MiB).
	PageBytes int
}

// DatasetValueKind says what a DatasetValue holds.
type DatasetValueKind uint8

// Dataset value kinds.
const (
	// DatasetAbsent is a missing field: null in Parquet, a key left out of
	// the line in JSON Lines.
	DatasetAbsent DatasetValueKind = iota
	// DatasetNull is a null value in both formats.
	DatasetNull
	// DatasetText is a string, Bytes its UTF-8 text. In JSON Lines it is
	// written as a JSON string even in a DatasetJSON column (a string that
	// holds JSON text).
	DatasetText
	// DatasetRaw is JSON text in Bytes, on one line. Parquet stores the text
	// as a string; JSON Lines writes it as is, nested in the line, so it
	// must be valid JSON.
	DatasetRaw
	// DatasetInt is the integer Int.
	DatasetInt
)

// DatasetValue is one field of one row handed to DatasetWriter.Write. Bytes
// is only read during the call: the caller may reuse it afterwards.
type DatasetValue struct {
	Kind  DatasetValueKind
	Bytes []byte
	Int   int64
}

// DatasetWriter streams the rows of an input dataset to an io.Writer as
// Parquet or JSON Lines (plain or zstd). It holds at most one Parquet row
// group in memory (compressed), or a small write buffer for JSON Lines. It
// does not close the underlying writer. Its output depends only on the rows
// written and the options, so the same rows give byte-identical files.
//
// It is gavel's second Parquet writing path, beside the result parts'
// (part_arrow.go, pqarrow): it writes datasets of rows whose columns are
// chosen at run time (gavel gen's rollouts and tasks, nested columns
// among them; the pairs table), where the parts' path writes the fixed
// tables of columns defined once in results.go. Kept on purpose: moving
// gen's datasets or the pairs table to pqarrow would change their bytes,
// and the generated benchmark datasets and the pairs parts are pinned
// byte for byte (the determinism tests, and the outputs of the change that
// split pipeline). Not measured: which writer is faster for these tables.
type DatasetWriter struct {
	format  DatasetFormat
	columns []DatasetColumn
	rows    int64

	// Parquet.
	nw        *nestedDatasetWriter // with nested columns, instead of pw
	pw        *parquet.Writer
	prow      parquet.Row
	prows     []parquet.Row
	groupMax  int
	inGroup   int
	pageBytes int

	// JSON Lines.
	zw   *zstd.Encoder
	bw   *bufio.Writer
	line []byte
	keys [][]byte // `"name":` per column, precomputed
}

// NewDatasetWriter returns a writer of rows with the given columns to w in
// format f.
func NewDatasetWriter(w io.Writer, f DatasetFormat, columns []DatasetColumn, opts DatasetOptions) (*DatasetWriter, error) {
	if len(columns) == 0 {
		return nil, errors.New("dataset writer: no columns")
	}
	seen := make(map[string]bool, len(columns))
	for _, c := range columns {
		if c.Name == "" || seen[c.Name] {
			return nil, fmt.Errorf("dataset writer: column name %q empty or repeated", c.Name)
		}
		seen[c.Name] = true
	}
	dw := &DatasetWriter{format: f, columns: columns}
	switch f {
	case DatasetParquet:
		dw.groupMax = opts.RowGroupRows
		if dw.groupMax <= 0 {
			dw.groupMax = 10000
		}
		dw.pageBytes = opts.PageBytes
		if dw.pageBytes <= 0 {
			dw.pageBytes = 4 << 20
		}
		for _, c := range columns {
			if c.Type == DatasetNested {
				nw, err := newNestedDatasetWriter(w, columns, dw.groupMax)
				if err != nil {
					return nil, err
				}
				dw.nw = nw
				return dw, nil
			}
		}
		dw.pw = parquet.NewWriter(w, dw.parquetOptions()...)
		dw.prow = make(parquet.Row, len(columns))
		dw.prows = make([]parquet.Row, 1)
	case DatasetJSONL, DatasetJSONLZst:
		out := w
		if f == DatasetJSONLZst {
			// One encoder goroutine: the stream is the same whatever the
			// machine. The default level compresses states that repeat
			// across rows much better than the fastest, at about its speed.
			zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
			if err != nil {
				return nil, fmt.Errorf("dataset writer: %w", err)
			}
			dw.zw, out = zw, zw
		}
		dw.bw = bufio.NewWriterSize(out, 1<<20)
		dw.keys = make([][]byte, len(columns))
		for i, c := range columns {
			k := jsonview.AppendJSONString(nil, c.Name)
			dw.keys[i] = append(k, ':')
		}
	default:
		return nil, fmt.Errorf("dataset writer: unknown format %q", f)
	}
	return dw, nil
}

// datasetSchemaGroup is a Parquet group whose fields keep the order of the
// dataset's columns; parquet.Group sorts them by name.
type datasetSchemaGroup struct {
	parquet.Group
	order []string
}

func (g datasetSchemaGroup) Fields() []parquet.Field {
	byName := make(map[string]parquet.Field, len(g.Group))
	for _, f := range g.Group.Fields() {
		byName[f.Name()] = f
	}
	fields := make([]parquet.Field, len(g.order))
	for i, name := range g.order {
		fields[i] = byName[name]
	}
	return fields
}

func (w *DatasetWriter) parquetOptions() []parquet.WriterOption {
	g := datasetSchemaGroup{Group: parquet.Group{}}
	opts := []parquet.WriterOption{
		parquet.Compression(&pqzstd.Codec{Level: pqzstd.SpeedDefault, Concurrency: 1}),
		// A dictionary that outgrows this falls back to plain pages.
		parquet.DictionaryMaxBytes(8 << 20),
		// Pages are compressed one by one: large pages let zstd find the
		// earlier copies of a state that datasets repeat across rows
		// (about 2x smaller files than the 256 KiB default, and faster).
		parquet.PageBufferSize(w.pageBytes),
		parquet.CreatedBy("gavel", "", ""),
	}
	for _, c := range w.columns {
		var n parquet.Node
		switch c.Type {
		case DatasetInt64:
			n = parquet.Int(64)
		default:
			n = parquet.String()
		}
		if c.Dictionary {
			n = parquet.Encoded(n, &parquet.RLEDictionary)
		}
		g.Group[c.Name] = parquet.Optional(n)
		g.order = append(g.order, c.Name)
		if c.Type == DatasetJSON {
			// States and logs are large: min/max statistics of whole
			// documents would bloat every page header and the footer.
			opts = append(opts, parquet.SkipPageBounds(c.Name), parquet.SkipPageStatistics(c.Name))
		}
	}
	return append(opts, parquet.NewSchema("rollouts", g))
}

// Format returns the format being written.
func (w *DatasetWriter) Format() DatasetFormat { return w.format }

// Rows returns the number of rows written so far, lines from WriteLine
// included.
func (w *DatasetWriter) Rows() int64 { return w.rows }

// Write appends one row, its values aligned with the writer's columns.
// Parquet has no way to store a DatasetInt in a text column or text in an
// integer column: those are errors there; JSON Lines writes every value as
// its kind says.
func (w *DatasetWriter) Write(row []DatasetValue) error {
	if len(row) != len(w.columns) {
		return fmt.Errorf("dataset writer: row has %d values, want %d", len(row), len(w.columns))
	}
	var err error
	switch {
	case w.nw != nil:
		if err = w.nw.write(row); err == nil {
			if w.inGroup++; w.inGroup >= w.groupMax {
				w.inGroup = 0
				err = w.nw.flush()
			}
		}
	case w.pw != nil:
		err = w.writeParquet(row)
	default:
		err = w.writeJSONL(row)
	}
	if err != nil {
		return err
	}
	w.rows++
	return nil
}

func (w *DatasetWriter) writeParquet(row []DatasetValue) error {
	for i, v := range row {
		c := w.columns[i]
		switch v.Kind {
		case DatasetAbsent, DatasetNull:
			w.prow[i] = parquet.NullValue().Level(0, 0, i)
		case DatasetText, DatasetRaw:
			if c.Type == DatasetInt64 {
				return fmt.Errorf("dataset writer: column %s: text in an integer column", c.Name)
			}
			w.prow[i] = parquet.ByteArrayValue(v.Bytes).Level(0, 1, i)
		case DatasetInt:
			if c.Type != DatasetInt64 {
				return fmt.Errorf("dataset writer: column %s: integer in a text column", c.Name)
			}
			w.prow[i] = parquet.Int64Value(v.Int).Level(0, 1, i)
		default:
			return fmt.Errorf("dataset writer: column %s: unknown value kind %d", c.Name, v.Kind)
		}
	}
	// The column buffers copy the bytes, so the caller may reuse them.
	w.prows[0] = w.prow
	if _, err := w.pw.WriteRows(w.prows); err != nil {
		return fmt.Errorf("write parquet row %d: %w", w.rows, err)
	}
	w.inGroup++
	if w.inGroup >= w.groupMax {
		w.inGroup = 0
		if err := w.pw.Flush(); err != nil {
			return fmt.Errorf("write parquet row group: %w", err)
		}
	}
	return nil
}

func (w *DatasetWriter) writeJSONL(row []DatasetValue) error {
	b := append(w.line[:0], '{')
	first := true
	for i, v := range row {
		if v.Kind == DatasetAbsent {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, w.keys[i]...)
		switch v.Kind {
		case DatasetNull:
			b = append(b, "null"...)
		case DatasetText:
			b = jsonview.AppendJSONString(b, v.Bytes)
		case DatasetRaw:
			if len(v.Bytes) == 0 || bytes.IndexByte(v.Bytes, '\n') >= 0 {
				return fmt.Errorf("dataset writer: column %s: raw JSON empty or not on one line", w.columns[i].Name)
			}
			b = append(b, v.Bytes...)
		case DatasetInt:
			b = strconv.AppendInt(b, v.Int, 10)
		default:
			return fmt.Errorf("dataset writer: column %s: unknown value kind %d", w.columns[i].Name, v.Kind)
		}
	}
	b = append(b, '}', '\n')
	w.line = b
	if _, err := w.bw.Write(b); err != nil {
		return fmt.Errorf("write line %d: %w", w.rows+1, err)
	}
	return nil
}

// WriteLine appends line, which must not hold a newline, as one raw JSON
// Lines line (for example one that is not a JSON object). It is an error
// for Parquet.
func (w *DatasetWriter) WriteLine(line []byte) error {
	if w.bw == nil {
		return fmt.Errorf("dataset writer: raw lines need JSON Lines, not %s", w.format)
	}
	if bytes.IndexByte(line, '\n') >= 0 {
		return errors.New("dataset writer: raw line holds a newline")
	}
	if _, err := w.bw.Write(line); err != nil {
		return fmt.Errorf("write line %d: %w", w.rows+1, err)
	}
	if err := w.bw.WriteByte('\n'); err != nil {
		return fmt.Errorf("write line %d: %w", w.rows+1, err)
	}
	w.rows++
	return nil
}

// Close flushes the last row group and writes the Parquet footer, or
// flushes the JSON Lines buffer and ends the zstd stream. It does not close
// the underlying writer.
func (w *DatasetWriter) Close() error {
	if w.nw != nil {
		if err := w.nw.close(); err != nil {
			return fmt.Errorf("close parquet: %w", err)
		}
		return nil
	}
	if w.pw != nil {
		if err := w.pw.Close(); err != nil {
			return fmt.Errorf("close parquet: %w", err)
		}
		return nil
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if w.zw != nil {
		if err := w.zw.Close(); err != nil {
			return fmt.Errorf("close zstd: %w", err)
		}
	}
	return nil
}
