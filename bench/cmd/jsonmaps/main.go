// Command jsonmaps grades the required checks of VER-002 and VER-004 over a
// Parquet dataset the way most Go code would: encoding/json into
// map[string]any, on a few goroutines. It is a peer for the benchmarks and
// prints a bench.Report as JSON.
//
// Usage:
//
//	jsonmaps [-workers N] rollouts.parquet
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/gavelhq/gavel/bench"
)

func main() {
	workers := flag.Int("workers", 2, "grading goroutines `N`")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: jsonmaps [-workers N] DATASET.parquet")
		os.Exit(2)
	}
	rep, err := bench.GradeMaps(flag.Arg(0), *workers)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jsonmaps:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(rep)
}
