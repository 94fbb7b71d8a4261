package columnar

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// pgNested reads the nested columns of a Parquet file page by page with
// parquet-go, assembling each row's value from the repetition and
// definition levels of its leaf columns and writing its JSON text straight
// into the batch's arena: no Arrow arrays are built. It renders the same
// bytes as pqNested's Arrow path (the mapping of nested.go), which it
// replaces for the columns whose shape and leaf types it knows (pgPlan);
// the benchmark behind the choice is BenchmarkNestedRead, where
// parquet-go's pages read a nested file's levels and values at about three
// times pqarrow's record batches.
//
// # Assembly
//
// Each column is a tree of pgNodes, built from the column's pqarrow
// schema field (which says how pqarrow, and so the Arrow path, reads the
// group: struct, list or map, and each leaf's Arrow type) and its
// parquet-go column (which gives the levels). Every leaf column under it
// has a cursor over its values, each with its levels. A node is null where
// the current definition level of its first leaf is below the node's own
// maximum; a list or map is empty where it is below the level of its
// repeated group, and goes on while the first leaf's next repetition level
// is the repeated group's. A null or empty node takes one entry from each
// leaf under it. This is Dremel's record assembly, driven by the first leaf
// of each node.
//
// Each leaf column chunk's pages are decoded ahead in a goroutine of its
// own (pqPrefetch), as the flat columns' are. Rendering copies every value
// into the arena, so a page is released as soon as its values are read.
// The initial state's column keeps the texts of values that repeat
// (pgCol.lookup), as the Arrow path does (nestedMemo).
//
// Setting the environment variable GAVEL_NESTED_PQARROW to a non-empty
// value reads every nested column through pqarrow instead: for debugging,
// and to compare the two.
type pgNested struct {
	cols []*pgCol
}

// pgCol is one nested column (or COL.PATH field) read by pgNested, with
// the cursors of its leaves: the columns are assembled in parallel, each in
// a goroutine of its own (fill), and share nothing.
type pgCol struct {
	c      *arrowCol // name, slots and struct nulls
	node   *pgNode
	leaves []*pgLeaf
	fatal  error   // a read error or levels out of step; ends the reader
	errs   []error // the rows' errors, of the last fill
	// memo keeps the texts of values that repeat, for the initial state's
	// column (nil for the others); ends is lookup's scratch.
	memo      *nestedMemo
	memoGroup int // the row group the memo's keys are of
	ends      []int
}

// pgKind is what a pgNode renders.
type pgKind uint8

const (
	pgStruct pgKind = iota + 1
	pgList
	pgMap
	pgBool
	pgInt8   // INT32 read as int8, as pqarrow converts it
	pgInt16  // INT32 read as int16
	pgInt32  // INT32
	pgUint8  // INT32 read as uint8
	pgUint16 // INT32 read as uint16
	pgUint32 // INT32 read as uint32
	pgInt64
	pgUint64
	pgFloat
	pgDouble
	pgString
	pgBinary
)

// pgNode is a node of a nested column's tree.
type pgNode struct {
	kind pgKind
	// def: the node is not null where its first leaf's definition level is
	// at least def (its parquet-go column's maximum definition level).
	def int16
	// repDef, rep (lists and maps): the repeated group's maximum
	// definition and repetition levels.
	repDef, rep int16
	// first is the cursor of the node's first leaf; leaves those of all
	// the leaves under it.
	first  int
	leaves []int
	// Structs: the fields, with their keys (quoted name and colon, the
	// comma before every field but the first) and names. Lists: the
	// element. Maps: the key and the value.
	kids  []*pgNode
	keys  [][]byte
	names []string
}

// pgLeaf is a cursor over the values of one leaf column, with their
// levels, across the pages of the row groups read.
type pgLeaf struct {
	index  int // leaf column index
	kind   pgKind
	maxDef int16
	groups []parquet.RowGroup
	g      int // next row group to open

	pages    *pqPrefetch
	page     parquet.Page
	values   parquet.ValueReader
	pageDone bool // values has ended; page is released at the next load
	dict     bool // page is dictionary-encoded: its byte arrays point into the dictionary
	buf      []parquet.Value
	i, n     int
}

// pgForced reports whether GAVEL_NESTED_PQARROW asks for the Arrow path.
// Tests set pgOff instead.
func pgForced() bool { return pgOff || os.Getenv("GAVEL_NESTED_PQARROW") != "" }

// pgOff, set by tests, makes nested columns read through pqarrow.
var pgOff bool

// pgPlan returns the page reader of the columns of n, or nil when one of
// them has a shape or a leaf type it does not know (or when pgForced): those
// files are read through pqarrow, with the same result. file is the
// Parquet file as parquet-go reads it; groups are the row groups to read.
func pgPlan(file *parquet.File, n *pqNested, groups []parquet.RowGroup) *pgNested {
	if pgForced() {
		return nil
	}
	p := &pgNested{}
	roots := file.Root().Columns()
	for i, c := range n.cols {
		if !c.nested {
			return nil
		}
		col := roots[n.tops[i]]
		for _, step := range c.path {
			var next *parquet.Column
			for _, k := range col.Columns() {
				if k.Name() == step {
					next = k
					break
				}
			}
			if next == nil {
				return nil
			}
			col = next
		}
		pc := &pgCol{c: c}
		node, ok := pc.build(n.fields[i], col, groups)
		if !ok {
			pc.close()
			return nil
		}
		pc.node = node
		if slices.Contains(c.slots, slotInitial) {
			pc.memo = newNestedMemo()
		}
		p.cols = append(p.cols, pc)
	}
	return p
}

// build makes the node of field sf, read from parquet-go column col, and
// the cursors of its leaves. ok is false for a shape or type it does not
// know.
func (p *pgCol) build(sf *pqarrow.SchemaField, col *parquet.Column, groups []parquet.RowGroup) (*pgNode, bool) {
	nd := &pgNode{def: int16(col.MaxDefinitionLevel()), first: len(p.leaves)}
	dt := sf.Field.Type
	if col.Repeated() {
		return nil, false // a bare repeated field, a list to pqarrow
	}
	switch dt.ID() {
	case arrow.STRUCT:
		if col.Leaf() || len(col.Columns()) != len(sf.Children) || len(sf.Children) == 0 {
			return nil, false
		}
		nd.kind = pgStruct
		for k, kid := range col.Columns() {
			ksf := &sf.Children[k]
			if kid.Name() != ksf.Field.Name {
				return nil, false
			}
			kn, ok := p.build(ksf, kid, groups)
			if !ok {
				return nil, false
			}
			nd.kids = append(nd.kids, kn)
			nd.keys = append(nd.keys, structKey(k, ksf.Field.Name))
			nd.names = append(nd.names, ksf.Field.Name)
		}
	case arrow.LIST, arrow.LARGE_LIST:
		lt := col.Type().LogicalType()
		if col.Leaf() || lt == nil || len(sf.Children) != 1 {
			return nil, false
		}
		if _, list := lt.Value.(*format.ListType); !list {
			return nil, false
		}
		r := col.Columns()
		if len(r) != 1 || !r[0].Repeated() || r[0].Leaf() || len(r[0].Columns()) != 1 ||
			r[0].Name() == "array" || strings.HasSuffix(r[0].Name(), "_tuple") {
			return nil, false // not the three-level form
		}
		elem := r[0].Columns()[0]
		if elem.Name() != sf.Children[0].Field.Name || sf.LevelInfo.DefLevel != int16(r[0].MaxDefinitionLevel()) {
			return nil, false
		}
		nd.kind, nd.repDef, nd.rep = pgList, int16(r[0].MaxDefinitionLevel()), int16(r[0].MaxRepetitionLevel())
		en, ok := p.build(&sf.Children[0], elem, groups)
		if !ok {
			return nil, false
		}
		nd.kids = []*pgNode{en}
	case arrow.MAP:
		if col.Leaf() || len(sf.Children) != 1 || len(sf.Children[0].Children) != 2 {
			return nil, false
		}
		r := col.Columns()
		if len(r) != 1 || !r[0].Repeated() || r[0].Leaf() || len(r[0].Columns()) != 2 {
			return nil, false
		}
		entries := &sf.Children[0]
		switch entries.Children[0].Field.Type.ID() {
		case arrow.STRING, arrow.LARGE_STRING:
		default:
			return nil, false // keys that are not strings are written as strings of their text
		}
		nd.kind, nd.repDef, nd.rep = pgMap, int16(r[0].MaxDefinitionLevel()), int16(r[0].MaxRepetitionLevel())
		for k, kid := range r[0].Columns() {
			kn, ok := p.build(&entries.Children[k], kid, groups)
			if !ok {
				return nil, false
			}
			nd.kids = append(nd.kids, kn)
		}
	default:
		if !col.Leaf() {
			return nil, false
		}
		if d, ok := dt.(*arrow.DictionaryType); ok {
			dt = d.ValueType
		}
		kind, ok := pgLeafKind(dt, col.Type().Kind())
		if !ok {
			return nil, false
		}
		nd.kind = kind
		nd.leaves = []int{len(p.leaves)}
		p.leaves = append(p.leaves, &pgLeaf{index: col.Index(), kind: kind, maxDef: nd.def, groups: groups, buf: make([]parquet.Value, pqValueChunk)})
		return nd, true
	}
	for _, k := range nd.kids {
		nd.leaves = append(nd.leaves, k.leaves...)
	}
	return nd, true
}

// pgLeafKind returns how a leaf of Arrow type dt, stored as physical kind
// pk, is rendered; ok is false for the types the page reader leaves to
// pqarrow (dates, times, decimals, INT96, float16, fixed-size binary,
// unions and extensions among them). Durations, which pqarrow cannot read
// inside a nested column, are read here.
func pgLeafKind(dt arrow.DataType, pk parquet.Kind) (pgKind, bool) {
	switch dt.ID() {
	case arrow.BOOL:
		return pgBool, pk == parquet.Boolean
	case arrow.INT8:
		return pgInt8, pk == parquet.Int32
	case arrow.INT16:
		return pgInt16, pk == parquet.Int32
	case arrow.INT32:
		return pgInt32, pk == parquet.Int32
	case arrow.UINT8:
		return pgUint8, pk == parquet.Int32
	case arrow.UINT16:
		return pgUint16, pk == parquet.Int32
	case arrow.UINT32:
		return pgUint32, pk == parquet.Int32
	case arrow.INT64, arrow.DURATION:
		// A duration is a number of its unit, as the Arrow path renders it.
		return pgInt64, pk == parquet.Int64
	case arrow.UINT64:
		return pgUint64, pk == parquet.Int64
	case arrow.FLOAT32:
		return pgFloat, pk == parquet.Float
	case arrow.FLOAT64:
		return pgDouble, pk == parquet.Double
	case arrow.STRING, arrow.LARGE_STRING:
		return pgString, pk == parquet.ByteArray
	case arrow.BINARY, arrow.LARGE_BINARY:
		return pgBinary, pk == parquet.ByteArray
	}
	return 0, false
}

// errOutOfStep is levels that do not make rows.
var errOutOfStep = errors.New("the levels of the nested leaf columns are out of step")

// peek returns the leaf's current entry, io.EOF after its last.
func (l *pgLeaf) peek() (*parquet.Value, error) {
	for l.i >= l.n {
		if err := l.load(); err != nil {
			return nil, err
		}
	}
	return &l.buf[l.i], nil
}

// load reads the next values, from the next page or row group as needed.
func (l *pgLeaf) load() error {
	for {
		if l.pageDone {
			parquet.Release(l.page)
			l.page, l.values, l.pageDone = nil, nil, false
		}
		if l.values != nil {
			n, err := l.values.ReadValues(l.buf)
			l.i, l.n = 0, n
			switch {
			case err == io.EOF:
				l.pageDone = true
			case err != nil:
				return err
			}
			if n > 0 {
				return nil
			}
			continue
		}
		if l.pages == nil {
			if l.g == len(l.groups) {
				return io.EOF
			}
			chunks := l.groups[l.g].ColumnChunks()
			if l.index >= len(chunks) {
				return errors.New("missing column chunk")
			}
			l.pages = startPrefetch(chunks[l.index].Pages())
			l.g++
		}
		page, err := l.pages.ReadPage()
		if err == io.EOF {
			l.pages.Close()
			l.pages = nil
			continue
		}
		if err != nil {
			return err
		}
		l.page, l.values, l.dict = page, page.Values(), page.Dictionary() != nil
	}
}

// close releases the leaf's page and ends its prefetch goroutine.
func (l *pgLeaf) close() {
	if l.page != nil {
		parquet.Release(l.page)
		l.page, l.values = nil, nil
	}
	if l.pages != nil {
		l.pages.Close()
		l.pages = nil
	}
	l.i, l.n = 0, 0
}

// fill fills the nested columns of rows, the next rows of the file: the
// first column into the batch's arena in this goroutine, each other one
// into an arena of its own in a goroutine of its own. A row's error is
// the first in column order, as when the columns are filled one after
// the other.
func (p *pgNested) fill(rows []Row, cb *pqBatch) error {
	for len(cb.side) < len(p.cols) {
		cb.side = append(cb.side, nil)
	}
	var wg sync.WaitGroup
	for k := 1; k < len(p.cols); k++ {
		wg.Go(func() { p.cols[k].fill(rows, &cb.side[k]) })
	}
	p.cols[0].fill(rows, &cb.arena)
	wg.Wait()
	for _, pc := range p.cols {
		if pc.fatal != nil {
			return fmt.Errorf("nested column %q: %w", pc.c.name, pc.fatal)
		}
		for j, err := range pc.errs {
			if err != nil && rows[j].Err == nil {
				rows[j].Err = err
			}
		}
	}
	return nil
}

// fill reads the column's values of rows into their cells, and their
// errors into p.errs, rendering into *arena.
//
// A panic of the decoder on a corrupt page (parquet-go's value readers do
// not check dictionary indices) is the column's fatal error: it must not
// end the process from a goroutine of fill's, nor leave the other columns
// writing into a batch the caller has given up.
func (p *pgCol) fill(rows []Row, arena *[]byte) {
	defer func() {
		if r := recover(); r != nil {
			p.fatal = fmt.Errorf("corrupt page: %v", r)
		}
	}()
	p.errs = p.errs[:0]
	for j := range rows {
		row := &rows[j]
		cell, err := p.cell(arena)
		if p.fatal != nil {
			return
		}
		p.errs = append(p.errs, err)
		for _, s := range p.c.slots {
			*slotCell(row, s) = cell
		}
	}
}

// cell reads the column's value of the next row. The error is a value
// JSON cannot hold (the row's); a read error is p.fatal.
func (p *pgCol) cell(arena *[]byte) (Cell, error) {
	nd := p.node
	v, err := p.leaves[nd.first].peek()
	if err != nil {
		p.readFailed(err)
		return Cell{}, nil
	}
	if v.RepetitionLevel() != 0 {
		p.fatal = errOutOfStep
		return Cell{}, nil
	}
	if int16(v.DefinitionLevel()) < nd.def {
		p.skip(nd, nd.def)
		return Cell{}, nil
	}
	var h uint64
	memo := false
	if p.memo != nil {
		var text []byte
		if text, h, memo = p.lookup(); text != nil {
			return Cell{Kind: CellJSON, Stable: true, Data: text}, nil
		}
	}
	start := len(*arena)
	text, err := p.write(*arena, nd)
	if p.fatal != nil || err != nil {
		*arena = text[:start]
		if e, ok := err.(*nestedError); ok && p.fatal == nil {
			e.column = p.c.name
			return Cell{}, err
		}
		return Cell{}, nil
	}
	*arena = text
	if memo {
		if own := p.memo.admit(h, text[start:]); own != nil {
			*arena = text[:start]
			return Cell{Kind: CellJSON, Stable: true, Data: own}, nil
		}
	}
	return Cell{Kind: CellJSON, Data: text[start:len(text):len(text)]}, nil
}

// lookup returns the memoized text of the value of the row at the
// leaves' cursors, and moves them past it; or nil with try reporting
// whether the row was keyed (then h is the key's hash, for admit).
//
// The key is every entry the row has in each leaf: its levels, and its
// value where it has one. A string or binary value read from a
// dictionary-encoded page is keyed by where it lies in the dictionary
// (its address and length), which names one value of that row group's
// dictionary, so the key begins with the row group, and the memo is
// emptied when the row group changes; other values are keyed by their
// bytes. Two rows have the same key only if they hold the same value. A
// row is keyed only when all its entries are among the values its leaves
// have read from their pages (and the next row's first entry too, which
// tells where the row ends): the others are rendered, as are rows once
// the memo has stopped finding any (nestedMemo).
func (p *pgCol) lookup() (text []byte, h uint64, try bool) {
	m := p.memo
	if m.resting() {
		return nil, 0, false
	}
	g := p.leaves[0].g
	if g != p.memoGroup {
		p.memoGroup = g
		m.empty()
	}
	key := binary.LittleEndian.AppendUint32(m.key[:0], uint32(g))
	p.ends = p.ends[:0]
	for _, l := range p.leaves {
		if l.i >= l.n || l.g != g {
			return nil, 0, false
		}
		j := l.i + 1
		for j < l.n && l.buf[j].RepetitionLevel() != 0 {
			j++
		}
		if j == l.n {
			return nil, 0, false // the row may go on in the next values
		}
		key = binary.LittleEndian.AppendUint32(key, uint32(j-l.i))
		for _, v := range l.buf[l.i:j] {
			d := int16(v.DefinitionLevel())
			key = append(key, byte(d), byte(v.RepetitionLevel()))
			if d != l.maxDef {
				continue
			}
			switch l.kind {
			case pgString, pgBinary:
				b := v.ByteArray()
				key = binary.LittleEndian.AppendUint32(key, uint32(len(b)))
				if l.dict {
					key = append(key, 'd')
					key = binary.LittleEndian.AppendUint64(key, uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))))
				} else {
					key = append(key, 'v')
					key = append(key, b...)
				}
			case pgBool:
				if v.Boolean() {
					key = append(key, 1)
				} else {
					key = append(key, 0)
				}
			case pgInt8, pgInt16, pgInt32, pgUint8, pgUint16, pgUint32:
				key = binary.LittleEndian.AppendUint32(key, uint32(v.Int32()))
			case pgFloat:
				key = binary.LittleEndian.AppendUint32(key, math.Float32bits(v.Float()))
			case pgDouble:
				key = binary.LittleEndian.AppendUint64(key, math.Float64bits(v.Double()))
			default:
				key = binary.LittleEndian.AppendUint64(key, uint64(v.Int64()))
			}
		}
		p.ends = append(p.ends, j)
	}
	m.key = key
	h = maphash.Bytes(m.seed, key)
	if text := m.find(h); text != nil {
		for k, l := range p.leaves {
			l.i = p.ends[k]
		}
		return text, h, true
	}
	return nil, h, true
}

// readFailed records err, from a leaf's peek, as p.fatal: the end of a
// leaf before the rows do is levels out of step.
func (p *pgCol) readFailed(err error) {
	if p.fatal != nil {
		return
	}
	if err == io.EOF {
		err = errOutOfStep
	}
	p.fatal = err
}

// skip takes one entry from every leaf under nd, a node null (below
// nd.def) or empty (below nd.repDef) there: each has one entry, defined
// below that level.
func (p *pgCol) skip(nd *pgNode, below int16) {
	for _, k := range nd.leaves {
		l := p.leaves[k]
		v, err := l.peek()
		if err != nil {
			p.readFailed(err)
			return
		}
		if int16(v.DefinitionLevel()) >= below {
			p.fatal = errOutOfStep
			return
		}
		l.i++
	}
}

// write appends the JSON text of nd's value at the leaves' current
// entries, whose first leaf is defined at least to nd.def's parent. The
// error is the first value in document order that JSON cannot hold (a
// *nestedError); the value is still read to its end, so that the leaves
// stay in step. A read error sets p.fatal and ends it.
func (p *pgCol) write(dst []byte, nd *pgNode) ([]byte, error) {
	l := p.leaves[nd.first]
	v, err := l.peek()
	if err != nil {
		p.readFailed(err)
		return dst, nil
	}
	d := int16(v.DefinitionLevel())
	if d < nd.def {
		p.skip(nd, nd.def)
		return append(dst, "null"...), nil
	}
	switch nd.kind {
	case pgStruct:
		// As structEnc: with StructNullsAbsent, a field whose value is
		// null is read (its leaves stay in step) and its member unwritten.
		dst = append(dst, '{')
		open := len(dst)
		absent := p.c.nulls == StructNullsAbsent
		var first error
		for k, kid := range nd.kids {
			mark := len(dst)
			dst = append(dst, memberKey(nd.keys[k], k, open, mark)...)
			start := len(dst)
			dst, err = p.write(dst, kid)
			if p.fatal != nil {
				return dst, nil
			}
			if err != nil && first == nil {
				first = within(err, "."+nd.names[k])
			}
			dst = dropNull(dst, absent, mark, start)
		}
		return append(dst, '}'), first
	case pgList, pgMap:
		open, close := byte('['), byte(']')
		if nd.kind == pgMap {
			open, close = '{', '}'
		}
		dst = append(dst, open)
		if d < nd.repDef {
			p.skip(nd, nd.repDef)
			return append(dst, close), nil
		}
		var first error
		for j := 0; ; j++ {
			if j > 0 {
				dst = append(dst, ',')
			}
			if nd.kind == pgList {
				dst, err = p.write(dst, nd.kids[0])
				if err != nil && first == nil {
					first = within(err, "["+strconv.Itoa(j)+"]")
				}
			} else {
				k := len(dst)
				dst, _ = p.write(dst, nd.kids[0]) // a string: no error
				name := dst[k:]
				dst = append(dst, ':')
				dst, err = p.write(dst, nd.kids[1])
				if err != nil && first == nil {
					first = within(err, "."+memberName(name))
				}
			}
			if p.fatal != nil {
				return dst, nil
			}
			v, err := l.peek()
			if err == io.EOF {
				break
			}
			if err != nil {
				p.readFailed(err)
				return dst, nil
			}
			if int16(v.RepetitionLevel()) != nd.rep {
				break
			}
		}
		return append(dst, close), first
	}
	l.i++
	switch nd.kind {
	case pgBool:
		return strconv.AppendBool(dst, v.Boolean()), nil
	// A value out of the narrow type's range (a writer that breaks the
	// format) is cut to it, as pqarrow's conversion does.
	case pgInt8:
		return strconv.AppendInt(dst, int64(int8(v.Int32())), 10), nil
	case pgInt16:
		return strconv.AppendInt(dst, int64(int16(v.Int32())), 10), nil
	case pgInt32:
		return strconv.AppendInt(dst, int64(v.Int32()), 10), nil
	case pgUint8:
		return strconv.AppendUint(dst, uint64(uint8(v.Int32())), 10), nil
	case pgUint16:
		return strconv.AppendUint(dst, uint64(uint16(v.Int32())), 10), nil
	case pgUint32:
		return strconv.AppendUint(dst, uint64(uint32(v.Int32())), 10), nil
	case pgInt64:
		return strconv.AppendInt(dst, v.Int64(), 10), nil
	case pgUint64:
		return strconv.AppendUint(dst, uint64(v.Int64()), 10), nil
	case pgFloat:
		return appendJSONFloat(dst, float64(v.Float()), 32)
	case pgDouble:
		return appendJSONFloat(dst, v.Double(), 64)
	case pgString:
		return jsonview.AppendJSONString(dst, v.ByteArray()), nil
	case pgBinary:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, v.ByteArray())
		return append(dst, '"'), nil
	}
	panic("columnar: pgNode of no kind")
}

// close ends every leaf's reading.
func (p *pgNested) close() {
	for _, pc := range p.cols {
		pc.close()
	}
}

// close ends the reading of the column's leaves.
func (p *pgCol) close() {
	for _, l := range p.leaves {
		l.close()
	}
}
