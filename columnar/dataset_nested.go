package columnar

import (
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// ParseNestedType parses the text of a nested column type, as
// DatasetColumn.Nested gives it: string, int64, float64, bool,
// list<T>, map<string, T> and struct<name: T, ...>, in any nesting.
func ParseNestedType(s string) (arrow.DataType, error) {
	p := typeParser{s: s}
	dt, err := p.parse()
	if err == nil && strings.TrimSpace(p.s[p.i:]) != "" {
		err = fmt.Errorf("unexpected %q", p.s[p.i:])
	}
	if err != nil {
		return nil, fmt.Errorf("nested type %q: %w", s, err)
	}
	return dt, nil
}

type typeParser struct {
	s string
	i int
}

func (p *typeParser) word() string {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
	start := p.i
	for p.i < len(p.s) && strings.IndexByte("<>,: ", p.s[p.i]) < 0 {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *typeParser) expect(c byte) error {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
	if p.i >= len(p.s) || p.s[p.i] != c {
		return fmt.Errorf("want %q at byte %d", c, p.i)
	}
	p.i++
	return nil
}

func (p *typeParser) parse() (arrow.DataType, error) {
	switch w := p.word(); w {
	case "string":
		return arrow.BinaryTypes.String, nil
	case "int64":
		return arrow.PrimitiveTypes.Int64, nil
	case "float64":
		return arrow.PrimitiveTypes.Float64, nil
	case "bool":
		return arrow.FixedWidthTypes.Boolean, nil
	case "list":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		elem, err := p.parse()
		if err != nil {
			return nil, err
		}
		return arrow.ListOf(elem), p.expect('>')
	case "map":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		if k := p.word(); k != "string" {
			return nil, fmt.Errorf("map key %q: want string", k)
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		item, err := p.parse()
		if err != nil {
			return nil, err
		}
		return arrow.MapOf(arrow.BinaryTypes.String, item), p.expect('>')
	case "struct":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		var fields []arrow.Field
		for {
			name := p.word()
			if err := p.expect(':'); err != nil {
				return nil, err
			}
			dt, err := p.parse()
			if err != nil {
				return nil, err
			}
			fields = append(fields, arrow.Field{Name: name, Type: dt, Nullable: true})
			if p.expect(',') != nil {
				break
			}
		}
		return arrow.StructOf(fields...), p.expect('>')
	default:
		return nil, fmt.Errorf("unknown type %q", w)
	}
}

// nestedDatasetWriter writes a Parquet dataset with nested columns through
// pqarrow, a row group at a time: each DatasetRaw value of a nested column
// is JSON text appended to the column's builders by its type (a struct
// field the object lacks is null; an object's members are a map's entries
// in order).
type nestedDatasetWriter struct {
	columns []DatasetColumn
	rb      *array.RecordBuilder
	fw      *pqarrow.FileWriter
	doc     jsonview.Doc
}

func newNestedDatasetWriter(w io.Writer, columns []DatasetColumn, groupRows int) (*nestedDatasetWriter, error) {
	fields := make([]arrow.Field, len(columns))
	for i, c := range columns {
		var dt arrow.DataType
		switch c.Type {
		case DatasetInt64:
			dt = arrow.PrimitiveTypes.Int64
		case DatasetNested:
			t, err := ParseNestedType(c.Nested)
			if err != nil {
				return nil, fmt.Errorf("dataset writer: column %s: %w", c.Name, err)
			}
			dt = t
		default:
			dt = arrow.BinaryTypes.String
		}
		fields[i] = arrow.Field{Name: c.Name, Type: dt, Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(int64(groupRows)),
		parquet.WithDictionaryDefault(false),
		parquet.WithStats(false),
		parquet.WithDataPageSize(1 << 20),
		parquet.WithCreatedBy("gavel"),
	}
	// A Dictionary column has every leaf dictionary-encoded, as pyarrow
	// writes nested columns by default.
	ps, err := pqarrow.ToParquet(schema, parquet.NewWriterProperties(opts...), pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, fmt.Errorf("dataset writer: %w", err)
	}
	for i := range ps.NumColumns() {
		path := ps.Column(i).ColumnPath()
		for _, c := range columns {
			if c.Dictionary && c.Name == path[0] {
				opts = append(opts, parquet.WithDictionaryPath(path, true))
			}
		}
	}
	fw, err := pqarrow.NewFileWriter(schema, writeOnly{w}, parquet.NewWriterProperties(opts...), pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, fmt.Errorf("dataset writer: %w", err)
	}
	return &nestedDatasetWriter{columns: columns, rb: array.NewRecordBuilder(memory.DefaultAllocator, schema), fw: fw}, nil
}

// writeOnly is w without its Close: the caller closes it.
type writeOnly struct{ io.Writer }

func (writeOnly) Close() error { return nil }

func (w *nestedDatasetWriter) write(row []DatasetValue) error {
	for i, v := range row {
		c := w.columns[i]
		b := w.rb.Field(i)
		switch v.Kind {
		case DatasetAbsent, DatasetNull:
			b.AppendNull()
		case DatasetInt:
			ib, ok := b.(*array.Int64Builder)
			if !ok {
				return fmt.Errorf("dataset writer: column %s: integer in a column of type %s", c.Name, b.Type())
			}
			ib.Append(v.Int)
		case DatasetText, DatasetRaw:
			if c.Type != DatasetNested {
				sb, ok := b.(*array.StringBuilder)
				if !ok {
					return fmt.Errorf("dataset writer: column %s: text in an integer column", c.Name)
				}
				sb.BinaryBuilder.Append(v.Bytes)
				continue
			}
			if v.Kind == DatasetText {
				return fmt.Errorf("dataset writer: column %s: text in a nested column", c.Name)
			}
			root, err := w.doc.Parse(v.Bytes)
			if err != nil {
				return fmt.Errorf("dataset writer: column %s: %w", c.Name, err)
			}
			if err := appendJSONValue(b, root); err != nil {
				return fmt.Errorf("dataset writer: column %s: %w", c.Name, err)
			}
		}
	}
	return nil
}

// flush writes the rows built so far as a row group.
func (w *nestedDatasetWriter) flush() error {
	rec := w.rb.NewRecordBatch()
	defer rec.Release()
	if rec.NumRows() == 0 {
		return nil
	}
	return w.fw.Write(rec)
}

func (w *nestedDatasetWriter) close() error {
	err := w.flush()
	if cerr := w.fw.Close(); err == nil {
		err = cerr
	}
	w.rb.Release()
	return err
}

// appendJSONValue appends the JSON value v to b by b's type.
func appendJSONValue(b array.Builder, v jsonview.Value) error {
	if v.IsNull() {
		b.AppendNull()
		return nil
	}
	bad := func() error { return fmt.Errorf("%s value for a %s column", v.Kind(), b.Type()) }
	switch b := b.(type) {
	case *array.StringBuilder:
		s, ok := v.Str()
		if !ok {
			return bad()
		}
		b.BinaryBuilder.Append(s)
	case *array.Int64Builder:
		n, ok := v.Int()
		if !ok {
			return bad()
		}
		b.Append(n)
	case *array.Float64Builder:
		f, ok := v.Float()
		if !ok {
			return bad()
		}
		b.Append(f)
	case *array.BooleanBuilder:
		t, ok := v.Bool()
		if !ok {
			return bad()
		}
		b.Append(t)
	case *array.StructBuilder:
		if v.Kind() != jsonview.Object {
			return bad()
		}
		b.Append(true)
		st := b.Type().(*arrow.StructType)
		for k, f := range st.Fields() {
			if err := appendJSONValue(b.FieldBuilder(k), v.Get(f.Name)); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
		}
	case *array.MapBuilder:
		if v.Kind() != jsonview.Object {
			return bad()
		}
		b.Append(true)
		kb := b.KeyBuilder().(*array.StringBuilder)
		for m := v.First(); m.Exists(); m = m.Next() {
			kb.BinaryBuilder.Append(m.Key())
			if err := appendJSONValue(b.ItemBuilder(), m); err != nil {
				return fmt.Errorf("%s: %w", m.Key(), err)
			}
		}
	case *array.ListBuilder:
		if v.Kind() != jsonview.Array {
			return bad()
		}
		b.Append(true)
		for e := v.First(); e.Exists(); e = e.Next() {
			if err := appendJSONValue(b.ValueBuilder(), e); err != nil {
				return err
			}
		}
	default:
		return bad()
	}
	return nil
}
