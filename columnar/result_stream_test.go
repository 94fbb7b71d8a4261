package columnar

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/go-cmp/cmp"
)

// TestResultStream checks that a ResultStream sends the rows and schema
// of the rewards part of --format arrow, in record batches of BatchRows
// rows ended early by Flush, and writes the checks file byte for byte as
// the checks part, whatever the Write calls' lengths.
func TestResultStream(t *testing.T) {
	keep := []string{"model", "run_id"}
	rewards, checks := partRows(23, len(keep))
	dir := t.TempDir()
	rewardsPart, checksPart := writeTestPart(t, dir, 0, PartOptions{Format: FormatArrow, Keep: keep}, rewards, checks, 0)
	wantChecks, err := os.ReadFile(checksPart)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]any
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	{
		f, err := os.Open(rewardsPart)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		for i := range r.NumRecords() {
			rec, err := r.RecordBatch(i)
			if err != nil {
				t.Fatal(err)
			}
			want = appendArrowRows(t, want, rec)
		}
		r.Close()
		f.Close()
		mem.AssertSize(t, 0)
	}
	for _, step := range []int{1, 4, 23} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		checksOut := filepath.Join(t.TempDir(), "new", "checks.arrow")
		var out bytes.Buffer
		s, err := NewResultStream(&out, StreamOptions{Keep: keep, BatchRows: 5, ChecksPath: checksOut, alloc: mem})
		if err != nil {
			t.Fatal(err)
		}
		// Rows 0-11 in steps, a flush after row 12, the rest in steps.
		write := func(from, to int) {
			for i := from; i < to; i += step {
				n := min(step, to-i)
				if err := s.WriteRewards(rewards[i : i+n]); err != nil {
					t.Fatal(err)
				}
				if err := s.WriteChecks(checks[3*i : 3*(i+n)]); err != nil {
					t.Fatal(err)
				}
			}
		}
		write(0, 12)
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(); err != nil { // nothing to send: no empty batch
			t.Fatal(err)
		}
		write(12, 23)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		mem.AssertSize(t, 0)

		r, err := ipc.NewReader(&out, ipc.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantArrowFields(wantRewardCols(keep)), arrowFields(r.Schema())); diff != "" {
			t.Errorf("step %d: schema (-want +got):\n%s", step, diff)
		}
		var got [][]any
		var lens []int64
		for r.Next() {
			lens = append(lens, r.RecordBatch().NumRows())
			got = appendArrowRows(t, got, r.RecordBatch())
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Release()
		if diff := cmp.Diff([]int64{5, 5, 2, 5, 5, 1}, lens); diff != "" {
			t.Errorf("step %d: record batches (-want +got):\n%s", step, diff)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("step %d: rows (-want +got):\n%s", step, diff)
		}
		gotChecks, err := os.ReadFile(checksOut)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gotChecks, wantChecks) {
			t.Errorf("step %d: the checks file differs from the checks part", step)
		}
	}
}

// TestResultStreamSendsEachBatch checks that a record batch reaches the
// underlying writer as soon as it is complete, before Close.
func TestResultStreamSendsEachBatch(t *testing.T) {
	rewards, _ := partRows(3, 0)
	var out bytes.Buffer
	s, err := NewResultStream(&out, StreamOptions{BatchRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	if err := s.WriteRewards(rewards[:1]); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("%d bytes sent before a record batch was complete", out.Len())
	}
	if err := s.WriteRewards(rewards[1:]); err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() || r.RecordBatch().NumRows() != 2 {
		t.Fatalf("no record batch of 2 rows before Close: %v", r.Err())
	}
}

func TestResultStreamEmpty(t *testing.T) {
	var out bytes.Buffer
	checksOut := filepath.Join(t.TempDir(), "checks.arrow")
	s, err := NewResultStream(&out, StreamOptions{ChecksPath: checksOut})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(&out)
	if err != nil {
		t.Fatalf("a stream of no rows: %v", err)
	}
	defer r.Release()
	if r.Next() {
		t.Errorf("a record batch in a stream of no rows")
	}
	if r.Schema().NumFields() != len(rewardColumns) {
		t.Errorf("schema of %d fields, want %d", r.Schema().NumFields(), len(rewardColumns))
	}
	if _, err := os.Stat(checksOut); err != nil {
		t.Errorf("checks file: %v", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestResultStreamWriteError checks that a failed write names the output,
// sticks, and leaves no checks file.
func TestResultStreamWriteError(t *testing.T) {
	rewards, checks := partRows(4, 0)
	checksOut := filepath.Join(t.TempDir(), "checks.arrow")
	s, err := NewResultStream(failingWriter{}, StreamOptions{Name: "standard output", BatchRows: 2, ChecksPath: checksOut})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteChecks(checks); err != nil {
		t.Fatal(err)
	}
	err = s.WriteRewards(rewards)
	if err == nil || !strings.Contains(err.Error(), "write rewards to standard output: ") || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("WriteRewards = %v, want an error naming standard output", err)
	}
	if err2 := s.WriteChecks(checks); err2 != err {
		t.Errorf("WriteChecks after a failure = %v, want %v", err2, err)
	}
	if err2 := s.Close(); err2 != err {
		t.Errorf("Close after a failure = %v, want %v", err2, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(checksOut))
	if len(entries) != 0 {
		t.Errorf("files left: %v", entries)
	}
}
