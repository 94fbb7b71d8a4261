package columnar

import (
	"bufio"

	"github.com/gavelhq/gavel/columnar/jsonview"
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
		key := jsonview.AppendJSONString([]byte{sep}, c.name)
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
	return jsonview.AppendJSONString(b, s.S)
}
