//go:build !amd64 || purego

package jsonview

// vectorStage1s lists the vector stage 1s this CPU runs: none in this
// build.
var vectorStage1s []vectorStage1

// vectorStage1 is one vector stage 1: its name and stage1's work.
type vectorStage1 struct {
	name string
	run  func(data []byte, marks []uint64) bool
}
