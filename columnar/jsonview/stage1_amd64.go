//go:build !purego

package jsonview

import "golang.org/x/sys/cpu"

//go:generate go run -C internal/asmgen . ../..

// stage1Vector is the vector stage 1 this CPU runs, chosen when the
// program starts; nil when it has none.
var stage1Vector func(data []byte, marks []uint64) bool

// vectorName names the vector stage 1 in use; empty when there is none.
var vectorName string

func init() {
	if cpu.X86.HasAVX2 {
		stage1Vector, vectorName = stage1WithAVX2, "AVX2"
	}
}

// stage1WithAVX2 is stage1Portable with stage1AVX2: the whole blocks in
// place, and the last one padded with spaces.
func stage1WithAVX2(data []byte, marks []uint64) bool {
	var st stage1State
	full := len(data) / 64
	if full > 0 {
		stage1AVX2(&data[0], full, &marks[0], (*[7]uint64)(&st))
	}
	var tail [64]byte
	copy(tail[:], data[full*64:])
	for k := len(data) - full*64; k < 64; k++ {
		tail[k] = ' '
	}
	stage1AVX2(&tail[0], 1, &marks[full], (*[7]uint64)(&st))
	return st[stFault] == 0
}
