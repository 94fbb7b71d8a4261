package columnar

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ArrowReader reads the rollout fields and the primitive metadata columns of
// an Arrow IPC file (.arrow, .feather v2) or, when the file magic is absent,
// an Arrow IPC stream; or an Arrow IPC stream on standard input, as it
// arrives. It implements Reader; make one with OpenArrow, or for standard
// input with DescribeStdin and Input.Open.
//
// Columns are picked as ParquetReader picks them: the six mapped fields (an
// absent one is CellNull in every row) and every other top-level column of a
// supported type as metadata. Supported types: string, large_string,
// string_view, binary, large_binary and binary_view (CellString); signed and
// unsigned integers, and the integer-backed date, time, timestamp and
// duration types as their underlying integer (CellNumber); float16, float32
// and float64 (CellNumber, shortest decimal text; NaN and infinities are
// CellString "NaN", "+Inf", "-Inf"); bool (CellBool); null (CellNull); and
// dictionaries of any of these.
//
// String and binary cells point into the record batch's buffers (no copy):
// each batch retains the record batches its rows come from and releases them
// in Batch.Release. Numbers are formatted into a per-batch arena that is
// reused.
//
// Next is not safe for concurrent use; Release of its batches is.
type ArrowReader struct {
	chunkReader[arrow.RecordBatch]
	f      File
	file   *ipc.FileReader // nil for a stream
	stream *ipc.Reader     // nil for a file
	cols   []*arrowCol

	rec    arrow.RecordBatch // current record batch (the reader's reference)
	recPos int64             // next row of rec
	recIdx int               // index of the next record batch of a file

	// in counts the bytes of a stream read as it arrives (standard input),
	// for the byte offsets of errors; nil otherwise.
	in *countingReader
	// ahead reads a stream on standard input one record batch ahead
	// (readAhead); nil before the first record batch and for files.
	ahead *streamAhead
}

// streamAhead is the goroutine that reads the record batches of a stream
// on standard input one ahead of the reader: a record batch's body crosses
// the pipe (about 110 MB for 10,000 rows of 5 KB states, tens of
// milliseconds of read calls) while the rows of the one before are graded,
// rather than while the workers wait for them. It holds at most one record
// batch the reader has not taken, besides the one it is reading.
type streamAhead struct {
	recs chan aheadRecord // closed after the last
	stop chan struct{}    // closed by Close
}

// aheadRecord is a non-empty record batch readAhead read, with the number
// of record batches read up to it, itself included (the reader's recIdx),
// or the error that ended the stream (rec nil), or its end (rec and err
// nil).
type aheadRecord struct {
	rec  arrow.RecordBatch
	read int
	err  error
}

// arrowBatch is a batch of an ArrowReader; it holds the record batches
// its cells point into.
type arrowBatch = chunkBatch[arrow.RecordBatch]

// OpenArrow opens the Arrow IPC file (or stream) at path and reads its
// schema, and for a file its footer. It fails with an error naming path when
// the file is neither, or maps a field to a column it cannot read.
func OpenArrow(path string, opts Options) (*ArrowReader, error) {
	return openArrow(path, opts, memory.NewGoAllocator())
}

// openArrow is OpenArrow with a chosen allocator for record batch buffers.
func openArrow(path string, opts Options, mem memory.Allocator) (*ArrowReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return newArrowReader(path, f, opts, mem)
}

// newArrowReader reads the Arrow IPC file or stream f, named path in
// errors. It takes f over: the reader closes it, and so does a failure.
func newArrowReader(path string, f File, opts Options, mem memory.Allocator) (*ArrowReader, error) {
	r := &ArrowReader{
		chunkReader: chunkReader[arrow.RecordBatch]{path: path, end: -1, unhold: arrow.RecordBatch.Release},
		f:           f,
	}
	ipcIn, err := openArrowIPC(f, mem)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	r.file, r.stream, r.end = ipcIn.file, ipcIn.stream, ipcIn.rows
	if err := r.planColumns(ipcIn.schema, opts); err != nil {
		r.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return r, nil
}

// arrowIPC is an Arrow IPC input opened for reading: a file (with its
// footer read) or a stream (with its schema message read).
type arrowIPC struct {
	file   *ipc.FileReader // nil for a stream
	stream *ipc.Reader     // nil for a file
	schema *arrow.Schema
	rows   int64 // from a file's record batch headers; -1 if unknown
}

// close releases the file or stream reader (not the file under it).
func (a *arrowIPC) close() {
	if a.file != nil {
		a.file.Close()
	}
	if a.stream != nil {
		a.stream.Release()
	}
}

// openArrowIPC reads the schema of the Arrow IPC file or stream f, and for
// a file its footer and the row count of its record batch headers.
func openArrowIPC(f File, mem memory.Allocator) (a arrowIPC, err error) {
	defer func() {
		if p := recover(); p != nil {
			a.close()
			a, err = arrowIPC{}, fmt.Errorf("corrupt arrow data: %v", p)
		}
	}()
	a.rows = -1
	st, err := f.Stat()
	if err != nil {
		return a, err
	}
	// No message can be larger than the file: the limits keep a damaged or
	// foreign file from asking for a huge buffer, and let through record
	// batches larger than arrow-go's default limit.
	size := st.Size()
	opts := []ipc.Option{
		ipc.WithAllocator(mem),
		ipc.WithMetadataSizeLimit(max(min(64<<20, size), 1)),
		ipc.WithBodySizeLimit(max(size, 1)),
	}
	var head [6]byte
	n, _ := f.ReadAt(head[:], 0)
	switch {
	case n == len(head) && string(head[:]) == "ARROW1":
		if a.file, err = ipc.NewFileReader(f, opts...); err != nil {
			return a, fmt.Errorf("not a valid arrow ipc file (truncated?): %w", err)
		}
		a.schema = a.file.Schema()
		if rows, ok := arrowFileRows(f, size); ok {
			a.rows = rows
		}
	case n >= 4 && string(head[:4]) == "FEA1":
		return a, errors.New("feather v1 files are not supported; rewrite as feather v2 (arrow ipc)")
	default:
		// NewReaderFromMessageReader, unlike NewReader, applies the limits.
		msgs := ipc.NewMessageReader(bufio.NewReaderSize(f, 1<<16), opts...)
		if a.stream, err = ipc.NewReaderFromMessageReader(msgs, opts...); err != nil { // releases msgs
			return a, fmt.Errorf("not an arrow ipc file or stream: %w", err)
		}
		a.schema = a.stream.Schema()
	}
	return a, nil
}

// planColumns picks the columns to read and where their cells go
// (planArrowCols): opts' fields, metadata columns and struct nulls.
func (r *ArrowReader) planColumns(schema *arrow.Schema, opts Options) error {
	cols, err := planArrowCols(schema, fieldSlotNames(opts.Fields.WithDefaults()), opts.Columns, &r.metaNames)
	for _, c := range cols {
		c.nulls = opts.StructNulls
	}
	r.cols = cols
	return err
}

// arrowSupported reports whether columns of type dt become cells.
func arrowSupported(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW,
		arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW,
		arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL, arrow.NULL,
		arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64,
		arrow.TIMESTAMP, arrow.DURATION:
		return true
	case arrow.DICTIONARY:
		vt := dt.(*arrow.DictionaryType).ValueType
		return vt.ID() != arrow.DICTIONARY && arrowSupported(vt)
	}
	return false
}

// Close releases the file and the reader's record batch. Batches already
// returned stay valid until they are released.
func (r *ArrowReader) Close() error {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.ahead != nil {
		// readAhead releases the stream, and the record batch it is
		// handing over, once its read returns; a read blocked on a pipe
		// is not waited for.
		close(r.ahead.stop)
		r.ahead = nil
	}
	if r.file != nil {
		r.file.Close()
		r.file = nil
	}
	if r.stream != nil {
		r.stream.Release()
		r.stream = nil
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
// order; a batch may span record batches, except on standard input
// (DescribeStdin), where each record batch ends a batch, marked
// EndsRecordBatch. At the end of the input it returns nil and io.EOF. The row count of a file's footer only sizes the batches:
// the input ends where its record batches end.
func (r *ArrowReader) Next(limit int) (*Batch, error) {
	b, err := r.nextBatch(limit, r)
	if b != nil {
		b.EndsRecordBatch = r.aligned && r.rec != nil && r.recPos == r.rec.NumRows()
	}
	return b, err
}

// fill reads up to len(rows) rows of the current record batch.
func (r *ArrowReader) fill(rows []Row, ab *arrowBatch) (int, error) {
	if r.rec == nil {
		return 0, nil
	}
	k := int(min(int64(len(rows)), r.rec.NumRows()-r.recPos))
	if k == 0 {
		return 0, nil
	}
	r.rec.Retain()
	ab.held = append(ab.held, r.rec)
	for _, c := range r.cols {
		if !c.simple() {
			fillCols([]*arrowCol{c}, rows[:k], int(r.recPos), ab, false)
			continue
		}
		arr := r.rec.Column(c.index)
		for j := range k {
			cell := arrowCell(ab, arr, int(r.recPos)+j)
			row := &rows[j]
			for _, s := range c.slots {
				*slotCell(row, s) = cell
			}
		}
	}
	r.recPos += int64(k)
	return k, nil
}

// where names the current record batch in errors.
func (r *ArrowReader) where() string { return fmt.Sprintf("record batch %d", r.recIdx-1) }

// nextChunk moves to the next non-empty record batch; false at the end.
func (r *ArrowReader) nextChunk() (bool, error) {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	r.recPos = 0
	if r.file != nil {
		for r.recIdx < r.file.NumRecords() {
			i := r.recIdx
			r.recIdx++
			rec, err := r.file.RecordBatchAt(i)
			if err != nil {
				return false, fmt.Errorf("read %s record batch %d: %w", r.path, i, err)
			}
			if rec.NumRows() == 0 {
				rec.Release()
				continue
			}
			r.setRecord(rec)
			return true, nil
		}
		return false, nil
	}
	if r.in != nil {
		return r.nextAhead()
	}
	for r.stream.Next() {
		r.recIdx++
		rec := r.stream.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		rec.Retain()
		r.setRecord(rec)
		return true, nil
	}
	if err := r.stream.Err(); err != nil {
		return false, fmt.Errorf("read %s record batch %d: %w", r.path, r.recIdx, err)
	}
	return false, nil
}

// nextAhead is nextChunk for a stream on standard input: it takes the next
// record batch from readAhead, starting it at the first call.
func (r *ArrowReader) nextAhead() (bool, error) {
	if r.ahead == nil {
		if r.stream == nil {
			return false, nil // ended
		}
		r.ahead = &streamAhead{recs: make(chan aheadRecord), stop: make(chan struct{})}
		go readAhead(r.stream, r.in, r.path, r.ahead)
		r.stream = nil // readAhead's to release
	}
	x, ok := <-r.ahead.recs
	if !ok || x.rec == nil {
		close(r.ahead.stop)
		r.ahead = nil
		return false, x.err
	}
	r.recIdx = x.read
	r.setRecord(x.rec)
	return true, nil
}

// readAhead reads the record batches of stream, a stream on standard input
// counted by in and named path in errors, into a.recs, retained, until the
// stream ends or a.stop is closed; then it closes a.recs and releases the
// stream. Errors name the byte offset of the message at fault.
func readAhead(stream *ipc.Reader, in *countingReader, path string, a *streamAhead) {
	defer stream.Release()
	defer close(a.recs)
	send := func(x aheadRecord) bool {
		select {
		case a.recs <- x:
			return true
		case <-a.stop:
			if x.rec != nil {
				x.rec.Release()
			}
			return false
		}
	}
	idx := 0
	at := in.n
	// arrow-go recovers from panics while decoding a message; anything
	// else that panics here is corrupt data too, and must not take the
	// process down from a goroutine no caller can recover in.
	defer func() {
		if p := recover(); p != nil {
			send(aheadRecord{err: fmt.Errorf("read %s: record batch %d at byte %d: corrupt data: %v", path, idx, at, p)})
		}
	}()
	for stream.Next() {
		at = in.n
		idx++
		rec := stream.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		rec.Retain()
		if !send(aheadRecord{rec: rec, read: idx}) {
			return
		}
	}
	var err error
	switch {
	case stream.Err() != nil:
		err = streamError(path, idx, at, stream.Err())
	case in.eof:
		err = fmt.Errorf("read %s: the stream ends at byte %d without its end-of-stream marker (cut short: its writer stopped before closing it)", path, in.n)
	}
	send(aheadRecord{err: err})
}

// setRecord makes rec the current record batch and binds the columns
// that are not flat top-level ones to it.
func (r *ArrowReader) setRecord(rec arrow.RecordBatch) {
	r.rec = rec
	for _, c := range r.cols {
		if !c.simple() {
			c.bind(rec)
		}
	}
}

// arrowCell converts row i of arr, formatting numbers into ab's arena.
func arrowCell[H any](ab *chunkBatch[H], arr arrow.Array, i int) Cell {
	if arr.IsNull(i) {
		return Cell{}
	}
	switch a := arr.(type) {
	case *array.String:
		offs := a.ValueOffsets()
		data := a.ValueBytes()
		return stringCell(data[offs[i]-offs[0] : offs[i+1]-offs[0]])
	case *array.LargeString:
		offs := a.ValueOffsets()
		data := a.ValueBytes()
		return stringCell(data[offs[i]-offs[0] : offs[i+1]-offs[0]])
	case *array.StringView:
		s := a.Value(i)
		return stringCell(unsafe.Slice(unsafe.StringData(s), len(s)))
	case *array.Binary:
		return stringCell(a.Value(i))
	case *array.LargeBinary:
		return stringCell(a.Value(i))
	case *array.BinaryView:
		return stringCell(a.Value(i))
	case *array.Boolean:
		return boolCell(a.Value(i))
	case *array.Int8:
		return ab.integer(int64(a.Value(i)), 0)
	case *array.Int16:
		return ab.integer(int64(a.Value(i)), 0)
	case *array.Int32:
		return ab.integer(int64(a.Value(i)), 0)
	case *array.Int64:
		return ab.integer(a.Value(i), 0)
	case *array.Uint8:
		return ab.unsigned(uint64(a.Value(i)))
	case *array.Uint16:
		return ab.unsigned(uint64(a.Value(i)))
	case *array.Uint32:
		return ab.unsigned(uint64(a.Value(i)))
	case *array.Uint64:
		return ab.unsigned(a.Value(i))
	case *array.Date32:
		return ab.integer(int64(a.Value(i)), 0)
	case *array.Date64:
		return ab.integer(int64(a.Value(i)), 0)
	case *array.Time32:
		return ab.integer(int64(a.Value(i)), 0)
	case *array.Time64:
		return ab.integer(int64(a.Value(i)), 0)
	case *array.Timestamp:
		return ab.integer(int64(a.Value(i)), 0)
	case *array.Duration:
		return ab.integer(int64(a.Value(i)), 0)
	case *array.Float16:
		return ab.float(float64(a.Value(i).Float32()), 32)
	case *array.Float32:
		return ab.float(float64(a.Value(i)), 32)
	case *array.Float64:
		return ab.float(a.Value(i), 64)
	case *array.Dictionary:
		return arrowCell(ab, a.Dictionary(), a.GetValueIndex(i))
	}
	return Cell{}
}

// stringCell returns a CellString over b, capped so appends cannot reach
// the bytes after it.
func stringCell(b []byte) Cell {
	return Cell{Kind: CellString, Data: b[:len(b):len(b)]}
}

// arrowFileRows sums the lengths of an Arrow IPC file's record batches by
// reading the footer and each batch's message header (not its body). The
// few flatbuffer fields needed are read by hand: arrow-go keeps its
// flatbuffer bindings internal.
func arrowFileRows(f io.ReaderAt, size int64) (int64, bool) {
	// File layout: "ARROW1\0\0", messages, footer, int32 footer length, "ARROW1".
	var tail [10]byte
	if size < int64(8+len(tail)) {
		return 0, false
	}
	if _, err := f.ReadAt(tail[:], size-int64(len(tail))); err != nil || string(tail[4:]) != "ARROW1" {
		return 0, false
	}
	flen := int64(int32(binary.LittleEndian.Uint32(tail[:4])))
	if flen <= 0 || flen > size-int64(len(tail))-8 {
		return 0, false
	}
	footer := make([]byte, flen)
	if _, err := f.ReadAt(footer, size-int64(len(tail))-flen); err != nil {
		return 0, false
	}
	root, ok := fbRoot(footer)
	if !ok {
		return 0, false
	}
	// Footer: version 0, schema 1, dictionaries 2, recordBatches 3.
	vec, n, ok := root.vector(3)
	if !ok {
		return 0, true // no record batches
	}
	const blockSize = 24 // Block struct: offset int64, metaDataLength int32, pad, bodyLength int64
	if vec+n*blockSize > len(footer) {
		return 0, false
	}
	var total int64
	var meta []byte
	for i := range n {
		blk := footer[vec+i*blockSize:]
		off := int64(binary.LittleEndian.Uint64(blk[0:]))
		mlen := int64(int32(binary.LittleEndian.Uint32(blk[8:])))
		if off < 0 || mlen < 8 || off+mlen > size {
			return 0, false
		}
		if int64(cap(meta)) < mlen {
			meta = make([]byte, mlen)
		}
		meta = meta[:mlen]
		if _, err := f.ReadAt(meta, off); err != nil {
			return 0, false
		}
		rows, ok := arrowMessageRows(meta)
		if !ok {
			return 0, false
		}
		total += rows
	}
	return total, true
}

// arrowMessageRows reads the length of the RecordBatch message in meta, the
// encapsulated message's prefix and flatbuffer.
func arrowMessageRows(meta []byte) (int64, bool) {
	body := meta[4:]
	if binary.LittleEndian.Uint32(meta) == 0xFFFFFFFF { // continuation marker
		body = meta[8:]
	}
	msg, ok := fbRoot(body)
	if !ok {
		return 0, false
	}
	// Message: version 0, header_type 1, header 2, bodyLength 3.
	const recordBatchHeader = 3
	if typ, ok := msg.scalar(1, 1); !ok || typ[0] != recordBatchHeader {
		return 0, false
	}
	hdr, ok := msg.table(2)
	if !ok {
		return 0, false
	}
	// RecordBatch: length 0.
	length, ok := hdr.scalar(0, 8)
	if !ok {
		return 0, true // absent: the default, 0 rows
	}
	return int64(binary.LittleEndian.Uint64(length)), true
}

// fbTable is a flatbuffer table: the buffer and the table's position.
type fbTable struct {
	buf []byte
	pos int
}

// fbRoot returns the root table of a flatbuffer.
func fbRoot(buf []byte) (fbTable, bool) {
	if len(buf) < 4 {
		return fbTable{}, false
	}
	return fbAt(buf, int(binary.LittleEndian.Uint32(buf)))
}

// fbAt returns the table at pos after checking its vtable lies in buf.
func fbAt(buf []byte, pos int) (fbTable, bool) {
	if pos < 0 || pos+4 > len(buf) {
		return fbTable{}, false
	}
	vt := pos - int(int32(binary.LittleEndian.Uint32(buf[pos:])))
	if vt < 0 || vt+4 > len(buf) {
		return fbTable{}, false
	}
	return fbTable{buf, pos}, true
}

// field returns the position of field i, or false when it is absent.
func (t fbTable) field(i int) (int, bool) {
	vt := t.pos - int(int32(binary.LittleEndian.Uint32(t.buf[t.pos:])))
	vtLen := int(binary.LittleEndian.Uint16(t.buf[vt:]))
	slot := 4 + 2*i
	if slot+2 > vtLen || vt+slot+2 > len(t.buf) {
		return 0, false
	}
	off := int(binary.LittleEndian.Uint16(t.buf[vt+slot:]))
	if off == 0 {
		return 0, false
	}
	return t.pos + off, true
}

// scalar returns the size bytes of scalar field i.
func (t fbTable) scalar(i, size int) ([]byte, bool) {
	p, ok := t.field(i)
	if !ok || p+size > len(t.buf) {
		return nil, false
	}
	return t.buf[p : p+size], true
}

// indirect follows the offset stored in field i.
func (t fbTable) indirect(i int) (int, bool) {
	p, ok := t.field(i)
	if !ok || p+4 > len(t.buf) {
		return 0, false
	}
	return p + int(binary.LittleEndian.Uint32(t.buf[p:])), true
}

// table returns the table field i points to.
func (t fbTable) table(i int) (fbTable, bool) {
	p, ok := t.indirect(i)
	if !ok {
		return fbTable{}, false
	}
	return fbAt(t.buf, p)
}

// vector returns the position of the first element of vector field i and
// its length.
func (t fbTable) vector(i int) (start, n int, ok bool) {
	p, ok := t.indirect(i)
	if !ok || p+4 > len(t.buf) {
		return 0, 0, false
	}
	return p + 4, int(binary.LittleEndian.Uint32(t.buf[p:])), true
}
