package columnar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pqarrowfmt "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqgo "github.com/parquet-go/parquet-go"
)

// pqNested reads the nested columns of a Parquet file (groups and
// repeated columns) through arrow-go's pqarrow, which assembles their
// repetition and definition levels into Arrow arrays, in step with the
// row groups the ParquetReader reads; their values are rendered as JSON
// text (arrowCol). Flat columns stay on the ParquetReader's own path.
//
// Only the leaf columns the plan needs are read: a mapped field inside a
// struct column (COL.PATH) reads the leaves under PATH alone. Record
// batches are rendered, not retained: every cell they give is copied or
// rendered into the batch's arena, so a record batch is dropped as soon as
// its rows are filled.
//
// pqarrow assembles the record batches ahead of fill in a goroutine of its
// own (readAhead), up to pqNestedAhead of them, so that decoding the leaves
// overlaps rendering and grading; it ends after the last row group or at
// close, which waits for it.
type pqNested struct {
	pf     *file.Reader
	fr     *pqarrow.FileReader
	schema *arrow.Schema
	cols   []*arrowCol
	tops   []int                  // the top-level field each column is in, by cols index
	fields []*pqarrow.SchemaField // each column's field, by cols index
	leaves []int                  // leaf columns to read
	nulls  StructNulls            // how the columns render null struct fields

	// The page reader, when it reads every column (pgPlan): then the
	// pqarrow fields below stay unused. pgFile and pgGroups are the
	// ParquetReader's parquet-go file and row groups.
	pg       *pgNested
	pgFile   *pqgo.File
	pgGroups []pqgo.RowGroup
	started  bool

	rr   pqarrow.RecordReader // nil before the first fill
	recs chan pqRecord        // from readAhead; closed after the last
	stop chan struct{}        // closed by close to end readAhead
	done chan struct{}        // closed when readAhead has returned
	rec  arrow.RecordBatch    // current record batch, retained
	pos  int64                // next row of rec
}

// pqRecord is a record batch readAhead assembled, or the error that ended
// it.
type pqRecord struct {
	rec arrow.RecordBatch
	err error
}

const (
	// pqNestedBatchRows is how many rows pqarrow assembles at a time.
	pqNestedBatchRows = 256
	// pqNestedAhead is how many record batches readAhead may hold ready.
	pqNestedAhead = 2
)

// openPQNested reads the footer of the Parquet file f, of size bytes, for
// pqarrow, and its Arrow schema.
func openPQNested(f io.ReaderAt, size int64) (n *pqNested, err error) {
	// arrow-go panics on some damaged footers (an invalid logical type).
	defer func() {
		if p := recover(); p != nil {
			n, err = nil, fmt.Errorf("corrupt parquet footer: %v", p)
		}
	}()
	props := pqarrowfmt.NewReaderProperties(memory.DefaultAllocator)
	props.BufferedStreamEnabled = true
	props.BufferSize = 256 << 10
	pf, err := file.NewParquetReader(io.NewSectionReader(f, 0, size), file.WithReadProps(props))
	if err != nil {
		return nil, err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: pqNestedBatchRows}, new(poolAllocator))
	if err != nil {
		return nil, err
	}
	schema, err := fr.Schema()
	if err != nil {
		return nil, err
	}
	return &pqNested{pf: pf, fr: fr, schema: schema}, nil
}

// readDict reopens n.fr so that the string leaves of the initial state's
// column that are dictionary-encoded in row groups first through end-1
// are read as Arrow dictionary arrays: their values are not copied row by
// row, and the memo keys a state by dictionary indices (nestedMemo).
// Leaves with plain pages stay plain strings: a dictionary array of them
// would copy every value seen so far into each record batch.
func (n *pqNested) readDict(first, end int) error {
	props := pqarrow.ArrowReadProperties{BatchSize: pqNestedBatchRows}
	dict := false
	for i, c := range n.cols {
		if !slices.Contains(c.slots, slotInitial) {
			continue
		}
		for _, leaf := range appendLeaves(nil, n.fields[i]) {
			if n.pf.MetaData().Schema.Column(leaf).PhysicalType() == pqarrowfmt.Types.ByteArray && dictEncoded(n.pf, leaf, first, end) {
				props.SetReadDict(leaf, true)
				dict = true
			}
		}
	}
	if !dict {
		return nil
	}
	fr, err := pqarrow.NewFileReader(n.pf, props, new(poolAllocator))
	if err != nil {
		return err
	}
	n.fr = fr
	return nil
}

// dictEncoded reports whether leaf column leaf has all its data pages
// dictionary-encoded in row groups first through end-1 (when the footer
// lists the pages' encodings; otherwise whether it has a dictionary).
func dictEncoded(pf *file.Reader, leaf, first, end int) bool {
	for g := first; g < end; g++ {
		cc, err := pf.MetaData().RowGroup(g).ColumnChunk(leaf)
		if err != nil || !cc.HasDictionaryPage() {
			return false
		}
		for _, st := range cc.EncodingStats() {
			switch st.Encoding {
			case pqarrowfmt.Encodings.RLEDict, pqarrowfmt.Encodings.PlainDict:
			default:
				if int(st.PageType) != pageTypeDictionary {
					return false
				}
			}
		}
	}
	return true
}

// pageTypeDictionary is the Parquet page type of a dictionary page, whose
// own encoding is plain.
const pageTypeDictionary = 2

// add plans column top (a top-level field index), or with path the field
// inside it, into slots; name is how errors name it. It reports false
// when gavel cannot render the value's type.
func (n *pqNested) add(name string, top int, path []string, slots []int) (bool, error) {
	field := &n.fr.Manifest.Fields[top]
	dt, at := field.Field.Type, field.Field.Name
	for _, step := range path {
		if _, ok := dt.(*arrow.StructType); !ok {
			return false, fmt.Errorf("%q is not in the schema: %q is a %s, not a struct", name, at, dt)
		}
		var next *pqarrow.SchemaField
		for k := range field.Children {
			if field.Children[k].Field.Name == step {
				next = &field.Children[k]
				break
			}
		}
		if next == nil {
			return false, fmt.Errorf("%q is not in the schema: struct %q has no field %q", name, at, step)
		}
		field, dt, at = next, next.Field.Type, at+"."+step
	}
	flat := arrowSupported(dt)
	if !flat && !jsonSupported(dt) {
		return false, nil
	}
	n.cols = append(n.cols, &arrowCol{name: name, path: path, slots: slots, nested: !flat, nulls: n.nulls})
	n.tops = append(n.tops, top)
	n.fields = append(n.fields, field)
	n.leaves = appendLeaves(n.leaves, field)
	return true, nil
}

// appendLeaves appends the leaf column indexes under f.
func appendLeaves(dst []int, f *pqarrow.SchemaField) []int {
	if f.IsLeaf() {
		return append(dst, f.ColIndex)
	}
	for k := range f.Children {
		dst = appendLeaves(dst, &f.Children[k])
	}
	return dst
}

// start begins reading row groups first through end-1. The record
// batches hold the top-level fields that have a leaf read, in schema
// order: each column's index is its field's rank among them.
func (n *pqNested) start(first, end int) error {
	slices.Sort(n.leaves)
	n.leaves = slices.Compact(n.leaves)
	tops := slices.Clone(n.tops)
	slices.Sort(tops)
	tops = slices.Compact(tops)
	for i, c := range n.cols {
		c.index, _ = slices.BinarySearch(tops, n.tops[i])
	}
	n.started = true
	if n.pgFile != nil {
		if n.pg = pgPlan(n.pgFile, n, n.pgGroups[first:end]); n.pg != nil {
			return nil
		}
	}
	if err := n.readDict(first, end); err != nil {
		return err
	}
	groups := make([]int, 0, end-first)
	for g := first; g < end; g++ {
		groups = append(groups, g)
	}
	rr, err := n.fr.GetRecordReader(context.Background(), n.leaves, groups)
	if err != nil {
		return err
	}
	n.rr = rr
	n.recs = make(chan pqRecord, pqNestedAhead)
	n.stop, n.done = make(chan struct{}), make(chan struct{})
	go n.readAhead()
	return nil
}

// readAhead sends the record batches of n.rr, retained, until the last or
// until stop is closed; a failure, or a panic of the decoder on a corrupt
// file, is sent as an error and ends it.
func (n *pqNested) readAhead() {
	defer close(n.done)
	defer close(n.recs)
	send := func(r pqRecord) bool {
		select {
		case n.recs <- r:
			return true
		case <-n.stop:
			if r.rec != nil {
				r.rec.Release()
			}
			return false
		}
	}
	defer func() {
		if p := recover(); p != nil {
			send(pqRecord{err: fmt.Errorf("corrupt nested column: %v", p)})
		}
	}()
	for n.rr.Next() {
		rec := n.rr.RecordBatch()
		rec.Retain()
		if !send(pqRecord{rec: rec}) {
			return
		}
	}
	if err := n.rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		send(pqRecord{err: err})
	}
}

// fill fills the nested columns of rows, the next rows of the file.
func (n *pqNested) fill(rows []Row, cb *pqBatch) error {
	if n.pg != nil {
		return n.pg.fill(rows, cb)
	}
	for done := 0; done < len(rows); {
		if n.rec == nil || n.pos == n.rec.NumRows() {
			if n.rec != nil {
				n.rec.Release()
				n.rec = nil
			}
			r, ok := <-n.recs
			switch {
			case !ok:
				return errors.New("nested columns end before the row groups")
			case r.err != nil:
				return fmt.Errorf("nested columns: %w", r.err)
			}
			n.rec, n.pos = r.rec, 0
			for _, c := range n.cols {
				c.bind(n.rec)
			}
		}
		k := int(min(int64(len(rows)-done), n.rec.NumRows()-n.pos))
		fillCols(n.cols, rows[done:done+k], int(n.pos), cb, true)
		done += k
		n.pos += int64(k)
	}
	return nil
}

// close ends readAhead and releases the record batches and the record
// reader.
func (n *pqNested) close() {
	if n.pg != nil {
		n.pg.close()
		n.pg = nil
	}
	if n.rr == nil {
		return
	}
	close(n.stop)
	<-n.done
	for r := range n.recs {
		if r.rec != nil {
			r.rec.Release()
		}
	}
	if n.rec != nil {
		n.rec.Release()
	}
	n.rr.Release()
	n.rr, n.rec = nil, nil
}
