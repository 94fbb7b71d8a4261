package columnar

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// Nested columns. A rollout field or metadata column of a nested Arrow type
// (struct, list, large list, list view, fixed-size list, map, union, run-end
// encoded, or any nesting of them; Parquet groups and repeated columns read
// through pqarrow) is rendered as the compact JSON text of the value it
// represents and handed on as a CellJSON cell, whose text is indexed as a
// JSON-text column's is. The mapping (docs/grading.md, "Nested columns"):
//
//   - integers as JSON numbers, exactly; decimals with the digits of their
//     scale; floats in the shortest text that reads back to the same value
//     (exponent form outside [1e-6, 1e21), as encoding/json writes them);
//     NaN and infinities are an error of the row naming the value's path;
//   - booleans, strings (invalid UTF-8 replaced), and binary as base64 text;
//   - dates as "YYYY-MM-DD"; times of day as "HH:MM:SS" and timestamps as
//     RFC 3339, both with the digits of their unit, timestamps with "Z" when
//     the column has a time zone (its values are UTC instants) and no offset
//     otherwise; durations and month intervals as numbers of their unit;
//   - structs as objects (fields in schema order, a null field a member with
//     value null, or with StructNullsAbsent no member); lists as arrays;
//     maps as objects with their entries in stored order, repeated keys
//     kept, a key that is not a string written as its JSON text;
//     dictionaries and run-end encoded values as the value they stand for;
//     unions as the value of their child; extension types as their
//     storage.
//
// The encoder of a column is built once per Arrow array (a record batch's
// column): every type switch and field-name quoting happens then, and
// rendering a value is a walk over concrete arrays appending to one buffer,
// with no reflection and no intermediate values.

// StructNulls says what a null field of a struct is in the JSON value a
// nested column renders (Options.StructNulls). It concerns struct fields
// alone: a null list element stays a null element, a map entry whose value
// is null stays an entry, and a null top-level cell is an absent field
// either way.
//
// The two readings exist because a struct has one set of fields for every
// row. Written as structs, a null field is data: the writer gave the field
// and no value, and a verifier may see that (StructNullsMember, the
// default). Inferred from JSON objects, as pyarrow.json, Polars'
// read_ndjson and pa.Table.from_pylist build them, the fields are the union
// of every row's members, and a null field most often stands for a member
// that row never had (StructNullsAbsent): then the object a verifier sees
// holds the row's own members, as the JSON Lines line did. An explicit
// null member of the JSON is absent too: the struct cannot tell it from a
// missing one.
type StructNulls uint8

const (
	// StructNullsMember renders a null struct field as a member with
	// value null.
	StructNullsMember StructNulls = iota
	// StructNullsAbsent leaves a null struct field out of its object.
	StructNullsAbsent
)

// ParseStructNulls returns the StructNulls named s: "member" or "absent".
func ParseStructNulls(s string) (StructNulls, error) {
	switch s {
	case "member":
		return StructNullsMember, nil
	case "absent":
		return StructNullsAbsent, nil
	}
	return 0, fmt.Errorf("unknown struct nulls %q (want member or absent)", s)
}

// String returns the name ParseStructNulls reads.
func (n StructNulls) String() string {
	if n == StructNullsAbsent {
		return "absent"
	}
	return "member"
}

// jsonEnc appends the JSON text of the values of one Arrow array.
type jsonEnc interface {
	// append appends the JSON text of value i to dst. The error, a
	// *nestedError, is a value JSON cannot hold.
	append(dst []byte, i int) ([]byte, error)
}

// nestedError is a value that JSON cannot hold, with the path to it.
type nestedError struct {
	column string   // the column, or COL.PATH
	what   string   // "NaN", "+Inf", "-Inf"
	steps  []string // path steps, innermost first
}

func (e *nestedError) Error() string {
	var b strings.Builder
	b.WriteString(e.column)
	for _, s := range slices.Backward(e.steps) {
		b.WriteString(s)
	}
	return fmt.Sprintf("%s: %s is not a JSON number", b.String(), e.what)
}

// within adds the step that leads to the failed value, when err is a
// *nestedError.
func within(err error, step string) error {
	if e, ok := err.(*nestedError); ok {
		e.steps = append(e.steps, step)
	}
	return err
}

// isNestedType reports whether dt is a type whose values a jsonEnc
// renders as JSON text and that is not read as a flat cell.
func isNestedType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.STRUCT, arrow.LIST, arrow.LARGE_LIST, arrow.FIXED_SIZE_LIST,
		arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW, arrow.MAP,
		arrow.SPARSE_UNION, arrow.DENSE_UNION, arrow.RUN_END_ENCODED:
		return jsonSupported(dt)
	case arrow.DICTIONARY:
		vt := dt.(*arrow.DictionaryType).ValueType
		return isNestedType(vt)
	case arrow.EXTENSION:
		return isNestedType(dt.(arrow.ExtensionType).StorageType())
	}
	return false
}

// jsonSupported reports whether a jsonEnc renders values of type dt.
func jsonSupported(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if !jsonSupported(f.Type) {
				return false
			}
		}
		return true
	case *arrow.MapType:
		return jsonSupported(t.KeyType()) && jsonSupported(t.ItemType())
	case arrow.ListLikeType:
		return jsonSupported(t.Elem())
	case arrow.UnionType:
		for _, f := range t.Fields() {
			if !jsonSupported(f.Type) {
				return false
			}
		}
		return true
	case *arrow.RunEndEncodedType:
		return jsonSupported(t.Encoded())
	case *arrow.DictionaryType:
		return jsonSupported(t.ValueType)
	case arrow.ExtensionType:
		return jsonSupported(t.StorageType())
	}
	switch dt.ID() {
	case arrow.NULL, arrow.BOOL,
		arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
		arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256,
		arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW,
		arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY,
		arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP,
		arrow.DURATION, arrow.INTERVAL_MONTHS, arrow.INTERVAL_DAY_TIME, arrow.INTERVAL_MONTH_DAY_NANO:
		return true
	}
	return false
}

// newJSONEnc returns the encoder of arr, whose type jsonSupported accepts;
// nulls says how its structs render null fields.
func newJSONEnc(arr arrow.Array, nulls StructNulls) jsonEnc {
	enc := newValueEnc(arr, nulls)
	if arr.NullN() > 0 && arr.DataType().ID() != arrow.NULL {
		return nullableEnc{arr, enc}
	}
	return enc
}

// newValueEnc returns the encoder of arr's non-null values.
func newValueEnc(arr arrow.Array, nulls StructNulls) jsonEnc {
	switch a := arr.(type) {
	case *array.Null:
		return nullEnc{}
	case *array.Boolean:
		return boolEnc{a}
	case *array.Int8:
		return intEnc[int8]{a.Values()}
	case *array.Int16:
		return intEnc[int16]{a.Values()}
	case *array.Int32:
		return intEnc[int32]{a.Values()}
	case *array.Int64:
		return intEnc[int64]{a.Values()}
	case *array.Uint8:
		return uintEnc[uint8]{a.Values()}
	case *array.Uint16:
		return uintEnc[uint16]{a.Values()}
	case *array.Uint32:
		return uintEnc[uint32]{a.Values()}
	case *array.Uint64:
		return uintEnc[uint64]{a.Values()}
	case *array.Float16:
		return float16Enc{a}
	case *array.Float32:
		return floatEnc[float32]{a.Values(), 32}
	case *array.Float64:
		return floatEnc[float64]{a.Values(), 64}
	case *array.Decimal32:
		return decimalEnc{func(i int) *big.Int { return big.NewInt(int64(a.Value(i))) }, int(a.DataType().(*arrow.Decimal32Type).Scale)}
	case *array.Decimal64:
		return decimalEnc{func(i int) *big.Int { return big.NewInt(int64(a.Value(i))) }, int(a.DataType().(*arrow.Decimal64Type).Scale)}
	case *array.Decimal128:
		return decimalEnc{func(i int) *big.Int { return a.Value(i).BigInt() }, int(a.DataType().(*arrow.Decimal128Type).Scale)}
	case *array.Decimal256:
		return decimalEnc{func(i int) *big.Int { return a.Value(i).BigInt() }, int(a.DataType().(*arrow.Decimal256Type).Scale)}
	case *array.String:
		return stringEnc[*array.String]{a}
	case *array.LargeString:
		return stringEnc[*array.LargeString]{a}
	case *array.StringView:
		return stringEnc[*array.StringView]{a}
	case *array.Binary:
		return binaryEnc[*array.Binary]{a}
	case *array.LargeBinary:
		return binaryEnc[*array.LargeBinary]{a}
	case *array.BinaryView:
		return binaryEnc[*array.BinaryView]{a}
	case *array.FixedSizeBinary:
		return binaryEnc[*array.FixedSizeBinary]{a}
	case *array.Date32:
		return dateEnc{func(i int) int64 { return int64(a.Value(i)) * 86400 }}
	case *array.Date64:
		return dateEnc{func(i int) int64 { return floorDiv(int64(a.Value(i)), 1000) }}
	case *array.Time32:
		unit := a.DataType().(*arrow.Time32Type).Unit
		return timeEnc{func(i int) int64 { return int64(a.Value(i)) }, unit, "15:04:05" + fracLayout(unit)}
	case *array.Time64:
		unit := a.DataType().(*arrow.Time64Type).Unit
		return timeEnc{func(i int) int64 { return int64(a.Value(i)) }, unit, "15:04:05" + fracLayout(unit)}
	case *array.Timestamp:
		t := a.DataType().(*arrow.TimestampType)
		layout := "2006-01-02T15:04:05" + fracLayout(t.Unit)
		if t.TimeZone != "" {
			layout += "Z"
		}
		return timeEnc{func(i int) int64 { return int64(a.Value(i)) }, t.Unit, layout}
	case *array.Duration:
		return intFuncEnc{func(i int) int64 { return int64(a.Value(i)) }}
	case *array.MonthInterval:
		return intFuncEnc{func(i int) int64 { return int64(a.Value(i)) }}
	case *array.DayTimeInterval:
		return dayTimeEnc{a}
	case *array.MonthDayNanoInterval:
		return monthDayNanoEnc{a}
	case *array.Struct:
		return newStructEnc(a, nulls)
	case *array.Map:
		return newMapEnc(a, nulls)
	case array.ListLike:
		return listEnc{a, newJSONEnc(a.ListValues(), nulls)}
	case *array.SparseUnion:
		return newUnionEnc(a, nil, nulls)
	case *array.DenseUnion:
		return newUnionEnc(a, a, nulls)
	case *array.RunEndEncoded:
		return reeEnc{a, newJSONEnc(a.Values(), nulls)}
	case *array.Dictionary:
		return dictEnc{a, newJSONEnc(a.Dictionary(), nulls)}
	case array.ExtensionArray:
		return newJSONEnc(a.Storage(), nulls)
	}
	panic(fmt.Sprintf("columnar: no JSON rendering of %s", arr.DataType()))
}

// floorDiv is a / b rounded down.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// fracLayout is the fraction of a time layout with the digits of unit.
func fracLayout(unit arrow.TimeUnit) string {
	switch unit {
	case arrow.Millisecond:
		return ".000"
	case arrow.Microsecond:
		return ".000000"
	case arrow.Nanosecond:
		return ".000000000"
	}
	return ""
}

type nullableEnc struct {
	arr arrow.Array
	enc jsonEnc
}

func (e nullableEnc) append(dst []byte, i int) ([]byte, error) {
	if e.arr.IsNull(i) {
		return append(dst, "null"...), nil
	}
	return e.enc.append(dst, i)
}

type nullEnc struct{}

func (nullEnc) append(dst []byte, _ int) ([]byte, error) { return append(dst, "null"...), nil }

type boolEnc struct{ a *array.Boolean }

func (e boolEnc) append(dst []byte, i int) ([]byte, error) {
	return strconv.AppendBool(dst, e.a.Value(i)), nil
}

type intEnc[T int8 | int16 | int32 | int64] struct{ v []T }

func (e intEnc[T]) append(dst []byte, i int) ([]byte, error) {
	return strconv.AppendInt(dst, int64(e.v[i]), 10), nil
}

type uintEnc[T uint8 | uint16 | uint32 | uint64] struct{ v []T }

func (e uintEnc[T]) append(dst []byte, i int) ([]byte, error) {
	return strconv.AppendUint(dst, uint64(e.v[i]), 10), nil
}

type intFuncEnc struct{ v func(int) int64 }

func (e intFuncEnc) append(dst []byte, i int) ([]byte, error) {
	return strconv.AppendInt(dst, e.v(i), 10), nil
}

type floatEnc[T float32 | float64] struct {
	v    []T
	bits int
}

func (e floatEnc[T]) append(dst []byte, i int) ([]byte, error) {
	return appendJSONFloat(dst, float64(e.v[i]), e.bits)
}

type float16Enc struct{ a *array.Float16 }

func (e float16Enc) append(dst []byte, i int) ([]byte, error) {
	return appendJSONFloat(dst, float64(e.a.Value(i).Float32()), 32)
}

// appendJSONFloat appends f (of the given bit size) as encoding/json
// writes it: the shortest text that reads back to f, in exponent form
// below 1e-6 and from 1e21 on. NaN and infinities are a *nestedError.
func appendJSONFloat(dst []byte, f float64, bits int) ([]byte, error) {
	switch {
	case math.IsNaN(f):
		return dst, &nestedError{what: "NaN"}
	case math.IsInf(f, 1):
		return dst, &nestedError{what: "+Inf"}
	case math.IsInf(f, -1):
		return dst, &nestedError{what: "-Inf"}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		// e-09 to e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

type decimalEnc struct {
	v     func(int) *big.Int
	scale int
}

func (e decimalEnc) append(dst []byte, i int) ([]byte, error) {
	return appendDecimalDigits(dst, e.v(i), e.scale), nil
}

// appendDecimalDigits appends unscaled×10^-scale with all the digits of
// its scale ("1.50" for 150 at scale 2; "1500" for 15 at scale -2).
func appendDecimalDigits(dst []byte, unscaled *big.Int, scale int) []byte {
	if unscaled.Sign() < 0 {
		dst = append(dst, '-')
	}
	d := new(big.Int).Abs(unscaled).Append(nil, 10)
	switch {
	case scale <= 0:
		dst = append(dst, d...)
		if unscaled.Sign() != 0 {
			for range -scale {
				dst = append(dst, '0')
			}
		}
	case len(d) > scale:
		dst = append(dst, d[:len(d)-scale]...)
		dst = append(dst, '.')
		dst = append(dst, d[len(d)-scale:]...)
	default:
		dst = append(dst, '0', '.')
		for range scale - len(d) {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	}
	return dst
}

type stringEnc[A interface{ Value(int) string }] struct{ a A }

func (e stringEnc[A]) append(dst []byte, i int) ([]byte, error) {
	return jsonview.AppendJSONString(dst, e.a.Value(i)), nil
}

type binaryEnc[A interface{ Value(int) []byte }] struct{ a A }

func (e binaryEnc[A]) append(dst []byte, i int) ([]byte, error) {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, e.a.Value(i))
	return append(dst, '"'), nil
}

type dateEnc struct{ sec func(int) int64 }

func (e dateEnc) append(dst []byte, i int) ([]byte, error) {
	dst = append(dst, '"')
	dst = time.Unix(e.sec(i), 0).UTC().AppendFormat(dst, "2006-01-02")
	return append(dst, '"'), nil
}

type timeEnc struct {
	v      func(int) int64
	unit   arrow.TimeUnit
	layout string
}

func (e timeEnc) append(dst []byte, i int) ([]byte, error) {
	v := e.v(i)
	per := int64(e.unit.Multiplier()) // nanoseconds per unit
	perSec := int64(time.Second) / per
	sec, frac := floorDiv(v, perSec), v-floorDiv(v, perSec)*perSec
	dst = append(dst, '"')
	dst = time.Unix(sec, frac*per).UTC().AppendFormat(dst, e.layout)
	return append(dst, '"'), nil
}

type dayTimeEnc struct{ a *array.DayTimeInterval }

func (e dayTimeEnc) append(dst []byte, i int) ([]byte, error) {
	v := e.a.Value(i)
	dst = append(dst, `{"days":`...)
	dst = strconv.AppendInt(dst, int64(v.Days), 10)
	dst = append(dst, `,"milliseconds":`...)
	dst = strconv.AppendInt(dst, int64(v.Milliseconds), 10)
	return append(dst, '}'), nil
}

type monthDayNanoEnc struct{ a *array.MonthDayNanoInterval }

func (e monthDayNanoEnc) append(dst []byte, i int) ([]byte, error) {
	v := e.a.Value(i)
	dst = append(dst, `{"months":`...)
	dst = strconv.AppendInt(dst, int64(v.Months), 10)
	dst = append(dst, `,"days":`...)
	dst = strconv.AppendInt(dst, int64(v.Days), 10)
	dst = append(dst, `,"nanoseconds":`...)
	dst = strconv.AppendInt(dst, v.Nanoseconds, 10)
	return append(dst, '}'), nil
}

// structEnc renders a struct as an object; keys holds each field's quoted
// name and colon, the comma before every field but the first included.
// With absent, a field whose value renders as null is left out.
type structEnc struct {
	names  []string
	keys   [][]byte
	fields []jsonEnc
	absent bool
}

func newStructEnc(a *array.Struct, nulls StructNulls) structEnc {
	st := a.DataType().(*arrow.StructType)
	e := structEnc{absent: nulls == StructNullsAbsent}
	for k, f := range st.Fields() {
		e.names = append(e.names, f.Name)
		e.keys = append(e.keys, structKey(k, f.Name))
		e.fields = append(e.fields, newJSONEnc(a.Field(k), nulls))
	}
	return e
}

// structKey returns what precedes field k, named name, in a struct's
// JSON text: its quoted name and a colon, after a comma unless k is 0.
func structKey(k int, name string) []byte {
	var key []byte
	if k > 0 {
		key = append(key, ',')
	}
	key = jsonview.AppendJSONString(key, name)
	return append(key, ':')
}

func (e structEnc) append(dst []byte, i int) ([]byte, error) {
	dst = append(dst, '{')
	open := len(dst)
	for k, f := range e.fields {
		mark := len(dst)
		dst = append(dst, memberKey(e.keys[k], k, open, mark)...)
		start := len(dst)
		var err error
		if dst, err = f.append(dst, i); err != nil {
			return dst, within(err, "."+e.names[k])
		}
		dst = dropNull(dst, e.absent, mark, start)
	}
	return append(dst, '}'), nil
}

// memberKey returns key, a struct field's quoted name and colon with the
// comma before it (field k > 0), without the comma when the field is the
// first member written since open, the offset after the object's '{' (mark
// is where it is written): earlier fields were left out.
func memberKey(key []byte, k, open, mark int) []byte {
	if mark == open && k > 0 {
		return key[1:]
	}
	return key
}

// dropNull leaves out the member written from mark, whose value's text
// starts at start, when absent and the value is null (StructNullsAbsent).
// Whatever makes a value null (a validity bit, a dictionary or run-end
// encoded value that is null, a union's null child, a null-typed field),
// its text is the literal; a string "null" has its quotes.
func dropNull(dst []byte, absent bool, mark, start int) []byte {
	if absent && string(dst[start:]) == "null" {
		return dst[:mark]
	}
	return dst
}

type listEnc struct {
	a    array.ListLike
	elem jsonEnc
}

func (e listEnc) append(dst []byte, i int) ([]byte, error) {
	start, end := e.a.ValueOffsets(i)
	dst = append(dst, '[')
	for j := start; j < end; j++ {
		if j > start {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = e.elem.append(dst, int(j)); err != nil {
			return dst, within(err, "["+strconv.FormatInt(j-start, 10)+"]")
		}
	}
	return append(dst, ']'), nil
}

// mapEnc renders a map as an object. A key that is not a string is
// rendered into scratch, then written as a string of that text.
type mapEnc struct {
	a          *array.Map
	keys, vals jsonEnc
	strKeys    bool
	scratch    *[]byte
}

func newMapEnc(a *array.Map, nulls StructNulls) mapEnc {
	kt := a.DataType().(*arrow.MapType).KeyType()
	str := false
	switch kt.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		str = true
	case arrow.DICTIONARY:
		switch kt.(*arrow.DictionaryType).ValueType.ID() {
		case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
			str = true
		}
	}
	return mapEnc{a: a, keys: newJSONEnc(a.Keys(), nulls), vals: newJSONEnc(a.Items(), nulls), strKeys: str, scratch: new([]byte)}
}

func (e mapEnc) append(dst []byte, i int) ([]byte, error) {
	start, end := e.a.ValueOffsets(i)
	dst = append(dst, '{')
	for j := start; j < end; j++ {
		if j > start {
			dst = append(dst, ',')
		}
		k := len(dst)
		var err error
		if e.strKeys {
			dst, err = e.keys.append(dst, int(j))
		} else {
			var kt []byte
			kt, err = e.keys.append((*e.scratch)[:0], int(j))
			*e.scratch = kt
			dst = jsonview.AppendJSONString(dst, kt)
		}
		if err != nil {
			return dst, within(err, "[key "+strconv.FormatInt(j-start, 10)+"]")
		}
		name := dst[k:]
		dst = append(dst, ':')
		if dst, err = e.vals.append(dst, int(j)); err != nil {
			return dst, within(err, "."+memberName(name))
		}
	}
	return append(dst, '}'), nil
}

// memberName returns the text of a quoted member name, for paths in
// errors.
func memberName(quoted []byte) string {
	s, err := strconv.Unquote(string(quoted))
	if err != nil {
		return string(quoted)
	}
	return s
}

type unionEnc struct {
	a      interface{ ChildID(int) int }
	dense  *array.DenseUnion
	fields []jsonEnc
}

func newUnionEnc(a interface {
	arrow.Array
	ChildID(int) int
	NumFields() int
	Field(int) arrow.Array
}, dense *array.DenseUnion, nulls StructNulls) unionEnc {
	e := unionEnc{a: a, dense: dense}
	for k := range a.NumFields() {
		e.fields = append(e.fields, newJSONEnc(a.Field(k), nulls))
	}
	return e
}

func (e unionEnc) append(dst []byte, i int) ([]byte, error) {
	j := i
	if e.dense != nil {
		j = int(e.dense.ValueOffset(i))
	}
	return e.fields[e.a.ChildID(i)].append(dst, j)
}

type reeEnc struct {
	a      *array.RunEndEncoded
	values jsonEnc
}

func (e reeEnc) append(dst []byte, i int) ([]byte, error) {
	return e.values.append(dst, e.a.GetPhysicalIndex(i))
}

type dictEnc struct {
	a    *array.Dictionary
	dict jsonEnc
}

func (e dictEnc) append(dst []byte, i int) ([]byte, error) {
	return e.dict.append(dst, e.a.GetValueIndex(i))
}

// arrowCol reads one column of Arrow record batches as cells, or a field
// inside a struct column (a mapped field named COL.PATH). Flat values
// become the cells arrowCell makes; nested values CellJSON cells of their
// JSON text, rendered into the batch's arena.
type arrowCol struct {
	name   string   // the column, or COL.PATH, as errors name it
	index  int      // the column's index in the record batches
	path   []string // struct fields from the column to the value
	slots  []int
	nested bool        // values are rendered as JSON text
	nulls  StructNulls // how a nested value's null struct fields render
	// memo keeps the texts of repeated values of the initial state's
	// column, nil for other columns.
	memo *nestedMemo

	// Bound to the current record batch (bind).
	leaf    arrow.Array
	parents []arrow.Array // structs on the path that have nulls
	enc     jsonEnc
}

// bind points c at the arrays of record batch rec.
func (c *arrowCol) bind(rec arrow.RecordBatch) {
	arr := rec.Column(c.index)
	c.parents = c.parents[:0]
	for _, name := range c.path {
		if arr.NullN() > 0 {
			c.parents = append(c.parents, arr)
		}
		st := arr.(*array.Struct)
		k, _ := st.DataType().(*arrow.StructType).FieldIdx(name)
		arr = st.Field(k)
	}
	c.leaf, c.enc = arr, nil
	if c.nested {
		c.enc = newJSONEnc(arr, c.nulls)
		if c.memo == nil && slices.Contains(c.slots, slotInitial) {
			c.memo = newNestedMemo()
		}
		if c.memo != nil {
			c.memo.bind(arr)
		}
	}
}

// simple reports whether c is a flat top-level column.
func (c *arrowCol) simple() bool { return !c.nested && len(c.path) == 0 }

// colCell returns the cell of row i of the record batch c is bound to. With
// copyStrings, string cells are copied into the arena rather than point
// into the record batch. The error is a nested value JSON cannot hold.
func colCell[H any](c *arrowCol, cb *chunkBatch[H], i int, copyStrings bool) (Cell, error) {
	for _, p := range c.parents {
		if p.IsNull(i) {
			return Cell{}, nil
		}
	}
	if c.leaf.IsNull(i) {
		return Cell{}, nil
	}
	if !c.nested {
		cell := arrowCell(cb, c.leaf, i)
		if copyStrings && cell.Kind == CellString {
			start := len(cb.arena)
			cb.arena = append(cb.arena, cell.Data...)
			cell.Data = cb.arena[start:len(cb.arena):len(cb.arena)]
		}
		return cell, nil
	}
	var h uint64
	memo := false
	if c.memo != nil {
		var text []byte
		if text, h, memo = c.memo.lookup(c.leaf, i); text != nil {
			return Cell{Kind: CellJSON, Stable: true, Data: text}, nil
		}
	}
	start := len(cb.arena)
	var err error
	cb.arena, err = c.enc.append(cb.arena, i)
	if err != nil {
		cb.arena = cb.arena[:start]
		if e, ok := err.(*nestedError); ok {
			e.column = c.name
		}
		return Cell{}, err
	}
	text := cb.arena[start:len(cb.arena):len(cb.arena)]
	if memo {
		if own := c.memo.admit(h, text); own != nil {
			cb.arena = cb.arena[:start]
			return Cell{Kind: CellJSON, Stable: true, Data: own}, nil
		}
	}
	return Cell{Kind: CellJSON, Data: text}, nil
}

// fillCols fills rows from rows first.. of the record batch the columns
// are bound to. A value JSON cannot hold is the row's Err (the first one).
func fillCols[H any](cols []*arrowCol, rows []Row, first int, cb *chunkBatch[H], copyStrings bool) {
	for _, c := range cols {
		for j := range rows {
			row := &rows[j]
			cell, err := colCell(c, cb, first+j, copyStrings)
			if err != nil && row.Err == nil {
				row.Err = err
			}
			for _, s := range c.slots {
				*slotCell(row, s) = cell
			}
		}
	}
}

// planArrowCols picks the columns of schema to read: the mapped fields
// (names gives each slot's column), a name COL.PATH that no column has
// being a field inside struct column COL, and every other column of a
// type gavel reads as metadata. meta receives the metadata names. A
// field whose column gavel cannot read, or whose path is not in the
// schema, is an error; an absent column is null in every row.
// only, when not nil, names the metadata columns to read; the others are
// skipped.
func planArrowCols(schema *arrow.Schema, names [numFieldSlots]string, only []string, meta *[]string) ([]*arrowCol, error) {
	var cols []*arrowCol
	for i, field := range schema.Fields() {
		var slots []int
		for s, fn := range names {
			if fn == field.Name {
				slots = append(slots, s)
			}
		}
		flat := arrowSupported(field.Type)
		nested := !flat && isNestedType(field.Type)
		if len(slots) == 0 {
			if (!flat && !nested) || (only != nil && !slices.Contains(only, field.Name)) {
				continue
			}
			slots = append(slots, numFieldSlots+len(*meta))
			*meta = append(*meta, field.Name)
		} else if !flat && !nested {
			return nil, fmt.Errorf("column %q holds a rollout field but has type %s, which gavel cannot read", field.Name, field.Type)
		}
		cols = append(cols, &arrowCol{name: field.Name, index: i, slots: slots, nested: nested})
	}
slots:
	for s, name := range names {
		if len(schema.FieldIndices(name)) > 0 {
			continue
		}
		for _, c := range cols {
			if c.name == name {
				c.slots = append(c.slots, s)
				continue slots
			}
		}
		index, path, dt, err := arrowPath(schema, name)
		if err != nil {
			return nil, err
		}
		if index < 0 {
			continue
		}
		flat := arrowSupported(dt)
		if !flat && !isNestedType(dt) {
			return nil, fmt.Errorf("field %q holds a rollout field but has type %s, which gavel cannot read", name, dt)
		}
		cols = append(cols, &arrowCol{name: name, index: index, path: path, slots: []int{s}, nested: !flat})
	}
	return cols, nil
}

// arrowPath resolves name, COL.PATH, to a field inside struct column COL:
// PATH is dot-separated field names. index is -1 when no column is COL;
// a path that leaves the schema is an error.
func arrowPath(schema *arrow.Schema, name string) (index int, path []string, dt arrow.DataType, err error) {
	col, rest, ok := strings.Cut(name, ".")
	if !ok {
		return -1, nil, nil, nil
	}
	idx := schema.FieldIndices(col)
	if len(idx) == 0 {
		return -1, nil, nil, nil
	}
	dt = schema.Field(idx[0]).Type
	at := col
	for step := range strings.SplitSeq(rest, ".") {
		st, ok := dt.(*arrow.StructType)
		if !ok {
			return -1, nil, nil, fmt.Errorf("%q is not in the schema: %q is a %s, not a struct", name, at, dt)
		}
		f, ok := st.FieldByName(step)
		if !ok {
			return -1, nil, nil, fmt.Errorf("%q is not in the schema: struct %q has no field %q", name, at, step)
		}
		path = append(path, step)
		dt, at = f.Type, at+"."+step
	}
	return idx[0], path, dt, nil
}
