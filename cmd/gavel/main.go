// Command gavel grades agent rollouts in bulk. See README.md, docs/ and
// `gavel help`. It is the command line of package cli with the reference
// environments' verifiers compiled in, as a team's own gavel is with its
// own (`gavel verifier init`).
package main

import (
	"github.com/gavelhq/gavel/cli"
	"github.com/gavelhq/gavel/internal/reference"
)

func main() {
	cli.Main(reference.Verifiers()...)
}
