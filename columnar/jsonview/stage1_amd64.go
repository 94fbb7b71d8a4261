//go:build !purego

package jsonview

import "golang.org/x/sys/cpu"

//go:generate go run -C internal/asmgen . ../..

// vectorStage1s lists the vector stage 1s this CPU runs, the one Parse
// uses first.
var vectorStage1s []vectorStage1

// vectorStage1 is one vector stage 1: its name and stage1's work.
type vectorStage1 struct {
	name string
	run  func(data []byte, marks []uint64) bool
}

func init() {
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW {
		vectorStage1s = append(vectorStage1s, vectorStage1{"AVX-512", blocksWith(stage1AVX512)})
	}
	if cpu.X86.HasAVX2 {
		vectorStage1s = append(vectorStage1s, vectorStage1{"AVX2", blocksWith(stage1AVX2)})
	}
}

// blocksWith returns stage 1 with blocks, which reads whole blocks: the
// blocks of data in place, and the last one padded with spaces.
func blocksWith(blocks func(data *byte, n int, marks *uint64, st *[7]uint64)) func([]byte, []uint64) bool {
	return func(data []byte, marks []uint64) bool {
		var st stage1State
		full := len(data) / 64
		if full > 0 {
			blocks(&data[0], full, &marks[0], (*[7]uint64)(&st))
		}
		var tail [64]byte
		copy(tail[:], data[full*64:])
		for k := len(data) - full*64; k < 64; k++ {
			tail[k] = ' '
		}
		blocks(&tail[0], 1, &marks[full], (*[7]uint64)(&st))
		return st[stFault] == 0
	}
}
