// Command pqarrowfloor measures the read floor of a Parquet rollout dataset
// through arrow-go's pqarrow record batches, the read path gavel did not
// take: it reads final_state and initial_state (columns in parallel) and
// touches every byte. It prints {"rows": N, "bytes": B, "checksum": C}.
//
// It lives outside the main module, where only package columnar may import
// arrow-go.
//
// Usage:
//
//	pqarrowfloor [-batch N] rollouts.parquet
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

type report struct {
	Rows     int64  `json:"rows"`
	Bytes    int64  `json:"bytes"`
	Checksum uint64 `json:"checksum"`
}

func main() {
	batch := flag.Int64("batch", 1024, "rows `N` per record batch")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: pqarrowfloor [-batch N] DATASET.parquet")
		os.Exit(2)
	}
	rep, err := run(flag.Arg(0), *batch)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pqarrowfloor:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(rep)
}

// fold returns sum folded with every byte of s, eight at a time, as the
// page-level floor does.
func fold(sum uint64, s string) uint64 {
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	for len(b) >= 8 {
		sum = sum*31 ^ binary.LittleEndian.Uint64(b)
		b = b[8:]
	}
	for _, c := range b {
		sum = sum*31 ^ uint64(c)
	}
	return sum
}

func run(path string, batch int64) (report, error) {
	var rep report
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return rep, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: true, BatchSize: batch}, memory.DefaultAllocator)
	if err != nil {
		return rep, err
	}
	var cols []int
	for _, name := range []string{"final_state", "initial_state"} {
		i := pf.MetaData().Schema.ColumnIndexByName(name)
		if i < 0 {
			return rep, fmt.Errorf("%s: no column %s", path, name)
		}
		cols = append(cols, i)
	}
	rr, err := fr.GetRecordReader(context.Background(), cols, nil)
	if err != nil {
		return rep, err
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		rep.Rows += rec.NumRows()
		for _, col := range rec.Columns() {
			if err := touch(&rep, col); err != nil {
				return rep, err
			}
		}
	}
	return rep, rr.Err()
}

func touch(rep *report, col arrow.Array) error {
	switch a := col.(type) {
	case *array.String:
		for i := 0; i < a.Len(); i++ {
			s := a.Value(i)
			rep.Checksum = fold(rep.Checksum, s)
			rep.Bytes += int64(len(s))
		}
	case *array.Binary:
		for i := 0; i < a.Len(); i++ {
			s := a.ValueString(i)
			rep.Checksum = fold(rep.Checksum, s)
			rep.Bytes += int64(len(s))
		}
	default:
		return fmt.Errorf("state column of type %s", col.DataType())
	}
	return nil
}
