// Package reference lists the reference environments' verifiers, the ones
// the stock gavel binary is built with: the CRM environment's Go verifiers
// (verifiers/crm) and the calendar environment's spec (verifiers/spec).
// Not public API.
package reference

import (
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/crm"
	"github.com/gavelhq/gavel/verifiers/spec"
)

// Verifiers returns the reference environments' verifiers, CRM first.
func Verifiers() []*verifiers.Verifier {
	return append(crm.Verifiers(), spec.Builtin()...)
}
