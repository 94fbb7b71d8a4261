package columnar

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// DecodeLine indexes a JSON Lines row's line with doc and fills the row's
// field cells from the members named by fields (which must have its
// defaults applied). A name COL.PATH that no member has reads the value
// at PATH inside member COL (memberPath). It returns the line's root
// object, which is the row's metadata. A line that is not valid JSON, or
// not an object, is an error naming the line and the byte offset; the
// row's cells are then left null.
//
// Cells point into the line: a string member's Data is the string's bytes,
// unescaped (in place when it has no escapes); any other value is a
// CellJSON, CellNumber or CellBool cell whose V is the value itself.
func DecodeLine(row *Row, fields *FieldNames, doc *jsonview.Doc) (jsonview.Value, error) {
	if row.Err != nil {
		return jsonview.Value{}, row.Err
	}
	root, err := doc.Parse(row.Line)
	return fillLine(row, fields, root, err, nil)
}

// StateSkips returns what DecodeLineCached asks jsonview.Doc.ParseSkipping
// to leave out of a line's index, with fields' names (defaults applied):
// the initial state, always, and the final state when cache holds it. A
// column named for two fields is indexed in place, for both. cache may be
// nil.
func StateSkips(fields *FieldNames, cache *jsonview.Cache) jsonview.Skips {
	sk := jsonview.Skips{Cache: cache, Scan: fields.Initial, Match: fields.Final}
	for _, f := range []string{fields.ID, fields.Task, fields.Output, fields.Log} {
		if f == sk.Scan {
			sk.Scan = ""
		}
		if f == sk.Match {
			sk.Match = ""
		}
	}
	if sk.Scan == sk.Match {
		sk.Scan, sk.Match = "", ""
	}
	return sk
}

// DecodeLineCached is DecodeLine for lines whose states repeat, as the
// initial states of a task's rollouts do, and the final states of those
// that changed nothing. sk comes from StateSkips. An initial state that is
// an object or an array is not indexed in the line but found in sk.Cache,
// or else parsed into initDoc (which counts a sighting for the cache); a
// final state is found in the cache when it holds it, else indexed in the
// line (jsonview.Doc.ParseSkipping). Their cells are CellJSON cells whose V
// is the cached index or initDoc's.
//
// It also appends the row's metadata to meta, as the text of a JSON
// object: the line's members other than the rollout fields (every other
// member is metadata), as they are written, in order.
//
// Errors are DecodeLine's: a line that fails a step is decoded again by
// DecodeLine, which reports its first error. A row with Err is that
// error; the cells of its line, when it has one, are filled still.
func DecodeLineCached(row *Row, fields *FieldNames, sk jsonview.Skips, doc, initDoc *jsonview.Doc, meta []byte) ([]byte, error) {
	if row.Err != nil {
		if len(row.Line) > 0 {
			// What a harness could map of the element: its ids.
			root, err := doc.Parse(row.Line)
			if err == nil {
				fillLine(row, fields, root, nil, nil)
			}
		}
		return meta, row.Err
	}
	root, scanned, matched, err := doc.ParseSkipping(row.Line, sk)
	if err == nil && scanned.Text != nil {
		initial := scanned.Cached
		switch {
		case initial.Exists():
		case sk.Cache != nil:
			initial, _, err = sk.Cache.Parse(initDoc, scanned.Text)
		default:
			initial, err = initDoc.Parse(scanned.Text)
		}
		if err == nil {
			row.Initial = Cell{Kind: CellJSON, Data: scanned.Text, V: initial}
		}
	}
	if err != nil {
		// The first error may be in the scanned text: decode the line
		// whole for its message. No cell has been filled yet.
		root, err = doc.Parse(row.Line)
	} else if matched.Text != nil {
		row.Final = Cell{Kind: CellJSON, Data: matched.Text, V: matched.Cached}
	}
	meta = append(meta, '{')
	if _, err = fillLine(row, fields, root, err, &meta); err != nil {
		return meta, err
	}
	return append(meta, '}'), nil
}

// fillLine fills the row's cells from the members of the parsed line.
// With meta, it appends the other members to *meta, comma-separated.
func fillLine(row *Row, fields *FieldNames, root jsonview.Value, err error, meta *[]byte) (jsonview.Value, error) {
	if err != nil {
		if se, ok := err.(*jsonview.SyntaxError); ok {
			return jsonview.Value{}, fmt.Errorf("line %d: invalid JSON at byte %d of the line: %s", row.Index+1, se.Offset, se.Msg)
		}
		return jsonview.Value{}, fmt.Errorf("line %d: %w", row.Index+1, err)
	}
	if root.Kind() != jsonview.Object {
		return jsonview.Value{}, fmt.Errorf("line %d: not a JSON object", row.Index+1)
	}
	others := 0
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
			if meta != nil {
				if others > 0 {
					*meta = append(*meta, ',')
				}
				others++
				*meta = append(*meta, m.RawMember()...)
			}
			continue
		}
		if c.Kind != CellNull || c.V.Exists() {
			continue // the first occurrence of a repeated key wins
		}
		*c = cellOf(m)
	}
	for _, f := range [...]struct {
		name string
		c    *Cell
	}{{fields.ID, &row.ID}, {fields.Task, &row.Task}, {fields.Final, &row.Final}, {fields.Initial, &row.Initial}, {fields.Output, &row.Output}, {fields.Log, &row.Log}} {
		if f.c.Kind == CellNull && !f.c.V.Exists() && strings.IndexByte(f.name, '.') > 0 {
			if v := memberPath(root, f.name); v.Exists() {
				*f.c = cellOf(v)
			}
		}
	}
	return root, nil
}

// memberPath returns the value at name, COL.PATH, in the object root when
// it has no member named name itself: member COL, then in it each
// dot-separated step of PATH, a member of an object or the 0-based index
// of an array element. It is missing when a step is.
func memberPath(root jsonview.Value, name string) jsonview.Value {
	col, path, _ := strings.Cut(name, ".")
	v := root.Get(col)
	for v.Exists() && path != "" {
		var step string
		step, path, _ = strings.Cut(path, ".")
		if v.Kind() == jsonview.Array {
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 {
				return jsonview.Value{}
			}
			v = v.Index(i)
			continue
		}
		v = v.Get(step)
	}
	return v
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
