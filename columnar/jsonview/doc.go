// Package jsonview is a read-only, zero-copy view of JSON text: the state
// view verifiers read world states through.
//
// A Doc validates one JSON text and builds a flat index of its values; a
// Value is a position in that index. Reading a Value never copies the text
// except to unescape a string that holds escapes, and never allocates
// otherwise:
//
//	var d jsonview.Doc
//	root, err := d.Parse(data)
//	if err != nil {
//		return err // a *SyntaxError with the byte offset
//	}
//	opps := root.Get("opportunities")
//	for o := opps.First(); o.Exists(); o = o.Next() {
//		if o.Get("status").StrIs("open") {
//			amount, _ := o.Get("amount").Float()
//			...
//		}
//	}
//
// Lookups that find nothing return the zero Value, Missing, on which every
// method is safe: chains such as root.Get("a").Get("b").Index(3) need no
// checks in between.
//
// # Two stages
//
// Parse reads a text in two stages. The first finds the strings 64 bytes
// at a time, with AVX-512 or AVX2 where the CPU has them (chosen when the
// program starts, with no build option), and checks UTF-8 and control
// characters; the second builds the index. Both give the same index, and
// the same error at the same offset, as reading the text in one pass.
// Setting the environment variable GAVEL_JSONVIEW_PORTABLE to a non-empty
// value makes Parse use the portable first stage, as other architectures
// and the purego build tag do: for debugging, and to compare the two.
package jsonview

import (
	"strconv"
)

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

// String returns the kind's name as used in messages: "missing", "null",
// "boolean" (for both False and True), "number", "string", "array" or
// "object".
func (k Kind) String() string {
	switch k {
	case Missing:
		return "missing"
	case Null:
		return "null"
	case False, True:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// SyntaxError reports invalid JSON at a byte offset of the indexed text.
type SyntaxError struct {
	Offset int64  // byte offset of the problem, 0-based
	Msg    string // what is wrong, lowercase
}

// Error returns the message with the offset, as in
// "invalid JSON at byte 12: invalid character 'x' looking for beginning of value".
func (e *SyntaxError) Error() string {
	return "invalid JSON at byte " + strconv.FormatInt(e.Offset, 10) + ": " + e.Msg
}
