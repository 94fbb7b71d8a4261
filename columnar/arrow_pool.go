package columnar

import (
	"math"
	"math/bits"
	"os"
	"runtime/debug"
	"sync"
	"unsafe"
)

// poolAllocator is an Arrow memory allocator that keeps the buffers it is
// handed back, by power-of-two size class, and hands them out again, so
// that the record batches pqarrow assembles for nested columns, a few
// megabytes every 256 rows, reuse the memory of the batches released
// before them instead of loading the garbage collector. Buffers below
// poolMinBytes come from, and go back to, the Go heap; at most
// poolMaxBytes are kept.
//
// Like memory.GoAllocator, it returns 64-byte aligned memory whose bytes
// are zero up to the size asked (Arrow's builders rely on zeroed validity
// bitmaps). It is safe for concurrent use: pqarrow allocates in the
// read-ahead goroutine and batches are released in the reader's.
type poolAllocator struct {
	mu    sync.Mutex
	free  [poolClasses][][]byte
	bytes int
}

const (
	poolMinShift = 12 // 4 KiB
	poolClasses  = 12 // up to 8 MiB
	poolMaxBytes = 8 << 20
	poolAlign    = 64
)

// class returns the size class of a buffer of n bytes, and false when n is
// not pooled.
func poolClass(n int) (int, bool) {
	if n <= 1<<poolMinShift {
		return 0, n > 0 && n == 1<<poolMinShift
	}
	c := bits.Len(uint(n-1)) - poolMinShift
	return c, c < poolClasses
}

// Allocate returns size zero bytes, 64-byte aligned.
func (p *poolAllocator) Allocate(size int) []byte {
	c, ok := poolClass(size)
	if !ok {
		return alignedBytes(size, size)
	}
	p.mu.Lock()
	if n := len(p.free[c]); n > 0 {
		b := p.free[c][n-1]
		p.free[c] = p.free[c][:n-1]
		p.bytes -= cap(b)
		p.mu.Unlock()
		b = b[:size]
		clear(b)
		return b
	}
	p.mu.Unlock()
	return alignedBytes(size, 1<<(c+poolMinShift))
}

// Reallocate returns b resized to size, its bytes kept; new bytes are zero.
func (p *poolAllocator) Reallocate(size int, b []byte) []byte { return reallocate(p, size, b) }

// reallocate is Reallocate of an allocator that hands out and takes back
// buffers with Allocate and Free.
func reallocate(p interface {
	Allocate(int) []byte
	Free([]byte)
}, size int, b []byte) []byte {
	if cap(b) >= size {
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free keeps b for reuse when its capacity is a pooled size class and
// the pool has room.
func (p *poolAllocator) Free(b []byte) {
	c, ok := poolClass(cap(b))
	if !ok || cap(b) != 1<<(c+poolMinShift) {
		return
	}
	p.mu.Lock()
	if p.bytes+cap(b) <= poolMaxBytes {
		p.free[c] = append(p.free[c], b[:0])
		p.bytes += cap(b)
	}
	p.mu.Unlock()
}

// alignedBytes returns size zero bytes of a 64-byte aligned buffer of
// capacity capacity.
func alignedBytes(size, capacity int) []byte {
	buf := make([]byte, capacity+poolAlign)
	shift := (poolAlign - int(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))%poolAlign) % poolAlign
	return buf[shift : shift+size : shift+capacity]
}

// bodyAllocator is the Arrow allocator of a stream on standard input: the
// record batch bodies it reads, one buffer each, as large as a batch
// (hundreds of megabytes from a pyarrow table), reuse the bodies released
// before them instead of asking the Go heap, and so the kernel, for fresh
// pages every batch (page faults were a tenth of such a run's CPU).
// Smaller buffers come from the Go heap. At most bodyKeep bodies, and
// bodyMaxBytes in all, are kept; a body is reused for a request of at
// least half its capacity.
//
// A body is live memory the run cannot do without, and gavel grade runs
// under a small soft memory limit (192 MiB) unless GOMEMLIMIT sets one: a
// stream whose bodies are larger than that would have the collector run
// without pause (a third of the CPU, measured). So the allocator raises
// the limit, when the process has one and the environment did not set it,
// to hold bodyLive bodies of the largest size seen (see roomFor).
type bodyAllocator struct {
	mu      sync.Mutex
	free    [][]byte
	bytes   int
	largest int
	base    int64 // the soft memory limit before the first body
}

// bodyLive is how many bodies of the largest size the soft memory limit
// makes room for: the one being read, those of the batches being graded,
// and those kept for reuse.
const bodyLive = 6

// roomFor raises the Go soft memory limit to hold bodyLive bodies of size
// bytes beside what it held before the stream's first body, unless
// GOMEMLIMIT set it or there is none. p.mu is held.
func (p *bodyAllocator) roomFor(size int) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	cur := debug.SetMemoryLimit(-1)
	if cur == math.MaxInt64 {
		return
	}
	if p.base == 0 {
		p.base = cur
	}
	if want := p.base + int64(bodyLive)*int64(size); want > cur {
		debug.SetMemoryLimit(want)
	}
}

const (
	bodyMinBytes = 1 << 20
	bodyKeep     = 3
	bodyMaxBytes = 512 << 20
)

// Allocate returns size zero bytes, 64-byte aligned.
func (p *bodyAllocator) Allocate(size int) []byte {
	if size < bodyMinBytes {
		return alignedBytes(size, size)
	}
	p.mu.Lock()
	if size > p.largest {
		p.largest = size
		p.roomFor(size)
	}
	best := -1
	for i, b := range p.free {
		if cap(b) >= size && cap(b)/2 <= size && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := p.free[best]
		p.free = append(p.free[:best], p.free[best+1:]...)
		p.bytes -= cap(b)
		p.mu.Unlock()
		b = b[:size]
		clear(b)
		return b
	}
	p.mu.Unlock()
	return alignedBytes(size, size)
}

// Reallocate returns b resized to size, its bytes kept; new bytes are zero.
func (p *bodyAllocator) Reallocate(size int, b []byte) []byte { return reallocate(p, size, b) }

// Free keeps b for reuse when it is a body and there is room.
func (p *bodyAllocator) Free(b []byte) {
	if cap(b) < bodyMinBytes {
		return
	}
	p.mu.Lock()
	if len(p.free) < bodyKeep && p.bytes+cap(b) <= bodyMaxBytes {
		p.free = append(p.free, b[:0])
		p.bytes += cap(b)
	}
	p.mu.Unlock()
}
