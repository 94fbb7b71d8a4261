package columnar

import (
	"fmt"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// DecodeLine indexes a JSON Lines row's line with doc and fills the row's
// field cells from the members named by fields (which must have its
// defaults applied). It returns the line's root object, which is the
// row's metadata. A line that is not valid JSON, or not an object, is an
// error naming the line and the byte offset; the row's cells are then
// left null.
//
// Cells point into the line: a string member's Data is the string's bytes,
// unescaped (in place when it has no escapes); any other value is a
// CellJSON, CellNumber or CellBool cell whose V is the value itself.
func DecodeLine(row *Row, fields *FieldNames, doc *jsonview.Doc) (jsonview.Value, error) {
	if row.Err != nil {
		return jsonview.Value{}, row.Err
	}
	root, err := doc.Parse(row.Line)
	return fillLine(row, fields, root, err)
}

// DecodeLineCached is DecodeLine for lines whose initial states repeat: an
// initial state that is an object or an array is not indexed in the line
// but found in cache, or parsed into initDoc when the cache does not hold
// it (jsonview.Doc.ParseSkipping). Its cell is a CellJSON whose V is the
// cached index or initDoc's, and the returned root (the row's metadata)
// lacks that member. Errors are DecodeLine's: a line that fails either
// step is decoded again by DecodeLine, which reports its first error.
func DecodeLineCached(row *Row, fields *FieldNames, doc, initDoc *jsonview.Doc, cache *jsonview.Cache) (jsonview.Value, error) {
	if row.Err != nil {
		return jsonview.Value{}, row.Err
	}
	root, skipped, cached, err := doc.ParseSkipping(row.Line, fields.Initial, cache)
	if err != nil {
		// The first error may be in the skipped text.
		return DecodeLine(row, fields, doc)
	}
	if skipped == nil {
		return fillLine(row, fields, root, nil)
	}
	initial := cached
	if !initial.Exists() {
		if initial, _, err = cache.Parse(initDoc, skipped); err != nil {
			return DecodeLine(row, fields, doc)
		}
	}
	if root.Kind() == jsonview.Object { // always: only object members are skipped
		row.Initial = Cell{Kind: CellJSON, Data: skipped, V: initial}
	}
	return fillLine(row, fields, root, nil)
}

// fillLine fills the row's cells from the members of the parsed line.
func fillLine(row *Row, fields *FieldNames, root jsonview.Value, err error) (jsonview.Value, error) {
	if err != nil {
		if se, ok := err.(*jsonview.SyntaxError); ok {
			return jsonview.Value{}, fmt.Errorf("line %d: invalid JSON at byte %d of the line: %s", row.Index+1, se.Offset, se.Msg)
		}
		return jsonview.Value{}, fmt.Errorf("line %d: %w", row.Index+1, err)
	}
	if root.Kind() != jsonview.Object {
		return jsonview.Value{}, fmt.Errorf("line %d: not a JSON object", row.Index+1)
	}
	for m := root.First(); m.Exists(); m = m.Next() {
		var c *Cell
		switch {
		case m.KeyIs(fields.ID):
			c = &row.ID
		case m.KeyIs(fields.Task):
			c = &row.Task
		case m.KeyIs(fields.Final):
			c = &row.Final
		case m.KeyIs(fields.Initial):
			c = &row.Initial
		case m.KeyIs(fields.Output):
			c = &row.Output
		case m.KeyIs(fields.Log):
			c = &row.Log
		default:
			continue
		}
		if c.Kind != CellNull || c.V.Exists() {
			continue // the first occurrence of a repeated key wins
		}
		*c = cellOf(m)
	}
	return root, nil
}

// cellOf returns the cell of one JSON value.
func cellOf(v jsonview.Value) Cell {
	switch v.Kind() {
	case jsonview.String:
		s, _ := v.Str()
		return Cell{Kind: CellString, Data: s, V: v}
	case jsonview.Number:
		return Cell{Kind: CellNumber, Data: v.Raw(), V: v}
	case jsonview.True, jsonview.False:
		return Cell{Kind: CellBool, Data: v.Raw(), V: v}
	case jsonview.Object, jsonview.Array:
		return Cell{Kind: CellJSON, Data: v.Raw(), V: v}
	}
	return Cell{Kind: CellNull, V: v}
}
