package columnar

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Reader reads one input unit (a file, or standard input) as a sequence of
// batches, in file order. Implementations own the batch buffers; a caller
// hands each batch back with Batch.Release when it is done with it.
type Reader interface {
	// Next returns the next batch of at most max rows. At the end of the
	// input it returns nil and io.EOF. Any other error is fatal for the
	// unit and names the file and, where known, the row group or byte
	// offset.
	Next(max int) (*Batch, error)
	// Rows returns the number of rows when the format records it (Parquet
	// and Arrow footers), else -1.
	Rows() int64
	// Close releases the file.
	Close() error
}

// Options tunes readers. The zero value works.
type Options struct {
	// Fields maps rollout fields to columns; empty names take the
	// standard ones.
	Fields FieldNames
	// MaxLineBytes bounds one JSON Lines line (0: 64 MiB).
	MaxLineBytes int
	// Columns, when not nil, names the metadata columns Parquet and Arrow
	// readers read; the others are skipped, never decoded. JSON Lines
	// lines are read whole.
	Columns []string
	// MaxBatchBytes, when positive, ends a JSON Lines batch once its
	// lines hold that many bytes (a batch holds at least one line), and a
	// released batch's buffer grown past twice that is not kept for the
	// next: a reader then holds a few such buffers, whatever its lines'
	// lengths.
	MaxBatchBytes int
	// Decoded, when set, wraps a JSON Lines stream after decompression,
	// before it is split into lines: it sees every byte the lines hold.
	Decoded func(io.Reader) io.Reader
	// Discarded, when set, is told of the bytes of a JSON Lines stream
	// dropped as they are read: those of lines longer than MaxLineBytes,
	// which no batch holds.
	Discarded func(n int)
	// ZstdMaxWindow bounds the window a zstd frame may ask the decoder to
	// keep (0: 128 MiB); a frame asking more is an error.
	ZstdMaxWindow int
	// StructNulls says what a null field of a struct inside a nested
	// Parquet or Arrow column is in the JSON value verifiers see: a
	// member with value null (the zero value) or no member at all.
	StructNulls StructNulls
	// Turns asks the readers of harnesses' logs (and of chat datasets
	// read in the messages format) to give each rollout its agent turns,
	// a member turns of its metadata (harness.Reader.SetTurns).
	Turns bool
}

// errReaderClosed is what Next returns after Close.
var errReaderClosed = errors.New("reader is closed")

// chunkSource is the part of a columnar reader that depends on the format:
// it walks the input's chunks (Parquet row groups, Arrow record batches)
// and converts their values into cells. chunkReader does the rest.
type chunkSource[H any] interface {
	// fill fills rows with the next rows of the current chunk, at most
	// len(rows), and returns how many it filled: 0 when the chunk is
	// exhausted (or before the first chunk). It appends to cb.held what
	// the cells point into.
	fill(rows []Row, cb *chunkBatch[H]) (int, error)
	// nextChunk moves to the next non-empty chunk; false at the end of
	// the input.
	nextChunk() (bool, error)
	// where names the current chunk in errors ("row group 3").
	where() string
}

// chunkReader is the skeleton the Parquet and Arrow readers share: the
// pool of reusable batches, the sticky error, the recovery from a decoder
// that panics on corrupt data, and the loop that fills a batch across
// chunks. H is what a batch keeps alive while its cells point into it (a
// Parquet page, an Arrow record batch); unhold drops one of them.
//
// Next is not safe for concurrent use; Release of its batches is.
type chunkReader[H any] struct {
	path      string
	metaNames []string
	// start and end are the file indexes of the first row read and of the
	// row after the last; end is -1 when the input does not record it.
	start, end int64
	// exact says that end is where the input ends (a Parquet footer, which
	// the reader checks), rather than only a size for batches (an Arrow
	// footer: the input ends where its record batches end).
	exact bool
	// aligned ends a batch at the end of each chunk instead of filling it
	// from the next: a stream's reader then returns the rows of a record
	// batch without waiting for the next one to arrive.
	aligned bool
	next    int64  // file index of the next row
	gen     uint64 // generation of the last batch handed out
	err     error  // sticky: every later Next returns it
	unhold  func(H)

	mu   sync.Mutex
	free []*chunkBatch[H]
}

// chunkBatch is a Batch with the buffers a chunkReader reuses with it.
type chunkBatch[H any] struct {
	b     Batch
	arena []byte // formatted numbers, UUIDs
	// side holds more arenas, for readers that fill columns in parallel
	// (pgNested).
	side [][]byte
	meta []Cell // one run of len(MetaNames) cells per row
	held []H    // what the cells point into, kept until Release
	gen  uint64 // generation: distinct for every hand-out
	out  bool   // handed out and not yet released
}

// Rows returns the number of rows the reader reads when the input records
// it (a Parquet footer, or its row-group range; an Arrow IPC file's record
// batch headers), else -1.
func (c *chunkReader[H]) Rows() int64 {
	if c.end < 0 {
		return -1
	}
	return c.end - c.start
}

// MetaNames returns the names of the metadata columns, in file order, as
// every batch's MetaNames holds them.
func (c *chunkReader[H]) MetaNames() []string { return c.metaNames }

// closed makes every later Next fail, unless it already does.
func (c *chunkReader[H]) closed() {
	if c.err == nil {
		c.err = errReaderClosed
	}
}

// nextBatch returns the next batch of at most limit rows (at least one),
// in file order, filled from src; a batch may span chunks, unless the
// reader is aligned. At the end of the input it returns nil and io.EOF. A
// panic of the decoder becomes an error naming the chunk; any error but
// io.EOF is sticky.
func (c *chunkReader[H]) nextBatch(limit int, src chunkSource[H]) (b *Batch, err error) {
	if c.err != nil {
		return nil, c.err
	}
	n := int64(max(limit, 1))
	if c.end >= 0 {
		left := c.end - c.next
		if left <= 0 && c.exact {
			return nil, io.EOF
		}
		n = min(n, max(left, 1))
	}
	cb := c.getBatch(int(n))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("read %s %s: corrupt data: %v", c.path, src.where(), p)
		}
		if err != nil {
			if err != io.EOF {
				c.err = err
			}
			cb.b.Rows = cb.b.Rows[:0]
			cb.b.Release()
			b = nil
		}
	}()
	rows := cb.b.Rows
	m := len(c.metaNames)
	for i := range rows {
		rows[i] = Row{Index: c.next + int64(i), Offset: -1, Meta: cb.meta[i*m : (i+1)*m : (i+1)*m]}
	}
	filled := 0
	for filled < len(rows) {
		k, err := src.fill(rows[filled:], cb)
		if err != nil {
			return nil, err
		}
		if k > 0 {
			filled += k
			continue
		}
		if c.aligned && filled > 0 {
			break
		}
		ok, err := src.nextChunk()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
	}
	if filled == 0 {
		return nil, io.EOF
	}
	cb.b.Rows = rows[:filled]
	c.next += int64(filled)
	return &cb.b, nil
}

// getBatch takes a batch from the free list (or makes one) sized for n
// rows, with a new generation.
func (c *chunkReader[H]) getBatch(n int) *chunkBatch[H] {
	c.mu.Lock()
	cb := popFree(&c.free)
	c.mu.Unlock()
	if cb == nil {
		cb = &chunkBatch[H]{}
		cb.b.MetaNames = c.metaNames
		cb.b.release = func(*Batch) { c.put(cb) }
	}
	c.gen++
	cb.gen = c.gen
	cb.out = true
	if cap(cb.b.Rows) < n {
		cb.b.Rows = make([]Row, n)
	}
	cb.b.Rows = cb.b.Rows[:n]
	if m := n * len(c.metaNames); cap(cb.meta) < m {
		cb.meta = make([]Cell, m)
	}
	cb.arena = cb.arena[:0]
	for i := range cb.side {
		cb.side[i] = cb.side[i][:0]
	}
	return cb
}

// put drops what a batch holds and returns it to the free list. A second
// release of the same batch is ignored.
func (c *chunkReader[H]) put(cb *chunkBatch[H]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !cb.out {
		return
	}
	cb.out = false
	var zero H
	for i, h := range cb.held {
		c.unhold(h)
		cb.held[i] = zero
	}
	cb.held = cb.held[:0]
	c.free = append(c.free, cb)
}

// popFree takes the most recently freed batch off a free list, or returns
// nil when it is empty. The caller holds the list's lock.
func popFree[T any](free *[]*T) *T {
	k := len(*free)
	if k == 0 {
		return nil
	}
	t := (*free)[k-1]
	(*free)[k-1] = nil
	*free = (*free)[:k-1]
	return t
}

// integer appends the text of a signed (or, with scale > 0, decimal)
// integer to the arena and returns its CellNumber.
func (cb *chunkBatch[H]) integer(v int64, scale int) Cell {
	start := len(cb.arena)
	if scale > 0 {
		cb.arena = appendDecimal(cb.arena, v, scale)
	} else {
		cb.arena = strconv.AppendInt(cb.arena, v, 10)
	}
	return cb.numberFrom(start)
}

// unsigned appends the text of an unsigned integer to the arena and
// returns its CellNumber.
func (cb *chunkBatch[H]) unsigned(v uint64) Cell {
	start := len(cb.arena)
	cb.arena = strconv.AppendUint(cb.arena, v, 10)
	return cb.numberFrom(start)
}

// float appends the text of f (of the given bit size) to the arena and
// returns its cell (see floatCell).
func (cb *chunkBatch[H]) float(f float64, bitSize int) Cell {
	var cell Cell
	cb.arena, cell = floatCell(cb.arena, f, bitSize)
	return cell
}

// numberFrom returns a CellNumber for the arena bytes after start.
func (cb *chunkBatch[H]) numberFrom(start int) Cell {
	return Cell{Kind: CellNumber, Data: cb.arena[start:len(cb.arena):len(cb.arena)]}
}
