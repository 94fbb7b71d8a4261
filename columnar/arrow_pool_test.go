package columnar

import (
	"os"
	"runtime/debug"
	"testing"
	"unsafe"
)

func TestPoolAllocator(t *testing.T) {
	p := new(poolAllocator)
	check := func(what string, b []byte, size int) {
		t.Helper()
		if len(b) != size {
			t.Fatalf("%s: len %d, want %d", what, len(b), size)
		}
		if a := uintptr(unsafe.Pointer(unsafe.SliceData(b))) % poolAlign; a != 0 {
			t.Errorf("%s: address %% %d = %d, want 0", what, poolAlign, a)
		}
		for i, c := range b {
			if c != 0 {
				t.Fatalf("%s: byte %d = %d, want 0", what, i, c)
			}
		}
	}
	addr := func(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
	for _, c := range []struct {
		size   int
		pooled bool
	}{{1, false}, {100, false}, {4096, true}, {5000, true}, {1 << 20, true}, {9 << 20, false}} {
		size := c.size
		b := p.Allocate(size)
		check("new", b, size)
		for i := range b {
			b[i] = 0xff
		}
		before := p.bytes
		p.Free(b)
		if kept := p.bytes - before; c.pooled && kept != cap(b) || !c.pooled && kept != 0 {
			t.Errorf("Free(%d bytes, capacity %d): pool grew by %d, pooled %v", size, cap(b), kept, c.pooled)
		}
		freed := addr(b)
		b = p.Allocate(size)
		check("reused", b, size)
		if reused := addr(b) == freed; reused != c.pooled {
			t.Errorf("Allocate(%d) after Free: same buffer %v, want %v", size, reused, c.pooled)
		}
		b[0] = 7
		b = p.Reallocate(2*size, b)
		if b[0] != 7 {
			t.Errorf("Reallocate(%d) lost byte 0", 2*size)
		}
		b[0] = 0
		check("grown", b, 2*size)
		p.Free(b)
	}
	if p.bytes > poolMaxBytes {
		t.Errorf("pool keeps %d bytes, want at most %d", p.bytes, poolMaxBytes)
	}

	// A full pool keeps no more: of nine megabytes freed, eight are kept
	// and handed out again, the ninth is new.
	p = new(poolAllocator)
	var bufs [][]byte
	for range 9 {
		bufs = append(bufs, p.Allocate(1<<20))
	}
	for _, b := range bufs {
		p.Free(b)
	}
	if p.bytes != poolMaxBytes {
		t.Errorf("pool keeps %d bytes, want %d", p.bytes, poolMaxBytes)
	}
	kept := map[uintptr]bool{}
	for _, b := range bufs[:8] {
		kept[addr(b)] = true
	}
	for i := range 9 {
		b := p.Allocate(1 << 20)
		if kept[addr(b)] != (i < 8) {
			t.Errorf("allocation %d of a full pool: reused %v, want %v", i, kept[addr(b)], i < 8)
		}
		delete(kept, addr(b))
	}
}

// TestBodyAllocator: a released body is handed out again, zeroed, for a
// request of at least half its size; small buffers and what is past the
// bounds are not kept.
func TestBodyAllocator(t *testing.T) {
	var p bodyAllocator
	a := p.Allocate(3 << 20)
	a[0], a[len(a)-1] = 1, 2
	p.Free(a)
	b := p.Allocate(2 << 20)
	if &b[0] != &a[0] || b[0] != 0 || len(b) != 2<<20 {
		t.Errorf("a released body of 3 MiB was not reused, zeroed, for 2 MiB")
	}
	p.Free(b)
	if c := p.Allocate(1 << 20); &c[0] == &a[0] {
		t.Errorf("a body of 3 MiB reused for 1 MiB, under half of it")
	}
	small := p.Allocate(4096)
	p.Free(small)
	if len(p.free) != 1 {
		t.Errorf("%d buffers kept, want 1 (the body)", len(p.free))
	}
	for range bodyKeep + 2 {
		p.Free(make([]byte, 2<<20))
	}
	if len(p.free) != bodyKeep {
		t.Errorf("%d bodies kept, want at most %d", len(p.free), bodyKeep)
	}
}

// TestBodyAllocatorMemoryLimit: a body larger than the soft memory limit
// allows for raises it to hold bodyLive of them, unless GOMEMLIMIT set it.
func TestBodyAllocatorMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	os.Unsetenv("GOMEMLIMIT")
	old := debug.SetMemoryLimit(64 << 20)
	defer debug.SetMemoryLimit(old)
	var p bodyAllocator
	p.Allocate(8 << 20)
	if got, want := debug.SetMemoryLimit(-1), int64(64<<20+bodyLive*8<<20); got != want {
		t.Errorf("limit after an 8 MiB body: %d, want %d", got, want)
	}
	p.Allocate(4 << 20) // smaller: no change
	if got, want := debug.SetMemoryLimit(-1), int64(64<<20+bodyLive*8<<20); got != want {
		t.Errorf("limit after a smaller body: %d, want %d", got, want)
	}
	t.Setenv("GOMEMLIMIT", "100MiB")
	debug.SetMemoryLimit(100 << 20)
	var q bodyAllocator
	q.Allocate(64 << 20)
	if got := debug.SetMemoryLimit(-1); got != 100<<20 {
		t.Errorf("limit set by GOMEMLIMIT changed to %d", got)
	}
}
