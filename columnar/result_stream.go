package columnar

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DefaultStreamBatchRows is StreamOptions.BatchRows when it is 0.
const DefaultStreamBatchRows = 256

// formatArrowStream is the PartOptions.Format of a table written as an
// Arrow IPC stream (ResultStream); parts are never written in it.
const formatArrowStream = "arrow-stream"

// StreamOptions configures a ResultStream. Its zero value writes rewards
// without keep columns, in record batches of DefaultStreamBatchRows, to an
// output named "output", and leaves the checks out.
type StreamOptions struct {
	// Name names the rewards' writer in errors ("standard output").
	Name string
	// Keep names the kept metadata columns, as PartOptions.Keep does.
	Keep []string
	// Flags adds the columns of a run with flags, as PartOptions.Flags
	// does.
	Flags bool
	// Turns adds the columns of a run that scores turns, as
	// PartOptions.Turns does.
	Turns bool
	// BatchRows is the most rows of a rewards record batch (0:
	// DefaultStreamBatchRows).
	BatchRows int
	// ChecksPath, when set, is the Arrow IPC file the checks go into, with
	// the rows, schema and record batches of the checks part that
	// --format arrow writes for the same rows: under a temporary name,
	// renamed into place by Close. "" leaves the checks out.
	ChecksPath string

	// alloc backs the Arrow builders (memory.DefaultAllocator when nil).
	alloc memory.Allocator
}

// A ResultStream writes the rewards of a run as an Arrow IPC stream, and
// optionally its checks as an Arrow IPC file (StreamOptions.ChecksPath).
// The rewards have the schema and the rows, in order, of the rewards parts
// of --format arrow (the same table writer builds both); they leave in
// record batches of StreamOptions.BatchRows rows, or fewer where Flush
// ends one, and each record batch is written through to the underlying
// writer as soon as it is complete, so a reader has it while later rows
// are still being graded. Record batch boundaries depend only on the rows
// written and the Flush calls, never on how rows were split across Write
// calls.
//
// Memory is bounded by one record batch of rewards and one of checks,
// whatever the number of rows. A ResultStream is not safe for concurrent
// use; after a failed write it is unusable and every later call returns
// the error.
type ResultStream struct {
	name   string
	rw     *arrowTable[RewardRow]
	cw     *arrowTable[CheckRow] // nil when the checks are left out
	checks *partFile             // nil when the checks are left out
	keep   int
	err    error // sticky: the first write error
	closed bool
}

// NewResultStream starts a stream of rewards on w and, with
// opts.ChecksPath, the checks file, creating its directory. Nothing is
// written to w before the first record batch (or Close, for a stream of
// no rows).
func NewResultStream(w io.Writer, opts StreamOptions) (*ResultStream, error) {
	if opts.Name == "" {
		opts.Name = "output"
	}
	if opts.BatchRows < 0 {
		return nil, fmt.Errorf("stream to %s: negative record batch length %d", opts.Name, opts.BatchRows)
	}
	if opts.BatchRows == 0 {
		opts.BatchRows = DefaultStreamBatchRows
	}
	if opts.alloc == nil {
		opts.alloc = memory.DefaultAllocator
	}
	if err := checkKeep(opts.Keep, opts.Flags, opts.Turns); err != nil {
		return nil, fmt.Errorf("stream to %s: %w", opts.Name, err)
	}
	s := &ResultStream{name: opts.Name, keep: len(opts.Keep)}
	var err error
	if opts.ChecksPath != "" {
		dir, base := filepath.Split(opts.ChecksPath)
		if dir == "" {
			dir = "."
		}
		if s.checks, err = createPartFile(dir, base); err != nil {
			return nil, err
		}
		// The checks file is the checks part of --format arrow.
		if s.cw, err = newArrowTable(s.checks.bw, checksTable(opts.Flags, opts.Turns), PartOptions{Format: FormatArrow, RowGroupRows: defaultRowGroupRows, alloc: opts.alloc}); err != nil {
			s.checks.remove()
			return nil, fmt.Errorf("create %s: %w", opts.ChecksPath, err)
		}
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	s.rw, err = newArrowTable(bw, rewardsTable(opts.Keep, opts.Flags, opts.Turns), PartOptions{Format: formatArrowStream, RowGroupRows: opts.BatchRows, alloc: opts.alloc})
	if err != nil {
		s.Abort()
		return nil, fmt.Errorf("stream to %s: %w", opts.Name, err)
	}
	return s, nil
}

// WriteRewards appends rows to the rewards, sending each record batch
// that fills. A row's Keep holds at most one value per keep column.
func (s *ResultStream) WriteRewards(rows []RewardRow) error {
	if err := s.usable(); err != nil {
		return err
	}
	for i := range rows {
		if len(rows[i].Keep) > s.keep {
			s.err = fmt.Errorf("write rewards to %s: row %q has %d keep values for %d keep columns", s.name, rows[i].RolloutID, len(rows[i].Keep), s.keep)
			return s.err
		}
	}
	if err := s.rw.write(rows); err != nil {
		s.err = fmt.Errorf("write rewards to %s: %w", s.name, err)
		return s.err
	}
	return nil
}

// WriteChecks appends rows to the checks file; without one it does
// nothing.
func (s *ResultStream) WriteChecks(rows []CheckRow) error {
	if err := s.usable(); err != nil {
		return err
	}
	if s.cw == nil {
		return nil
	}
	if err := s.cw.write(rows); err != nil {
		s.err = pathErr("write", s.checks.final, err)
		return s.err
	}
	return nil
}

// Flush ends the rewards record batch being built, if it holds rows, and
// sends it.
func (s *ResultStream) Flush() error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := s.rw.flush(); err != nil {
		s.err = fmt.Errorf("write rewards to %s: %w", s.name, err)
		return s.err
	}
	return nil
}

func (s *ResultStream) usable() error {
	if s.err != nil {
		return s.err
	}
	if s.closed {
		return fmt.Errorf("write rewards to %s: the stream is closed", s.name)
	}
	return nil
}

// Close sends the last rewards and the end-of-stream marker, then
// completes the checks file and renames it into place. After a failed
// write it returns that error, ends nothing and removes the checks file.
// Close after Close or Abort returns an error and does nothing.
func (s *ResultStream) Close() error {
	if err := s.usable(); err != nil {
		s.Abort()
		return err
	}
	s.closed = true
	err := s.rw.finish()
	s.rw.release()
	if err != nil {
		err = fmt.Errorf("write rewards to %s: %w", s.name, err)
	}
	if s.cw == nil {
		return err
	}
	cErr := s.cw.finish()
	s.cw.release()
	if cErr != nil {
		cErr = pathErr("write", s.checks.final, cErr)
	} else {
		cErr = s.checks.close()
	}
	if err == nil {
		err = cErr
	}
	if err != nil {
		s.checks.remove()
		return err
	}
	return s.checks.f.Commit()
}

// Abort ends the stream without its end-of-stream marker, so that a
// reader sees it cut short, frees the buffered rows and removes the
// checks file. It does nothing after Close or Abort.
func (s *ResultStream) Abort() {
	if s.closed {
		return
	}
	s.closed = true
	if s.rw != nil {
		s.rw.release()
	}
	if s.cw != nil {
		s.cw.release()
	}
	s.checks.remove()
}

// streamSink writes record batches as an Arrow IPC stream, each flushed
// through to the underlying writer at once.
type streamSink struct {
	w  *ipc.Writer
	bw *bufio.Writer
}

// newStreamSink starts an Arrow IPC stream of schema on bw.
func newStreamSink(bw *bufio.Writer, schema *arrow.Schema, opts PartOptions) *streamSink {
	return &streamSink{w: ipc.NewWriter(bw, ipc.WithSchema(schema), ipc.WithAllocator(opts.alloc)), bw: bw}
}

func (s *streamSink) write(rec arrow.RecordBatch) error {
	if err := s.w.Write(rec); err != nil {
		return err
	}
	return s.bw.Flush()
}

// close writes the end-of-stream marker (and the schema, for a stream of
// no record batches) and flushes it.
func (s *streamSink) close() error {
	if err := s.w.Close(); err != nil {
		return err
	}
	return s.bw.Flush()
}
