package jsonview

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

func TestParseMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name, in string
	}{
		{"null", `null`},
		{"true", `true`},
		{"false", `false`},
		{"zero", `0`},
		{"negative", `-12.5e+3`},
		{"big int", `123456789012345678901234567890`},
		{"string", `"hello"`},
		{"empty string", `""`},
		{"escapes", `"a\"b\\c\/d\be\ff\ng\rh\ti"`},
		{"unicode escape", `"\u00e9\u4e2d"`},
		{"surrogate pair", `"\ud83d\ude00"`},
		{"lone high surrogate", `"\ud83dx"`},
		{"lone low surrogate", `"\ude00"`},
		{"high surrogate then non-low escape", `"\ud83d\u0041"`},
		{"two high surrogates", `"\ud83d\ud83d\ude00"`},
		{"raw utf-8", `"é中😀"`},
		{"empty object", `{}`},
		{"empty array", `[]`},
		{"nested", `{"a":[1,{"b":[]},{}],"c":{"d":null}}`},
		{"whitespace", " \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } } \n"},
		{"duplicate keys", `{"a":1,"b":2,"a":3}`},
		{"escaped keys", `{"\u0061":1,"b\n":2}`},
		{"array of scalars", `[null,true,false,0,-0,1e5,"x"]`},
		{"deepish", strings.Repeat("[", 100) + strings.Repeat("]", 100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := decodeStd([]byte(tt.in))
			if err != nil {
				t.Fatalf("encoding/json: %v", err)
			}
			got := generic(parse(t, tt.in))
			if !reflect.DeepEqual(want, got) {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.in, cmp.Diff(want, got))
			}
		})
	}
}

func TestSyntaxError(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		offset int64
		msg    string // a substring of the message
	}{
		{"empty", ``, 0, "unexpected end"},
		{"only space", `   `, 3, "unexpected end"},
		{"bad start", `x`, 0, "looking for beginning of value"},
		{"trailing garbage", `{} x`, 3, "after top-level value"},
		{"two values", `1 2`, 2, "after top-level value"},
		{"leading zero", `01`, 1, "after top-level value"},
		{"unclosed object", `{"a":1`, 6, "unexpected end"},
		{"unclosed array", `[1,2`, 4, "unexpected end"},
		{"trailing comma array", `[1,]`, 3, "looking for beginning of value"},
		{"trailing comma object", `{"a":1,}`, 7, "looking for beginning of object key"},
		{"missing colon", `{"a" 1}`, 5, "after object key"},
		{"unquoted key", `{a:1}`, 1, "looking for beginning of object key"},
		{"missing comma", `[1 2]`, 3, "after array element"},
		{"mismatched bracket", `[1}`, 2, "after array element"},
		{"mismatched brace", `{"a":1]`, 6, "after object key:value pair"},
		{"control char", "\"a\x01b\"", 2, "in string literal"},
		{"raw newline", "\"a\nb\"", 2, "in string literal"},
		{"bad escape", `"a\x"`, 3, "in string escape code"},
		{"bad hex", `"\u12g4"`, 5, `\u hexadecimal`},
		{"short hex", `"\u12`, 5, "unexpected end"},
		{"invalid utf-8", "\"ab\xffc\"", 3, "invalid UTF-8"},
		{"utf-16 surrogate in utf-8", "\"\xed\xa0\x80\"", 1, "invalid UTF-8"},
		{"truncated utf-8", "\"\xe4\xb8\"", 1, "invalid UTF-8"},
		{"unterminated string", `"abc`, 4, "unexpected end"},
		{"backslash at end", `"abc\`, 5, "unexpected end"},
		{"open array then space", `[ `, 2, "unexpected end"},
		{"key without colon", `{"a"`, 4, "unexpected end"},
		{"escaped key without colon", `{"a\n" `, 7, "unexpected end"},
		{"bad escaped key", `{"\x":1}`, 3, "in string escape code"},
		{"open object then space", `{ `, 2, "unexpected end"},
		{"minus alone", `-`, 1, "unexpected end"},
		{"minus letter", `-a`, 1, "in numeric literal"},
		{"dot without digits", `1.`, 2, "unexpected end"},
		{"dot then letter", `1.e5`, 2, "in numeric literal"},
		{"exponent without digits", `1e+`, 3, "unexpected end"},
		{"exponent letter", `[1ex]`, 3, "in numeric literal"},
		{"plus sign", `+1`, 0, "looking for beginning of value"},
		{"leading dot", `.5`, 0, "looking for beginning of value"},
		{"bad literal", `[tru]`, 4, "invalid character ']' in literal true (expecting 'e')"},
		{"bad literal in object", `{"a":nulL}`, 8, "invalid character 'L' in literal null (expecting 'l')"},
		{"bad literal false", `fx`, 1, "invalid character 'x' in literal false (expecting 'a')"},
		{"short literal", `nul`, 3, "unexpected end"},
		{"capital literal", `True`, 0, "looking for beginning of value"},
		{"nbsp whitespace", "\u00a01", 0, "looking for beginning of value"},
		{"too deep", strings.Repeat("[", MaxDepth+1), MaxDepth, "exceeded max depth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Doc
			v, err := d.Parse([]byte(tt.in))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) = %v, %v, want *SyntaxError", tt.in, v.Kind(), err)
			}
			if se.Offset != tt.offset || !strings.Contains(se.Msg, tt.msg) {
				t.Errorf("Parse(%q) error = offset %d %q, want offset %d containing %q", tt.in, se.Offset, se.Msg, tt.offset, tt.msg)
			}
			if v.Exists() {
				t.Errorf("Parse(%q) root exists on error", tt.in)
			}
			if json.Valid([]byte(tt.in)) && !strings.Contains(tt.msg, "UTF-8") {
				t.Errorf("encoding/json accepts %q", tt.in)
			}
		})
	}
}

func TestSyntaxErrorString(t *testing.T) {
	var d Doc
	_, err := d.Parse([]byte(`[1,x]`))
	got, want := err.Error(), "invalid JSON at byte 3: invalid character 'x' looking for beginning of value"
	if got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestDepth(t *testing.T) {
	tests := []struct {
		name  string
		depth int
		ok    bool
	}{
		{"at limit", MaxDepth, true},
		{"over limit", MaxDepth + 1, false},
		{"far over limit", 1_000_000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, open := range []string{"[", `{"a":`} {
				close := "]"
				if open != "[" {
					close = "}"
				}
				in := []byte(strings.Repeat(open, tt.depth) + "1" + strings.Repeat(close, tt.depth))
				var d Doc
				_, err := d.Parse(in)
				if (err == nil) != tt.ok {
					t.Errorf("Parse(%s x %d) error = %v, want ok %v", open, tt.depth, err, tt.ok)
				}
				if got := json.Valid(in); got != tt.ok {
					t.Errorf("json.Valid(%s x %d) = %v, want %v", open, tt.depth, got, tt.ok)
				}
			}
		})
	}
}

func TestKindExistsIsNull(t *testing.T) {
	root := parse(t, `{"n":null,"t":true,"f":false,"i":1,"s":"x","a":[],"o":{}}`)
	tests := []struct {
		key    string
		kind   Kind
		exists bool
		isNull bool
	}{
		{"n", Null, true, true},
		{"t", True, true, false},
		{"f", False, true, false},
		{"i", Number, true, false},
		{"s", String, true, false},
		{"a", Array, true, false},
		{"o", Object, true, false},
		{"missing", Missing, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			v := root.Get(tt.key)
			if got := v.Kind(); got != tt.kind {
				t.Errorf("Kind() = %v, want %v", got, tt.kind)
			}
			if got := v.Exists(); got != tt.exists {
				t.Errorf("Exists() = %v, want %v", got, tt.exists)
			}
			if got := v.IsNull(); got != tt.isNull {
				t.Errorf("IsNull() = %v, want %v", got, tt.isNull)
			}
		})
	}
	if (Value{}).Kind() != Missing {
		t.Errorf("zero Value is not Missing")
	}
}

func TestKindString(t *testing.T) {
	tests := []struct {
		k    Kind
		want string
	}{
		{Missing, "missing"}, {Null, "null"}, {False, "boolean"}, {True, "boolean"},
		{Number, "number"}, {String, "string"}, {Array, "array"}, {Object, "object"}, {Kind(99), "Kind(99)"},
	}
	for _, tt := range tests {
		if got := tt.k.String(); got != tt.want {
			t.Errorf("Kind(%d).String() = %q, want %q", tt.k, got, tt.want)
		}
	}
}

func TestMissingIsSafe(t *testing.T) {
	var m Value
	if m.Raw() != nil || m.Offset() != -1 || m.Len() != 0 || m.Key() != nil || m.KeyIs("") || m.StrIs("") {
		t.Errorf("Missing: Raw %q Offset %d Len %d Key %q", m.Raw(), m.Offset(), m.Len(), m.Key())
	}
	if m.Get("a").Exists() || m.Index(0).Exists() || m.First().Exists() || m.Next().Exists() || m.Path("a", "b").Exists() {
		t.Errorf("Missing: navigation found something")
	}
	if _, ok := m.Str(); ok {
		t.Errorf("Missing: Str ok")
	}
	if _, ok := m.Float(); ok {
		t.Errorf("Missing: Float ok")
	}
	if _, ok := m.Int(); ok {
		t.Errorf("Missing: Int ok")
	}
	if _, ok := m.Bool(); ok {
		t.Errorf("Missing: Bool ok")
	}
}

func TestGet(t *testing.T) {
	root := parse(t, `{"a":1,"b":{"c":[10,20,{"d":"deep"}]},"a":2,"\u00e9t\u00e9":"summer","k\"q":3,"":4,"ab":5,"e\u0301":6}`)
	tests := []struct {
		name string
		v    Value
		want string // Raw, "" for Missing
	}{
		{"first of repeated key", root.Get("a"), `1`},
		{"nested object", root.Get("b").Get("c").Index(2).Get("d"), `"deep"`},
		{"path", root.Path("b", "c"), `[10,20,{"d":"deep"}]`},
		{"empty path", root.Path(), string(root.Raw())},
		{"escaped key", root.Get("été"), `"summer"`},
		{"escaped quote in key", root.Get(`k"q`), `3`},
		{"empty key", root.Get(""), `4`},
		{"prefix is not a match", root.Get("a\x00"), ``},
		{"longer key", root.Get("ab"), `5`},
		{"no normalisation", root.Get("é"), ``},
		{"decomposed key", root.Get("e\u0301"), `6`},
		{"missing key", root.Get("zz"), ``},
		{"on array", root.Get("b").Get("c").Get("0"), ``},
		{"on number", root.Get("a").Get("a"), ``},
		{"on empty object", parse(t, `{}`).Get(""), ``},
		{"GetBytes", root.GetBytes([]byte("ab")), `5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(tt.v.Raw()); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIndexLenIteration(t *testing.T) {
	root := parse(t, `{"arr":[1,[2,3],{"x":4},"five"],"obj":{"z":1,"y":{"w":[]},"x":3,"z":9},"e":[],"o":{}}`)
	arr, obj := root.Get("arr"), root.Get("obj")
	tests := []struct {
		name string
		v    Value
		len  int
		raws []string // children in order
		keys []string
	}{
		{"array", arr, 4, []string{`1`, `[2,3]`, `{"x":4}`, `"five"`}, []string{"", "", "", ""}},
		{"object in document order", obj, 4, []string{`1`, `{"w":[]}`, `3`, `9`}, []string{"z", "y", "x", "z"}},
		{"empty array", root.Get("e"), 0, nil, nil},
		{"empty object", root.Get("o"), 0, nil, nil},
		{"scalar", arr.Index(0), 0, nil, nil},
		{"root", root, 4, []string{string(arr.Raw()), string(obj.Raw()), `[]`, `{}`}, []string{"arr", "obj", "e", "o"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.v.Len(); got != tt.len {
				t.Errorf("Len() = %d, want %d", got, tt.len)
			}
			var raws, keys []string
			for c := tt.v.First(); c.Exists(); c = c.Next() {
				raws = append(raws, string(c.Raw()))
				keys = append(keys, string(c.Key()))
			}
			if diff := cmp.Diff(tt.raws, raws); diff != "" {
				t.Errorf("iteration (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.keys, keys); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
			if tt.v.Kind() == Array {
				for i, want := range tt.raws {
					if got := string(tt.v.Index(i).Raw()); got != want {
						t.Errorf("Index(%d) = %q, want %q", i, got, want)
					}
				}
			}
			if tt.v.Index(-1).Exists() || tt.v.Index(tt.len).Exists() {
				t.Errorf("Index out of range exists")
			}
		})
	}
	if root.Next().Exists() {
		t.Errorf("root.Next() exists")
	}
}

func TestKeyKeyIs(t *testing.T) {
	root := parse(t, `{"plain":1,"tab\there":2,"\u00e9":3,"\ud83d\ude00":4,"\ud800":5,"a\/b":6}`)
	tests := []struct {
		name string
		key  string
	}{
		{"plain", "plain"},
		{"escaped tab", "tab\there"},
		{"unicode escape", "é"},
		{"surrogate pair", "😀"},
		{"lone surrogate reads as U+FFFD", "\uFFFD"},
		{"escaped slash", "a/b"},
	}
	c := root.First()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(c.Key()); got != tt.key {
				t.Errorf("Key() = %q, want %q", got, tt.key)
			}
			if !c.KeyIs(tt.key) {
				t.Errorf("KeyIs(%q) = false", tt.key)
			}
			for _, other := range []string{tt.key + "x", tt.key[:len(tt.key)-1], "", "zzz"} {
				if c.KeyIs(other) {
					t.Errorf("KeyIs(%q) = true", other)
				}
			}
			if !root.Get(tt.key).KeyIs(tt.key) {
				t.Errorf("Get(%q) not found", tt.key)
			}
		})
		c = c.Next()
	}
	if root.Key() != nil || root.KeyIs("") {
		t.Errorf("root has a key")
	}
	arr := parse(t, `[1]`)
	if arr.Index(0).Key() != nil || arr.Index(0).KeyIs("") {
		t.Errorf("array element has a key")
	}
}

func TestStrStrIs(t *testing.T) {
	tests := []struct {
		name, in string
		want     string
		aliased  bool // a slice of the data
	}{
		{"plain", `"open"`, "open", true},
		{"empty", `""`, "", true},
		{"utf-8", `"é中😀"`, "é中😀", true},
		{"long plain", `"` + strings.Repeat("abcdefgh", 10) + `"`, strings.Repeat("abcdefgh", 10), true},
		{"escapes", `"a\"b\\c\/d\be\ff\ng\rh\ti"`, "a\"b\\c/d\be\ff\ng\rh\ti", false},
		{"unicode escape", `"caf\u00e9"`, "café", false},
		{"upper hex", `"\u00E9\u00C9"`, "éÉ", false},
		{"nul escape", `"\u0000"`, "\x00", false},
		{"surrogate pair", `"\uD83D\uDE00!"`, "😀!", false},
		{"lone high at end", `"x\ud83d"`, "x\uFFFD", false},
		{"lone low", `"\udc00y"`, "\uFFFDy", false},
		{"high then escaped backslash", `"\ud83d\\u0041"`, "\uFFFD\\u0041", false},
		{"high then plain escape", `"\ud83d\u0041"`, "\uFFFDA", false},
		{"escape after long run", `"` + strings.Repeat("z", 20) + `\n"`, strings.Repeat("z", 20) + "\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.in)
			var d Doc
			v, err := d.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := v.Str()
			if !ok || string(got) != tt.want {
				t.Errorf("Str() = %q, %v, want %q", got, ok, tt.want)
			}
			var std string
			if err := json.Unmarshal(data, &std); err != nil || std != tt.want {
				t.Errorf("encoding/json reads %q (%v), want %q", std, err, tt.want)
			}
			if aliased := len(got) > 0 && unsafe.SliceData(got) == &data[1]; aliased != tt.aliased && len(got) > 0 {
				t.Errorf("Str() aliased = %v, want %v", aliased, tt.aliased)
			}
			if !v.StrIs(tt.want) {
				t.Errorf("StrIs(%q) = false", tt.want)
			}
			for _, other := range []string{tt.want + "x", "x" + tt.want} {
				if v.StrIs(other) {
					t.Errorf("StrIs(%q) = true", other)
				}
			}
		})
	}
	n := parse(t, `1`)
	if _, ok := n.Str(); ok || n.StrIs("1") {
		t.Errorf("a number reads as a string")
	}
}

func TestStrCapacity(t *testing.T) {
	data := []byte(`{"k":"ab","x":"cd"}`)
	var d Doc
	root, err := d.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := root.Get("k").Str()
	_ = append(s, "ZZZZ"...)
	k := root.Get("x").Key()
	_ = append(k, "ZZZZ"...)
	r := root.Get("k").Raw()
	_ = append(r, "ZZZZ"...)
	if got := string(data); got != `{"k":"ab","x":"cd"}` {
		t.Errorf("appending to a result changed the data: %s", got)
	}
}

func TestFloatIntBool(t *testing.T) {
	tests := []struct {
		in      string
		f       float64
		fok     bool
		i       int64
		iok     bool
		b, bok  bool
		comment string
	}{
		{in: `0`, f: 0, fok: true, i: 0, iok: true},
		{in: `-0`, f: math.Copysign(0, -1), fok: true, i: 0, iok: true},
		{in: `7`, f: 7, fok: true, i: 7, iok: true},
		{in: `7.0`, f: 7, fok: true, i: 7, iok: true},
		{in: `0.7e1`, f: 7, fok: true, i: 7, iok: true},
		{in: `700e-2`, f: 7, fok: true, i: 7, iok: true},
		{in: `7.5`, f: 7.5, fok: true},
		{in: `-12345.5`, f: -12345.5, fok: true},
		{in: `1e2`, f: 100, fok: true, i: 100, iok: true},
		{in: `0.1`, f: 0.1, fok: true},
		{in: `-0.0`, f: math.Copysign(0, -1), fok: true, i: 0, iok: true},
		{in: `123456789012345`, f: 123456789012345, fok: true, i: 123456789012345, iok: true},
		{in: `9007199254740993`, f: 9007199254740992, fok: true, i: 9007199254740993, iok: true},
		{in: `9999999999999999`, f: 1e16, fok: true, i: 9999999999999999, iok: true},
		{in: `0.123456789012345678`, f: 0.123456789012345678, fok: true},
		{in: `1.7976931348623157e308`, f: math.MaxFloat64, fok: true},
		{in: `9223372036854775807`, f: 9223372036854775807, fok: true, i: math.MaxInt64, iok: true},
		{in: `9223372036854775808`, f: 9223372036854775808, fok: true},
		{in: `-9223372036854775808`, f: -9223372036854775808, fok: true, i: math.MinInt64, iok: true},
		{in: `-9223372036854775809`, f: -9223372036854775809, fok: true},
		{in: `1e19`, f: 1e19, fok: true},
		{in: `1e400`, f: math.Inf(1), fok: true},
		{in: `-1e400`, f: math.Inf(-1), fok: true},
		{in: `1e-400`, f: 0, fok: true},
		{in: `1e-99999999999999999999999`, f: 0, fok: true},
		{in: `"1"`},
		{in: `null`},
		{in: `true`, b: true, bok: true},
		{in: `false`, b: false, bok: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v := parse(t, tt.in)
			if f, ok := v.Float(); ok != tt.fok || f != tt.f || math.Signbit(f) != math.Signbit(tt.f) {
				t.Errorf("Float() = %v, %v, want %v, %v", f, ok, tt.f, tt.fok)
			}
			if i, ok := v.Int(); ok != tt.iok || i != tt.i {
				t.Errorf("Int() = %v, %v, want %v, %v", i, ok, tt.i, tt.iok)
			}
			if b, ok := v.Bool(); ok != tt.bok || b != tt.b {
				t.Errorf("Bool() = %v, %v, want %v, %v", b, ok, tt.b, tt.bok)
			}
		})
	}
}

func TestRawOffset(t *testing.T) {
	in := ` {"a" : [ 1 , "x\n" ] , "b":{ }, "c": -2.5e3 }  `
	root := parse(t, in)
	tests := []struct {
		name   string
		v      Value
		raw    string
		offset int64
	}{
		{"root", root, `{"a" : [ 1 , "x\n" ] , "b":{ }, "c": -2.5e3 }`, 1},
		{"array", root.Get("a"), `[ 1 , "x\n" ]`, 8},
		{"element", root.Get("a").Index(0), `1`, 10},
		{"string with escape", root.Get("a").Index(1), `"x\n"`, 14},
		{"empty object", root.Get("b"), `{ }`, 28},
		{"number", root.Get("c"), `-2.5e3`, 38},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(tt.v.Raw()); got != tt.raw {
				t.Errorf("Raw() = %q, want %q", got, tt.raw)
			}
			if got := tt.v.Offset(); got != tt.offset {
				t.Errorf("Offset() = %d, want %d", got, tt.offset)
			}
			if got := in[tt.offset : int(tt.offset)+len(tt.raw)]; got != tt.raw {
				t.Errorf("data at Offset() = %q, want %q", got, tt.raw)
			}
		})
	}
}

func TestCompareNumbers(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{`1`, `1.0`, 0},
		{`1`, `1e0`, 0},
		{`1`, `10e-1`, 0},
		{`1`, `0.1e1`, 0},
		{`100`, `1e2`, 0},
		{`100`, `1E+2`, 0},
		{`0.001`, `1e-3`, 0},
		{`-0`, `0`, 0},
		{`-0.0e5`, `0e-7`, 0},
		{`0`, `0.000`, 0},
		{`1`, `2`, -1},
		{`2`, `1`, +1},
		{`-1`, `1`, -1},
		{`-1`, `-2`, +1},
		{`-0`, `-1e-300`, +1},
		{`0`, `1e-300`, -1},
		{`9007199254740993`, `9007199254740992`, +1},
		{`9007199254740993`, `9007199254740993.0`, 0},
		{`12345678901234567890123`, `12345678901234567890124`, -1},
		{`12345.5`, `12345.50`, 0},
		{`12345.5`, `12345.49999999999999999999`, +1},
		{`0.1`, `0.10000000000000000001`, -1},
		{`1.5`, `15e-1`, 0},
		{`10`, `9.99`, +1},
		{`99`, `100`, -1},
		{`1e400`, `1e401`, -1},
		{`1e400`, `10e399`, 0},
		{`-1e400`, `-1e401`, +1},
		{`1e-400`, `0`, +1},
		{`5e-324`, `2.5e-324`, +1},
		{`1e99999999999999999999`, `1e99999999999999999998`, +1},
		{`1e99999999999999999999`, `10e99999999999999999998`, 0},
		{`1e-99999999999999999999`, `1`, -1},
		{`1e-00000000000000000000000001`, `0.1`, 0},
		{`123`, `1e99999999999999999999`, -1},
	}
	for _, tt := range tests {
		t.Run(tt.a+" vs "+tt.b, func(t *testing.T) {
			a, b := parse(t, tt.a), parse(t, tt.b)
			if got, ok := CompareNumbers(a, b); !ok || got != tt.want {
				t.Errorf("CompareNumbers(%s, %s) = %d, %v, want %d", tt.a, tt.b, got, ok, tt.want)
			}
			if got, ok := CompareNumbers(b, a); !ok || got != -tt.want {
				t.Errorf("CompareNumbers(%s, %s) = %d, %v, want %d", tt.b, tt.a, got, ok, -tt.want)
			}
			if got := Equal(a, b); got != (tt.want == 0) {
				t.Errorf("Equal(%s, %s) = %v", tt.a, tt.b, got)
			}
		})
	}
	if _, ok := CompareNumbers(parse(t, `1`), parse(t, `"1"`)); ok {
		t.Errorf("CompareNumbers with a string: ok")
	}
	if _, ok := CompareNumbers(Value{}, parse(t, `1`)); ok {
		t.Errorf("CompareNumbers with Missing: ok")
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{"null", `null`, `null`, true},
		{"true", `true`, `true`, true},
		{"true false", `true`, `false`, false},
		{"null false", `null`, `false`, false},
		{"number forms", `1`, `1.0`, true},
		{"number string", `1`, `"1"`, false},
		{"strings", `"a"`, `"a"`, true},
		{"strings differ", `"a"`, `"b"`, false},
		{"string escape forms", `"\u00e9\n"`, `"é\u000a"`, true},
		{"string escape differs", `"\u00e9"`, `"e"`, false},
		{"string prefix", `"ab"`, `"a"`, false},
		{"escaped string prefix", `"a\n"`, `"a\nb"`, false},
		{"empty arrays", `[]`, `[]`, true},
		{"empty objects", `{}`, `{ }`, true},
		{"empty array object", `[]`, `{}`, false},
		{"arrays", `[1,"a",[null]]`, `[1.0, "a", [null]]`, true},
		{"array order matters", `[1,2]`, `[2,1]`, false},
		{"array lengths", `[1,2]`, `[1,2,3]`, false},
		{"objects same order", `{"a":1,"b":[2]}`, `{"a":1,"b":[2]}`, true},
		{"objects any order", `{"a":1,"b":{"c":2,"d":3}}`, `{"b":{"d":3,"c":2e0},"a":1}`, true},
		{"object value differs", `{"a":1,"b":2}`, `{"a":1,"b":3}`, false},
		{"object extra key", `{"a":1}`, `{"a":1,"b":2}`, false},
		{"object other key", `{"a":1,"b":2}`, `{"a":1,"c":2}`, false},
		{"object null member is not absent", `{"a":1,"b":null}`, `{"a":1}`, false},
		{"escaped keys", `{"\u0061":1}`, `{"a":1}`, true},
		{"duplicate first wins", `{"a":1,"a":2}`, `{"a":1}`, true},
		{"duplicate first wins, not last", `{"a":1,"a":2}`, `{"a":2}`, false},
		{"duplicates in same order", `{"a":1,"a":2}`, `{"a":1,"a":3}`, true},
		{"duplicates reordered", `{"a":1,"b":2,"a":5}`, `{"b":2,"a":1}`, true},
		{"duplicate hides extra key", `{"a":1,"a":2}`, `{"a":1,"b":2}`, false},
		{"deep", `{"x":[{"y":{"z":[1,{"w":"v"}]}}]}`, `{"x":[{"y":{"z":[1.0,{"w":"v"}]}}]}`, true},
		{"deep differs", `{"x":[{"y":{"z":[1,{"w":"v"}]}}]}`, `{"x":[{"y":{"z":[1,{"w":"u"}]}}]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := parse(t, tt.a), parse(t, tt.b)
			if got := Equal(a, b); got != tt.want {
				t.Errorf("Equal(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := Equal(b, a); got != tt.want {
				t.Errorf("Equal(%s, %s) = %v, want %v", tt.b, tt.a, got, tt.want)
			}
			if !Equal(a, a) || !Equal(a, parse(t, tt.a)) {
				t.Errorf("Equal(%s, itself) = false", tt.a)
			}
		})
	}
	one := parse(t, `1`)
	if !Equal(Value{}, Value{}) || Equal(Value{}, one) || Equal(one, Value{}) || Equal(Value{}, parse(t, `null`)) {
		t.Errorf("Missing equals only Missing")
	}
}

// largeObject returns an object with n members "k0".."k<n-1>", in reverse
// order if rev, with member k<odd> set to odd instead of its index.
func largeObject(n int, rev bool, odd int) string {
	var b strings.Builder
	b.WriteByte('{')
	for j := 0; j < n; j++ {
		i := j
		if rev {
			i = n - 1 - j
		}
		if j > 0 {
			b.WriteByte(',')
		}
		v := i
		if i == odd {
			v = -1
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":{"v":` + strconv.Itoa(v) + `}`)
	}
	b.WriteByte('}')
	return b.String()
}

func TestEqualLargeObjects(t *testing.T) {
	const n = 200
	base := parse(t, largeObject(n, false, -5))
	tests := []struct {
		name string
		b    string
		want bool
	}{
		{"same order", largeObject(n, false, -5), true},
		{"reversed", largeObject(n, true, -5), true},
		{"reversed with one difference", largeObject(n, true, 17), false},
		{"same order with one difference", largeObject(n, false, 17), false},
		{"one fewer", largeObject(n-1, true, -5), false},
		{"one more", largeObject(n+1, true, -5), false},
		{"repeated key appended", strings.TrimSuffix(largeObject(n, true, -5), "}") + `,"k3":{"v":"other"}}`, true},
		{"repeated key prepended", `{"k3":{"v":"other"},` + strings.TrimPrefix(largeObject(n, true, -5), "{"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := parse(t, tt.b)
			if got := Equal(base, b); got != tt.want {
				t.Errorf("Equal(base, b) = %v, want %v", got, tt.want)
			}
			if got := Equal(b, base); got != tt.want {
				t.Errorf("Equal(b, base) = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDocReuse(t *testing.T) {
	var d Doc
	big := []byte(largeObject(100, false, -1))
	if _, err := d.Parse(big); err != nil {
		t.Fatal(err)
	}
	small := []byte(`{"a":[1,2]}`)
	root, err := d.Parse(small)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(root.Get("a").Index(1).Raw()); got != "2" {
		t.Errorf("after reuse Get(a).Index(1) = %q, want 2", got)
	}
	if root.Len() != 1 || root.Next().Exists() {
		t.Errorf("after reuse Len() = %d", root.Len())
	}
	if _, err := d.Parse([]byte(`{"a":[1,`)); err == nil {
		t.Fatal("Parse of a truncated text succeeded")
	}
	root, err = d.Parse(small)
	if err != nil || root.Get("a").Len() != 2 {
		t.Errorf("after an error Parse = %v, %v", root.Raw(), err)
	}
	d.Reset()
	if d.data != nil || len(d.nodes) != 0 {
		t.Errorf("Reset kept the text")
	}
}

func TestParseAllocs(t *testing.T) {
	data := crmState(25)
	var d Doc
	if _, err := d.Parse(data); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := d.Parse(data); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Parse allocs = %v, want 0", n)
	}
}

func TestReadAllocs(t *testing.T) {
	var d, e Doc
	root, err := d.Parse([]byte(`{"k\u00e9y":"v\u00e9","n":1.50,"s":"plain","a":[1,{"x":[2]}],"o":{"p":1,"q":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.Parse([]byte(`{"o":{"q":2.0,"p":1},"a":[1.0,{"x":[2]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("s")
	tests := []struct {
		name string
		f    func()
	}{
		{"Get escaped key", func() { root.Get("kéy") }},
		{"GetBytes", func() { root.GetBytes(key) }},
		{"Path", func() { root.Path("a", "1") }},
		{"KeyIs escaped", func() { root.First().KeyIs("kéy") }},
		{"StrIs escaped", func() { root.First().StrIs("vé") }},
		{"Str plain", func() { root.Get("s").Str() }},
		{"Key plain", func() { root.Get("s").Key() }},
		{"Float", func() { root.Get("n").Float() }},
		{"Int", func() { root.Get("n").Int() }},
		{"Index", func() { root.Get("a").Index(1) }},
		{"CompareNumbers", func() { CompareNumbers(root.Get("n"), other.Path("o", "q")) }},
		{"Equal reordered objects", func() { Equal(root.Get("o"), other.Get("o")) }},
		{"Equal arrays", func() { Equal(root.Get("a"), other.Get("a")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, tt.f); n != 0 {
				t.Errorf("allocs = %v, want 0", n)
			}
		})
	}
}

func TestConcurrentReads(t *testing.T) {
	var d Doc
	root, err := d.Parse(crmState(25))
	if err != nil {
		t.Fatal(err)
	}
	var d2 Doc
	root2, err := d2.Parse(crmState(25))
	if err != nil {
		t.Fatal(err)
	}
	want := generic(root)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 20; k++ {
				if !reflect.DeepEqual(want, generic(root)) {
					errs <- "generic view differs"
					return
				}
				if !Equal(root, root2) || Equal(root.Get("users"), root2.Get("stages")) {
					errs <- "Equal(root, root2) = false or Equal(users, stages) = true"
					return
				}
				for o := root.Get("opportunities").First(); o.Exists(); o = o.Next() {
					o.Get("name").Str()
					o.Get("amount").Float()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestUnescapeNeverLonger(t *testing.T) {
	for _, in := range []string{`\n`, `\u00e9`, `\ud83d\ude00`, `\ud83d`, `\uffff`, `\u0800`} {
		if got := unescape([]byte(in)); len(got) > len(in) || !bytes.Equal(got, []byte(mustString(t, in))) {
			t.Errorf("unescape(%q) = %q", in, got)
		}
	}
}

func mustString(t *testing.T, body string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal([]byte(`"`+body+`"`), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// LimitIndex bounds the index by the text's length: a text denser in
// values than the bound is a SyntaxError, a typical one parses, a short
// one always does, and without the bound all do.
func TestLimitIndex(t *testing.T) {
	dense := "[" + strings.Repeat("0,", 1<<19) + "0]"
	var typical strings.Builder
	typical.WriteString(`{"users":{`)
	for i := range 20000 {
		if i > 0 {
			typical.WriteByte(',')
		}
		fmt.Fprintf(&typical, `"USR-%05d":{"id":"USR-%05d","name":"Ana Lima","active":true}`, i, i)
	}
	typical.WriteString("}}")
	var d Doc
	d.LimitIndex(3, 64<<10)
	_, err := d.Parse([]byte(dense))
	var se *SyntaxError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "more JSON values than the memory bound allows") {
		t.Fatalf("dense text of %d bytes under the bound: %v, want the index error", len(dense), err)
	}
	if _, err := d.Parse([]byte(typical.String())); err != nil {
		t.Fatalf("typical text of %d bytes: %v", typical.Len(), err)
	}
	if fp := d.Footprint(); fp > 3*typical.Len()+64<<10 {
		t.Errorf("index of %d bytes for a text of %d, over the bound", fp, typical.Len())
	}
	if _, err := d.Parse([]byte(`[0,0,0,0,0,0,0,0]`)); err != nil {
		t.Errorf("short dense text: %v", err)
	}
	// Shrink drops a large index and keeps the bound.
	if _, err := d.Parse([]byte(typical.String())); err != nil {
		t.Fatal(err)
	}
	d.Shrink(1 << 20)
	if fp := d.Footprint(); fp != 0 {
		t.Errorf("index of %d bytes kept after Shrink", fp)
	}
	if _, err := d.Parse([]byte(dense)); err == nil {
		t.Error("dense text parsed after Shrink: the bound was dropped")
	}
	d.LimitIndex(0, 0)
	if _, err := d.Parse([]byte(dense)); err != nil {
		t.Errorf("dense text without the bound: %v", err)
	}
}
