// Command flagsgavel is gavel with the CRM environment's verifiers, each
// of which also raises the flags of the spec files that the environment
// variable GAVEL_BENCH_FLAGS names (comma-separated; the reward-hacking
// library in examples/flags), on every rollout it grades. Without it, it
// is the stock gavel's CRM verifiers. It is the workload of the flags'
// CPU target: the same 1M-rollout dataset graded with and without the
// library and health flags (bench/flags.sh; bench/README.md).
package main

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/gavelhq/gavel/cli"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/crm"
	"github.com/gavelhq/gavel/verifiers/spec"
)

func main() {
	vs := crm.Verifiers()
	if paths := os.Getenv("GAVEL_BENCH_FLAGS"); paths != "" {
		lib, err := spec.Load(strings.Split(paths, ","))
		if err != nil {
			fmt.Fprintf(os.Stderr, "flagsgavel: GAVEL_BENCH_FLAGS: %v\n", err)
			os.Exit(2)
		}
		for i, v := range vs {
			vs[i] = withFlags(v, lib)
		}
	}
	cli.Main(vs...)
}

// scratch holds the checks of the library's verifiers, of which only the
// flags are kept.
var scratch = sync.Pool{New: func() any { return new(verifiers.Checks) }}

// withFlags returns a copy of v that, after its own checks, adds the flags
// the library's verifiers raise on the rollout (their checks are dropped).
func withFlags(v *verifiers.Verifier, lib []*verifiers.Verifier) *verifiers.Verifier {
	w := *v
	w.Flagged = true
	w.Grade = func(r *verifiers.Rollout, c *verifiers.Checks) error {
		if err := v.Grade(r, c); err != nil {
			return err
		}
		sc := scratch.Get().(*verifiers.Checks)
		defer scratch.Put(sc)
		for _, l := range lib {
			sc.Reset()
			if err := l.Grade(r, sc); err != nil {
				return fmt.Errorf("flags of %s: %w", l.ID, err)
			}
			for _, ch := range sc.List() {
				if ch.Flag {
					c.Add(ch)
				}
			}
		}
		return nil
	}
	return &w
}
