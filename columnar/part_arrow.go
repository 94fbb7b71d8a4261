package columnar

import (
	"bufio"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Parquet and Arrow parts share one set of Arrow builders per table: rows
// are appended to the builders, and every RowGroupRows rows the builders
// become one record batch, written either as one Parquet row group
// (pqarrow, serial row group: each column chunk goes to the file as soon as
// it is encoded) or as one Arrow IPC record batch. The last batch of a file
// holds the remaining rows. Row group boundaries therefore depend only on
// the row sequence, which keeps the files byte-identical however the rows
// were split across Write calls (results are byte-identical whatever
// --workers or --batch-size).
//
// Nullability: a column that docs/reference/outputs.md marks as never
// null is declared non-nullable in Arrow and REQUIRED in Parquet; the
// nullable ones and the keep columns are nullable / OPTIONAL. Strings are
// Arrow utf8 and Parquet BYTE_ARRAY annotated STRING. Both, and each
// column's Parquet encoding, are set by the tables' column lists
// (results.go).
//
// Parquet dictionary encoding is kept for the categorical columns (task,
// verifier, status, error kind, source file, check id, label, kept
// metadata) and turned off for the unique or free-text ones (rollout_id,
// error, detail, actual, expected), which are left to zstd: for them a
// dictionary costs a hash lookup and an allocation per value and mostly
// falls back to plain encoding anyway. The fixed categorical columns are
// handed to pqarrow as Arrow dictionary arrays that gavel builds itself
// (dictStrings), so that pqarrow writes their dictionaries and indices
// without hashing every value; the file is byte for byte the one pqarrow
// writes from plain strings. Kept metadata columns, whose values gavel
// does not know to be few, go through pqarrow's own dictionary encoder.
//
// Rejected: parquet-go for the Parquet format. Its column writers cost
// less CPU per value, but it would need a second encoding path beside the
// Arrow one and an ordered group node for the schema (parquet.Group orders
// fields by name), while pqarrow already gives the exact physical and
// logical types both readers expect.

// dictType is the Arrow type of the categorical string columns of Parquet
// parts (dictStrings).
var dictType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// batchSink writes record batches of one table to a file.
type batchSink interface {
	// write writes rec as one row group or record batch.
	write(rec arrow.RecordBatch) error
	// close writes the footer. It does not close the underlying writer.
	close() error
}

// newBatchSink starts a file of schema in opts.Format on w, or an Arrow
// IPC stream (formatArrowStream) whose record batches are flushed through
// w as they are written. In Parquet the columns named in noDict are
// written without a dictionary.
func newBatchSink(w io.Writer, schema *arrow.Schema, noDict []string, opts PartOptions) (batchSink, error) {
	if opts.Format == formatArrowStream {
		bw, ok := w.(*bufio.Writer)
		if !ok {
			bw = bufio.NewWriter(w)
		}
		return newStreamSink(bw, schema, opts), nil
	}
	if opts.Format == FormatArrow {
		// Uncompressed IPC: every Arrow reader can read it, and it can
		// be memory-mapped.
		fw, err := ipc.NewFileWriter(w, ipc.WithSchema(schema), ipc.WithAllocator(opts.alloc))
		if err != nil {
			return nil, err
		}
		return ipcSink{fw}, nil
	}
	props := []parquet.WriterProperty{
		parquet.WithAllocator(opts.alloc),
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(int64(opts.RowGroupRows)),
	}
	for _, c := range noDict {
		props = append(props, parquet.WithDictionaryFor(c, false))
	}
	fw, err := pqarrow.NewFileWriter(schema, w, parquet.NewWriterProperties(props...),
		pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(opts.alloc)))
	if err != nil {
		return nil, err
	}
	return newAsyncSink(parquetSink{fw}), nil
}

type ipcSink struct{ fw *ipc.FileWriter }

func (s ipcSink) write(rec arrow.RecordBatch) error { return s.fw.Write(rec) }
func (s ipcSink) close() error                      { return s.fw.Close() }

type parquetSink struct{ fw *pqarrow.FileWriter }

// asyncSink encodes record batches on a goroutine of its own, so that the
// rows of the next batch are appended while the previous batch is encoded
// and compressed (for Parquet, the costliest step of writing). The channel
// is unbuffered: at most one batch is being encoded while the builders
// fill, which bounds memory to two row groups per table. Batches are
// encoded one at a time in the order written, so the file is the same as
// with a synchronous sink.
type asyncSink struct {
	next batchSink
	recs chan arrow.RecordBatch
	done chan struct{}
	stop sync.Once

	mu  sync.Mutex
	err error // the first error of next.write
}

func newAsyncSink(next batchSink) *asyncSink {
	a := &asyncSink{next: next, recs: make(chan arrow.RecordBatch), done: make(chan struct{})}
	go a.run()
	return a
}

func (a *asyncSink) run() {
	defer close(a.done)
	for rec := range a.recs {
		if a.firstErr() == nil {
			if err := a.next.write(rec); err != nil {
				a.mu.Lock()
				a.err = err
				a.mu.Unlock()
			}
		}
		rec.Release()
	}
}

func (a *asyncSink) firstErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// write hands rec to the encoding goroutine (which releases it) and
// returns the error of an earlier batch, if any.
func (a *asyncSink) write(rec arrow.RecordBatch) error {
	if err := a.firstErr(); err != nil {
		return err
	}
	rec.Retain()
	a.recs <- rec
	return nil
}

// close waits for the batches written and writes the footer.
func (a *asyncSink) close() error {
	a.shutdown()
	if err := a.firstErr(); err != nil {
		return err
	}
	return a.next.close()
}

// shutdown ends the goroutine after the batches already handed over; it
// may be called more than once.
func (a *asyncSink) shutdown() {
	a.stop.Do(func() { close(a.recs) })
	<-a.done
}

// write writes rec as one row group: pqarrow starts a new row group on each
// Write of at most MaxRowGroupLength rows.
func (s parquetSink) write(rec arrow.RecordBatch) error { return s.fw.Write(rec) }
func (s parquetSink) close() error                      { return s.fw.Close() }

// arrowTable buffers up to max rows of one table, whose rows are R, in
// Arrow builders.
//
// Rows are appended one by one with the builders' checked Append methods
// and never with a Reserve sized by the caller's slice: the capacities a
// builder grows to, and so the lengths of the validity buffers written to
// an Arrow file, must depend only on the rows appended, not on how they
// arrived.
//
// For Parquet, where capacities never reach the file, each batch after the
// first is presized to the previous batch's rows and string bytes, which
// spares the builders' repeated doubling and copying. Arrow IPC does not
// presize: the builders' validity buffers are written as they are, and a
// short last batch would carry buffers sized for a full one.
type arrowTable[R any] struct {
	rb       *array.RecordBuilder
	sink     batchSink
	schema   *arrow.Schema  // of the batches written (dictionary columns in Parquet)
	dicts    []*dictStrings // by column: its dictionary builder, or nil
	add      []func(*R)     // by column: appends a row's value
	keys     []dictKey[R]   // the dictionary columns
	n        int            // rows in the builders
	max      int            // rows per batch
	presize  bool           // reserve prevRows and prevData at the start of a batch
	prevRows int            // rows in the previous batch
	prevData []int          // bytes of each string column in the previous batch
}

// dictKey is a dictionary column of a Parquet part and the way a row's
// value of it is read.
type dictKey[R any] struct {
	d   *dictStrings
	key func(*R) string
}

// newArrowTable starts a table of cols. In Parquet, the categorical
// columns are built as dictionaries (dictStrings), not in rb, and the
// plain ones are written without a dictionary.
func newArrowTable[R any](w io.Writer, cols []column[R], opts PartOptions) (*arrowTable[R], error) {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: c.nullable}
	}
	schema := arrow.NewSchema(fields, nil)
	t := &arrowTable[R]{schema: schema, max: opts.RowGroupRows, presize: opts.Format == FormatParquet}
	var noDict []string
	if opts.Format == FormatParquet {
		t.dicts = make([]*dictStrings, len(cols))
		written := make([]arrow.Field, len(fields))
		copy(written, fields)
		for i, c := range cols {
			switch c.enc {
			case pqCategorical:
				written[i].Type = dictType
				t.dicts[i] = newDictStrings(opts.alloc)
				t.keys = append(t.keys, dictKey[R]{t.dicts[i], c.key})
			case pqPlain:
				noDict = append(noDict, c.name)
			}
		}
		t.schema = arrow.NewSchema(written, nil)
	}
	sink, err := newBatchSink(w, t.schema, noDict, opts)
	if err != nil {
		t.releaseDicts()
		return nil, err
	}
	t.sink = sink
	t.rb = array.NewRecordBuilder(opts.alloc, schema)
	for i, c := range cols {
		var b columnBuilder = t.rb.Field(i)
		if t.dicts != nil && t.dicts[i] != nil {
			b = t.dicts[i]
		}
		t.add = append(t.add, c.bind(b))
	}
	return t, nil
}

// write appends rows, writing a batch whenever it is full. Before a row
// is appended, every dictionary column is checked (overflows), and the
// batch is written first if the row would take one past maxDictBytes.
func (t *arrowTable[R]) write(rows []R) error {
	for i := range rows {
		r := &rows[i]
		if t.n > 0 && t.dictFull(r) {
			if err := t.flush(); err != nil {
				return err
			}
		}
		t.beginRow()
		for _, add := range t.add {
			add(r)
		}
		if err := t.endRow(); err != nil {
			return err
		}
	}
	return nil
}

// dictFull reports whether r would take a dictionary column past
// maxDictBytes.
func (t *arrowTable[R]) dictFull(r *R) bool {
	for _, k := range t.keys {
		if overflows(k.d, k.key(r)) {
			return true
		}
	}
	return false
}

// overflows reports whether appending s to d would take d's dictionary
// past maxDictBytes. It is checked for every dictionary column of a row
// before the row is appended, and the batch is flushed first if any
// would: every row group's dictionaries then stay under Parquet's
// dictionary page limit, unless one row alone exceeds it. (pqarrow puts a
// dictionary array's whole dictionary first and then its indices in
// batches; a dictionary past the limit makes the column writer fall back
// to plain encoding between two batches, releasing the dictionary encoder
// the later batches were handed. It read back correctly when tried, but
// gavel does not depend on that path.)
func overflows(d *dictStrings, s string) bool {
	return d.bytes+len(s)+4 > maxDictBytes && !d.has(s)
}

// beginRow presizes the builders when a batch starts.
func (t *arrowTable[R]) beginRow() {
	if t.n == 0 && t.presize && t.prevRows > 0 {
		for i, f := range t.rb.Fields() {
			if t.dicts != nil && t.dicts[i] != nil {
				t.dicts[i].idx.Reserve(t.prevRows)
				continue
			}
			f.Reserve(t.prevRows)
			if sb, ok := f.(*array.StringBuilder); ok {
				sb.ReserveData(t.prevData[i])
			}
		}
	}
}

// endRow records that a row was appended and writes the batch when full.
func (t *arrowTable[R]) endRow() error {
	t.n++
	if t.n < t.max {
		return nil
	}
	return t.flush()
}

// flush writes the buffered rows, if any, as one batch.
func (t *arrowTable[R]) flush() error {
	if t.n == 0 {
		return nil
	}
	if t.presize {
		t.prevRows = t.n
		t.prevData = t.prevData[:0]
		for _, f := range t.rb.Fields() {
			d := 0
			if sb, ok := f.(*array.StringBuilder); ok {
				d = sb.DataLen()
			}
			t.prevData = append(t.prevData, d)
		}
	}
	var rec arrow.RecordBatch
	if t.dicts == nil {
		rec = t.rb.NewRecordBatch()
	} else {
		cols := make([]arrow.Array, len(t.dicts))
		for i, d := range t.dicts {
			if d != nil {
				cols[i] = d.newArray()
			} else {
				cols[i] = t.rb.Field(i).NewArray()
			}
		}
		rec = array.NewRecordBatch(t.schema, cols, int64(t.n))
		for _, c := range cols {
			c.Release()
		}
	}
	defer rec.Release()
	t.n = 0
	return t.sink.write(rec)
}

func (t *arrowTable[R]) finish() error {
	if err := t.flush(); err != nil {
		return err
	}
	return t.sink.close()
}

// release frees the builders and ends an asynchronous sink's goroutine.
func (t *arrowTable[R]) release() {
	if a, ok := t.sink.(*asyncSink); ok {
		a.shutdown()
	}
	t.rb.Release()
	t.releaseDicts()
}

func (t *arrowTable[R]) releaseDicts() {
	for _, d := range t.dicts {
		if d != nil {
			d.release()
		}
	}
}

// maxDictBytes bounds the dictionary a dictStrings column builds for one
// row group, as Parquet counts it (each value's bytes and 4), well under
// the dictionary page limit (1 MiB, parquet.DefaultDictionaryPageSizeLimit)
// past which the column writer falls back to plain encoding.
const maxDictBytes = 256 << 10

// dictStrings builds a string column of a Parquet part as an Arrow
// dictionary array: the distinct values in order of first appearance, and
// an index per row. pqarrow then writes the dictionary once per row group
// and the indices as they are, instead of hashing every value again in its
// dictionary encoder (whose hash table allocates on every lookup). Rows of
// a result table repeat their categorical values in runs (the checks of
// one rollout share its task and verifier), so a value equal to the
// previous row's needs no hash at all.
type dictStrings struct {
	idx     *array.Int32Builder
	values  *array.StringBuilder
	index   map[string]int32
	last    string
	lastIdx int32 // -1 when no row has been appended since the last batch
	bytes   int   // the dictionary's size as Parquet counts it
}

func newDictStrings(alloc memory.Allocator) *dictStrings {
	return &dictStrings{idx: array.NewInt32Builder(alloc), values: array.NewStringBuilder(alloc), index: map[string]int32{}, lastIdx: -1}
}

func (d *dictStrings) has(s string) bool {
	_, ok := d.index[s]
	return ok
}

func (d *dictStrings) Append(s string) {
	if d.lastIdx >= 0 && s == d.last {
		d.idx.Append(d.lastIdx)
		return
	}
	i, ok := d.index[s]
	if !ok {
		i = int32(len(d.index))
		d.index[s] = i
		d.values.Append(s)
		d.bytes += len(s) + 4
	}
	d.last, d.lastIdx = s, i
	d.idx.Append(i)
}

func (d *dictStrings) AppendNull() { d.idx.AppendNull() }

// newArray returns the rows appended as a dictionary array and starts the
// next batch with an empty dictionary.
func (d *dictStrings) newArray() arrow.Array {
	indices := d.idx.NewArray()
	values := d.values.NewArray()
	arr := array.NewDictionaryArray(dictType, indices, values)
	indices.Release()
	values.Release()
	clear(d.index)
	d.last, d.lastIdx, d.bytes = "", -1, 0
	return arr
}

func (d *dictStrings) release() {
	d.idx.Release()
	d.values.Release()
}
