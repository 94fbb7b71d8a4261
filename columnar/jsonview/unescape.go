package jsonview

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// The functions here read string bodies (quotes excluded) that Parse has
// validated, so escapes are known to be complete and well formed.

// decodeEscape decodes the escape at raw[i] (a backslash) into buf. It
// returns the number of bytes written and the index past the escape. A \u
// escape of a surrogate pairs with a following \u escape of the matching
// half; a surrogate that does not pair reads as U+FFFD, as in encoding/json.
func decodeEscape(raw []byte, i int, buf *[utf8.UTFMax]byte) (n, next int) {
	switch c := raw[i+1]; c {
	case 'b':
		buf[0] = '\b'
	case 'f':
		buf[0] = '\f'
	case 'n':
		buf[0] = '\n'
	case 'r':
		buf[0] = '\r'
	case 't':
		buf[0] = '\t'
	case 'u':
		r := hex4(raw[i+2 : i+6])
		next = i + 6
		if utf16.IsSurrogate(r) {
			r2 := rune(-1)
			if next+6 <= len(raw) && raw[next] == '\\' && raw[next+1] == 'u' {
				r2 = hex4(raw[next+2 : next+6])
			}
			if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
				r = pair
				next += 6
			} else {
				r = utf8.RuneError
			}
		}
		return utf8.EncodeRune(buf[:], r), next
	default: // '"', '\\', '/'
		buf[0] = c
	}
	return 1, i + 2
}

// hex4 reads four hex digits.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// unescape returns a new slice holding raw with its escapes decoded. The
// result is never longer than raw.
func unescape(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	var buf [utf8.UTFMax]byte
	for {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 {
			return append(out, raw...)
		}
		out = append(out, raw[:k]...)
		n, next := decodeEscape(raw, k, &buf)
		out = append(out, buf[:n]...)
		raw = raw[next:]
	}
}

// equalUnescaped reports whether raw, unescaped, equals s, decoding on the
// fly without allocating.
func equalUnescaped(raw []byte, s string) bool {
	var buf [utf8.UTFMax]byte
	for {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 {
			return string(raw) == s
		}
		if len(s) < k || string(raw[:k]) != s[:k] {
			return false
		}
		s = s[k:]
		n, next := decodeEscape(raw, k, &buf)
		if len(s) < n || string(buf[:n]) != s[:n] {
			return false
		}
		s = s[n:]
		raw = raw[next:]
	}
}

// cursor yields the bytes of a string body, unescaped, one at a time.
type cursor struct {
	raw    []byte
	i      int
	buf    [utf8.UTFMax]byte
	bi, bn uint8
}

// next returns the next byte, or false at the end.
func (c *cursor) next() (byte, bool) {
	if c.bi < c.bn {
		b := c.buf[c.bi]
		c.bi++
		return b, true
	}
	if c.i >= len(c.raw) {
		return 0, false
	}
	b := c.raw[c.i]
	if b != '\\' {
		c.i++
		return b, true
	}
	n, next := decodeEscape(c.raw, c.i, &c.buf)
	c.i, c.bi, c.bn = next, 1, uint8(n)
	return c.buf[0], true
}

// compareBodies compares two string bodies bytewise after unescaping;
// aEsc and bEsc say whether each holds escapes.
func compareBodies(a []byte, aEsc bool, b []byte, bEsc bool) int {
	if !aEsc && !bEsc {
		return bytes.Compare(a, b)
	}
	ca, cb := cursor{raw: a}, cursor{raw: b}
	for {
		x, okx := ca.next()
		y, oky := cb.next()
		switch {
		case !okx && !oky:
			return 0
		case !okx:
			return -1
		case !oky:
			return +1
		case x != y:
			if x < y {
				return -1
			}
			return +1
		}
	}
}
