package crm

import "github.com/gavelhq/gavel/verifiers"

// registry lists the CRM environment's verifiers. A verifier is not graded
// until it is named here. `gavel verifier add` appends to this list at the
// marker line; keep the marker.
func registry() []*verifiers.Verifier {
	return []*verifiers.Verifier{
		ver001,
		ver002,
		ver003,
		ver004,
		ver006,
		// gavel:registry (new verifiers are added above this line)
	}
}
