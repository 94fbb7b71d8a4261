package columnar

import (
	"math/bits"
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
func (p *poolAllocator) Reallocate(size int, b []byte) []byte {
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
