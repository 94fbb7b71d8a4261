package columnar

import (
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
	for _, size := range []int{1, 100, 4096, 5000, 1 << 20, 9 << 20} {
		b := p.Allocate(size)
		check("new", b, size)
		for i := range b {
			b[i] = 0xff
		}
		p.Free(b)
		b = p.Allocate(size)
		check("reused", b, size)
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
}
