package harness

import (
	"bytes"
	"errors"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// failAfter reads data, then fails with errBroken instead of io.EOF: a
// reader that wants the whole input before its first trajectory never
// returns one.
type failAfter struct{ data []byte }

var errBroken = errors.New("broken pipe")

func (f *failAfter) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, errBroken
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// TestStreamsNewFormats checks that NeMo Gym rollouts and ATIF
// trajectories are read one at a time: the trajectories before a read
// error are returned, then the error of the file.
func TestStreamsNewFormats(t *testing.T) {
	gym := `{"response": {"output": []}, "_ng_task_index": 0, "_ng_rollout_index": 0}` + "\n" +
		`{"response": {"output": []}, "_ng_task_index": 1, "_ng_rollout_index": 0}` + "\n"
	doc, err := os.ReadFile("testdata/atif/job/hello-file__Xk3pQ9a/agent/trajectory.json")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := os.ReadFile("testdata/atif/batch.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		format Format
		data   string
		items  int
	}{
		{"gym", NemoGym, gym, 2},
		{"t/trajectory.json", ATIF, string(doc) + string(doc), 2},
		{"t/batch.jsonl", ATIF, string(lines), 3},
	}
	for _, tt := range tests {
		r, err := NewReader(tt.name, &failAfter{[]byte(tt.data)}, tt.format)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			_, err = r.Next()
			if err != nil {
				break
			}
			n++
		}
		if n != tt.items || !errors.Is(err, errBroken) {
			t.Errorf("%s: %d items, then %v; want %d, then %v", tt.name, n, err, tt.items, errBroken)
		}
	}
}

// TestNemoGymCompressedJoin reads a run whose three files are
// compressed: the rollouts are those of the plain files, the task fields
// of the materialized inputs (.gz or .zst beside the rollouts) joined.
func TestNemoGymCompressedJoin(t *testing.T) {
	plain := func(name string) string {
		r, err := Open(filepath.Join("testdata/nemo-gym/run", name), NemoGym)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		return readAll(t, r)
	}
	for _, ext := range []string{".gz", ".zst"} {
		dir := t.TempDir()
		for _, name := range []string{"rollouts.jsonl", "rollouts_failures.jsonl", "rollouts_materialized_inputs.jsonl"} {
			data, err := os.ReadFile(filepath.Join("testdata/nemo-gym/run", name))
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			var w io.WriteCloser
			if ext == ".gz" {
				w = gzip.NewWriter(&buf)
			} else {
				w, _ = zstd.NewWriter(&buf)
			}
			w.Write(data)
			w.Close()
			if err := os.WriteFile(filepath.Join(dir, name+ext), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{"rollouts.jsonl", "rollouts_failures.jsonl"} {
			r, err := Open(filepath.Join(dir, name+ext), NemoGym)
			if err != nil {
				t.Fatal(err)
			}
			got := readAll(t, r)
			r.Close()
			if want := plain(name); got != want {
				t.Errorf("%s%s reads\n%s\nwant\n%s", name, ext, got, want)
			}
		}
	}
	// Without its materialized inputs, a rollout keeps only its own
	// fields.
	dir := t.TempDir()
	data, _ := os.ReadFile("testdata/nemo-gym/run/rollouts.jsonl")
	os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), data, 0o644)
	r, err := Open(filepath.Join(dir, "rollouts.jsonl"), NemoGym)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := readAll(t, r); strings.Contains(got, "expected_city") {
		t.Errorf("rollouts without materialized inputs read a joined field:\n%s", got)
	}
}

func TestATIFDirTask(t *testing.T) {
	for name, want := range map[string]string{
		"jobs/j1/hello-file__Xk3pQ9a/agent/trajectory.json":  "hello-file",
		"jobs/j1/hello__file__Xk3pQ9a/agent/trajectory.json": "hello__file",
		"jobs/j1/odd__suffix89/agent/trajectory.json":        "odd__suffix89",
		"runs/fix-readme/trajectory.json":                    "fix-readme",
		"trajectory.json":                                    "",
		"-":                                                  "",
	} {
		if got := atifDirTask(name); got != want {
			t.Errorf("atifDirTask(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestATIFStreamFirstLine checks that a trajectory written to a stream
// that stays open is read without waiting for more input.
func TestATIFStreamFirstLine(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte(`{"session_id": "s1", "steps": [{"source": "agent", "message": "done"}], "extra": {"task_id": "t"}}` + "\n"))
	r, err := NewReader("-", pr, ATIF)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan Item, 1)
	go func() {
		it, _ := r.Next()
		got <- it
	}()
	select {
	case it := <-got:
		if it.Err != nil || !strings.Contains(string(it.Rollout), `"output":"done"`) {
			t.Errorf("first item %s, %v; want the trajectory's rollout", it.Rollout, it.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first trajectory of an open stream was not read")
	}
}

// TestGymFailureReason: a failed rollout's recorded reason is its judge's
// error wherever that member is, else the first other failure text, else
// its error.
func TestGymFailureReason(t *testing.T) {
	for _, tc := range []struct{ row, want string }{
		{`{"_ng_failure_class":"judge_failed","_ng_failure_stage":"verify","_ng_failure_judge_error":"ReadTimeout"}`, "judge_failed: ReadTimeout"},
		{`{"_ng_failure_class":"judge_failed","_ng_failure_judge_error":"","_ng_failure_stage":"verify"}`, "judge_failed: verify"},
		{`{"_ng_failure_class":"crashed","_ng_failure_terminal":true,"error":"boom"}`, "crashed: boom"},
		{`{"_ng_failure_class":"crashed"}`, "crashed"},
	} {
		var d jsonview.Doc
		row, err := d.Parse([]byte(tc.row))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(gymFailure(row)); got != tc.want {
			t.Errorf("%s: recorded error %q, want %q", tc.row, got, tc.want)
		}
	}
}
