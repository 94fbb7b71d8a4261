package columnar

import (
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// A result table is described once, as a list of columns whose rows are a
// Go struct (rewardColumns, checkColumns in results.go). A column holds
// its name, Arrow type, nullability, Parquet encoding and the way a row's
// value is read; the Arrow schema, the builders, the Parquet dictionary
// settings, the dictionary cut of row groups and the JSON Lines keys and
// values all derive from that list, and so does the decoding of a part's
// rows read back (ResultDecoder: --reuse, rescore). Adding a column is one
// entry, made with one of the constructors below from the row field it
// holds, plus the code that fills the row.
//
// Rejected: struct tags read by reflection. A row would be read through
// reflect on every value, or through offsets and unsafe; a closure per
// column costs one indirect call per value and stays typed.

// encoding is how a column is encoded in Parquet parts.
type encoding uint8

const (
	// pqDefault leaves the column to pqarrow's own dictionary encoder:
	// numbers, booleans, lists and the kept metadata, whose values gavel
	// does not know to be few.
	pqDefault encoding = iota
	// pqCategorical marks a string column of few distinct values (task,
	// verifier, status, ...). Its dictionary is built by gavel
	// (dictStrings) and handed to pqarrow as an Arrow dictionary array,
	// and a row group is cut before the dictionary outgrows maxDictBytes.
	pqCategorical
	// pqPlain turns the dictionary off, for unique or free-text strings
	// (ids, messages), which are left to zstd.
	pqPlain
)

// column describes one column of a result table whose rows are R.
type column[R any] struct {
	name     string
	typ      arrow.DataType
	nullable bool
	enc      encoding
	// bind returns the function that appends a row's value to b: the
	// column's Arrow builder or, for a categorical column of a Parquet
	// part, its dictStrings.
	bind func(b columnBuilder) func(*R)
	// json appends a row's value as JSON.
	json func(b []byte, r *R) []byte
	// key, set for categorical columns, returns the string a row adds to
	// the column's dictionary ("" for a null).
	key func(*R) string
	// decode sets a row's value from its cell as a ResultReader reads it
	// (ResultDecoder): the inverse of the writing above.
	decode func(r *R, c Cell, d *cellDecoding) error
}

// columnBuilder is what a column appends to: an Arrow builder, or a
// dictStrings.
type columnBuilder interface {
	AppendNull()
}

// stringAppender appends to a string column.
type stringAppender interface {
	Append(string)
	AppendNull()
}

// stringCol returns a non-nullable string column of the field at(r).
// Decoded, a categorical column's string is interned, a plain one's
// copied.
func stringCol[R any](name string, enc encoding, at func(*R) *string) column[R] {
	return stringColOr(name, enc, "", at)
}

// stringColOr is stringCol for a field whose empty value is written as
// def.
func stringColOr[R any](name string, enc encoding, def string, at func(*R) *string) column[R] {
	get := func(r *R) string { return *at(r) }
	if def != "" {
		get = func(r *R) string {
			if s := *at(r); s != "" {
				return s
			}
			return def
		}
	}
	c := column[R]{
		name: name, typ: arrow.BinaryTypes.String, enc: enc,
		bind: func(b columnBuilder) func(*R) {
			sb := b.(stringAppender)
			return func(r *R) { sb.Append(get(r)) }
		},
		json: func(b []byte, r *R) []byte { return jsonview.AppendJSONString(b, get(r)) },
		decode: func(r *R, c Cell, d *cellDecoding) error {
			*at(r) = d.str(c.Data, enc)
			return nil
		},
	}
	if enc == pqCategorical {
		c.key = get
	}
	return c
}

// nullStringCol returns a nullable string column of the field at(r).
func nullStringCol[R any](name string, enc encoding, at func(*R) *NullString) column[R] {
	get := func(r *R) NullString { return *at(r) }
	c := column[R]{
		name: name, typ: arrow.BinaryTypes.String, nullable: true, enc: enc,
		bind: func(b columnBuilder) func(*R) {
			sb := b.(stringAppender)
			return func(r *R) {
				if s := get(r); s.Valid {
					sb.Append(s.S)
				} else {
					sb.AppendNull()
				}
			}
		},
		json: func(b []byte, r *R) []byte { return appendJSONNullString(b, get(r)) },
		decode: func(r *R, c Cell, d *cellDecoding) error {
			if c.Kind == CellNull {
				*at(r) = NullString{}
			} else {
				*at(r) = Str(d.str(c.Data, enc))
			}
			return nil
		},
	}
	if enc == pqCategorical {
		c.key = func(r *R) string { return get(r).S }
	}
	return c
}

// boolCol returns a non-nullable boolean column of the field at(r).
func boolCol[R any](name string, at func(*R) *bool) column[R] {
	return column[R]{
		name: name, typ: arrow.FixedWidthTypes.Boolean,
		bind: func(b columnBuilder) func(*R) {
			bb := b.(*array.BooleanBuilder)
			return func(r *R) { bb.Append(*at(r)) }
		},
		json: func(b []byte, r *R) []byte { return strconv.AppendBool(b, *at(r)) },
		decode: func(r *R, c Cell, _ *cellDecoding) error {
			*at(r) = string(c.Data) == "true"
			return nil
		},
	}
}

// nullBoolCol returns a nullable boolean column; at returns the value's
// field and its validity's.
func nullBoolCol[R any](name string, at func(*R) (*bool, *bool)) column[R] {
	return column[R]{
		name: name, typ: arrow.FixedWidthTypes.Boolean, nullable: true,
		bind: func(b columnBuilder) func(*R) {
			bb := b.(*array.BooleanBuilder)
			return func(r *R) {
				if v, ok := at(r); *ok {
					bb.Append(*v)
				} else {
					bb.AppendNull()
				}
			}
		},
		json: func(b []byte, r *R) []byte {
			if v, ok := at(r); *ok {
				return strconv.AppendBool(b, *v)
			}
			return append(b, "null"...)
		},
		decode: func(r *R, c Cell, _ *cellDecoding) error {
			v, ok := at(r)
			*v, *ok = c.Kind != CellNull && string(c.Data) == "true", c.Kind != CellNull
			return nil
		},
	}
}

// int32Col returns a non-nullable 32-bit integer column of the field at(r).
func int32Col[R any](name string, at func(*R) *int32) column[R] {
	return column[R]{
		name: name, typ: arrow.PrimitiveTypes.Int32,
		bind: func(b columnBuilder) func(*R) {
			ib := b.(*array.Int32Builder)
			return func(r *R) { ib.Append(*at(r)) }
		},
		json: func(b []byte, r *R) []byte { return strconv.AppendInt(b, int64(*at(r)), 10) },
		decode: func(r *R, c Cell, _ *cellDecoding) error {
			v, err := decodeInt(name, c, 32)
			*at(r) = int32(v)
			return err
		},
	}
}

// int64Col returns a non-nullable 64-bit integer column of the field at(r).
func int64Col[R any](name string, at func(*R) *int64) column[R] {
	return column[R]{
		name: name, typ: arrow.PrimitiveTypes.Int64,
		bind: func(b columnBuilder) func(*R) {
			ib := b.(*array.Int64Builder)
			return func(r *R) { ib.Append(*at(r)) }
		},
		json: func(b []byte, r *R) []byte { return strconv.AppendInt(b, *at(r), 10) },
		decode: func(r *R, c Cell, _ *cellDecoding) (err error) {
			*at(r), err = decodeInt(name, c, 64)
			return err
		},
	}
}

// nullHashCol returns a nullable string column of 64-bit hashes, each
// written as 16 lowercase hex digits (fixed width, so that the text sorts
// and compares as the number does); at returns the hash's field and its
// validity's. Its values are unique: Parquet stores them without a
// dictionary.
func nullHashCol[R any](name string, at func(*R) (*uint64, *bool)) column[R] {
	return column[R]{
		name: name, typ: arrow.BinaryTypes.String, nullable: true, enc: pqPlain,
		bind: func(b columnBuilder) func(*R) {
			sb := b.(*array.StringBuilder)
			return func(r *R) {
				if h, ok := at(r); *ok {
					var buf [16]byte
					sb.BinaryBuilder.Append(appendHash(buf[:0], *h))
				} else {
					sb.AppendNull()
				}
			}
		},
		json: func(b []byte, r *R) []byte {
			if h, ok := at(r); *ok {
				b = append(b, '"')
				return append(appendHash(b, *h), '"')
			}
			return append(b, "null"...)
		},
		decode: func(r *R, c Cell, _ *cellDecoding) error {
			h, ok := at(r)
			*h, *ok = 0, false
			if c.Kind == CellNull {
				return nil
			}
			v, err := strconv.ParseUint(unsafeString(c.Data), 16, 64)
			if err != nil || len(c.Data) != 16 {
				return fmt.Errorf("%s %q: not 16 hex digits", name, c.Data)
			}
			*h, *ok = v, true
			return nil
		},
	}
}

// appendHash appends h as 16 lowercase hex digits.
func appendHash(b []byte, h uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, digits[h>>uint(shift)&0xf])
	}
	return b
}

// FormatHash returns h as the input_hash column writes it: 16 lowercase
// hex digits.
func FormatHash(h uint64) string {
	var buf [16]byte
	return string(appendHash(buf[:0], h))
}

// float64Col returns a non-nullable double column of the field at(r),
// written to JSON Lines in the shortest form that reads back as the same
// float64 (a non-finite value as null, which decodes as 0).
func float64Col[R any](name string, at func(*R) *float64) column[R] {
	return column[R]{
		name: name, typ: arrow.PrimitiveTypes.Float64,
		bind: func(b columnBuilder) func(*R) {
			fb := b.(*array.Float64Builder)
			return func(r *R) { fb.Append(*at(r)) }
		},
		json: func(b []byte, r *R) []byte {
			if v := *at(r); !math.IsNaN(v) && !math.IsInf(v, 0) {
				return strconv.AppendFloat(b, v, 'g', -1, 64)
			}
			return append(b, "null"...)
		},
		decode: func(r *R, c Cell, _ *cellDecoding) (err error) {
			*at(r), _, err = decodeFloat(name, c)
			return err
		},
	}
}

// nullFloat64Col returns a nullable double column; at returns the value's
// field and its validity's. JSON Lines writes a value in the shortest form
// that reads back as the same float64 (strconv 'g', -1), and a non-finite
// one as null, because JSON has no spelling for it.
func nullFloat64Col[R any](name string, at func(*R) (*float64, *bool)) column[R] {
	return column[R]{
		name: name, typ: arrow.PrimitiveTypes.Float64, nullable: true,
		bind: func(b columnBuilder) func(*R) {
			fb := b.(*array.Float64Builder)
			return func(r *R) {
				if v, ok := at(r); *ok {
					fb.Append(*v)
				} else {
					fb.AppendNull()
				}
			}
		},
		json: func(b []byte, r *R) []byte {
			if v, ok := at(r); *ok && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
				return strconv.AppendFloat(b, *v, 'g', -1, 64)
			}
			return append(b, "null"...)
		},
		decode: func(r *R, c Cell, _ *cellDecoding) (err error) {
			v, ok := at(r)
			*v, *ok, err = decodeFloat(name, c)
			return err
		},
	}
}

// nullStringsCol returns a nullable column of lists of strings (Arrow
// list<utf8> with non-null elements; a JSON array in JSON Lines); at
// returns the list's field and its validity's. A valid empty list is
// written as an empty list, not as null.
func nullStringsCol[R any](name string, at func(*R) (*[]string, *bool)) column[R] {
	return column[R]{
		name: name, typ: arrow.ListOfNonNullable(arrow.BinaryTypes.String), nullable: true,
		bind: func(b columnBuilder) func(*R) {
			lb := b.(*array.ListBuilder)
			vb := lb.ValueBuilder().(*array.StringBuilder)
			return func(r *R) {
				v, ok := at(r)
				if !*ok {
					lb.AppendNull()
					return
				}
				lb.Append(true)
				for _, s := range *v {
					vb.Append(s)
				}
			}
		},
		json: func(b []byte, r *R) []byte {
			v, ok := at(r)
			if !*ok {
				return append(b, "null"...)
			}
			b = append(b, '[')
			for i, s := range *v {
				if i > 0 {
					b = append(b, ',')
				}
				b = jsonview.AppendJSONString(b, s)
			}
			return append(b, ']')
		},
		decode: func(r *R, c Cell, d *cellDecoding) (err error) {
			v, ok := at(r)
			*v, *ok = nil, c.Kind != CellNull
			if *ok {
				*v, err = d.strings(name, c)
			}
			return err
		},
	}
}

// stringsCol returns a non-nullable column of lists of strings (Arrow
// list<utf8> with non-null elements; a JSON array in JSON Lines): an
// empty list is written as an empty list.
func stringsCol[R any](name string, at func(*R) *[]string) column[R] {
	return column[R]{
		name: name, typ: arrow.ListOfNonNullable(arrow.BinaryTypes.String),
		bind: func(b columnBuilder) func(*R) {
			lb := b.(*array.ListBuilder)
			vb := lb.ValueBuilder().(*array.StringBuilder)
			return func(r *R) {
				lb.Append(true)
				for _, s := range *at(r) {
					vb.Append(s)
				}
			}
		},
		json: func(b []byte, r *R) []byte {
			b = append(b, '[')
			for i, s := range *at(r) {
				if i > 0 {
					b = append(b, ',')
				}
				b = jsonview.AppendJSONString(b, s)
			}
			return append(b, ']')
		},
		decode: func(r *R, c Cell, d *cellDecoding) (err error) {
			v := at(r)
			*v = nil
			if c.Kind == CellNull {
				return fmt.Errorf("%s is null", name)
			}
			*v, err = d.strings(name, c)
			return err
		},
	}
}

// columnNames returns the names of cols, in order.
func columnNames[R any](cols []column[R]) []string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return names
}

// nullInt32Col returns a nullable 32-bit integer column; at returns the
// value's field and its validity's.
func nullInt32Col[R any](name string, at func(*R) (*int32, *bool)) column[R] {
	return column[R]{
		name: name, typ: arrow.PrimitiveTypes.Int32, nullable: true,
		bind: func(b columnBuilder) func(*R) {
			ib := b.(*array.Int32Builder)
			return func(r *R) {
				if v, ok := at(r); *ok {
					ib.Append(*v)
				} else {
					ib.AppendNull()
				}
			}
		},
		json: func(b []byte, r *R) []byte {
			if v, ok := at(r); *ok {
				return strconv.AppendInt(b, int64(*v), 10)
			}
			return append(b, "null"...)
		},
		decode: func(r *R, c Cell, _ *cellDecoding) error {
			v, ok := at(r)
			*v, *ok = 0, c.Kind != CellNull
			if !*ok {
				return nil
			}
			x, err := decodeInt(name, c, 32)
			*v = int32(x)
			return err
		},
	}
}

// nullFloatsCol returns a nullable column of lists of nullable doubles
// (Arrow list<double>; a JSON array in JSON Lines), a NaN element written
// as null; at returns the list's field and its validity's. A valid empty
// list is written as an empty list, not as null.
func nullFloatsCol[R any](name string, at func(*R) (*[]float64, *bool)) column[R] {
	return column[R]{
		name: name, typ: arrow.ListOf(arrow.PrimitiveTypes.Float64), nullable: true,
		bind: func(b columnBuilder) func(*R) {
			lb := b.(*array.ListBuilder)
			vb := lb.ValueBuilder().(*array.Float64Builder)
			return func(r *R) {
				v, ok := at(r)
				if !*ok {
					lb.AppendNull()
					return
				}
				lb.Append(true)
				for _, f := range *v {
					if math.IsNaN(f) {
						vb.AppendNull()
					} else {
						vb.Append(f)
					}
				}
			}
		},
		json: func(b []byte, r *R) []byte {
			v, ok := at(r)
			if !*ok {
				return append(b, "null"...)
			}
			return AppendFloatsJSON(b, *v)
		},
		decode: func(r *R, c Cell, d *cellDecoding) (err error) {
			v, ok := at(r)
			*v, *ok = nil, c.Kind != CellNull
			if *ok {
				*v, err = d.floats(name, c)
			}
			return err
		},
	}
}

// AppendFloatsJSON appends a list of nullable doubles as JSON Lines writes
// it (a turn_rewards cell): [1,null,0.5], a NaN (or an infinity) as null.
func AppendFloatsJSON(b []byte, v []float64) []byte {
	b = append(b, '[')
	for i, f := range v {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendFloat(b, f, 'g', -1, 64)
		}
	}
	return append(b, ']')
}
