package verifiers

import (
	"embed"
	"io/fs"
)

// fixtureFiles holds the fixtures of the built-in verifiers, one directory
// per verifier id (see package verifiers/selftest for the layout).
//
//go:embed testdata/fixtures
var fixtureFiles embed.FS

// Fixtures returns the fixtures shipped with the built-in verifiers, rooted
// so that each verifier's fixtures are under its id: VER-002/pass/*.json,
// VER-002/fail/*.json, VER-002/error/*.json. `gavel verifier test` runs
// them.
func Fixtures() fs.FS {
	sub, err := fs.Sub(fixtureFiles, "testdata/fixtures")
	if err != nil {
		panic("verifiers: fixtures: " + err.Error())
	}
	return sub
}
