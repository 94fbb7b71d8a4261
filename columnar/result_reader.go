package columnar

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// ResultReader reads a result part (rewards/part-NNNNN or checks/part-NNNNN
// in any format) row by row, in order, as the cells of the columns asked
// for: a string's bytes, a number's decimal text ('f' format, which parses
// back to the same float64), "true" or "false", or null. List columns
// (issues) read as their JSON text (CellJSON). Rows are streamed:
// at most one batch is held.
type ResultReader struct {
	path string
	r    Reader
	cols []string
	b    *Batch
	i    int
	idx  []int
	doc  jsonview.Doc
	vals []Cell
}

// resultFields are field names no result column has but rollout_id and
// task_id, so that every other column of a part reads as metadata whatever
// its name (a kept column may be called output).
var resultFields = FieldNames{ID: FieldID, Task: FieldTask,
	Final: "\x00final", Initial: "\x00initial", Output: "\x00output", Log: "\x00log"}

// OpenResult opens the result part at path to read the columns cols.
func OpenResult(path string, cols []string) (*ResultReader, error) {
	r, err := Open(path, Options{Fields: resultFields, Columns: cols})
	if err != nil {
		return nil, err
	}
	return &ResultReader{path: path, r: r, cols: cols, vals: make([]Cell, len(cols))}, nil
}

// Next returns the cells of the next row, aligned with the columns asked
// for; they are valid until the next call. At the end it returns io.EOF.
func (rr *ResultReader) Next() ([]Cell, error) {
	for rr.b == nil || rr.i >= len(rr.b.Rows) {
		if rr.b != nil {
			rr.b.Release()
			rr.b = nil
		}
		b, err := rr.r.Next(1024)
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", rr.path, err)
		}
		rr.b, rr.i = b, 0
		if !b.JSONLines {
			rr.idx = rr.idx[:0]
			for _, c := range rr.cols {
				rr.idx = append(rr.idx, slices.Index(b.MetaNames, c))
			}
		}
	}
	row := &rr.b.Rows[rr.i]
	rr.i++
	if rr.b.JSONLines {
		root, err := rr.doc.Parse(row.Line)
		if err != nil {
			return nil, fmt.Errorf("read %s line %d: %w", rr.path, row.Index+1, err)
		}
		for j, c := range rr.cols {
			rr.vals[j] = jsonCell(root.Get(c))
		}
		return rr.vals, nil
	}
	for j, c := range rr.cols {
		switch {
		case c == FieldID:
			rr.vals[j] = row.ID
		case c == FieldTask:
			rr.vals[j] = row.Task
		case rr.idx[j] >= 0:
			rr.vals[j] = row.Meta[rr.idx[j]]
		default:
			rr.vals[j] = Cell{}
		}
	}
	return rr.vals, nil
}

// jsonCell returns the cell of a JSON value.
func jsonCell(v jsonview.Value) Cell {
	switch v.Kind() {
	case jsonview.String:
		s, _ := v.Str()
		return Cell{Kind: CellString, Data: s}
	case jsonview.Number:
		return Cell{Kind: CellNumber, Data: v.Raw()}
	case jsonview.True, jsonview.False:
		return Cell{Kind: CellBool, Data: v.Raw()}
	case jsonview.Object, jsonview.Array:
		return Cell{Kind: CellJSON, Data: v.Raw(), V: v}
	}
	return Cell{}
}

// Close releases the part.
func (rr *ResultReader) Close() error {
	if rr.b != nil {
		rr.b.Release()
		rr.b = nil
	}
	return rr.r.Close()
}

// Interner shares the storage of repeated strings read from result parts
// (task ids, verifier ids, check ids, statuses, file names), so that
// millions of rows hold few copies.
type Interner map[string]string

// Get returns the string equal to b that in holds, adding it first when
// there is none.
func (in Interner) Get(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	in[s] = s
	return s
}
