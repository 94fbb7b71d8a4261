package verifiers

import (
	"math"
	"strconv"
)

// DefaultTolerance is the tolerance of StatesNumber that answer checks use
// unless their task says otherwise.
const DefaultTolerance = 0.01

// NumbersIn returns every number stated in text, in order. The
// text is read as if every '$' and ',' were removed, so "$1,234.50" reads
// 1234.5 and "$-5" reads -5; in what remains, numbers are the leftmost,
// non-overlapping matches of -?[0-9]+(?:\.[0-9]+)?, so "1.2.3" reads 1.2
// and 3, and "v2" reads 2. A number too large for a float64 reads as an
// infinity. NumbersIn returns nil when text states no number.
func NumbersIn(text string) []float64 {
	return AppendNumbersIn(nil, text)
}

// AppendNumbersIn appends the numbers NumbersIn finds in text to dst and
// returns the extended slice. It allocates only when dst must grow.
func AppendNumbersIn(dst []float64, text string) []float64 {
	for i := 0; ; {
		f, end, ok := scanNumber(text, i)
		if !ok {
			return dst
		}
		dst = append(dst, f)
		i = end
	}
}

// StatesNumber reports whether text states value: whether some number of
// NumbersIn(text) lies within tol of it (|n - value| <= tol). It does not
// allocate. A NaN value or tolerance is never stated.
func StatesNumber(text string, value, tol float64) bool {
	for i := 0; ; {
		f, end, ok := scanNumber(text, i)
		if !ok {
			return false
		}
		if math.Abs(f-value) <= tol {
			return true
		}
		i = end
	}
}

// NearestNumber returns the number of NumbersIn(text) nearest to value, the
// first one in the text when several are equally near; ok is false when text
// states no number. It does not allocate.
func NearestNumber(text string, value float64) (nearest float64, ok bool) {
	best := math.Inf(1)
	for i := 0; ; {
		f, end, found := scanNumber(text, i)
		if !found {
			return nearest, ok
		}
		if d := math.Abs(f - value); !ok || d < best {
			nearest, best, ok = f, d, true
		}
		i = end
	}
}

// skipsInNumbers reports whether c is removed from a text before its numbers
// are read.
func skipsInNumbers(c byte) bool { return c == '$' || c == ',' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber finds the first number of text that starts at or after byte
// from, reading text as NumbersIn does. It returns the number's value and
// the index just past its last byte.
//
// The scanner walks the text once, skipping removed bytes, and at each
// remaining position tries the pattern as a regexp would: an optional '-'
// that must be followed by a digit, the longest run of digits, then a '.'
// and the longest run of digits when a digit follows the '.'. Removed bytes
// may sit anywhere inside a match ("1,2.,5" reads 12.5), so a match is
// parsed from its own text when it holds none, and from a copy without them
// otherwise.
func scanNumber(text string, from int) (f float64, end int, ok bool) {
	start := -1
	i := from
	for ; i < len(text); i++ {
		c := text[i]
		if isDigit(c) {
			start = i
			break
		}
		if c == '-' {
			if j := skipRemoved(text, i+1); j < len(text) && isDigit(text[j]) {
				start = i
				i = j
				break
			}
		}
	}
	if start < 0 {
		return 0, len(text), false
	}
	// text[i] is the first digit.
	end = digitsEnd(text, i)
	if j := skipRemoved(text, end); j < len(text) && text[j] == '.' {
		if k := skipRemoved(text, j+1); k < len(text) && isDigit(text[k]) {
			end = digitsEnd(text, k)
		}
	}
	return parseMatch(text[start:end]), end, true
}

// skipRemoved returns the index of the first byte at or after i that is not
// removed before reading numbers.
func skipRemoved(text string, i int) int {
	for i < len(text) && skipsInNumbers(text[i]) {
		i++
	}
	return i
}

// digitsEnd returns the index just past the last digit of the run of digits
// (with removed bytes among them) that starts at i.
func digitsEnd(text string, i int) int {
	end := i
	for ; i < len(text); i++ {
		switch c := text[i]; {
		case isDigit(c):
			end = i + 1
		case skipsInNumbers(c):
		default:
			return end
		}
	}
	return end
}

// parseMatch returns the value of a match of the number pattern, which may
// contain removed bytes.
func parseMatch(m string) float64 {
	clean := true
	for i := 0; i < len(m); i++ {
		if skipsInNumbers(m[i]) {
			clean = false
			break
		}
	}
	if clean {
		return parseDecimal(m)
	}
	var buf [64]byte
	b := buf[:0]
	for i := 0; i < len(m); i++ {
		if !skipsInNumbers(m[i]) {
			b = append(b, m[i])
		}
	}
	return parseDecimal(string(b))
}

// parseDecimal parses a match of -?[0-9]+(?:\.[0-9]+)?. Such a text is
// always valid; one beyond float64's range reads as an infinity.
func parseDecimal(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}
