package mathanswer

import (
	"errors"
	"fmt"
)

// The limits that bound every comparison. An answer past one of them is
// not equal to any gold (its detail names the limit); a gold past one is an
// error. They are far above what answers need: the longest MATH or AIME
// answer is a few hundred bytes, and no answer writes a number of 16,384
// bits (about 4,900 digits).
const (
	// MaxAnswerBytes is the longest answer parsed, after it was found in
	// the text. The text it is found in may be of any length: finding is
	// one linear scan.
	MaxAnswerBytes = 4096
	// MaxDepth is the deepest nesting of braces, brackets and operators.
	MaxDepth = 64
	// MaxNodes is the most numbers, names and operators in one answer.
	MaxNodes = 1024
	// MaxBits is the largest exact number, in bits of its numerator or
	// denominator. A power or factorial whose exact value would be larger
	// is past the limit; it is never rounded to a float and compared.
	MaxBits = 16384
	// MaxFactorial is the largest n whose n! or binomial coefficient
	// (n choose k) is computed exactly.
	MaxFactorial = 1000
	// Points is how many seeded points expressions with variables are
	// evaluated at.
	Points = 5
)

// LimitError is an answer past one of the limits.
type LimitError struct {
	What string // which limit, for example "MaxBits"
	Msg  string
}

func (e *LimitError) Error() string { return e.Msg + " (limit " + e.What + ")" }

func limitErr(what, format string, args ...any) error {
	return &LimitError{What: what, Msg: fmt.Sprintf(format, args...)}
}

// IsLimit reports whether err is an answer past a limit.
func IsLimit(err error) bool {
	var le *LimitError
	return errors.As(err, &le)
}
