package columnar

import (
	"bufio"
	"unicode/utf8"
)

// JSON Lines parts hold one JSON object per line with every column of the
// table as a key, in column order; a null is written as null. Rows are
// encoded by hand into the buffered writer's free space, with no
// reflection: each column appends its key, computed once, and its value.
//
// Strings are escaped as encoding/json does without HTML escaping: '"',
// '\\' and control characters are escaped, as are U+2028 and U+2029 (so a
// line is also valid JavaScript); invalid UTF-8 bytes are replaced by
// U+FFFD, so the output is always valid UTF-8. A double is written in the
// shortest form that reads back as the same float64 (strconv 'g', -1):
// 1 as 1, 0.5 as 0.5; a non-finite one, which scoring never produces, is
// written as null because JSON has no spelling for it.

// jsonlTable encodes rows of a table of cols as JSON Lines.
type jsonlTable[R any] struct {
	w    *bufio.Writer
	cols []column[R]
	keys []string // `{"name":` for the first column, `,"name":` for the others
}

func newJSONLTable[R any](w *bufio.Writer, cols []column[R]) *jsonlTable[R] {
	j := &jsonlTable[R]{w: w, cols: cols}
	for i, c := range cols {
		sep := byte(',')
		if i == 0 {
			sep = '{'
		}
		key := AppendJSONString([]byte{sep}, c.name)
		j.keys = append(j.keys, string(append(key, ':')))
	}
	return j
}

func (j *jsonlTable[R]) write(rows []R) error {
	for i := range rows {
		if _, err := j.w.Write(j.appendRow(j.w.AvailableBuffer(), &rows[i])); err != nil {
			return err
		}
	}
	return nil
}

func (j *jsonlTable[R]) appendRow(b []byte, r *R) []byte {
	for i, c := range j.cols {
		b = append(b, j.keys[i]...)
		b = c.json(b, r)
	}
	return append(b, "}\n"...)
}

// finish has nothing to add: the partFile flushes the writer.
func (j *jsonlTable[R]) finish() error { return nil }
func (j *jsonlTable[R]) release()      {}

func appendJSONNullString(b []byte, s NullString) []byte {
	if !s.Valid {
		return append(b, "null"...)
	}
	return AppendJSONString(b, s.S)
}

// jsonSafe reports the ASCII bytes that go into a JSON string as they are.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a quoted JSON string: escaped as
// encoding/json escapes without HTML escaping (U+2028 and U+2029 escaped
// too), invalid UTF-8 replaced by U+FFFD. It is the one JSON string
// encoder of the project.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0 // s[start:i] is still to be copied
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
