// Command floor measures the read floor of a dataset: for Parquet, read and
// decompress every page of the two state columns and touch every byte; for
// zstd-compressed JSON Lines, decompress on one goroutine and split lines.
// It prints a bench.Report as JSON.
//
// Usage:
//
//	floor rollouts.parquet
//	floor rollouts.jsonl.zst
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/gavelhq/gavel/bench"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: floor DATASET (.parquet or .jsonl.zst)")
		os.Exit(2)
	}
	path := os.Args[1]
	var rep bench.Report
	var err error
	switch {
	case strings.HasSuffix(path, ".parquet"):
		rep, err = bench.ParquetFloor(path, 0)
	case strings.HasSuffix(path, ".jsonl.zst"):
		rep, err = bench.JSONLFloor(path)
	default:
		err = fmt.Errorf("%s: want a .parquet or .jsonl.zst file", path)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(rep)
}
