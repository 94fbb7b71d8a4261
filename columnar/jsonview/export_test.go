package jsonview

// Hooks for the external tests and benchmarks, which import packages
// (gen) that import this one.

// Stage1Paths returns the stage 1s of this build by name: "portable", and
// the vector ones the CPU has.
func Stage1Paths() map[string]func(data []byte, marks []uint64) bool {
	paths := map[string]func([]byte, []uint64) bool{"portable": stage1Portable}
	for _, v := range vectorStage1s {
		paths[v.name] = v.run
	}
	return paths
}

// MarksLen is marksLen.
func MarksLen(n int) int { return marksLen(n) }

// ParseScalar is Parse on the scalar parser alone.
func (d *Doc) ParseScalar(data []byte) (Value, error) { return d.parseScalar(data, false) }

// UseVector sets useVector and returns its previous value.
func UseVector(on bool) bool {
	old := useVector
	useVector = on
	return old
}
