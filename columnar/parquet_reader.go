package columnar

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// ParquetReader reads the rollout fields and the primitive metadata columns
// of a Parquet file, page by page, into reusable batches. It implements
// Reader; make one with OpenParquet.
//
// Only the columns it needs are read: the six mapped fields (a field whose
// column is absent is CellNull in every row) and, as metadata, every other
// top-level column of a primitive type (byte arrays, booleans, 32- and 64-bit
// integers, floats, doubles, UUIDs). Nested and repeated columns that are not
// fields, INT96 columns, and decimals or other fixed-length values stored as
// bytes are skipped; a mapped field stored in such a column is an error at
// open.
//
// Cells: byte-array columns (strings, binary, JSON, large_string as written
// by Arrow) give CellString with the raw bytes; integers give CellNumber with
// their decimal text (unsigned and decimal logical types are honoured; dates
// and timestamps are their underlying integer); floats and doubles give
// CellNumber with the shortest decimal text that reads back to the same value
// ("7", "0.1", no exponent); NaN and infinities have no number text and are
// CellString "NaN", "+Inf" or "-Inf"; booleans give CellBool; UUIDs give
// CellString with the canonical 36-character text; nulls give CellNull.
//
// Buffer lifetime. parquet-go decodes each page into buffers taken from
// process-wide pools and counts references to them: the page reader holds
// one reference to the last page it returned and drops it when it reads the
// next page, and the caller of ReadPage holds another. When the count reaches
// zero the buffers go back to the pools, where the next page of any column in
// any reader may be decoded into them. A byte-array value therefore stays
// valid after the next page is read only while someone still holds a
// reference to its page. ParquetReader keeps that reference instead of
// copying: a batch retains (parquet.Retain) every page its string cells point
// into, and Batch.Release releases them (parquet.Release), so string and
// binary cells point straight into the decoded, decompressed page. Values of
// dictionary-encoded pages point into the column chunk's dictionary, which
// parquet-go allocates outside the pools and never reuses. Numbers, booleans
// and UUIDs are formatted into a per-batch arena that is reused.
//
// A held batch thus keeps alive the pages it points into: its own rows'
// values plus at most the rest of one page per column at each end.
//
// The rejected alternative releases each page as soon as it is consumed and
// copies every byte-array value into the per-batch arena. It is as safe but
// copies every state once, which costs about a third more CPU per row with
// two ~5 KB state columns (BenchmarkParquetRead measures the copy against
// the reader as built). The reference count is the library's documented
// way to share a page's lifetime between layers, and it is atomic, so a
// batch may be released from any goroutine. Stable cells rely on the
// dictionary's memory staying as decoded (TestParquetDictionaryNotReused).
//
// Each column chunk's pages are read and decompressed ahead of Next in a
// goroutine of their own (pqPrefetch), so the state columns decompress in
// parallel while Next fills rows. The goroutines end at the end of their row
// group, after the file's last row, or at Close. parquet-go's own
// asynchronous mode does the same but lets a panic on a corrupt page crash
// the process; pqPrefetch turns it into an error.
//
// Next is not safe for concurrent use; Release of its batches is.
type ParquetReader struct {
	chunkReader[parquet.Page]
	f      File
	file   *parquet.File
	groups []parquet.RowGroup
	cols   []*pqColumn
	// nested reads the nested columns, nil when none is read.
	nested *pqNested

	rg     int   // current row group; -1 before the first
	rgEnd  int   // row group after the last one read
	rgLeft int64 // rows of the current row group not yet read
	rgRead int64 // rows of the current row group already read
	left   int64 // rows not yet read
	vals   []parquet.Value
}

// pqKind says how a Parquet column's values become cells.
type pqKind uint8

const (
	pqBytes pqKind = iota + 1
	pqUUID
	pqBool
	pqInt32
	pqInt64
	pqUint32
	pqUint64
	pqFloat
	pqDouble
)

// pqColumn is one column read by a ParquetReader, with its position in the
// current row group's page stream.
type pqColumn struct {
	name  string
	index int // leaf column index in row groups
	kind  pqKind
	scale int // decimal scale of integer columns, 0 otherwise
	slots []int

	pages  *pqPrefetch
	page   parquet.Page
	values parquet.ValueReader
	// dict is set while page is dictionary-encoded: its byte arrays point
	// into the dictionary, which is never written after it is decoded.
	dict bool
	// heldGen is the generation of the batch that retains page (0: none).
	heldGen uint64
}

// pqBatch is a batch of a ParquetReader; it holds the pages its cells
// point into.
type pqBatch = chunkBatch[parquet.Page]

// pqValueChunk is how many values are read from a page at a time.
const pqValueChunk = 512

// pqInterleave is how many rows of one column Next fills before it turns
// to the next column.
const pqInterleave = 64

// OpenParquet opens the Parquet file at path and reads its footer. It fails
// with an error naming path when the file is not Parquet, is truncated, or
// maps a field to a column it cannot read.
func OpenParquet(path string, opts Options) (*ParquetReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := newParquetReader(path, f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// newParquetReader reads the Parquet file f, named path in errors. The
// caller closes f when it fails.
func newParquetReader(path string, f File, opts Options) (*ParquetReader, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	file, err := readParquetFooter(path, f, st.Size())
	if err != nil {
		return nil, err
	}
	r := &ParquetReader{
		chunkReader: chunkReader[parquet.Page]{path: path, end: file.NumRows(), exact: true, unhold: parquet.Release},
		f:           f,
		file:        file,
		groups:      file.RowGroups(),
		rg:          -1,
		rgEnd:       len(file.RowGroups()),
		left:        file.NumRows(),
		vals:        make([]parquet.Value, pqValueChunk),
	}
	var total int64
	for _, g := range r.groups {
		total += g.NumRows()
	}
	if total != file.NumRows() {
		return nil, fmt.Errorf("open %s: corrupt footer: %d rows in row groups, %d in the file", path, total, file.NumRows())
	}
	if err := r.planColumns(opts.Fields.WithDefaults(), st.Size(), opts.Columns, opts.StructNulls); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return r, nil
}

// readParquetFooter checks that f, of size bytes and named path in errors,
// is a Parquet file and reads its footer.
func readParquetFooter(path string, f io.ReaderAt, size int64) (*parquet.File, error) {
	if err := checkParquetMagic(f, size); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	file, err := openParquetFile(f, size)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return file, nil
}

// checkParquetMagic gives a clearer error than the library for files that
// are not Parquet or were cut short.
func checkParquetMagic(f io.ReaderAt, size int64) error {
	const magic = "PAR1"
	if size < 12 {
		return fmt.Errorf("not a parquet file: only %d bytes", size)
	}
	var head [4]byte
	var tail [8]byte // footer length, magic
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return err
	}
	if _, err := f.ReadAt(tail[:], size-8); err != nil {
		return err
	}
	switch {
	case string(head[:]) == "PARE":
		return errors.New("encrypted parquet files are not supported")
	case string(head[:]) != magic:
		return errors.New("not a parquet file: no PAR1 magic at the start")
	case string(tail[4:]) != magic:
		return errors.New("truncated parquet file: no PAR1 magic at the end")
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n > size-12 {
		return fmt.Errorf("corrupt parquet file: footer of %d bytes in a file of %d", n, size)
	}
	return nil
}

// openParquetFile opens the footer; the library panics on some malformed
// schemas, which is turned into an error.
func openParquetFile(f io.ReaderAt, size int64) (file *parquet.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			file, err = nil, fmt.Errorf("corrupt parquet footer: %v", p)
		}
	}()
	return parquet.OpenFile(f, size,
		parquet.SkipPageIndex(true),
		parquet.SkipBloomFilters(true),
		parquet.ReadBufferSize(64<<10),
	)
}

// restrict limits the reader, before its first Next, to the row groups
// first through first+n-1 (0-based). Row indexes stay those of the file,
// so rows read through a range are numbered as when the whole file is
// read; Rows returns the rows of the range.
func (r *ParquetReader) restrict(first, n int) error {
	if first < 0 || n < 0 || first+n > len(r.groups) {
		return fmt.Errorf("open %s: row groups %d..%d out of range (the file has %d)", r.path, first, first+n-1, len(r.groups))
	}
	var start, count int64
	for i, g := range r.groups {
		switch {
		case i < first:
			start += g.NumRows()
		case i < first+n:
			count += g.NumRows()
		}
	}
	r.rg, r.rgEnd = first-1, first+n
	r.start, r.next, r.end, r.left = start, start, start+count, count
	return nil
}

// planColumns picks the columns to read and where their cells go. Flat
// columns are read page by page here; nested ones (groups and repeated
// columns) and fields inside struct columns (a mapped name COL.PATH that
// no column has) through pqNested. size is the file's size; only,
// when not nil, names the metadata columns to read; nulls is how nested
// values render null struct fields.
func (r *ParquetReader) planColumns(fields FieldNames, size int64, only []string, nulls StructNulls) error {
	names := fieldSlotNames(fields)
	nested := func() (*pqNested, error) {
		if r.nested == nil {
			n, err := openPQNested(r.f, size)
			if err != nil {
				return nil, fmt.Errorf("read the schema of nested columns: %w", err)
			}
			n.pgFile, n.pgGroups, n.nulls = r.file, r.groups, nulls
			r.nested = n
		}
		return r.nested, nil
	}
	roots := r.file.Root().Columns()
	for top, col := range roots {
		name := col.Name()
		var slots []int
		for i, fn := range names {
			if fn == name {
				slots = append(slots, i)
			}
		}
		kind, scale, ok := pqKindOf(col)
		if !ok && (!col.Leaf() || col.Repeated() || col.MaxRepetitionLevel() > 0) {
			meta := len(slots) == 0
			if meta && only != nil && !slices.Contains(only, name) {
				continue // not read: no nested reader for it (one without columns reads them all)
			}
			n, err := nested()
			if err != nil {
				return err
			}
			if meta {
				slots = append(slots, numFieldSlots+len(r.metaNames))
			}
			added, err := n.add(name, top, nil, slots)
			switch {
			case err != nil:
				return err
			case added && meta:
				r.metaNames = append(r.metaNames, name)
			case !added && !meta:
				return fmt.Errorf("column %q holds a rollout field but is a %s column of a type gavel cannot read", name, pqDescribe(col))
			}
			continue
		}
		if len(slots) == 0 {
			if !ok || (only != nil && !slices.Contains(only, name)) {
				continue // nested, repeated or unsupported: not metadata
			}
			slots = append(slots, numFieldSlots+len(r.metaNames))
			r.metaNames = append(r.metaNames, name)
		} else if !ok {
			return fmt.Errorf("column %q holds a rollout field but is a %s column, not a string, number or boolean", name, pqDescribe(col))
		}
		r.cols = append(r.cols, &pqColumn{name: name, index: col.Index(), kind: kind, scale: scale, slots: slots})
	}
	// Fields inside struct columns.
	for s, name := range names {
		colName, rest, dotted := strings.Cut(name, ".")
		if !dotted || slices.ContainsFunc(roots, func(c *parquet.Column) bool { return c.Name() == name }) {
			continue
		}
		top := slices.IndexFunc(roots, func(c *parquet.Column) bool { return c.Name() == colName })
		if top < 0 {
			continue // absent: null in every row
		}
		if r.nested != nil {
			if i := slices.IndexFunc(r.nested.cols, func(c *arrowCol) bool { return c.name == name }); i >= 0 {
				r.nested.cols[i].slots = append(r.nested.cols[i].slots, s)
				continue
			}
		}
		if col := roots[top]; col.Leaf() && !col.Repeated() {
			return fmt.Errorf("%q is not in the schema: %q is a %s, not a struct", name, colName, pqDescribe(col))
		}
		n, err := nested()
		if err != nil {
			return err
		}
		added, err := n.add(name, top, strings.Split(rest, "."), []int{s})
		if err != nil {
			return err
		}
		if !added {
			return fmt.Errorf("field %q holds a rollout field but is of a type gavel cannot read", name)
		}
	}
	return nil
}

// pqKindOf says whether col is a top-level primitive column gavel reads and
// how its values become cells.
func pqKindOf(col *parquet.Column) (kind pqKind, scale int, ok bool) {
	if !col.Leaf() || col.Repeated() || col.MaxRepetitionLevel() > 0 {
		return 0, 0, false
	}
	typ := col.Type()
	var lt format.LogicalTypeValue
	if l := typ.LogicalType(); l != nil {
		lt = l.Value
	}
	unsigned := false
	switch t := lt.(type) {
	case *format.IntType:
		unsigned = !t.IsSigned
	case *format.DecimalType:
		scale = int(t.Scale)
	}
	switch typ.Kind() {
	case parquet.Boolean:
		return pqBool, 0, true
	case parquet.Int32:
		if unsigned {
			return pqUint32, 0, true
		}
		return pqInt32, scale, true
	case parquet.Int64:
		if unsigned {
			return pqUint64, 0, true
		}
		return pqInt64, scale, true
	case parquet.Float:
		return pqFloat, 0, true
	case parquet.Double:
		return pqDouble, 0, true
	case parquet.ByteArray:
		if _, dec := lt.(*format.DecimalType); dec {
			return 0, 0, false
		}
		return pqBytes, 0, true
	case parquet.FixedLenByteArray:
		if _, uuid := lt.(*format.UUIDType); uuid && typ.Length() == 16 {
			return pqUUID, 0, true
		}
	}
	return 0, 0, false
}

// pqDescribe names a column's shape for error messages.
func pqDescribe(col *parquet.Column) string {
	switch {
	case !col.Leaf():
		return "nested"
	case col.Repeated() || col.MaxRepetitionLevel() > 0:
		return "repeated"
	}
	return col.Type().String()
}

// Close releases the file and the pages the reader still holds. Batches
// already returned stay valid until they are released.
func (r *ParquetReader) Close() error {
	r.closeRowGroup()
	if r.nested != nil {
		r.nested.close()
	}
	r.closed()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// Next returns the next batch of at most limit rows (at least one), in file
// order; a batch may span row groups. At the end of the file it returns nil
// and io.EOF.
func (r *ParquetReader) Next(limit int) (*Batch, error) { return r.nextBatch(limit, r) }

// fill reads up to len(rows) rows of the current row group.
func (r *ParquetReader) fill(rows []Row, pb *pqBatch) (int, error) {
	// Columns are filled a few rows at a time, in turn, so that every
	// prefetch goroutine keeps decoding while the others are drained.
	k := min(int64(len(rows)), r.rgLeft, pqInterleave)
	if k == 0 {
		return 0, nil
	}
	part := rows[:k]
	for _, c := range r.cols {
		if err := r.readColumn(c, part, pb); err != nil {
			return 0, fmt.Errorf("read %s row group %d column %q: %w", r.path, r.rg, c.name, err)
		}
	}
	if n := r.nested; n != nil {
		if !n.started {
			if err := n.start(r.rg, r.rgEnd); err != nil {
				return 0, fmt.Errorf("read %s row group %d: %w", r.path, r.rg, err)
			}
		}
		if err := n.fill(part, pb); err != nil {
			return 0, fmt.Errorf("read %s row group %d: %w", r.path, r.rg, err)
		}
	}
	r.rgLeft -= k
	r.rgRead += k
	if r.left -= k; r.left == 0 {
		r.closeRowGroup() // end the prefetch goroutines now
		if r.nested != nil && r.nested.pg != nil {
			r.nested.pg.close() // and the nested leaves'
		}
	}
	return int(k), nil
}

// where names the current row group in errors.
func (r *ParquetReader) where() string { return fmt.Sprintf("row group %d", r.rg) }

// nextChunk moves to the next non-empty row group.
func (r *ParquetReader) nextChunk() (bool, error) {
	return true, r.nextRowGroup()
}

// nextRowGroup closes the current row group's page readers and opens the
// next non-empty row group's.
func (r *ParquetReader) nextRowGroup() error {
	r.closeRowGroup()
	for {
		r.rg++
		if r.rg >= len(r.groups) {
			return fmt.Errorf("read %s: row groups hold fewer rows than the footer's %d", r.path, r.file.NumRows())
		}
		if n := r.groups[r.rg].NumRows(); n > 0 {
			r.rgLeft, r.rgRead = n, 0
			break
		}
	}
	chunks := r.groups[r.rg].ColumnChunks()
	for _, c := range r.cols {
		if c.index >= len(chunks) {
			return fmt.Errorf("read %s row group %d column %q: missing column chunk", r.path, r.rg, c.name)
		}
		c.pages = startPrefetch(chunks[c.index].Pages())
	}
	return nil
}

// closeRowGroup drops the reader's own references to the current pages.
func (r *ParquetReader) closeRowGroup() {
	for _, c := range r.cols {
		if c.page != nil {
			parquet.Release(c.page)
			c.page, c.values, c.heldGen = nil, nil, 0
		}
		if c.pages != nil {
			c.pages.Close()
			c.pages = nil
		}
	}
}

// pqPrefetch reads the pages of one column chunk ahead of its consumer, in
// a goroutine that ends at the end of the chunk, at the first error, or at
// Close. Pages it hands over belong to the consumer (which releases them);
// pages still queued at Close are released by Close.
type pqPrefetch struct {
	ch   chan pqPage // closed when the goroutine ends
	done chan struct{}
	err  error // the error that ended the stream, once received
}

type pqPage struct {
	page parquet.Page
	err  error
}

// pqPrefetchDepth is how many decoded pages may wait for the consumer, in
// addition to the one being decoded.
const pqPrefetchDepth = 0

func startPrefetch(pages parquet.Pages) *pqPrefetch {
	p := &pqPrefetch{ch: make(chan pqPage, pqPrefetchDepth), done: make(chan struct{})}
	go p.run(pages)
	return p
}

func (p *pqPrefetch) run(pages parquet.Pages) {
	defer close(p.ch)
	defer pages.Close()
	for {
		select {
		case <-p.done:
			return
		default:
		}
		page, err := readPageSafe(pages)
		select {
		case p.ch <- pqPage{page, err}:
		case <-p.done:
			if page != nil {
				parquet.Release(page)
			}
			return
		}
		if err != nil {
			return
		}
	}
}

// readPageSafe reads a page, turning a panic of the decoder into an error.
func readPageSafe(pages parquet.Pages) (page parquet.Page, err error) {
	defer func() {
		if p := recover(); p != nil {
			page, err = nil, fmt.Errorf("corrupt page: %v", p)
		}
	}()
	return pages.ReadPage()
}

// ReadPage returns the next page, or io.EOF after the last one.
func (p *pqPrefetch) ReadPage() (parquet.Page, error) {
	if p.err != nil {
		return nil, p.err
	}
	pp, ok := <-p.ch
	if !ok {
		pp.err = io.EOF
	}
	if pp.err != nil {
		p.err = pp.err
	}
	return pp.page, pp.err
}

// Close stops the goroutine, waits for it to end and releases the pages it
// read that were not handed over.
func (p *pqPrefetch) Close() {
	close(p.done)
	for pp := range p.ch {
		if pp.page != nil {
			parquet.Release(pp.page)
		}
	}
}

// readColumn reads one value of column c for each of rows.
func (r *ParquetReader) readColumn(c *pqColumn, rows []Row, pb *pqBatch) error {
	for i := 0; i < len(rows); {
		if c.values == nil {
			p, err := c.pages.ReadPage()
			if err == io.EOF {
				return fmt.Errorf("column chunk ends after %d of %d rows", r.rgRead+int64(i), r.rgRead+r.rgLeft)
			}
			if err != nil {
				return err
			}
			c.page, c.values, c.heldGen = p, p.Values(), 0
			c.dict = p.Dictionary() != nil
		}
		if c.kind == pqBytes && c.heldGen != pb.gen {
			parquet.Retain(c.page)
			pb.held = append(pb.held, c.page)
			c.heldGen = pb.gen
		}
		vals := r.vals[:min(len(rows)-i, len(r.vals))]
		n, err := c.values.ReadValues(vals)
		for j, v := range vals[:n] {
			cell := c.cell(v, pb)
			row := &rows[i+j]
			for _, s := range c.slots {
				*slotCell(row, s) = cell
			}
		}
		i += n
		switch {
		case err == io.EOF:
			parquet.Release(c.page)
			c.page, c.values, c.heldGen = nil, nil, 0
		case err != nil:
			return err
		case n == 0:
			return errors.New("page reader returned no values")
		}
	}
	return nil
}

// cell converts one value of column c.
func (c *pqColumn) cell(v parquet.Value, pb *pqBatch) Cell {
	if v.IsNull() {
		return Cell{}
	}
	switch c.kind {
	case pqBytes:
		b := v.ByteArray()
		return Cell{Kind: CellString, Stable: c.dict, Data: b[:len(b):len(b)]}
	case pqBool:
		return boolCell(v.Boolean())
	case pqInt32:
		return pb.integer(int64(v.Int32()), c.scale)
	case pqInt64:
		return pb.integer(v.Int64(), c.scale)
	case pqUint32:
		return pb.unsigned(uint64(v.Uint32()))
	case pqUint64:
		return pb.unsigned(v.Uint64())
	case pqFloat:
		return pb.float(float64(v.Float()), 32)
	case pqDouble:
		return pb.float(v.Double(), 64)
	case pqUUID:
		start := len(pb.arena)
		pb.arena = appendUUID(pb.arena, v.ByteArray())
		return Cell{Kind: CellString, Data: pb.arena[start:len(pb.arena):len(pb.arena)]}
	}
	return Cell{}
}

// Cell slots: the six fields in Row order, then the metadata columns.
const (
	slotID = iota
	slotTask
	slotFinal
	slotInitial
	slotOutput
	slotLog
	numFieldSlots
)

// fieldSlotNames returns the column names of the field slots.
func fieldSlotNames(f FieldNames) [numFieldSlots]string {
	return [numFieldSlots]string{f.ID, f.Task, f.Final, f.Initial, f.Output, f.Log}
}

// slotCell returns the cell of row that slot s names.
func slotCell(row *Row, s int) *Cell {
	switch s {
	case slotID:
		return &row.ID
	case slotTask:
		return &row.Task
	case slotFinal:
		return &row.Final
	case slotInitial:
		return &row.Initial
	case slotOutput:
		return &row.Output
	case slotLog:
		return &row.Log
	}
	return &row.Meta[s-numFieldSlots]
}

var cellBoolText = [2][]byte{[]byte("false"), []byte("true")}

// boolCell returns the CellBool for b; its Data is shared and read-only.
func boolCell(b bool) Cell {
	t := cellBoolText[0]
	if b {
		t = cellBoolText[1]
	}
	return Cell{Kind: CellBool, Data: t[:len(t):len(t)]}
}

// floatCell appends the text of f (of the given bit size) to arena and
// returns the cell for it: CellNumber with the shortest decimal text that
// reads back to f, without exponent; NaN and infinities, which no JSON
// number can spell, are CellString "NaN", "+Inf" or "-Inf".
func floatCell(arena []byte, f float64, bitSize int) ([]byte, Cell) {
	start := len(arena)
	kind := CellNumber
	if math.IsNaN(f) || math.IsInf(f, 0) {
		kind = CellString
	}
	arena = strconv.AppendFloat(arena, f, 'f', -1, bitSize)
	return arena, Cell{Kind: kind, Data: arena[start:len(arena):len(arena)]}
}

// appendDecimal appends the decimal text of unscaled×10^-scale, without
// trailing fractional zeros ("7", "1.5", "-0.05").
func appendDecimal(dst []byte, unscaled int64, scale int) []byte {
	u := uint64(unscaled)
	if unscaled < 0 {
		dst = append(dst, '-')
		u = -u
	}
	var buf [24]byte
	d := strconv.AppendUint(buf[:0], u, 10)
	pad := 0 // zeros between the point and the digits
	if len(d) > scale {
		dst = append(dst, d[:len(d)-scale]...)
		d = d[len(d)-scale:]
	} else {
		dst = append(dst, '0')
		pad = scale - len(d)
	}
	if d = bytes.TrimRight(d, "0"); len(d) > 0 {
		dst = append(dst, '.')
		for range pad {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	}
	return dst
}

// appendUUID appends the canonical text of a 16-byte UUID.
func appendUUID(dst, u []byte) []byte {
	const hex = "0123456789abcdef"
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hex[b>>4], hex[b&15])
	}
	return dst
}
