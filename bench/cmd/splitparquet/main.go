// Command splitparquet splits a Parquet dataset written by gavel gen into
// several Parquet files of consecutive rows, the same rows with the same
// values, so that a benchmark can grade the same rollouts from other
// inputs (make bench-compare lists them in reverse: the results then hold
// the rows in another order).
//
// Usage:
//
//	splitparquet -in rollouts.parquet -n 4 -out DIR
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gavelhq/gavel/columnar"
)

func main() {
	in := flag.String("in", "", "the Parquet dataset `PATH` to split")
	n := flag.Int("n", 4, "number of files `N`")
	out := flag.String("out", ".", "`DIR` for part-0.parquet ... part-N-1.parquet")
	flag.Parse()
	if err := run(*in, *n, *out); err != nil {
		fmt.Fprintln(os.Stderr, "splitparquet:", err)
		os.Exit(1)
	}
}

// columns are gen's, in its order; sample is its only integer column.
var columns = []columnar.DatasetColumn{
	{Name: "rollout_id", Type: columnar.DatasetString},
	{Name: "task_id", Type: columnar.DatasetString, Dictionary: true},
	{Name: "final_state", Type: columnar.DatasetJSON},
	{Name: "initial_state", Type: columnar.DatasetJSON, Dictionary: true},
	{Name: "output", Type: columnar.DatasetString},
	{Name: "log", Type: columnar.DatasetJSON},
	{Name: "model", Type: columnar.DatasetString, Dictionary: true},
	{Name: "run_id", Type: columnar.DatasetString, Dictionary: true},
	{Name: "sample", Type: columnar.DatasetInt64},
}

func run(in string, n int, out string) error {
	r, err := columnar.OpenParquet(in, columnar.Options{})
	if err != nil {
		return err
	}
	defer r.Close()
	total := r.Rows()
	if total <= 0 || n < 1 {
		return errors.New("nothing to split")
	}
	per := (total + int64(n) - 1) / int64(n)
	var (
		f    *os.File
		bw   *bufio.Writer
		dw   *columnar.DatasetWriter
		done int64
		vals = make([]columnar.DatasetValue, len(columns))
	)
	closeFile := func() error {
		if dw == nil {
			return nil
		}
		if err := dw.Close(); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return f.Close()
	}
	for {
		b, err := r.Next(1024)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		for i := range b.Rows {
			if done%per == 0 {
				if err := closeFile(); err != nil {
					return err
				}
				path := filepath.Join(out, fmt.Sprintf("part-%d.parquet", done/per))
				if f, err = os.Create(path); err != nil {
					return err
				}
				bw = bufio.NewWriterSize(f, 1<<20)
				if dw, err = columnar.NewDatasetWriter(bw, columnar.DatasetParquet, columns, columnar.DatasetOptions{}); err != nil {
					return err
				}
			}
			row := &b.Rows[i]
			cells := []columnar.Cell{row.ID, row.Task, row.Final, row.Initial, row.Output, row.Log}
			for j, c := range columns {
				var cell columnar.Cell
				if j < len(cells) {
					cell = cells[j]
				} else if k := indexOf(b.MetaNames, c.Name); k >= 0 {
					cell = row.Meta[k]
				}
				vals[j] = value(cell, c.Type)
			}
			if err := dw.Write(vals); err != nil {
				return err
			}
			done++
		}
		b.Release()
	}
	return closeFile()
}

func value(c columnar.Cell, t columnar.DatasetColumnType) columnar.DatasetValue {
	switch {
	case c.Kind == columnar.CellNull:
		return columnar.DatasetValue{Kind: columnar.DatasetNull}
	case t == columnar.DatasetInt64:
		var v int64
		fmt.Sscan(strings.TrimSpace(string(c.Data)), &v)
		return columnar.DatasetValue{Kind: columnar.DatasetInt, Int: v}
	}
	return columnar.DatasetValue{Kind: columnar.DatasetText, Bytes: c.Data}
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}
