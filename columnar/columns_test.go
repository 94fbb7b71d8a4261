package columnar

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	aparquet "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/go-cmp/cmp"
)

// kindRow has a field for every kind of column a result table can hold.
type kindRow struct {
	S      string
	NS     NullString
	B      bool
	NB     bool
	NBOK   bool
	I32    int32
	I64    int64
	F      float64
	FOK    bool
	List   []string
	ListOK bool
}

var kindColumns = []column[kindRow]{
	stringCol("s", pqCategorical, func(r *kindRow) *string { return &r.S }),
	nullStringCol("ns", pqPlain, func(r *kindRow) *NullString { return &r.NS }),
	boolCol("b", func(r *kindRow) *bool { return &r.B }),
	nullBoolCol("nb", func(r *kindRow) (*bool, *bool) { return &r.NB, &r.NBOK }),
	int32Col("i32", func(r *kindRow) *int32 { return &r.I32 }),
	int64Col("i64", func(r *kindRow) *int64 { return &r.I64 }),
	nullFloat64Col("f", func(r *kindRow) (*float64, *bool) { return &r.F, &r.FOK }),
	nullStringsCol("list", func(r *kindRow) (*[]string, *bool) { return &r.List, &r.ListOK }),
}

var kindRows = []kindRow{
	{S: "a", NS: Str("x\n"), B: true, I32: -3, I64: 1 << 40, F: 0.5, FOK: true, List: []string{"p", `"q"`}, ListOK: true},
	{S: "a", NB: true, NBOK: true, F: 2, List: []string{"ignored"}},
	{S: "é", NS: Str(""), NBOK: true, F: 1.0 / 3, FOK: true, List: []string{}, ListOK: true},
	{S: "b", F: math.NaN(), FOK: true, List: []string{"", "z"}, ListOK: true},
}

// kindLines are kindRows as JSON Lines.
var kindLines = []string{
	`{"s":"a","ns":"x\n","b":true,"nb":null,"i32":-3,"i64":1099511627776,"f":0.5,"list":["p","\"q\""]}`,
	`{"s":"a","ns":null,"b":false,"nb":true,"i32":0,"i64":0,"f":null,"list":null}`,
	`{"s":"é","ns":"","b":false,"nb":false,"i32":0,"i64":0,"f":0.3333333333333333,"list":[]}`,
	`{"s":"b","ns":null,"b":false,"nb":null,"i32":0,"i64":0,"f":null,"list":["","z"]}`,
}

// TestColumnKinds writes a row of every column kind in every format and
// reads it back: JSON Lines byte for byte, Arrow IPC and Parquet through
// arrow-go's readers, compared as JSON with the JSON Lines rows (a NaN
// double, null in JSON Lines, is left out of that comparison).
func TestColumnKinds(t *testing.T) {
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	j := newJSONLTable(bw, kindColumns)
	if err := j.write(kindRows); err != nil {
		t.Fatal(err)
	}
	bw.Flush()
	if diff := cmp.Diff(strings.Join(kindLines, "\n")+"\n", buf.String()); diff != "" {
		t.Errorf("JSON Lines (-want +got):\n%s", diff)
	}

	want := make([]map[string]any, len(kindLines))
	for i, line := range kindLines {
		if err := json.Unmarshal([]byte(line), &want[i]); err != nil {
			t.Fatal(err)
		}
	}
	want[3]["f"] = "NaN" // as arrow-go marshals it

	wantSchema := []string{"s: utf8", "ns: utf8, nullable", "b: bool", "nb: bool, nullable", "i32: int32",
		"i64: int64", "f: float64, nullable", "list: list<item: utf8>, nullable"}
	for _, format := range []string{FormatArrow, FormatParquet} {
		t.Run(format, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			var buf bytes.Buffer
			bw := bufio.NewWriter(&buf)
			opts := PartOptions{Format: format, RowGroupRows: 3, alloc: mem}
			tab, err := newArrowTable(bw, kindColumns, opts)
			if err != nil {
				t.Fatal(err)
			}
			for i := range kindRows {
				if err := tab.write(kindRows[i : i+1]); err != nil {
					t.Fatal(err)
				}
			}
			if err := tab.finish(); err != nil {
				t.Fatal(err)
			}
			tab.release()
			bw.Flush()

			// Each batch is written as JSON right away: the IPC reader
			// releases a batch when the next is read.
			var out bytes.Buffer
			var schema *arrow.Schema
			if format == FormatArrow {
				r, err := ipc.NewFileReader(bytes.NewReader(buf.Bytes()), ipc.WithAllocator(mem))
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				schema = r.Schema()
				for i := range r.NumRecords() {
					rec, err := r.RecordBatch(i)
					if err != nil {
						t.Fatal(err)
					}
					if err := array.RecordToJSON(rec, &out); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(buf.Bytes()),
					aparquet.NewReaderProperties(mem), pqarrow.ArrowReadProperties{}, mem)
				if err != nil {
					t.Fatal(err)
				}
				defer tbl.Release()
				schema = tbl.Schema()
				tr := array.NewTableReader(tbl, 0)
				defer tr.Release()
				for tr.Next() {
					if err := array.RecordToJSON(tr.RecordBatch(), &out); err != nil {
						t.Fatal(err)
					}
				}
			}
			if format == FormatArrow {
				if diff := cmp.Diff(wantSchema, fieldStrings(schema)); diff != "" {
					t.Errorf("schema (-want +got):\n%s", diff)
				}
			}
			var got []map[string]any
			dec := json.NewDecoder(&out)
			for dec.More() {
				var m map[string]any
				if err := dec.Decode(&m); err != nil {
					t.Fatal(err)
				}
				got = append(got, m)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
}

// fieldStrings returns "name: type[, nullable]" for each field of s.
func fieldStrings(s *arrow.Schema) []string {
	var out []string
	for _, f := range s.Fields() {
		v := f.Name + ": " + f.Type.String()
		if f.Nullable {
			v += ", nullable"
		}
		out = append(out, v)
	}
	return out
}

func TestFormatHash(t *testing.T) {
	tests := []struct {
		h    uint64
		want string
	}{
		{0, "0000000000000000"},
		{0x0123456789abcdef, "0123456789abcdef"},
		{0xfedcba9876543210, "fedcba9876543210"},
		{math.MaxUint64, "ffffffffffffffff"},
	}
	for _, tt := range tests {
		if got := FormatHash(tt.h); got != tt.want {
			t.Errorf("FormatHash(%#x) = %q, want %q", tt.h, got, tt.want)
		}
	}
}
