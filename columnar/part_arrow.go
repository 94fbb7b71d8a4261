package columnar

import (
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
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
// were split across Write calls (SPEC 4.4).
//
// Nullability: a column that SPEC section 6 never allows to be null is
// declared non-nullable in Arrow and REQUIRED in Parquet; the nullable ones
// (verifier_id, passed, reward, error_kind, error, actual, expected and the
// keep columns) are nullable / OPTIONAL. Strings are Arrow utf8 and Parquet
// BYTE_ARRAY annotated STRING.
//
// Parquet dictionary encoding is kept for the categorical columns (task,
// verifier, status, error kind, source file, check id, label, kept
// metadata) and turned off for the unique or free-text ones (rollout_id,
// error, detail, actual, expected), which are left to zstd: for them a
// dictionary costs a hash lookup and an allocation per value and mostly
// falls back to plain encoding anyway.
//
// Rejected: parquet-go for the Parquet format. Its column writers cost
// less CPU per value, but it would need a second encoding path beside the
// Arrow one and an ordered group node for the schema (parquet.Group orders
// fields by name), while pqarrow already gives the exact physical and
// logical types both readers expect.

// rewardColumns names the fixed rewards columns in order (SPEC 6).
var rewardColumns = []string{
	"rollout_id", "task_id", "verifier_id", "status", "passed", "reward",
	"checks_total", "checks_passed", "required_total", "required_passed",
	"error_kind", "error", "source_file", "source_row",
}

// rewardsSchema returns the Arrow schema of the rewards table with the keep
// columns appended.
func rewardsSchema(keep []string) *arrow.Schema {
	str := arrow.BinaryTypes.String
	i32 := arrow.PrimitiveTypes.Int32
	fields := []arrow.Field{
		{Name: "rollout_id", Type: str},
		{Name: "task_id", Type: str},
		{Name: "verifier_id", Type: str, Nullable: true},
		{Name: "status", Type: str},
		{Name: "passed", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "reward", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "checks_total", Type: i32},
		{Name: "checks_passed", Type: i32},
		{Name: "required_total", Type: i32},
		{Name: "required_passed", Type: i32},
		{Name: "error_kind", Type: str, Nullable: true},
		{Name: "error", Type: str, Nullable: true},
		{Name: "source_file", Type: str},
		{Name: "source_row", Type: arrow.PrimitiveTypes.Int64},
	}
	for _, k := range keep {
		fields = append(fields, arrow.Field{Name: k, Type: str, Nullable: true})
	}
	return arrow.NewSchema(fields, nil)
}

// checksSchema returns the Arrow schema of the checks table.
func checksSchema() *arrow.Schema {
	str := arrow.BinaryTypes.String
	return arrow.NewSchema([]arrow.Field{
		{Name: "rollout_id", Type: str},
		{Name: "task_id", Type: str},
		{Name: "verifier_id", Type: str, Nullable: true},
		{Name: "check_index", Type: arrow.PrimitiveTypes.Int32},
		{Name: "check_id", Type: str},
		{Name: "label", Type: str},
		{Name: "required", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "status", Type: str},
		{Name: "detail", Type: str},
		{Name: "actual", Type: str, Nullable: true},
		{Name: "expected", Type: str, Nullable: true},
	}, nil)
}

// batchSink writes record batches of one table to a file.
type batchSink interface {
	// write writes rec as one row group or record batch.
	write(rec arrow.RecordBatch) error
	// close writes the footer. It does not close the underlying writer.
	close() error
}

// newBatchSink starts a file of schema in opts.Format on w. In Parquet the
// columns named in noDict are written without a dictionary.
func newBatchSink(w io.Writer, schema *arrow.Schema, noDict []string, opts PartOptions) (batchSink, error) {
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

// arrowTable buffers up to max rows of one table in Arrow builders.
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
type arrowTable struct {
	rb       *array.RecordBuilder
	sink     batchSink
	n        int   // rows in the builders
	max      int   // rows per batch
	presize  bool  // reserve prevRows and prevData at the start of a batch
	prevRows int   // rows in the previous batch
	prevData []int // bytes of each string column in the previous batch
}

func newArrowTable(rb *array.RecordBuilder, sink batchSink, opts PartOptions) arrowTable {
	return arrowTable{rb: rb, sink: sink, max: opts.RowGroupRows, presize: opts.Format == FormatParquet}
}

// room returns how many rows fit before the batch is full, presizing the
// builders when a batch starts.
func (t *arrowTable) room() int {
	if t.n == 0 && t.presize && t.prevRows > 0 {
		t.rb.Reserve(t.prevRows)
		for i, f := range t.rb.Fields() {
			if sb, ok := f.(*array.StringBuilder); ok {
				sb.ReserveData(t.prevData[i])
			}
		}
	}
	return t.max - t.n
}

// added records that n rows were appended and writes the batch when full.
func (t *arrowTable) added(n int) error {
	t.n += n
	if t.n < t.max {
		return nil
	}
	return t.flush()
}

// flush writes the buffered rows, if any, as one batch.
func (t *arrowTable) flush() error {
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
	rec := t.rb.NewRecordBatch()
	defer rec.Release()
	t.n = 0
	return t.sink.write(rec)
}

func (t *arrowTable) finish() error {
	if err := t.flush(); err != nil {
		return err
	}
	return t.sink.close()
}

// release frees the builders and ends an asynchronous sink's goroutine.
func (t *arrowTable) release() {
	if a, ok := t.sink.(*asyncSink); ok {
		a.shutdown()
	}
	t.rb.Release()
}

// arrowRewards appends rewards rows to the rewards builders.
type arrowRewards struct {
	arrowTable
	rolloutID, taskID, verifierID, status *array.StringBuilder
	passed                                *array.BooleanBuilder
	reward                                *array.Float64Builder
	checksTotal, checksPassed             *array.Int32Builder
	requiredTotal, requiredPassed         *array.Int32Builder
	errorKind, errorMsg, sourceFile       *array.StringBuilder
	sourceRow                             *array.Int64Builder
	keep                                  []*array.StringBuilder
}

func newArrowRewards(w io.Writer, opts PartOptions) (*arrowRewards, error) {
	schema := rewardsSchema(opts.Keep)
	sink, err := newBatchSink(w, schema, []string{"rollout_id", "error"}, opts)
	if err != nil {
		return nil, err
	}
	rb := array.NewRecordBuilder(opts.alloc, schema)
	f := rb.Fields()
	a := &arrowRewards{
		arrowTable:     newArrowTable(rb, sink, opts),
		rolloutID:      f[0].(*array.StringBuilder),
		taskID:         f[1].(*array.StringBuilder),
		verifierID:     f[2].(*array.StringBuilder),
		status:         f[3].(*array.StringBuilder),
		passed:         f[4].(*array.BooleanBuilder),
		reward:         f[5].(*array.Float64Builder),
		checksTotal:    f[6].(*array.Int32Builder),
		checksPassed:   f[7].(*array.Int32Builder),
		requiredTotal:  f[8].(*array.Int32Builder),
		requiredPassed: f[9].(*array.Int32Builder),
		errorKind:      f[10].(*array.StringBuilder),
		errorMsg:       f[11].(*array.StringBuilder),
		sourceFile:     f[12].(*array.StringBuilder),
		sourceRow:      f[13].(*array.Int64Builder),
	}
	for _, b := range f[len(rewardColumns):] {
		a.keep = append(a.keep, b.(*array.StringBuilder))
	}
	return a, nil
}

func (a *arrowRewards) writeRewards(rows []RewardRow) error {
	for len(rows) > 0 {
		chunk := rows[:min(len(rows), a.room())]
		rows = rows[len(chunk):]
		for i := range chunk {
			a.append(&chunk[i])
		}
		if err := a.added(len(chunk)); err != nil {
			return err
		}
	}
	return nil
}

func (a *arrowRewards) append(r *RewardRow) {
	a.rolloutID.Append(r.RolloutID)
	a.taskID.Append(r.TaskID)
	appendNullString(a.verifierID, r.VerifierID)
	a.status.Append(r.Status)
	if r.PassedValid {
		a.passed.Append(r.Passed)
	} else {
		a.passed.AppendNull()
	}
	if r.RewardValid {
		a.reward.Append(r.Reward)
	} else {
		a.reward.AppendNull()
	}
	a.checksTotal.Append(r.ChecksTotal)
	a.checksPassed.Append(r.ChecksPassed)
	a.requiredTotal.Append(r.RequiredTotal)
	a.requiredPassed.Append(r.RequiredPassed)
	appendNullString(a.errorKind, r.ErrorKind)
	appendNullString(a.errorMsg, r.Error)
	a.sourceFile.Append(r.SourceFile)
	a.sourceRow.Append(r.SourceRow)
	for i, b := range a.keep {
		if i < len(r.Keep) {
			appendNullString(b, r.Keep[i])
		} else {
			b.AppendNull()
		}
	}
}

// arrowChecks appends checks rows to the checks builders.
type arrowChecks struct {
	arrowTable
	rolloutID, taskID, verifierID    *array.StringBuilder
	checkIndex                       *array.Int32Builder
	checkID, label                   *array.StringBuilder
	required                         *array.BooleanBuilder
	status, detail, actual, expected *array.StringBuilder
}

func newArrowChecks(w io.Writer, opts PartOptions) (*arrowChecks, error) {
	schema := checksSchema()
	sink, err := newBatchSink(w, schema, []string{"rollout_id", "detail", "actual", "expected"}, opts)
	if err != nil {
		return nil, err
	}
	rb := array.NewRecordBuilder(opts.alloc, schema)
	f := rb.Fields()
	return &arrowChecks{
		arrowTable: newArrowTable(rb, sink, opts),
		rolloutID:  f[0].(*array.StringBuilder),
		taskID:     f[1].(*array.StringBuilder),
		verifierID: f[2].(*array.StringBuilder),
		checkIndex: f[3].(*array.Int32Builder),
		checkID:    f[4].(*array.StringBuilder),
		label:      f[5].(*array.StringBuilder),
		required:   f[6].(*array.BooleanBuilder),
		status:     f[7].(*array.StringBuilder),
		detail:     f[8].(*array.StringBuilder),
		actual:     f[9].(*array.StringBuilder),
		expected:   f[10].(*array.StringBuilder),
	}, nil
}

func (a *arrowChecks) writeChecks(rows []CheckRow) error {
	for len(rows) > 0 {
		chunk := rows[:min(len(rows), a.room())]
		rows = rows[len(chunk):]
		for i := range chunk {
			a.append(&chunk[i])
		}
		if err := a.added(len(chunk)); err != nil {
			return err
		}
	}
	return nil
}

func (a *arrowChecks) append(r *CheckRow) {
	a.rolloutID.Append(r.RolloutID)
	a.taskID.Append(r.TaskID)
	appendNullString(a.verifierID, r.VerifierID)
	a.checkIndex.Append(r.CheckIndex)
	a.checkID.Append(r.CheckID)
	a.label.Append(r.Label)
	a.required.Append(r.Required)
	a.status.Append(r.Status)
	a.detail.Append(r.Detail)
	appendNullString(a.actual, r.Actual)
	appendNullString(a.expected, r.Expected)
}

func appendNullString(b *array.StringBuilder, s NullString) {
	if s.Valid {
		b.Append(s.S)
	} else {
		b.AppendNull()
	}
}
