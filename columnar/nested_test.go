package columnar

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// renderAll renders every value of arr as nestedJSON would, "ERR: ..." for
// a value JSON cannot hold.
func renderAll(arr arrow.Array) []string {
	return renderAllNulls(arr, StructNullsMember)
}

// renderAllNulls is renderAll with null struct fields rendered as nulls
// says.
func renderAllNulls(arr arrow.Array, nulls StructNulls) []string {
	enc := newJSONEnc(arr, nulls)
	var out []string
	for i := range arr.Len() {
		b, err := enc.append(nil, i)
		if err != nil {
			if e, ok := err.(*nestedError); ok {
				e.column = "col"
			}
			out = append(out, "ERR: "+err.Error())
			continue
		}
		out = append(out, string(b))
	}
	return out
}

func TestNestedJSON(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tests := []struct {
		name string
		dt   arrow.DataType
		in   string // arrow-go's JSON form of the array
		want []string
	}{
		{"struct", arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, arrow.Field{Name: "b \"q\"", Type: arrow.BinaryTypes.String, Nullable: true}),
			`[{"a": 9007199254740993, "b \"q\"": "x\ny"}, null, {"a": null, "b \"q\"": "z"}]`,
			[]string{`{"a":9007199254740993,"b \"q\"":"x\ny"}`, `null`, `{"a":null,"b \"q\"":"z"}`}},
		{"floats", arrow.ListOf(arrow.PrimitiveTypes.Float64), `[[0.1, 1e21, 1e-7, -0.0, 100, 123456789012, 1.5e300], null, []]`,
			[]string{`[0.1,1e+21,1e-7,-0,100,123456789012,1.5e+300]`, `null`, `[]`}},
		{"float32", arrow.ListOf(arrow.PrimitiveTypes.Float32), `[[0.1, 16777216]]`, []string{`[0.1,16777216]`}},
		{"uint64 and int8", arrow.StructOf(arrow.Field{Name: "u", Type: arrow.PrimitiveTypes.Uint64}, arrow.Field{Name: "i", Type: arrow.PrimitiveTypes.Int8}),
			`[{"u": 18446744073709551615, "i": -128}]`, []string{`{"u":18446744073709551615,"i":-128}`}},
		{"large list", arrow.LargeListOf(arrow.PrimitiveTypes.Int32), `[[1, null, 3]]`, []string{`[1,null,3]`}},
		{"fixed-size list", arrow.FixedSizeListOf(2, arrow.BinaryTypes.String), `[["a", "b"], null, [null, "d"]]`, []string{`["a","b"]`, `null`, `[null,"d"]`}},
		{"map int keys", arrow.MapOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String),
			`[[{"key": 3, "value": "a"}, {"key": -1, "value": null}, {"key": 3, "value": "b"}], null]`,
			[]string{`{"3":"a","-1":null,"3":"b"}`, `null`}},
		{"map bool keys", arrow.MapOf(arrow.FixedWidthTypes.Boolean, arrow.PrimitiveTypes.Int64),
			`[[{"key": true, "value": 1}]]`, []string{`{"true":1}`}},
		{"map of structs", arrow.MapOf(arrow.BinaryTypes.String, arrow.StructOf(arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true})),
			`[[{"key": "k", "value": {"n": 1}}, {"key": "j", "value": null}]]`, []string{`{"k":{"n":1},"j":null}`}},
		{"binary", arrow.ListOf(arrow.BinaryTypes.Binary), `[["aGk=", ""]]`, []string{`["aGk=",""]`}},
		{"date32", arrow.ListOf(arrow.FixedWidthTypes.Date32), `[["2024-11-20", "1969-12-31"]]`, []string{`["2024-11-20","1969-12-31"]`}},
		{"date64", arrow.ListOf(arrow.FixedWidthTypes.Date64), `[["2024-11-20"]]`, []string{`["2024-11-20"]`}},
		{"timestamp ms utc", arrow.ListOf(&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}), `[["2024-11-20T10:00:01.5Z"]]`, []string{`["2024-11-20T10:00:01.500Z"]`}},
		{"timestamp us local", arrow.ListOf(&arrow.TimestampType{Unit: arrow.Microsecond}), `[["1969-12-31T23:59:59.999999"]]`, []string{`["1969-12-31T23:59:59.999999"]`}},
		{"timestamp s", arrow.ListOf(&arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"}), `[["2024-01-02T03:04:05Z"]]`, []string{`["2024-01-02T03:04:05Z"]`}},
		{"time64 ns", arrow.ListOf(arrow.FixedWidthTypes.Time64ns), `[["12:34:56.000000001"]]`, []string{`["12:34:56.000000001"]`}},
		{"duration", arrow.ListOf(arrow.FixedWidthTypes.Duration_ms), `[[1500, -2]]`, []string{`[1500,-2]`}},
		{"decimal", arrow.ListOf(&arrow.Decimal128Type{Precision: 7, Scale: 2}), `[["1.50", "-0.05", "12345.00"]]`, []string{`[1.50,-0.05,12345.00]`}},
		{"nulls", arrow.ListOf(arrow.Null), `[[null, null]]`, []string{`[null,null]`}},
		{"nested deep", arrow.ListOf(arrow.StructOf(arrow.Field{Name: "xs", Type: arrow.LargeListOf(arrow.ListOf(arrow.FixedWidthTypes.Boolean)), Nullable: true})),
			`[[{"xs": [[true], [], null]}, {"xs": null}]]`, []string{`[{"xs":[[true],[],null]},{"xs":null}]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arr, _, err := array.FromJSON(mem, tt.dt, strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("FromJSON: %v", err)
			}
			defer arr.Release()
			got := renderAll(arr)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("render %s = %q, want %q", tt.dt, got, tt.want)
			}
			for _, s := range got {
				if s != "null" && !json.Valid([]byte(s)) {
					t.Errorf("render %s gave invalid JSON %q", tt.dt, s)
				}
			}
		})
	}
}

// TestNestedJSONSliced renders a sliced struct of lists: offsets into the
// children are the slice's.
func TestNestedJSONSliced(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dt := arrow.StructOf(arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true})
	arr, _, err := array.FromJSON(mem, dt, strings.NewReader(`[{"l": [1]}, {"l": [2, 3]}, null, {"l": [4]}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer arr.Release()
	s := array.NewSlice(arr, 1, 4)
	defer s.Release()
	got, want := renderAll(s), []string{`{"l":[2,3]}`, `null`, `{"l":[4]}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("render slice = %q, want %q", got, want)
	}
}

func TestNestedJSONDictionaryAndDecimal(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}
	dt := arrow.StructOf(
		arrow.Field{Name: "role", Type: dict, Nullable: true},
		arrow.Field{Name: "d", Type: &arrow.Decimal128Type{Precision: 20, Scale: -2}, Nullable: true},
	)
	b := array.NewStructBuilder(mem, dt)
	defer b.Release()
	db := b.FieldBuilder(0).(*array.BinaryDictionaryBuilder)
	decb := b.FieldBuilder(1).(*array.Decimal128Builder)
	for i, role := range []string{"user", "assistant", "user", ""} {
		b.Append(true)
		if role == "" {
			db.AppendNull()
		} else if err := db.AppendString(role); err != nil {
			t.Fatal(err)
		}
		decb.Append(decimal128.FromI64(int64(i * 7)))
	}
	arr := b.NewArray()
	defer arr.Release()
	got := renderAll(arr)
	want := []string{`{"role":"user","d":0}`, `{"role":"assistant","d":700}`, `{"role":"user","d":1400}`, `{"role":null,"d":2100}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("render = %q, want %q", got, want)
	}
}

// TestNestedJSONBadNumbers checks that NaN and infinities inside a nested
// value are errors naming the path to them.
func TestNestedJSONBadNumbers(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	acct := arrow.StructOf(arrow.Field{Name: "balance", Type: arrow.PrimitiveTypes.Float64, Nullable: true})
	dt := arrow.StructOf(
		arrow.Field{Name: "accounts", Type: arrow.ListOf(acct), Nullable: true},
		arrow.Field{Name: "rates", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float32), Nullable: true},
	)
	b := array.NewStructBuilder(mem, dt)
	defer b.Release()
	lb := b.FieldBuilder(0).(*array.ListBuilder)
	sb := lb.ValueBuilder().(*array.StructBuilder)
	fb := sb.FieldBuilder(0).(*array.Float64Builder)
	mb := b.FieldBuilder(1).(*array.MapBuilder)
	row := func(balances []float64, key string, rate float32) {
		b.Append(true)
		lb.Append(true)
		for _, f := range balances {
			sb.Append(true)
			fb.Append(f)
		}
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append(key)
		mb.ItemBuilder().(*array.Float32Builder).Append(rate)
	}
	row([]float64{1, 2, 3, math.NaN()}, "eur", 1)
	row([]float64{1}, "usd", float32(math.Inf(1)))
	row([]float64{math.Inf(-1)}, "x", 0)
	row([]float64{0.5}, "ok", 0.25)
	arr := b.NewArray()
	defer arr.Release()
	got := renderAll(arr)
	want := []string{
		"ERR: col.accounts[3].balance: NaN is not a JSON number",
		"ERR: col.rates.usd: +Inf is not a JSON number",
		"ERR: col.accounts[0].balance: -Inf is not a JSON number",
		`{"accounts":[{"balance":0.5}],"rates":{"ok":0.25}}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("render = %q,\nwant %q", got, want)
	}
}

// fuzzGen draws types and values from fuzz input bytes. With absent, the
// texts value returns leave out the struct fields it drew null (as
// StructNullsAbsent renders them); what it draws and appends is the same.
type fuzzGen struct {
	b      []byte
	i      int
	absent bool
}

func (z *fuzzGen) next() int {
	if z.i >= len(z.b) {
		return 0
	}
	z.i++
	return int(z.b[z.i-1])
}

func (z *fuzzGen) typ(depth int) arrow.DataType {
	k := z.next() % 13
	if depth >= 4 {
		k %= 6
	}
	switch k {
	case 0:
		return arrow.PrimitiveTypes.Int64
	case 1:
		return arrow.PrimitiveTypes.Float64
	case 2:
		return arrow.BinaryTypes.String
	case 3:
		return arrow.FixedWidthTypes.Boolean
	case 4:
		return arrow.BinaryTypes.Binary
	case 5:
		return arrow.PrimitiveTypes.Uint64
	case 6, 7:
		n := 1 + z.next()%3
		fields := make([]arrow.Field, n)
		for i := range fields {
			fields[i] = arrow.Field{Name: "f" + strconv.Itoa(i) + string(rune('a'+z.next()%3)), Type: z.typ(depth + 1), Nullable: true}
		}
		return arrow.StructOf(fields...)
	case 8:
		return arrow.ListOf(z.typ(depth + 1))
	case 9:
		return arrow.LargeListOf(z.typ(depth + 1))
	case 10:
		return arrow.FixedSizeListOf(int32(1+z.next()%3), z.typ(depth+1))
	case 11:
		return arrow.MapOf(arrow.BinaryTypes.String, z.typ(depth+1))
	default:
		return arrow.MapOf(arrow.PrimitiveTypes.Int32, z.typ(depth+1))
	}
}

// value appends a value drawn for b and returns its JSON text, written
// with encoding/json for every scalar.
func (z *fuzzGen) value(b array.Builder, canNull bool) string {
	if canNull && z.next()%7 == 0 {
		b.AppendNull()
		return "null"
	}
	marshal := func(v any) string {
		out, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return string(out)
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		v := int64(z.next()-128) << (z.next() % 56)
		b.Append(v)
		return strconv.FormatInt(v, 10)
	case *array.Uint64Builder:
		v := uint64(z.next()) << (z.next() % 57)
		b.Append(v)
		return strconv.FormatUint(v, 10)
	case *array.Int8Builder:
		v := int8(z.next())
		b.Append(v)
		return strconv.Itoa(int(v))
	case *array.Int16Builder:
		v := int16(z.next()-128) << (z.next() % 8)
		b.Append(v)
		return strconv.Itoa(int(v))
	case *array.Int32Builder:
		v := int32(z.next()-128) << (z.next() % 24)
		b.Append(v)
		return strconv.Itoa(int(v))
	case *array.Uint8Builder:
		v := uint8(z.next())
		b.Append(v)
		return strconv.Itoa(int(v))
	case *array.Uint16Builder:
		v := uint16(z.next()) << (z.next() % 9)
		b.Append(v)
		return strconv.Itoa(int(v))
	case *array.Uint32Builder:
		v := uint32(z.next()) << (z.next() % 25)
		b.Append(v)
		return strconv.FormatUint(uint64(v), 10)
	case *array.Float32Builder:
		v := float32(z.next()-128) * float32(math.Pow(10, float64(z.next()%20)-10)) / 7
		b.Append(v)
		return marshal(v)
	case *array.LargeStringBuilder:
		s := make([]byte, z.next()%6)
		for i := range s {
			s[i] = byte(z.next())
		}
		b.Append(string(s))
		return marshal(string(s))
	case *array.Float64Builder:
		v := float64(z.next()-128) * math.Pow(10, float64(z.next()%50)-25) / 7
		b.Append(v)
		return marshal(v)
	case *array.StringBuilder:
		n := z.next() % 6
		s := make([]byte, n)
		for i := range s {
			s[i] = byte(z.next())
		}
		b.Append(string(s))
		return marshal(string(s))
	case *array.BooleanBuilder:
		v := z.next()%2 == 0
		b.Append(v)
		return marshal(v)
	case *array.BinaryBuilder:
		s := make([]byte, z.next()%5)
		for i := range s {
			s[i] = byte(z.next())
		}
		b.Append(s)
		return marshal(s)
	case *array.StructBuilder:
		b.Append(true)
		st := b.Type().(*arrow.StructType)
		parts := make([]string, 0, st.NumFields())
		for k, f := range st.Fields() {
			v := z.value(b.FieldBuilder(k), f.Nullable)
			if z.absent && v == "null" {
				continue
			}
			parts = append(parts, marshal(f.Name)+":"+v)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case *array.MapBuilder:
		b.Append(true)
		n := z.next() % 4
		parts := make([]string, n)
		for k := range parts {
			var key string
			switch kb := b.KeyBuilder().(type) {
			case *array.StringBuilder:
				key = string(rune('a' + z.next()%3))
				kb.Append(key)
			case *array.Int32Builder:
				v := int32(z.next() - 128)
				kb.Append(v)
				key = strconv.Itoa(int(v))
			}
			parts[k] = marshal(key) + ":" + z.value(b.ItemBuilder(), true)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case *array.FixedSizeListBuilder:
		b.Append(true)
		n := int(b.Type().(*arrow.FixedSizeListType).Len())
		parts := make([]string, n)
		for k := range parts {
			parts[k] = z.value(b.ValueBuilder(), true)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case array.ListLikeBuilder:
		b.Append(true)
		n := z.next() % 4
		parts := make([]string, n)
		elemNull := true
		if lt, ok := b.Type().(arrow.ListLikeType); ok {
			elemNull = lt.ElemField().Nullable
		}
		for k := range parts {
			parts[k] = z.value(b.ValueBuilder(), elemNull)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	panic("no value for " + b.Type().String())
}

// decodeJSON decodes text with numbers kept as their text.
func decodeJSON(text string) (any, error) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// FuzzNestedJSON builds random nested Arrow values and checks that their
// JSON rendering is valid and parses (encoding/json) back to the value
// built, whose text encoding/json writes; with StructNullsAbsent, to that
// value without the struct fields drawn null.
func FuzzNestedJSON(f *testing.F) {
	f.Add([]byte{6, 2, 0, 1, 3, 8, 1, 11, 2, 9, 4, 10, 2, 5})
	f.Add([]byte{12, 7, 1, 0, 0, 200, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("a longer seed that draws many things at once, 0123456789"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		z := &fuzzGen{b: data}
		dt := z.typ(0)
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		rows := 1 + z.next()%4
		want := make([]string, rows)
		for i := range want {
			want[i] = z.value(b, true)
		}
		arr := b.NewArray()
		defer arr.Release()
		// The same draws, with the texts of StructNullsAbsent.
		za := &fuzzGen{b: data, absent: true}
		ba := array.NewBuilder(mem, za.typ(0))
		defer ba.Release()
		_ = za.next()
		wantAbsent := make([]string, rows)
		for i := range wantAbsent {
			wantAbsent[i] = za.value(ba, true)
		}
		checkRendered(t, arr, StructNullsMember, want)
		checkRendered(t, arr, StructNullsAbsent, wantAbsent)
	})
}

// checkRendered renders every value of arr with nulls and fails unless
// each is valid JSON that parses to the value of want's text.
func checkRendered(t *testing.T, arr arrow.Array, nulls StructNulls, want []string) {
	t.Helper()
	dt := arr.DataType()
	enc := newJSONEnc(arr, nulls)
	for i, w := range want {
		got, err := enc.append(nil, i)
		if err != nil {
			t.Fatalf("row %d of %s: %v", i, dt, err)
		}
		if !json.Valid(got) {
			t.Fatalf("row %d of %s: invalid JSON %q", i, dt, got)
		}
		gv, err := decodeJSON(string(got))
		if err != nil {
			t.Fatal(err)
		}
		wv, err := decodeJSON(w)
		if err != nil {
			t.Fatalf("want text %q: %v", w, err)
		}
		if !reflect.DeepEqual(gv, wv) {
			t.Fatalf("struct nulls %s, row %d of %s: rendered %s, want %s", nulls, i, dt, got, w)
		}
	}
}
