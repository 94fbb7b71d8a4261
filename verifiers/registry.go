package verifiers

// The registry: the verifiers compiled into gavel. A verifier is not graded
// until it is named here. `gavel verifier add` appends to this list at the
// marker line; keep the marker.
func registry() []*Verifier {
	return []*Verifier{
		ver001,
		ver002,
		ver003,
		ver004,
		ver006,
		// gavel:registry (new verifiers are added above this line)
	}
}
