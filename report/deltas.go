package report

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/gavelhq/gavel/internal/kmerge"
)

// deltaRuns keeps the reward deltas of the pairs a diff joined in
// partitions, so that each verifier's deltas are summed in base order, the
// order of the aligned path and of earlier versions: a floating-point sum
// depends on its order, and the mean reward delta is printed to the last
// digit. A partition hands its pairs in base order, so each partition's
// records form a sorted run; the runs are written one after the other to
// a temporary file and merged by ordinal at the end, holding a small
// buffer per run.
type deltaRuns struct {
	dir   string
	f     *os.File
	w     *bufio.Writer
	runs  []int64 // each run's start offset
	part  int     // the partition of the last run
	bytes int64
}

// deltaSize is a record's size: the base ordinal, the verifier's index
// and the delta.
const deltaSize = 8 + 4 + 8

// add records one delta of the pair of the base row ordinal, joined in
// partition part.
func (r *deltaRuns) add(part int, ordinal int64, verifier int, delta float64) error {
	if r.f == nil {
		f, err := os.CreateTemp(r.dir, "gavel-deltas-")
		if err != nil {
			return fmt.Errorf("diff: %w", err)
		}
		os.Remove(f.Name()) // the open file lives on
		r.f, r.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	if len(r.runs) == 0 || part != r.part {
		r.runs = append(r.runs, r.bytes)
		r.part = part
	}
	var b [deltaSize]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(ordinal))
	binary.LittleEndian.PutUint32(b[8:], uint32(verifier))
	binary.LittleEndian.PutUint64(b[12:], math.Float64bits(delta))
	if _, err := r.w.Write(b[:]); err != nil {
		return fmt.Errorf("diff: write deltas: %w", err)
	}
	r.bytes += deltaSize
	return nil
}

// sum calls fn for every delta recorded, in ordinal order.
func (r *deltaRuns) sum(fn func(verifier int, delta float64)) error {
	if r.f == nil {
		return nil
	}
	if err := r.w.Flush(); err != nil {
		return fmt.Errorf("diff: write deltas: %w", err)
	}
	cursors := make([]*runCursor, len(r.runs))
	for i, start := range r.runs {
		end := r.bytes
		if i+1 < len(r.runs) {
			end = r.runs[i+1]
		}
		cursors[i] = &runCursor{r: bufio.NewReaderSize(io.NewSectionReader(r.f, start, end-start), 4<<10)}
	}
	return kmerge.Merge(cursors, (*runCursor).next,
		func(a, b *runCursor) bool { return a.ordinal < b.ordinal },
		func(c *runCursor) error { fn(c.verifier, c.delta); return nil })
}

func (r *deltaRuns) close() {
	if r.f != nil {
		r.f.Close()
	}
}

type runCursor struct {
	r        *bufio.Reader
	ordinal  int64
	verifier int
	delta    float64
}

func (c *runCursor) next() (bool, error) {
	var b [deltaSize]byte
	if _, err := io.ReadFull(c.r, b[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("diff: read deltas: %w", err)
	}
	c.ordinal = int64(binary.LittleEndian.Uint64(b[0:]))
	c.verifier = int(binary.LittleEndian.Uint32(b[8:]))
	c.delta = math.Float64frombits(binary.LittleEndian.Uint64(b[12:]))
	return true, nil
}
