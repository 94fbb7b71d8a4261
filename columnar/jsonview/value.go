package jsonview

import (
	"strconv"
	"unsafe"
)

// Value is one JSON value inside a Doc. The zero Value is Missing.
//
// A Value is a Doc pointer and a node index (see Doc for the layout): it is
// compared, copied and passed by value for free. Every method is safe on
// Missing, and lookups on a value of the wrong kind return Missing, so
// paths chain without checks. All methods only read, and may be called
// from many goroutines at once; a Value is valid until its Doc is parsed
// again or Reset.
type Value struct {
	d *Doc
	i int32
}

// Shared reports whether v belongs to a Doc that has been shared (see
// Doc.Share): its identity then stands for its content for as long as it
// is referenced.
func (v Value) Shared() bool { return v.d != nil && v.d.shared }

// Kind returns the value's JSON type.
func (v Value) Kind() Kind {
	if v.d == nil {
		return Missing
	}
	return v.d.nodes[v.i].kind
}

// Exists reports whether v is not Missing.
func (v Value) Exists() bool { return v.d != nil }

// IsNull reports whether v is Missing or JSON null.
func (v Value) IsNull() bool { return v.d == nil || v.d.nodes[v.i].kind == Null }

// Raw returns the value's JSON text, a slice of the indexed data; nil for
// Missing. The slice's capacity ends with the value, so appending to it
// never writes over the data.
func (v Value) Raw() []byte {
	if v.d == nil {
		return nil
	}
	p := &v.d.nodes[v.i]
	return v.d.data[p.start:p.end:p.end]
}

// Offset returns the byte offset of the value in the indexed data, or -1
// for Missing.
func (v Value) Offset() int64 {
	if v.d == nil {
		return -1
	}
	return int64(v.d.nodes[v.i].start)
}

// Get returns the member named key of an object (the first one when a key
// repeats), or Missing.
//
// Get scans the members in document order, comparing key bytes where they
// lie: O(members) without allocating, which for the objects of typical
// states is faster than any hashed index would be to build.
func (v Value) Get(key string) Value {
	if v.d == nil {
		return Value{}
	}
	nodes := v.d.nodes
	if p := &nodes[v.i]; p.kind != Object || p.n == 0 {
		return Value{}
	}
	data := v.d.data
	for c := v.i + 1; ; {
		m := &nodes[c]
		if m.flags&flagKeyEsc == 0 {
			if int(m.keyEnd-m.keyStart) == len(key) && string(data[m.keyStart:m.keyEnd]) == key {
				return Value{d: v.d, i: c}
			}
		} else if equalUnescaped(data[m.keyStart:m.keyEnd], key) {
			return Value{d: v.d, i: c}
		}
		if m.flags&flagLast != 0 {
			return Value{}
		}
		c = m.after
	}
}

// GetBytes is Get with the key given as bytes; it does not allocate.
func (v Value) GetBytes(key []byte) Value {
	return v.Get(unsafe.String(unsafe.SliceData(key), len(key)))
}

// Path follows keys from v with Get, returning Missing as soon as one is
// not found: v.Path("a", "b") is v.Get("a").Get("b").
func (v Value) Path(keys ...string) Value {
	for _, k := range keys {
		v = v.Get(k)
	}
	return v
}

// Index returns element i of an array, or Missing. It walks the elements
// before i, so iterate with First and Next rather than Index in a loop.
func (v Value) Index(i int) Value {
	if v.d == nil || i < 0 {
		return Value{}
	}
	nodes := v.d.nodes
	if p := &nodes[v.i]; p.kind != Array || i >= int(p.n) {
		return Value{}
	}
	c := v.i + 1
	for ; i > 0; i-- {
		c = nodes[c].after
	}
	return Value{d: v.d, i: c}
}

// Len returns the number of members of an object or elements of an array.
// Repeated keys are counted each time. It returns 0 for other kinds.
func (v Value) Len() int {
	if v.d == nil {
		return 0
	}
	return int(v.d.nodes[v.i].n)
}

// First returns the first member or element of an object or array, or Missing.
// With Next it iterates in document order without allocating:
//
//	for c := v.First(); c.Exists(); c = c.Next() { c.Key() ... }
func (v Value) First() Value {
	if v.d == nil || v.d.nodes[v.i].n == 0 {
		return Value{}
	}
	return Value{d: v.d, i: v.i + 1}
}

// Next returns the next sibling of a value inside its object or array.
// It returns Missing after the last one, and for the root.
func (v Value) Next() Value {
	if v.d == nil {
		return Value{}
	}
	p := &v.d.nodes[v.i]
	if p.flags&flagLast != 0 {
		return Value{}
	}
	return Value{d: v.d, i: p.after}
}

// Key returns the member name of a value inside an object (unescaped), or nil.
// Without escapes the name is a slice of the indexed data (with its capacity
// capped), otherwise a new slice.
func (v Value) Key() []byte {
	if v.d == nil {
		return nil
	}
	p := &v.d.nodes[v.i]
	if p.flags&flagMember == 0 {
		return nil
	}
	raw := v.d.data[p.keyStart:p.keyEnd:p.keyEnd]
	if p.flags&flagKeyEsc != 0 {
		return unescape(raw)
	}
	return raw
}

// RawMember returns the text of a member of an object as written, from
// its key's opening quote to the end of its value, or nil for a value that
// is not an object member.
func (v Value) RawMember() []byte {
	if v.d == nil {
		return nil
	}
	p := &v.d.nodes[v.i]
	if p.flags&flagMember == 0 {
		return nil
	}
	return v.d.data[p.keyStart-1 : p.end : p.end]
}

// KeyIs reports whether the member name equals key, without allocating.
func (v Value) KeyIs(key string) bool {
	if v.d == nil {
		return false
	}
	p := &v.d.nodes[v.i]
	if p.flags&flagMember == 0 {
		return false
	}
	raw := v.d.data[p.keyStart:p.keyEnd]
	if p.flags&flagKeyEsc != 0 {
		return equalUnescaped(raw, key)
	}
	return string(raw) == key
}

// Str returns the bytes of a string value, unescaped. Where the string has no
// escapes this is a slice of the indexed data; otherwise a new slice. ok is
// false when v is not a string.
func (v Value) Str() (s []byte, ok bool) {
	if v.d == nil {
		return nil, false
	}
	p := &v.d.nodes[v.i]
	if p.kind != String {
		return nil, false
	}
	raw := v.d.data[p.start+1 : p.end-1 : p.end-1]
	if p.flags&flagStrEsc != 0 {
		return unescape(raw), true
	}
	return raw, true
}

// StrIs reports whether v is a string equal to s, without allocating.
func (v Value) StrIs(s string) bool {
	if v.d == nil {
		return false
	}
	p := &v.d.nodes[v.i]
	if p.kind != String {
		return false
	}
	raw := v.d.data[p.start+1 : p.end-1]
	if p.flags&flagStrEsc != 0 {
		return equalUnescaped(raw, s)
	}
	return string(raw) == s
}

// Float returns a number's value as the nearest float64. A magnitude beyond
// the float64 range reads as an infinity, with ok still true; ok is false
// when v is not a number.
func (v Value) Float() (f float64, ok bool) {
	if v.d == nil {
		return 0, false
	}
	p := &v.d.nodes[v.i]
	if p.kind != Number {
		return 0, false
	}
	raw := v.d.data[p.start:p.end]
	if f, ok := fastFloat(raw); ok {
		return f, true
	}
	// ParseFloat keeps no reference to its argument (its errors copy it),
	// so the text is passed without a copy. Valid JSON numbers are valid
	// Go floats; the only error left is a range error, with f ±Inf.
	f, _ = strconv.ParseFloat(unsafe.String(unsafe.SliceData(raw), len(raw)), 64)
	return f, true
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastFloat converts the common numbers (at most 15 digits, no exponent
// part) exactly: the digits as an integer and the power of ten dividing
// them are both exact float64s, so one IEEE division rounds correctly.
// ok is false for anything else, which goes to strconv.
func fastFloat(raw []byte) (f float64, ok bool) {
	i, neg := 0, false
	if raw[0] == '-' {
		neg, i = true, 1
	}
	var m uint64
	frac := -1 // digits after the point; -1 before it
	digits := 0
	for ; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c-'0' < 10:
			if digits++; digits > 15 {
				return 0, false
			}
			m = m*10 + uint64(c-'0')
			if frac >= 0 {
				frac++
			}
		case c == '.':
			frac = 0
		default: // an exponent
			return 0, false
		}
	}
	f = float64(m) // exact: at most 15 digits
	if frac > 0 {
		f /= pow10[frac]
	}
	if neg {
		f = -f
	}
	return f, true
}

// Int returns a number's value as an int64 when it is an integer within the
// int64 range, however written: 7, 7.0, 0.7e1 and 700e-2 all read as 7.
// ok is false for other numbers and other kinds.
func (v Value) Int() (n int64, ok bool) {
	if v.Kind() != Number {
		return 0, false
	}
	return parseDecimal(v.Raw()).int64()
}

// Bool returns a boolean's value.
func (v Value) Bool() (b, ok bool) {
	switch v.Kind() {
	case True:
		return true, true
	case False:
		return false, true
	}
	return false, false
}
