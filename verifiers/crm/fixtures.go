package crm

import (
	"embed"
	"io/fs"

	"github.com/gavelhq/gavel/verifiers"
)

// fixtureFiles holds the fixtures of the CRM verifiers, one directory per
// verifier id (see package verifiers/verifiertest for the layout).
//
//go:embed testdata/fixtures
var fixtureFiles embed.FS

// Verifiers returns the CRM environment's verifiers in registry order,
// each with its fixtures (VER-002/pass/*.json, VER-002/fail/*.json, ...).
// Every call returns new copies, which the caller may modify.
func Verifiers() []*verifiers.Verifier {
	fixtures, err := fs.Sub(fixtureFiles, "testdata/fixtures")
	if err != nil {
		panic("crm: fixtures: " + err.Error())
	}
	list := registry()
	out := make([]*verifiers.Verifier, len(list))
	for i, v := range list {
		cp := *v
		cp.Fixtures = fixtures
		out[i] = &cp
	}
	return out
}
