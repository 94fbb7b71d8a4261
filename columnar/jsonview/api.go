// Package jsonview is a read-only, zero-copy view of JSON text: the state
// view verifiers read world states through. (API stub: bodies to be built.)
package jsonview

// Kind is the JSON type of a Value.
type Kind uint8

// Kinds. The zero Kind, Missing, is what lookups that find nothing return.
const (
	Missing Kind = iota
	Null
	False
	True
	Number
	String
	Array
	Object
)

// SyntaxError reports invalid JSON at a byte offset of the indexed text.
type SyntaxError struct {
	Offset int64  // byte offset of the problem, 0-based
	Msg    string // what is wrong, lowercase
}

func (e *SyntaxError) Error() string { panic("unimplemented") }

// Doc indexes one JSON text. A Doc is reused across rows with Reset; its
// buffers grow to the largest text seen and are then reused. After Parse
// returns, the Doc and its Values may be read by many goroutines at once
// until the next Reset.
type Doc struct{}

// Parse indexes data (which the Doc does not copy: data must stay unchanged
// while the Doc's values are in use), validates it fully and returns its root.
// Trailing whitespace is allowed; anything else after the value is an error.
func (d *Doc) Parse(data []byte) (Value, error) { panic("unimplemented") }

// Value is one JSON value inside a Doc. The zero Value is Missing.
type Value struct{}

// Kind returns the value's JSON type.
func (v Value) Kind() Kind { panic("unimplemented") }

// Exists reports whether v is not Missing.
func (v Value) Exists() bool { panic("unimplemented") }

// IsNull reports whether v is Missing or JSON null.
func (v Value) IsNull() bool { panic("unimplemented") }

// Raw returns the value's JSON text, a slice of the indexed data.
func (v Value) Raw() []byte { panic("unimplemented") }

// Offset returns the byte offset of the value in the indexed data.
func (v Value) Offset() int64 { panic("unimplemented") }

// Get returns the member named key of an object (the first one when a key
// repeats), or Missing.
func (v Value) Get(key string) Value { panic("unimplemented") }

// Index returns element i of an array, or Missing.
func (v Value) Index(i int) Value { panic("unimplemented") }

// Len returns the number of members of an object or elements of an array.
func (v Value) Len() int { panic("unimplemented") }

// First returns the first member or element of an object or array, or Missing.
// With Next it iterates in document order without allocating:
//
//	for c := v.First(); c.Exists(); c = c.Next() { c.Key() ... }
func (v Value) First() Value { panic("unimplemented") }

// Next returns the next sibling of a value inside its object or array.
func (v Value) Next() Value { panic("unimplemented") }

// Key returns the member name of a value inside an object (unescaped), or nil.
func (v Value) Key() []byte { panic("unimplemented") }

// KeyIs reports whether the member name equals key, without allocating.
func (v Value) KeyIs(key string) bool { panic("unimplemented") }

// Str returns the bytes of a string value, unescaped. Where the string has no
// escapes this is a slice of the indexed data; otherwise a new slice. ok is
// false when v is not a string.
func (v Value) Str() (s []byte, ok bool) { panic("unimplemented") }

// StrIs reports whether v is a string equal to s, without allocating.
func (v Value) StrIs(s string) bool { panic("unimplemented") }

// Float returns a number's value as the nearest float64.
func (v Value) Float() (f float64, ok bool) { panic("unimplemented") }

// Bool returns a boolean's value.
func (v Value) Bool() (b, ok bool) { panic("unimplemented") }

// Equal reports whether a and b are equal by SPEC 5.3: numbers by exact
// value (1 equals 1.0), strings, booleans and null by identity, arrays by
// length and element, objects by key set and value, key order ignored.
// Missing equals only Missing.
func Equal(a, b Value) bool { panic("unimplemented") }

// CompareNumbers compares two number values exactly by decimal value,
// returning -1, 0 or +1; ok is false when either is not a number.
func CompareNumbers(a, b Value) (c int, ok bool) { panic("unimplemented") }
