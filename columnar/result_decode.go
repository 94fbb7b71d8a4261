package columnar

import (
	"fmt"
	"math"
	"strconv"
	"unsafe"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// ResultDecoder decodes the rows of a result part read back by a
// ResultReader into the row type that writes them, by the definitions of
// the table's columns (rewardColumns, checkColumns, judgementColumns):
// the one decoding of result rows, for --reuse, rescore and whatever else
// reads parts. It is made for the column names the reader was opened
// with, in the same order, so that no row is decoded by position. Not
// safe for concurrent use.
type ResultDecoder[R any] struct {
	cols []column[R]
	keep int // rewards: the number of kept columns, each Keep element
	d    cellDecoding
}

// cellDecoding is the state decoders share: the interner of categorical
// strings and the document that parses a list cell.
type cellDecoding struct {
	strs Interner
	doc  jsonview.Doc
	// views decodes the strings of plain columns as views of the cells'
	// bytes (Views).
	views bool
}

// str returns b as a string: interned for a categorical column, copied
// otherwise.
func (d *cellDecoding) str(b []byte, enc encoding) string {
	switch {
	case enc == pqCategorical && d.strs != nil:
		return d.strs.Get(b)
	case d.views:
		return unsafeString(b)
	}
	return string(b)
}

// strings returns the strings of a list cell, a JSON array of strings.
func (d *cellDecoding) strings(name string, c Cell) ([]string, error) {
	if c.Kind != CellJSON {
		return nil, fmt.Errorf("%s: want a list, got a %s", name, c.Kind)
	}
	arr, err := d.doc.Parse(c.Data)
	if err != nil || arr.Kind() != jsonview.Array {
		return nil, fmt.Errorf("%s: want a list of strings", name)
	}
	out := make([]string, 0, arr.Len())
	for e := arr.First(); e.Exists(); e = e.Next() {
		s, ok := e.Str()
		if !ok {
			return nil, fmt.Errorf("%s: want a list of strings", name)
		}
		out = append(out, string(s))
	}
	return out, nil
}

// floats decodes a list of nullable numbers (a null element is NaN).
func (d *cellDecoding) floats(name string, c Cell) ([]float64, error) {
	if c.Kind != CellJSON {
		return nil, fmt.Errorf("%s: want a list, got a %s", name, c.Kind)
	}
	arr, err := d.doc.Parse(c.Data)
	if err != nil || arr.Kind() != jsonview.Array {
		return nil, fmt.Errorf("%s: want a list of numbers", name)
	}
	out := make([]float64, 0, arr.Len())
	for e := arr.First(); e.Exists(); e = e.Next() {
		if e.IsNull() {
			out = append(out, math.NaN())
			continue
		}
		f, ok := e.Float()
		if !ok {
			return nil, fmt.Errorf("%s: want a list of numbers or nulls", name)
		}
		out = append(out, f)
	}
	return out, nil
}

// decodeInt parses an integer cell of bits bits.
func decodeInt(name string, c Cell, bits int) (int64, error) {
	v, err := strconv.ParseInt(unsafeString(c.Data), 10, bits)
	if err != nil {
		return v, fmt.Errorf("%s %q: not an integer", name, c.Data)
	}
	return v, nil
}

// decodeFloat parses a number cell; a null cell is (0, false).
func decodeFloat(name string, c Cell) (float64, bool, error) {
	if c.Kind == CellNull {
		return 0, false, nil
	}
	v, err := strconv.ParseFloat(unsafeString(c.Data), 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s %q: not a number", name, c.Data)
	}
	return v, true, nil
}

// NewRewardDecoder returns a decoder of rewards rows read as the columns
// cols, some of rewards' own and the kept metadata columns keep, in the
// order they were asked for; strs interns categorical strings.
func NewRewardDecoder(cols, keep []string, strs Interner) (*ResultDecoder[RewardRow], error) {
	d, err := newResultDecoder(rewardsTable(keep, true, true), cols, strs)
	if d != nil {
		d.keep = len(keep)
	}
	return d, err
}

// NewCheckDecoder returns a decoder of checks rows read as the columns
// cols; strs interns categorical strings.
func NewCheckDecoder(cols []string, strs Interner) (*ResultDecoder[CheckRow], error) {
	return newResultDecoder(checksTable(true, true), cols, strs)
}

// NewJudgementDecoder returns a decoder of judgements rows read as the
// columns cols; strs interns categorical strings.
func NewJudgementDecoder(cols []string, strs Interner) (*ResultDecoder[JudgementRow], error) {
	return newResultDecoder(judgementColumns, cols, strs)
}

func newResultDecoder[R any](table []column[R], cols []string, strs Interner) (*ResultDecoder[R], error) {
	d := &ResultDecoder[R]{d: cellDecoding{strs: strs}}
	for _, name := range cols {
		i := -1
		for k := range table {
			if table[k].name == name {
				i = k
				break
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("decode result rows: no column %q in the table", name)
		}
		d.cols = append(d.cols, table[i])
	}
	return d, nil
}

// Views makes the decoder set the strings of plain columns (ids, details,
// messages, kept metadata) as views of the cells' bytes, without a copy:
// they are valid only until the reader's next row, and a caller that
// keeps one clones it. Categorical strings are interned as before. It
// returns d.
func (d *ResultDecoder[R]) Views() *ResultDecoder[R] {
	d.d.views = true
	return d
}

// Decode sets the fields of r that the decoder's columns hold from cells,
// a row of a ResultReader opened with those columns; the other fields are
// left as they are. The error names the first column whose cell does not
// decode; the fields of the others are set.
func (d *ResultDecoder[R]) Decode(cells []Cell, r *R) error {
	if len(cells) != len(d.cols) {
		return fmt.Errorf("decode result row: %d cells for %d columns", len(cells), len(d.cols))
	}
	if d.keep > 0 {
		if rw, ok := any(r).(*RewardRow); ok && len(rw.Keep) < d.keep {
			rw.Keep = make([]NullString, d.keep)
		}
	}
	var first error
	for i := range d.cols {
		if err := d.cols[i].decode(r, cells[i], &d.d); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// unsafeString views b as a string for a parse that does not keep it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
