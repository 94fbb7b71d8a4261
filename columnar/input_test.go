package columnar

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"
)

// TestDescribe describes an input of each format, checks the description
// and reads every unit through it: the units' rows, in order, are the
// file's rows, and the file is opened once to describe it and once per
// unit.
func TestDescribe(t *testing.T) {
	dir := t.TempDir()
	rows := testRollouts(61)
	pq := filepath.Join(dir, "rollouts.parquet")
	writePGO(t, pq, rows, parquet.MaxRowsPerRowGroup(10)) // 7 row groups
	pgoColumns := []string{"rollout_id", "task_id", "final_state", "initial_state", "output", "log", "model", "sample", "score", "passed", "tags"}

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec, arrowWant, _ := arrowRollouts(t, mem, 23)
	arrowColumns := []string{"rollout_id", "task_id", "final_state", "initial_state", "output", "model", "tags", "n32", "u32", "f32", "ok"}
	recs := splitRecord(rec, 5, 0, 9)
	arrowFile := filepath.Join(dir, "rollouts.arrow")
	writeIPC(t, arrowFile, false, recs)
	arrowStream := filepath.Join(dir, "stream.arrow")
	writeIPC(t, arrowStream, true, recs)
	for _, r := range recs {
		r.Release()
	}
	rec.Release()

	jsonl := filepath.Join(dir, "rollouts.jsonl")
	lines := "\n[1]\n{\"rollout_id\":\"a\",\"model\":\"m\",\"final_state\":{}}\n{\"rollout_id\":\"b\",\"other\":1}\n"
	if err := os.WriteFile(jsonl, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	noObjects := filepath.Join(dir, "arrays.jsonl")
	if err := os.WriteFile(noObjects, []byte("[1]\n\"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	whole := func(rows int64) []InputUnit { return []InputUnit{{Rows: rows}} }
	tests := []struct {
		name    string
		path    string
		perUnit int
		format  string
		columns []string
		rows    int64
		units   []InputUnit
		want    []readerRow // nil: not compared
	}{
		{"parquet/units", pq, 3, InputParquet, pgoColumns, 61, []InputUnit{{0, 3, 30}, {3, 3, 30}, {6, 1, 1}}, wantRollouts(rows)},
		{"parquet/fewer groups than a unit", pq, 7, InputParquet, pgoColumns, 61, whole(61), wantRollouts(rows)},
		{"parquet/never split", pq, 0, InputParquet, pgoColumns, 61, whole(61), wantRollouts(rows)},
		{"arrow/file", arrowFile, 1, InputArrow, arrowColumns, 23, whole(23), arrowWant},
		{"arrow/stream", arrowStream, 1, InputArrow, arrowColumns, -1, whole(-1), arrowWant},
		{"jsonl", jsonl, 1, InputJSONL, []string{"rollout_id", "model", "final_state"}, -1, whole(-1), nil},
		{"jsonl/no object line", noObjects, 1, InputJSONL, nil, -1, whole(-1), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opens := 0
			open := func(name string) (File, error) {
				if name != tt.path {
					t.Errorf("opened %s, want %s", name, tt.path)
				}
				opens++
				return os.Open(name)
			}
			in, err := Describe(tt.path, DescribeOptions{RowGroupsPerUnit: tt.perUnit, Open: open})
			if err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if in.Path != tt.path || in.Format != tt.format || in.Size != st.Size() || in.Rows != tt.rows {
				t.Errorf("Describe = {%s %s %d bytes %d rows}, want {%s %s %d bytes %d rows}", in.Path, in.Format, in.Size, in.Rows, tt.path, tt.format, st.Size(), tt.rows)
			}
			if diff := cmp.Diff(tt.columns, in.Columns); diff != "" {
				t.Errorf("columns (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.units, in.Units); diff != "" {
				t.Errorf("units (-want +got):\n%s", diff)
			}
			var got []readerRow
			for _, u := range in.Units {
				r, err := in.Open(u, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if r.Rows() != u.Rows {
					t.Errorf("unit %+v: reader Rows() = %d, want %d", u, r.Rows(), u.Rows)
				}
				got = append(got, readHeldRows(t, r, 4)...)
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if tt.want != nil {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("rows of the units (-want +got):\n%s", diff)
				}
			}
			if want := 1 + len(in.Units); opens != want {
				t.Errorf("%d opens, want %d (1 to describe, 1 per unit)", opens, want)
			}
		})
	}
}

// TestDescribeErrors checks that a file that cannot be described fails
// with the error its reader gives.
func TestDescribeErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "missing.parquet"), "no such file"},
		{"unsupported", write("notes.txt", "x"), "unsupported file type"},
		{"not parquet", write("x.parquet", "PAR1 but not really a parquet file"), "no PAR1 magic at the end"},
		{"feather v1", write("x.feather", "FEA1xxxxxxxx"), "feather v1 files are not supported"},
		{"bad gzip", write("x.jsonl.gz", "not gzip"), "gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Describe(tt.path, DescribeOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Describe(%s) error = %v, want one containing %q", tt.path, err, tt.want)
			}
			if _, oerr := Open(tt.path, Options{}); oerr == nil || oerr.Error() != err.Error() {
				t.Errorf("Describe(%s) error = %q, Open error = %v: want the same", tt.path, err, oerr)
			}
		})
	}
}
