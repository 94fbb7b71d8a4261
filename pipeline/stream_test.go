package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// streamInput returns n JSON Lines rollouts, a bad one among them.
func streamInput(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		if i == 7 {
			b.WriteString(`{"rollout_id":"bad","task_id":"TASK-004","final_state":"{nope"}` + "\n")
			continue
		}
		fmt.Fprintf(&b, `{"rollout_id":"r%d","task_id":"TASK-004","output":"%d","model":"m%d"}`+"\n", i, i, i%3)
	}
	return b.Bytes()
}

// recordsJSON returns the rows of the record batches as JSON lines.
func recordsJSON(t *testing.T, recs func(yield func(arrow.RecordBatch) bool)) string {
	t.Helper()
	var b bytes.Buffer
	for rec := range recs {
		if err := array.RecordToJSON(rec, &b); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestRunStreamOut checks that a run into StreamOut sends the rows and
// schema of the rewards part of an arrow run, writes ChecksOut as its
// checks part, counts the same summary, and writes nothing else.
func TestRunStreamOut(t *testing.T) {
	in := streamInput(600)
	dir := t.TempDir()
	res := grade(t, Config{Inputs: []string{"-"}, Out: dir, Format: columnar.FormatArrow, Stdin: bytes.NewReader(in)})

	var stdout bytes.Buffer
	checksOut := filepath.Join(t.TempDir(), "checks.arrow")
	sres := grade(t, Config{Inputs: []string{"-"}, Out: StreamOut, ChecksOut: checksOut, Stdin: bytes.NewReader(in), Stdout: &stdout, BatchSize: 100})
	if sres.ErrorRows != 1 || !sres.Complete {
		t.Errorf("error rows %d, complete %v; want 1, true", sres.ErrorRows, sres.Complete)
	}
	if got, want := sres.Summary.Rollouts, res.Summary.Rollouts; got != want || sres.Summary.Passed != res.Summary.Passed || sres.Summary.Error != res.Summary.Error {
		t.Errorf("summary: %d rollouts, %d passed, %d error; want %d, %d, %d", got, sres.Summary.Passed, sres.Summary.Error, want, res.Summary.Passed, res.Summary.Error)
	}

	f, err := os.Open(filepath.Join(dir, "rewards", "part-00000.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fr, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	want := recordsJSON(t, func(yield func(arrow.RecordBatch) bool) {
		for i := range fr.NumRecords() {
			rec, err := fr.RecordBatchAt(i)
			if err != nil {
				t.Fatal(err)
			}
			yield(rec)
			rec.Release()
		}
	})
	sr, err := ipc.NewReader(&stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Release()
	var lens []int64
	got := recordsJSON(t, func(yield func(arrow.RecordBatch) bool) {
		for sr.Next() {
			lens = append(lens, sr.RecordBatch().NumRows())
			yield(sr.RecordBatch())
		}
	})
	if err := sr.Err(); err != nil {
		t.Fatal(err)
	}
	if !sr.Schema().Equal(fr.Schema()) {
		t.Errorf("schema %s, want %s", sr.Schema(), fr.Schema())
	}
	if got != want {
		t.Errorf("the stream's rows differ from the rewards part's")
	}
	if diff := cmp.Diff([]int64{256, 256, 88}, lens); diff != "" {
		t.Errorf("record batches (-want +got):\n%s", diff)
	}
	part, err := os.ReadFile(filepath.Join(dir, "checks", "part-00000.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	if checks, err := os.ReadFile(checksOut); err != nil || !bytes.Equal(checks, part) {
		t.Errorf("the checks file differs from the checks part (%v)", err)
	}
	if _, err := os.Stat(StreamOut); err == nil {
		t.Errorf("a directory %q was written", StreamOut)
	}
}

// blockedInput is standard input whose writer sends rows and then keeps
// it open, sending nothing more.
func blockedInput(t *testing.T, rows []byte) io.Reader {
	t.Helper()
	pr, pw := io.Pipe()
	go pw.Write(rows)
	t.Cleanup(func() { pw.Close() })
	return pr
}

type brokenPipe struct{}

func (brokenPipe) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestRunStreamWriteError checks that a run whose results cannot be
// written stops with an error naming standard output, though standard
// input stays open, and leaves no checks file.
func TestRunStreamWriteError(t *testing.T) {
	checksOut := filepath.Join(t.TempDir(), "checks.arrow")
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), Config{Inputs: []string{"-"}, Out: StreamOut, ChecksOut: checksOut, Stdout: brokenPipe{}, BatchSize: 10,
			Stdin: blockedInput(t, streamInput(300)), Verifiers: crm.Verifiers()})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "write rewards to standard output: ") {
			t.Errorf("Run = %v, want an error writing to standard output", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run still running 20s after its output failed")
	}
	if _, err := os.Stat(checksOut); err == nil {
		t.Errorf("checks file left after a failed run")
	}
}

func TestRunStreamConfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string
		msg   string
	}{
		{"format", Config{Out: StreamOut, Format: columnar.FormatParquet}, "Out", "format parquet is not available"},
		{"resume", Config{Out: StreamOut, Resume: true}, "Out", "cannot be resumed"},
		{"reuse", Config{Out: StreamOut, Reuse: "old"}, "Out", "reusing earlier results needs an output directory"},
		{"shard", Config{Out: StreamOut, Shard: inputs.Shard{Index: 0, Count: 2}}, "Out", "shards write into one output directory"},
		{"checks file", Config{Out: t.TempDir(), ChecksOut: "c.arrow"}, "ChecksOut", "a checks file is written only when the results are streamed"},
		{"stdin format", Config{Out: StreamOut, StdinFormat: "csv"}, "StdinFormat", `unknown input format "csv"`},
		{"stdin format and from", Config{Out: StreamOut, StdinFormat: columnar.InputArrowStream, From: columnar.InputMessages}, "StdinFormat", "an input format does not apply"},
	}
	for _, tt := range tests {
		tt.cfg.Inputs = []string{"-"}
		tt.cfg.Verifiers = crm.Verifiers()
		tt.cfg.Stdin = strings.NewReader("")
		_, err := Run(context.Background(), tt.cfg)
		var ce *inputs.ConfigError
		if !errors.As(err, &ce) || ce.Field != tt.field || !strings.Contains(ce.Msg, tt.msg) {
			t.Errorf("%s: Run = %v, want a ConfigError of %s saying %q", tt.name, err, tt.field, tt.msg)
		}
	}
}

func TestStopReader(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	s := inputs.NewStopReader(pr)
	go pw.Write([]byte("abc"))
	buf := make([]byte, 10)
	if n, err := s.Read(buf); n != 3 || err != nil || string(buf[:3]) != "abc" {
		t.Fatalf("Read = %d, %v (%q); want 3, nil (abc)", n, err, buf[:n])
	}
	read := make(chan error, 1)
	go func() {
		_, err := s.Read(buf) // nothing comes: blocks
		read <- err
	}()
	time.Sleep(10 * time.Millisecond)
	s.Stop()
	select {
	case err := <-read:
		if !errors.Is(err, inputs.ErrStdinStopped) {
			t.Errorf("Read after stop = %v, want %v", err, inputs.ErrStdinStopped)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read still blocked after stop")
	}
	if _, err := s.Read(buf); !errors.Is(err, inputs.ErrStdinStopped) {
		t.Errorf("a later Read = %v, want %v", err, inputs.ErrStdinStopped)
	}
}
