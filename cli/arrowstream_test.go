package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rolloutBatches holds rollouts as Arrow record batches, to be written as
// an Arrow IPC stream.
type rolloutBatches struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
	rows   int
}

// loadRolloutBatches reads the JSON Lines rollouts at path into record
// batches of batchRows rows: every key of the first line a nullable string
// column, a string value as its text, any other value as its JSON text.
// Lines that are not JSON objects are left out.
func loadRolloutBatches(t *testing.T, path string, batchRows int) *rolloutBatches {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	var names []string
	var rb *array.RecordBuilder
	out := &rolloutBatches{}
	flush := func() {
		if rb.Field(0).Len() > 0 {
			out.recs = append(out.recs, rb.NewRecordBatch())
		}
	}
	for sc.Scan() {
		var m map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &m) != nil || m == nil {
			continue
		}
		if rb == nil {
			// Key order of the first line, as it is written.
			dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			dec.Token()
			for dec.More() {
				k, _ := dec.Token()
				names = append(names, k.(string))
				var skip json.RawMessage
				dec.Decode(&skip)
			}
			fields := make([]arrow.Field, len(names))
			for i, n := range names {
				fields[i] = arrow.Field{Name: n, Type: arrow.BinaryTypes.String, Nullable: true}
			}
			out.schema = arrow.NewSchema(fields, nil)
			rb = array.NewRecordBuilder(memory.DefaultAllocator, out.schema)
			defer rb.Release()
		}
		for i, n := range names {
			b := rb.Field(i).(*array.StringBuilder)
			v, ok := m[n]
			var s string
			switch {
			case !ok || string(v) == "null":
				b.AppendNull()
				continue
			case json.Unmarshal(v, &s) == nil:
				b.Append(s)
			default:
				b.Append(string(v))
			}
		}
		out.rows++
		if out.rows%batchRows == 0 {
			flush()
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	flush()
	t.Cleanup(func() {
		for _, r := range out.recs {
			r.Release()
		}
	})
	return out
}

// stream returns the record batches as an Arrow IPC stream.
func (rb *rolloutBatches) stream(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rb.schema))
	for _, r := range rb.recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// streamRows returns the schema of the Arrow IPC stream read from r and its
// rows, one JSON object each, and the lengths of its record batches.
func streamRows(t *testing.T, r io.Reader) (*arrow.Schema, []string, []int) {
	t.Helper()
	rd, err := ipc.NewReader(r)
	if err != nil {
		t.Fatalf("read rewards stream: %v", err)
	}
	defer rd.Release()
	var rows []string
	var lens []int
	for rd.Next() {
		rows = append(rows, recordRows(t, rd.RecordBatch())...)
		lens = append(lens, int(rd.RecordBatch().NumRows()))
	}
	if err := rd.Err(); err != nil {
		t.Fatalf("read rewards stream: %v", err)
	}
	return rd.Schema(), rows, lens
}

// fileRows returns the schema and rows of the Arrow IPC file at path.
func fileRows(t *testing.T, path string) (*arrow.Schema, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	defer rd.Close()
	var rows []string
	for i := range rd.NumRecords() {
		rec, err := rd.RecordBatchAt(i)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, recordRows(t, rec)...)
		rec.Release()
	}
	return rd.Schema(), rows
}

func recordRows(t *testing.T, rec arrow.RecordBatch) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := array.RecordToJSON(rec, &buf); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

// runGavel runs the gavel binary with stdin and returns its exit status,
// standard output and standard error.
func runGavel(t *testing.T, stdin []byte, args ...string) (int, []byte, string) {
	t.Helper()
	cmd := exec.Command(gavelBinary(t), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.Bytes(), errb.String()
}

// genRollouts generates n CRM rollouts as JSON Lines, a share of them bad.
func genRollouts(t *testing.T, dir string, n int, badShare string) string {
	t.Helper()
	path := filepath.Join(dir, "rollouts.jsonl")
	if code, _, stderr := runCLI(t, "gen", "--quiet", "--out", path, "--rollouts", strconv.Itoa(n), "--bad-share", badShare); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	return path
}

func sameRows(t *testing.T, what string, wantSchema, gotSchema *arrow.Schema, want, got []string) {
	t.Helper()
	if !gotSchema.Equal(wantSchema) {
		t.Errorf("%s: schema\n%s\nwant\n%s", what, gotSchema, wantSchema)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: row %d\n got %s\nwant %s", what, i, got[i], want[i])
		}
	}
}

// TestGradeStreamOut checks that --out - streams the rows, in order and
// with the schema, of the rewards part that --format arrow writes for the
// same input, and --checks-out those of the checks part, for an Arrow IPC
// stream and for JSON Lines on standard input; that the exit status is
// 3 when some rows have status error; and that the summary goes to
// standard error.
func TestGradeStreamOut(t *testing.T) {
	dir := t.TempDir()
	jsonl := genRollouts(t, dir, 700, "0.05")
	batches := loadRolloutBatches(t, jsonl, 100)
	stream := batches.stream(t)
	lines, err := os.ReadFile(jsonl)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		input      []byte
		flags      []string
		rows       int
		keepsModel bool
	}{
		{"arrow stream sniffed", stream, nil, batches.rows, true},
		{"arrow stream named", stream, []string{"--input-format", "arrow-stream"}, batches.rows, true},
		{"json lines sniffed", lines, nil, 700, false},
		{"json lines named", lines, []string{"--input-format", "jsonl"}, 700, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"grade", "--quiet", "--format", "arrow", "--out", out}, tc.flags...)
			if code, _, stderr := runGavel(t, tc.input, append(args, "-")...); code != 3 {
				t.Fatalf("grade --format arrow: exit %d, want 3: %s", code, stderr)
			}
			checksOut := filepath.Join(t.TempDir(), "sub", "checks.arrow")
			summaryOut := filepath.Join(t.TempDir(), "summary.json")
			args = append([]string{"grade", "--out", "-", "--checks-out", checksOut, "--summary-out", summaryOut}, tc.flags...)
			code, stdout, stderr := runGavel(t, tc.input, append(args, "-")...)
			if code != 3 {
				t.Fatalf("grade --out -: exit %d, want 3: %s", code, stderr)
			}
			for _, want := range []string{"graded " + strconv.Itoa(tc.rows) + " rollouts", "rows have status error", "results in the stream on standard output and " + checksOut} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q, want it to contain %q", stderr, want)
				}
			}
			// The summary file is summary.json's, but for timings and the
			// duplicate ids a stream does not look for.
			var sum, dirSum map[string]any
			for path, m := range map[string]*map[string]any{summaryOut: &sum, filepath.Join(out, "summary.json"): &dirSum} {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(b, m); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
			}
			for _, k := range []string{"rollouts", "passed", "error", "error_kinds", "pass_rate", "mean_reward", "checks", "verifiers", "tasks"} {
				if a, b := fmt.Sprint(sum[k]), fmt.Sprint(dirSum[k]); a != b || a == "<nil>" {
					t.Errorf("--summary-out %s = %s, summary.json's %s", k, a, b)
				}
			}
			gotSchema, got, _ := streamRows(t, bytes.NewReader(stdout))
			// A stream's schema is read ahead; JSON Lines on standard input
			// is not, and keeps nothing by default.
			if _, kept := gotSchema.FieldsByName("model"); kept != tc.keepsModel {
				t.Errorf("rewards schema %s: model kept %v, want %v", gotSchema, kept, tc.keepsModel)
			}
			wantSchema, want := fileRows(t, filepath.Join(out, "rewards", "part-00000.arrow"))
			sameRows(t, "rewards", wantSchema, gotSchema, want, got)
			gotSchema, got = fileRows(t, checksOut)
			wantSchema, want = fileRows(t, filepath.Join(out, "checks", "part-00000.arrow"))
			sameRows(t, "checks", wantSchema, gotSchema, want, got)

			// Neither the worker count nor the batch size changes a byte.
			args = append([]string{"grade", "--out", "-", "--workers", "1", "--batch-size", "7"}, tc.flags...)
			code, again, stderr := runGavel(t, tc.input, append(args, "-")...)
			if code != 3 || !bytes.Equal(again, stdout) {
				t.Errorf("with --workers 1 --batch-size 7: exit %d, stream equal %v (want 3, true): %s", code, bytes.Equal(again, stdout), stderr)
			}
		})
	}
}

// TestGradeStreamMap checks that --map and --keep apply to a stream on
// standard input as to a file: a stream whose final states are in another
// column, mapped, grades to the rewards of the stream with the standard
// column.
func TestGradeStreamMap(t *testing.T) {
	dir := t.TempDir()
	jsonl := genRollouts(t, dir, 300, "0")
	batches := loadRolloutBatches(t, jsonl, 100)
	renamed := *batches
	fields := batches.schema.Fields()
	for i := range fields {
		if fields[i].Name == "final_state" {
			fields[i].Name = "world_after"
		}
	}
	renamed.schema = arrow.NewSchema(fields, nil)
	renamed.recs = nil
	for _, r := range batches.recs {
		rec := array.NewRecordBatch(renamed.schema, r.Columns(), r.NumRows())
		renamed.recs = append(renamed.recs, rec)
		t.Cleanup(rec.Release)
	}
	code, want, stderr := runGavel(t, batches.stream(t), "grade", "--out", "-", "--keep", "model,run_id", "-")
	if code != 3 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, got, stderr := runGavel(t, renamed.stream(t), "grade", "--out", "-", "--keep", "model,run_id", "--map", "final_state=world_after", "-")
	if code != 3 {
		t.Fatalf("with --map: exit %d: %s", code, stderr)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the rewards of the mapped stream differ from those of the stream with the standard column")
	}
	schema, _, _ := streamRows(t, bytes.NewReader(got))
	if names := schema.Fields(); names[len(names)-2].Name != "model" || names[len(names)-1].Name != "run_id" {
		t.Errorf("rewards schema %s, want model and run_id kept last", schema)
	}
}

// TestGradeStreamBatches checks where the rewards' record batches end:
// where the input's record batches end, and every 256 rows.
func TestGradeStreamBatches(t *testing.T) {
	dir := t.TempDir()
	jsonl := genRollouts(t, dir, 700, "0")
	batches := loadRolloutBatches(t, jsonl, 300)
	code, stdout, stderr := runGavel(t, batches.stream(t), "grade", "--out", "-", "--batch-size", "100", "-")
	if code != 3 { // some generated rollouts are verifier errors by construction
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, _, lens := streamRows(t, bytes.NewReader(stdout))
	if got, want := jsonNumbers(lens), "[256,44,256,44,100]"; got != want {
		t.Errorf("record batch lengths %s, want %s", got, want)
	}
}

func jsonNumbers(v []int) string { b, _ := json.Marshal(v); return string(b) }

func TestGradeStreamUsageErrors(t *testing.T) {
	dir := t.TempDir()
	in := genRollouts(t, dir, 10, "0")
	checks := filepath.Join(dir, "checks.arrow")
	judged := filepath.Join(dir, "judged.yaml")
	spec := "verifiers:\n  - id: VER-J\n    task: TASK-J\n    name: judged\n    checks:\n      - id: polite\n        type: rubric\n        rubric: The answer is polite.\n"
	if err := os.WriteFile(judged, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"resume", []string{"--out", "-", "--checks-out", checks, "--resume"}, "--out -: a stream on standard output cannot be resumed"},
		{"reuse", []string{"--out", "-", "--reuse", dir}, "--out -: reusing earlier results needs an output directory"},
		{"shard", []string{"--out", "-", "--shard", "0/2"}, "--out -: shards write into one output directory"},
		{"baseline", []string{"--out", "-", "--baseline", dir}, "--baseline compares result directories: not with --out -"},
		{"format parquet", []string{"--out", "-", "--format", "parquet"}, "--format parquet: with --out -, the rewards are an Arrow IPC stream"},
		{"format jsonl", []string{"--out", "-", "--format", "jsonl"}, "--format jsonl: with --out -"},
		{"checks out without out -", []string{"--out", filepath.Join(dir, "out"), "--checks-out", checks}, "--checks-out: a checks file is written only when the results are streamed"},
		{"summary out without out -", []string{"--out", filepath.Join(dir, "out"), "--summary-out", filepath.Join(dir, "s.json")}, "--summary-out: a summary file is written only when the results are streamed"},
		{"unknown input format", []string{"--out", "-", "--input-format", "csv"}, `--input-format: unknown input format "csv" (want jsonl or arrow-stream)`},
		{"several judgements", []string{"--out", "-", "--spec", judged, "--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "a", "--judge-samples", "2"}, "--out -: results on standard output have no judgements table"},
		{"input format with from", []string{"--out", "-", "--input-format", "arrow-stream", "--from", "messages"}, "--input-format: standard input is read as a messages log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append(append([]string{"grade"}, tt.args...), in)...)
			if code != 2 {
				t.Errorf("exit %d, want 2\nstderr: %s", code, stderr)
			}
			if !strings.Contains(stderr, tt.msg) {
				t.Errorf("stderr %q, want it to contain %q", stderr, tt.msg)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if _, err := os.Stat(checks); err == nil {
				t.Errorf("%s written", checks)
			}
			if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
				t.Errorf("output directory written")
			}
		})
	}
}

// streamingGavel is a gavel grade --out - process whose standard input and
// output are pipes the test holds.
type streamingGavel struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr bytes.Buffer
}

func startStreaming(t *testing.T, args ...string) *streamingGavel {
	t.Helper()
	g := &streamingGavel{cmd: exec.Command(gavelBinary(t), append([]string{"grade", "--out", "-"}, args...)...)}
	g.cmd.Stderr = &g.stderr
	var err error
	if g.stdin, err = g.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if g.stdout, err = g.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.cmd.Process.Kill()
		g.cmd.Wait()
	})
	return g
}

// wait waits for the process to end, at most 30s, and returns its exit
// status.
func (g *streamingGavel) wait(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		g.cmd.Process.Kill()
		t.Fatalf("gavel did not end\nstderr: %s", g.stderr.String())
	}
	return g.cmd.ProcessState.ExitCode()
}

// within runs f on another goroutine, which may report with t.Error but
// not end the test, and fails the test when f takes more than 30s.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer in 30s", what)
	}
}

// TestGradeStreamFirstBatchEarly checks that the rewards of the first
// rows leave while the input is still open: a writer that sends rows and
// waits for their rewards is answered.
func TestGradeStreamFirstBatchEarly(t *testing.T) {
	dir := t.TempDir()
	jsonl := genRollouts(t, dir, 700, "0")
	t.Run("arrow stream", func(t *testing.T) {
		batches := loadRolloutBatches(t, jsonl, 100)
		g := startStreaming(t, "-")
		w := ipc.NewWriter(g.stdin, ipc.WithSchema(batches.schema))
		if err := w.Write(batches.recs[0]); err != nil {
			t.Fatal(err)
		}
		var rd *ipc.Reader
		within(t, "first rewards batch", func() {
			var err error
			if rd, err = ipc.NewReader(g.stdout); err != nil {
				t.Error(err)
				return
			}
			if !rd.Next() {
				t.Errorf("no first batch: %v", rd.Err())
				return
			}
			if n := rd.RecordBatch().NumRows(); n != 100 {
				t.Errorf("first batch: %d rows, want 100", n)
			}
		})
		if t.Failed() {
			t.FailNow()
		}
		for _, r := range batches.recs[1:] {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		g.stdin.Close()
		rows := 100
		for rd.Next() {
			rows += int(rd.RecordBatch().NumRows())
		}
		if err := rd.Err(); err != nil {
			t.Fatal(err)
		}
		if code := g.wait(t); code != 3 || rows != 700 {
			t.Errorf("exit %d, %d rows, want 3, 700\nstderr: %s", code, rows, g.stderr.String())
		}
	})
	t.Run("json lines", func(t *testing.T) {
		data, err := os.ReadFile(jsonl)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		g := startStreaming(t, "-")
		if _, err := g.stdin.Write(bytes.Join(lines[:300], nil)); err != nil {
			t.Fatal(err)
		}
		within(t, "first rewards batch", func() {
			rd, err := ipc.NewReader(g.stdout)
			if err != nil {
				t.Error(err)
				return
			}
			if !rd.Next() {
				t.Errorf("no first batch: %v", rd.Err())
				return
			}
			if n := rd.RecordBatch().NumRows(); n != 256 {
				t.Errorf("first batch: %d rows, want 256", n)
			}
		})
		g.stdin.Write(bytes.Join(lines[300:], nil))
		g.stdin.Close()
		io.Copy(io.Discard, g.stdout)
		if code := g.wait(t); code != 3 {
			t.Errorf("exit %d, want 3\nstderr: %s", code, g.stderr.String())
		}
	})
}

// TestGradeStreamClosedStdout checks that a reader that closes standard
// output stops the run with exit status 1 and a message naming standard
// output, while standard input stays open.
func TestGradeStreamClosedStdout(t *testing.T) {
	dir := t.TempDir()
	jsonl := genRollouts(t, dir, 400, "0")
	batches := loadRolloutBatches(t, jsonl, 100)
	checksOut := filepath.Join(dir, "checks.arrow")
	g := startStreaming(t, "--checks-out", checksOut, "-")
	w := ipc.NewWriter(g.stdin, ipc.WithSchema(batches.schema))
	if err := w.Write(batches.recs[0]); err != nil {
		t.Fatal(err)
	}
	within(t, "first rewards batch", func() {
		rd, err := ipc.NewReader(g.stdout)
		if err != nil || !rd.Next() {
			t.Errorf("no first batch: %v", err)
		}
	})
	g.stdout.Close()
	// More rows to grade, whose rewards have nowhere to go; standard input
	// stays open.
	for _, r := range batches.recs[1:] {
		w.Write(r)
	}
	if code := g.wait(t); code != 1 {
		t.Errorf("exit %d, want 1\nstderr: %s", code, g.stderr.String())
	}
	if msg := g.stderr.String(); !strings.Contains(msg, "standard output was closed by its reader") || !strings.Contains(msg, "broken pipe") {
		t.Errorf("stderr %q, want it to say that standard output was closed (broken pipe)", msg)
	}
	// The summary says where the results are not.
	if msg, want := g.stderr.String(), "results in the stream on standard output, cut short ("+checksOut+" not written)"; !strings.Contains(msg, want) {
		t.Errorf("stderr %q, want %q", msg, want)
	}
	if _, err := os.Stat(checksOut); !os.IsNotExist(err) {
		t.Errorf("the checks file of a stream cut short: stat %v, want none", err)
	}
	g.stdin.Close()
}

// TestGradeStreamTruncatedStdin checks that an Arrow IPC stream cut short
// inside a message is an input error naming standard input and the byte
// offset of the message, with exit status 1, on a stream and into a
// directory; and so is one cut between two messages, without its
// end-of-stream marker.
func TestGradeStreamTruncatedStdin(t *testing.T) {
	dir := t.TempDir()
	jsonl := genRollouts(t, dir, 300, "0")
	stream := loadRolloutBatches(t, jsonl, 100).stream(t)
	cut := stream[:len(stream)-1000]
	for _, out := range []string{"-", filepath.Join(dir, "out")} {
		code, _, stderr := runGavel(t, cut, "grade", "--quiet", "--out", out, "-")
		if code != 1 {
			t.Errorf("--out %s: exit %d, want 1\nstderr: %s", out, code, stderr)
		}
		for _, want := range []string{"read standard input: record batch 2 at byte ", "the stream ends inside the message (truncated)"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("--out %s: stderr %q, want it to contain %q", out, stderr, want)
			}
		}
	}
	// A writer that stops between two messages leaves no end-of-stream
	// marker: the rows sent are not taken for all of them.
	code, _, stderr := runGavel(t, stream[:len(stream)-8], "grade", "--out", "-", "-")
	if want := "read standard input: the stream ends at byte " + strconv.Itoa(len(stream)-8) + " without its end-of-stream marker"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("a stream without its end-of-stream marker: exit %d, stderr %q; want 1, %q", code, stderr, want)
	}
	code, _, stderr = runGavel(t, []byte("{\"task_id\": 1}\n"), "grade", "--out", "-", "--input-format", "arrow-stream", "-")
	if code != 1 || !strings.Contains(stderr, "read standard input: not an arrow ipc stream") {
		t.Errorf("JSON Lines read as a stream: exit %d, stderr %q; want 1, not an arrow ipc stream", code, stderr)
	}
}

// TestGradeStreamToCommandOutput checks that --out - writes the rewards
// to the command's standard output, the summary to its standard error.
func TestGradeStreamToCommandOutput(t *testing.T) {
	dir := t.TempDir()
	in := genRollouts(t, dir, 50, "0")
	code, stdout, stderr := runCLI(t, "grade", "--out", "-", in)
	if code != 0 && code != 3 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, rows, _ := streamRows(t, strings.NewReader(stdout))
	if len(rows) != 50 || !strings.Contains(stderr, "graded 50 rollouts") {
		t.Errorf("%d rows on standard output, stderr %q; want 50, the summary", len(rows), stderr)
	}
}
