package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"
)

// File is an object opened for reading, as an input file is: random
// access (io.ReaderAt) through range requests, and a sequential stream
// (io.Reader) through one request that is resumed where it broke.
//
// ReadAt reads in blocks of BlockSize, each fetched by one GET and kept
// (up to MaxBlocks, least recently used first out): the small reads of a
// Parquet reader, a page or a 64 KiB buffer at a time in each column
// chunk, are served from memory, neighbouring column chunks share the
// blocks that hold them (their requests are coalesced), and a read that
// goes past the middle of a block starts fetching the next block ahead
// so that a sequential reader does not wait on a round trip. A file of
// size S costs about S/BlockSize GETs read whole, and a unit of a Parquet
// file about its column chunks' bytes/BlockSize, never a GET per page.
//
// A request that fails, or a body that breaks off, is retried from where
// it stopped (Retries, RetryDelay); a read that keeps failing is an error
// naming the object and the byte range.
type File struct {
	src  source
	name string // redacted URL
	size int64
	etag string
	ctx  context.Context

	mu     sync.Mutex
	blocks map[int64]*block // by block index
	tick   uint64

	pos    int64 // of Read
	stream io.ReadCloser
}

// block is one BlockSize-aligned range of a File, fetched or being
// fetched.
type block struct {
	done chan struct{}
	data []byte
	err  error
	used uint64
}

// BlockSize and MaxBlocks tune File.ReadAt: the size of one range request
// and how many blocks a File keeps.
var (
	BlockSize int64 = 4 << 20
	MaxBlocks       = 24
)

// gets counts the GET requests of every File of the process.
var gets atomic.Int64

// Gets returns the number of range and stream GET requests made by Files
// of this process so far (retries included).
func Gets() int64 { return gets.Load() }

// source is where a File's bytes come from.
type source interface {
	// rangeReader returns the bytes from off on, n of them or to the end
	// when n is -1.
	rangeReader(ctx context.Context, off, n int64) (io.ReadCloser, error)
}

// OpenFile opens the object of the URL raw for reading; its size and ETag
// are read now and pinned: a read past the size is io.EOF. Close the File.
func OpenFile(ctx context.Context, raw string) (*File, error) {
	l, err := Open(ctx, raw)
	if err != nil {
		return nil, err
	}
	f := &File{name: Redact(raw), ctx: ctx, blocks: map[int64]*block{}}
	if l.bucket == nil {
		hs, err := newHTTPSource(raw)
		if err != nil {
			return nil, err
		}
		if f.size, f.etag, err = hs.stat(ctx); err != nil {
			return nil, err
		}
		f.src = hs
		return f, nil
	}
	if f.size, f.etag, err = l.Attributes(ctx, l.Key); err != nil {
		l.Close()
		return nil, err
	}
	f.src = &blobSource{l: l, key: l.Key}
	return f, nil
}

// blobSource reads an object of a bucket.
type blobSource struct {
	l   *Location
	key string
}

func (s *blobSource) rangeReader(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	r, err := s.l.bucket.NewRangeReader(ctx, s.key, off, n, nil)
	if err != nil {
		return nil, scrub(err, s.l.u.String())
	}
	return r, nil
}

// Name returns the redacted URL of the object.
func (f *File) Name() string { return f.name }

// Size returns the object's size in bytes.
func (f *File) Size() int64 { return f.size }

// ETag returns the object's ETag as read when it was opened ("" when the
// store gives none).
func (f *File) ETag() string { return f.etag }

// Stat returns the object's name and size, as os.File.Stat does.
func (f *File) Stat() (fs.FileInfo, error) { return fileInfo{f}, nil }

// Close releases the blocks and the stream.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blocks = map[int64]*block{}
	if f.stream != nil {
		f.stream.Close()
		f.stream = nil
	}
	if bs, ok := f.src.(*blobSource); ok {
		return bs.l.Close()
	}
	return nil
}

// ReadAt reads len(p) bytes from off, as io.ReaderAt does.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset", f.name)
	}
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= f.size {
			return n, io.EOF
		}
		idx := at / BlockSize
		b := f.block(idx)
		<-b.done
		if b.err != nil {
			return n, b.err
		}
		inBlock := at - idx*BlockSize
		c := copy(p[n:], b.data[inBlock:])
		n += c
		// Past the middle of a block, fetch the next one ahead.
		if inBlock+int64(c) > BlockSize/2 && (idx+1)*BlockSize < f.size {
			f.block(idx + 1)
		}
	}
	return n, nil
}

// block returns block idx, fetching it (in a goroutine of its own) when it
// is neither kept nor being fetched.
func (f *File) block(idx int64) *block {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tick++
	if b := f.blocks[idx]; b != nil {
		b.used = f.tick
		return b
	}
	for len(f.blocks) >= MaxBlocks {
		var oldest int64 = -1
		for i, b := range f.blocks {
			if oldest < 0 || b.used < f.blocks[oldest].used {
				oldest = i
			}
		}
		delete(f.blocks, oldest)
	}
	b := &block{done: make(chan struct{}), used: f.tick}
	f.blocks[idx] = b
	go func() {
		defer close(b.done)
		off := idx * BlockSize
		n := min(BlockSize, f.size-off)
		b.data = make([]byte, n)
		b.err = f.readFull(b.data, off)
	}()
	return b
}

// readFull fills p from off with range requests, retried and resumed.
func (f *File) readFull(p []byte, off int64) error {
	got := 0
	delay := RetryDelay
	var err error
	for try := 0; try <= Retries; try++ {
		if try > 0 {
			select {
			case <-time.After(delay):
			case <-f.ctx.Done():
				return fmt.Errorf("read %s bytes %d-%d: %w", f.name, off, off+int64(len(p))-1, f.ctx.Err())
			}
			delay = min(2*delay, 10*time.Second)
		}
		var r io.ReadCloser
		gets.Add(1)
		r, err = f.src.rangeReader(f.ctx, off+int64(got), int64(len(p)-got))
		if err != nil {
			if !retryable(err) {
				break
			}
			continue
		}
		var n int
		n, err = io.ReadFull(r, p[got:])
		r.Close()
		got += n
		if err == nil {
			return nil
		}
		if n > 0 {
			try = 0 // progress: the budget of retries starts again
			delay = RetryDelay
		}
	}
	return fmt.Errorf("read %s bytes %d-%d: %w", f.name, off, off+int64(len(p))-1, scrub(err, ""))
}

// Read reads the object in order from the start, through one streamed
// request that is resumed from where it broke off.
func (f *File) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if f.pos >= f.size {
		return 0, io.EOF
	}
	delay := RetryDelay
	var err error
	for try := 0; try <= Retries; try++ {
		if try > 0 {
			select {
			case <-time.After(delay):
			case <-f.ctx.Done():
				return 0, f.ctx.Err()
			}
			delay = min(2*delay, 10*time.Second)
		}
		if f.stream == nil {
			gets.Add(1)
			f.stream, err = f.src.rangeReader(f.ctx, f.pos, -1)
			if err != nil {
				if !retryable(err) {
					break
				}
				continue
			}
		}
		var n int
		n, err = f.stream.Read(p)
		f.pos += int64(n)
		if n > 0 || err == nil {
			if err != nil && !errors.Is(err, io.EOF) {
				f.stream.Close()
				f.stream = nil
			}
			if errors.Is(err, io.EOF) && f.pos < f.size {
				f.stream.Close()
				f.stream = nil
				err = nil
			}
			return n, nil
		}
		f.stream.Close()
		f.stream = nil
		if errors.Is(err, io.EOF) && f.pos >= f.size {
			return 0, io.EOF
		}
	}
	return 0, fmt.Errorf("read %s bytes %d-%d: %w", f.name, f.pos, f.size-1, scrub(err, ""))
}

// Seek sets the offset of the next Read, as io.Seeker does.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += f.pos
	case io.SeekEnd:
		offset += f.size
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek %s: negative offset", f.name)
	}
	if offset != f.pos && f.stream != nil {
		f.stream.Close()
		f.stream = nil
	}
	f.pos = offset
	return offset, nil
}

// fileInfo is the fs.FileInfo of a File.
type fileInfo struct{ f *File }

func (i fileInfo) Name() string       { return i.f.name }
func (i fileInfo) Size() int64        { return i.f.size }
func (i fileInfo) Mode() fs.FileMode  { return 0o444 }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }
