package columnar

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// DefaultMaxLineBytes bounds one JSON Lines line when Options.MaxLineBytes
// is 0.
const DefaultMaxLineBytes = 64 << 20

// zstdMaxWindow bounds the memory a zstd frame may ask the decoder for.
const zstdMaxWindow = 128 << 20

// JSONLReader reads JSON Lines, plain or compressed (zstd, gzip), in
// batches of raw lines. It does not parse the lines: DecodeLine does that
// in the grading workers, so that the single reading goroutine only
// decompresses and splits.
//
// Each batch owns one arena that holds its lines back to back; lines are
// copied once, from the decompressor's buffer into the arena, and every
// later reader (the line index, the state views) reads them in place.
type JSONLReader struct {
	path    string
	br      *bufio.Reader
	closers []io.Closer
	maxLine int
	// maxBatch ends a batch at this many bytes (0: no bound); see
	// Options.MaxBatchBytes.
	maxBatch int
	// discarded is Options.Discarded (nil: none).
	discarded func(n int)

	line int64 // index of the next line
	off  int64 // byte offset of the next line in the decompressed stream
	err  error // sticky error

	mu   sync.Mutex
	free []*Batch
}

// OpenJSONL opens a JSON Lines file; a name ending in .zst or .gz is
// decompressed.
func OpenJSONL(path string, opts Options) (*JSONLReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewJSONLReader(path, f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closers = append(r.closers, f)
	return r, nil
}

// NewJSONLReader reads JSON Lines from r; name is used in errors and picks
// the decompressor by its extension. Closing the reader does not close r.
func NewJSONLReader(name string, r io.Reader, opts Options) (*JSONLReader, error) {
	jr := &JSONLReader{path: name, maxLine: opts.MaxLineBytes, maxBatch: opts.MaxBatchBytes, discarded: opts.Discarded}
	if jr.maxLine <= 0 {
		jr.maxLine = DefaultMaxLineBytes
	}
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, ".zst"):
		window := uint64(zstdMaxWindow)
		if opts.ZstdMaxWindow > 0 {
			window = uint64(opts.ZstdMaxWindow)
		}
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(window), zstd.WithDecoderMaxMemory(1<<40))
		if err != nil {
			return nil, fmt.Errorf("open %s: zstd: %w", name, err)
		}
		r = zr
		jr.closers = append(jr.closers, closerFunc(func() error { zr.Close(); return nil }))
	case strings.HasSuffix(lower, ".gz"):
		gr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("open %s: gzip: %w", name, err)
		}
		r = gr
		jr.closers = append(jr.closers, gr)
	}
	if opts.Decoded != nil {
		r = opts.Decoded(r)
	}
	size := 1 << 20
	if jr.maxBatch > 0 {
		size = min(size, max(jr.maxBatch, 64<<10))
	}
	jr.br = bufio.NewReaderSize(r, size)
	// A leading UTF-8 byte order mark is not part of the first line (RFC
	// 8259 section 8.1 lets a parser skip it); offsets still count it.
	if p, _ := jr.br.Peek(len(utf8BOM)); string(p) == utf8BOM {
		jr.br.Discard(len(utf8BOM))
		jr.off = int64(len(utf8BOM))
	}
	return jr, nil
}

// utf8BOM is the UTF-8 encoding of U+FEFF, the byte order mark.
const utf8BOM = "\xef\xbb\xbf"

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// Offset returns the byte offset, in the decompressed stream, of the next
// line Next reads: the bytes the batches so far consumed, blank and
// too-long lines included.
func (r *JSONLReader) Offset() int64 { return r.off }

// Rows returns -1: a JSON Lines file does not record its length.
func (r *JSONLReader) Rows() int64 { return -1 }

// Close releases the file and the decompressor.
func (r *JSONLReader) Close() error {
	var first error
	for i := len(r.closers) - 1; i >= 0; i-- {
		if err := r.closers[i].Close(); err != nil && first == nil {
			first = err
		}
	}
	r.closers = nil
	return first
}

func (r *JSONLReader) getBatch() *Batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := popFree(&r.free); b != nil {
		return b
	}
	return &Batch{JSONLines: true, release: r.put}
}

func (r *JSONLReader) put(b *Batch) {
	for i := range b.Rows {
		b.Rows[i] = Row{}
	}
	b.Rows = b.Rows[:0]
	b.arena = b.arena[:0]
	if r.maxBatch > 0 && cap(b.arena) > 2*r.maxBatch {
		b.arena = nil // a long line's buffer is not kept
	}
	r.mu.Lock()
	r.free = append(r.free, b)
	r.mu.Unlock()
}

// Next returns the next batch of at most max non-blank lines (and, with
// Options.MaxBatchBytes, of about that many bytes).
func (r *JSONLReader) Next(max int) (*Batch, error) {
	if r.err != nil {
		return nil, r.err
	}
	if max <= 0 {
		max = 1
	}
	b := r.getBatch()
	type span struct{ start, end int }
	spans := b.spans[:0]
	for len(b.Rows) < max {
		start := len(b.arena)
		index, offset := r.line, r.off
		n, tooLong, err := r.readLine(&b.arena)
		if err == io.EOF && n == 0 {
			r.err = io.EOF
			break
		}
		if err != nil && err != io.EOF {
			r.err = fmt.Errorf("read %s line %d (byte offset %d): %w", r.path, index+1, offset, err)
			b.Release()
			return nil, r.err
		}
		r.line++
		r.off += int64(n)
		line := b.arena[start:]
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
		if !tooLong && len(bytes.TrimSpace(line)) == 0 {
			b.arena = b.arena[:start]
			if err == io.EOF {
				r.err = io.EOF
				break
			}
			continue
		}
		row := Row{Index: index, Offset: offset}
		if tooLong {
			row.Err = fmt.Errorf("line %d is longer than the limit of %d bytes", index+1, r.maxLine)
			b.arena = b.arena[:start]
			spans = append(spans, span{start, start})
		} else {
			spans = append(spans, span{start, start + len(line)})
		}
		b.Rows = append(b.Rows, row)
		if err == io.EOF {
			r.err = io.EOF
			break
		}
		if r.maxBatch > 0 && len(b.arena) >= r.maxBatch {
			break
		}
	}
	// The arena may have moved while it grew: take the line slices last.
	for i, s := range spans {
		b.Rows[i].Line = b.arena[s.start:s.end:s.end]
	}
	b.spans = spans[:0]
	if len(b.Rows) == 0 {
		b.Release()
		return nil, io.EOF
	}
	return b, nil
}

func (r *JSONLReader) discard(n int) {
	if r.discarded != nil && n > 0 {
		r.discarded(n)
	}
}

// readLine appends the next line, terminator included, to *dst and returns
// its length in the stream. A line longer than the limit is consumed but
// not kept (tooLong). err is io.EOF when the stream ended with this line.
//
// The terminator ("\n", "\r\n", or a final "\r") does not count: a line
// of exactly the limit is kept, one byte more is too long. While the line
// is read, more than limit+2 bytes are too long whatever ends them; once
// it is whole, its length without the terminator decides.
func (r *JSONLReader) readLine(dst *[]byte) (n int, tooLong bool, err error) {
	start := len(*dst)
	for {
		chunk, err := r.br.ReadSlice('\n')
		n += len(chunk)
		switch {
		case tooLong:
			r.discard(len(chunk))
		case n > r.maxLine+2:
			tooLong = true
			r.discard(len(*dst) - start + len(chunk))
			*dst = (*dst)[:start]
		default:
			*dst = append(*dst, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if !tooLong {
			line := bytes.TrimSuffix(bytes.TrimSuffix((*dst)[start:], []byte{'\n'}), []byte{'\r'})
			if len(line) > r.maxLine {
				tooLong = true
				r.discard(len(*dst) - start)
				*dst = (*dst)[:start]
			}
		}
		return n, tooLong, err
	}
}
