package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// readAll reads every item of r and the task rows, as golden text: a line
// "# where" per item (with " [task]" when it has its task row), then its rollout or its error, then "# tasks" and
// one task row per line; a file error ends the text with "! error".
func readAll(t *testing.T, r *Reader) string {
	t.Helper()
	var b strings.Builder
	for {
		it, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.WriteString("! " + err.Error() + "\n")
			break
		}
		b.WriteString("# " + it.Where)
		if it.Task != nil {
			b.WriteString(" [task]")
		}
		b.WriteString("\n")
		if it.Err != nil {
			b.WriteString("error: " + it.Err.Error() + "\n")
		}
		if it.Rollout != nil {
			if !json.Valid(it.Rollout) || bytes.ContainsAny(it.Rollout, "\n\r") {
				t.Errorf("%s: rollout is not one line of valid JSON: %s", it.Where, it.Rollout)
			}
			b.Write(it.Rollout)
			b.WriteByte('\n')
		}
	}
	b.WriteString("# tasks\n")
	for _, id := range r.TaskIDs() {
		row, ok := r.Task(id)
		if !ok || !json.Valid(row) {
			t.Errorf("Task(%q) = %s, %v; want a valid row", id, row, ok)
		}
		b.Write(row)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	tests := []struct {
		file   string
		format Format
	}{
		{"inspect/run.eval", Inspect},
		{"inspect/unfinished.eval", Inspect},
		{"inspect/log.json", Inspect},
		{"tau-bench/tool-calling-gpt-4o-0.0_range_0--1.json", TauBench},
		{"tau2/results.json", Tau2},
		{"tau2/tasks_last.json", Tau2},
		{"messages/chats.jsonl", Messages},
		{"nemo-gym/run/rollouts.jsonl", NemoGym},
		{"nemo-gym/run/rollouts_failures.jsonl", NemoGym},
		{"atif/job/hello-file__Xk3pQ9a/agent/trajectory.json", ATIF},
		{"atif/batch.jsonl", ATIF},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			r, err := Open(path, tt.format)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := readAll(t, r)
			golden := path + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.file, diff)
			}
		})
	}
}

// TestTruncated checks that a file cut short is an error of the file that
// names the byte offset, after the items before the cut.
func TestTruncated(t *testing.T) {
	tests := []struct {
		file   string
		format Format
		cut    int
		want   string
	}{
		{"tau-bench/tool-calling-gpt-4o-0.0_range_0--1.json", TauBench, 3000, "truncated at byte 3000"},
		{"tau2/results.json", Tau2, 5000, "truncated at byte 5000"},
		{"inspect/log.json", Inspect, 4000, "truncated at byte 4000"},
		{"inspect/run.eval", Inspect, 2000, "no zip directory at the end (byte 2000)"},
		{"atif/job/hello-file__Xk3pQ9a/agent/trajectory.json", ATIF, 1500, "truncated at byte 1500"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			data = data[:tt.cut]
			var r *Reader
			if IsEvalArchive(tt.file) {
				r, err = NewEvalReader(tt.file, bytes.NewReader(data), int64(len(data)))
			} else {
				r, err = NewReader(tt.file, bytes.NewReader(data), tt.format)
			}
			for err == nil {
				_, err = r.Next()
			}
			if err == io.EOF || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("read of %s cut at %d: error %v, want one containing %q", tt.file, tt.cut, err, tt.want)
			}
			if !IsEvalArchive(tt.file) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("error %v is not io.ErrUnexpectedEOF", err)
			}
		})
	}
}

// TestReadAhead reads a file through a small window at offsets in order,
// backwards, across the window and past the end, as bytes.Reader would.
func TestReadAhead(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	want := bytes.NewReader(data)
	r := newReadAhead(bytes.NewReader(data), 64)
	for _, c := range []struct{ off, n int }{{0, 10}, {10, 30}, {40, 30}, {5, 3}, {990, 20}, {1000, 1}, {100, 40}, {120, 33}, {500, 100}} {
		got, wantBuf := make([]byte, c.n), make([]byte, c.n)
		n, err := r.ReadAt(got, int64(c.off))
		wn, werr := want.ReadAt(wantBuf, int64(c.off))
		if n != wn || (err == nil) != (werr == nil) || !bytes.Equal(got[:n], wantBuf[:wn]) {
			t.Errorf("ReadAt(%d bytes at %d) = %d, %v; want %d, %v", c.n, c.off, n, err, wn, werr)
		}
	}
}

func TestScoreValue(t *testing.T) {
	tests := []struct {
		json, want string
		ok         bool
	}{
		{`0.25`, "0.25", true}, {`true`, "1", true}, {`false`, "0", true},
		{`"C"`, "1", true}, {`"I"`, "0", true}, {`"P"`, "0.5", true}, {`"N"`, "0", true},
		{`"yes"`, "1", true}, {`" 0.5 "`, "0.5", true}, {`"maybe"`, "", false},
		{`[1]`, "", false}, {`{"a":1}`, "", false}, {`null`, "", false},
	}
	for _, tt := range tests {
		var d jsonview.Doc
		v, err := d.Parse([]byte(tt.json))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := scoreValue(v); got != tt.want || ok != tt.ok {
			t.Errorf("scoreValue(%s) = %q, %v; want %q, %v", tt.json, got, ok, tt.want, tt.ok)
		}
	}
}
