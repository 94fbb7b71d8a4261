//go:build !amd64 || purego

package jsonview

// stage1Vector is the vector stage 1, which this build does not have: the
// portable one runs.
var stage1Vector func(data []byte, marks []uint64) bool

// vectorName names the vector stage 1 in use; empty when there is none.
var vectorName string
