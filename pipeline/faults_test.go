package pipeline

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// testVerifier returns a verifier of task T that runs fn on each rollout
// and adds one required passing check when fn returns.
func testVerifier(fn func(r *verifiers.Rollout)) *verifiers.Verifier {
	return &verifiers.Verifier{ID: "VER-T", Name: "test", Tasks: []string{"T"}, Source: "test", Definition: "test",
		Grade: func(r *verifiers.Rollout, c *verifiers.Checks) error {
			fn(r)
			c.Require("ok", true, "ok")
			return nil
		}}
}

// writeLines writes a JSON Lines file of rows {"rollout_id": id, "task_id": "T"}.
func writeLines(t *testing.T, path string, ids ...string) {
	t.Helper()
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "{\"rollout_id\":%q,\"task_id\":\"T\"}\n", id)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func rewardsByID(t *testing.T, out string, part int) map[string]map[string]any {
	t.Helper()
	m := map[string]map[string]any{}
	for _, r := range gaveltest.DecodeJSONL(t, filepath.Join(out, "rewards", columnar.PartName(part, columnar.FormatJSONL))) {
		m[r["rollout_id"].(string)] = r
	}
	return m
}

// TestVerifierTimeout runs verifiers that hang on some rows: each such row
// has status error with a timeout message, the stuck workers are replaced
// and every other row is graded.
func TestVerifierTimeout(t *testing.T) {
	// Checked last: the abandoned calls exit once their verifier returns.
	defer goleak.VerifyNone(t)
	release := make(chan struct{})
	defer close(release)
	v := testVerifier(func(r *verifiers.Rollout) {
		if strings.HasPrefix(r.ID, "hang") {
			<-release
		}
	})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var ids []string
	for i := range 40 {
		if i%13 == 5 {
			ids = append(ids, fmt.Sprintf("hang-%d", i))
		} else {
			ids = append(ids, fmt.Sprintf("ok-%d", i))
		}
	}
	writeLines(t, in, ids...)
	out := filepath.Join(dir, "out")
	res, err := Run(context.Background(), Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: []*verifiers.Verifier{v},
		Workers: 2, BatchSize: 4, Timeout: 50 * time.Millisecond, MaxStuck: 4})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := rewardsByID(t, out, 0)
	if len(got) != len(ids) {
		t.Fatalf("%d rows written, want %d", len(got), len(ids))
	}
	for _, id := range ids {
		r := got[id]
		if strings.HasPrefix(id, "hang") {
			if r["status"] != "error" || r["error_kind"] != "verifier" || r["error"] != "verifier VER-T timed out after 50ms" {
				t.Errorf("%s: status %v, kind %v, error %v; want a verifier timeout", id, r["status"], r["error_kind"], r["error"])
			}
		} else if r["status"] != "passed" {
			t.Errorf("%s: status %v, want passed", id, r["status"])
		}
	}
	if res.Summary.Error != 3 {
		t.Errorf("Summary.Error = %d, want 3", res.Summary.Error)
	}
}

// TestTooManyStuck stops a run whose verifiers all hang, with an error
// that says so.
func TestTooManyStuck(t *testing.T) {
	// Checked last: the abandoned calls exit once their verifier returns.
	defer goleak.VerifyNone(t)
	release := make(chan struct{})
	defer close(release)
	v := testVerifier(func(*verifiers.Rollout) { <-release })
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeLines(t, in, "a", "b", "c", "d", "e", "f", "g", "h")
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), Config{Inputs: []string{in}, Out: filepath.Join(dir, "out"), Verifiers: []*verifiers.Verifier{v},
			Workers: 2, BatchSize: 1, Timeout: 20 * time.Millisecond, MaxStuck: 3})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "stuck past the timeout of 20ms (limit 3)") {
			t.Errorf("Run = %v, want too many stuck verifier calls", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run hangs with every verifier stuck")
	}
}

// TestVerifierPanic checks that a panicking verifier gives its row status
// error, kind verifier, and the other rows are graded.
func TestVerifierPanic(t *testing.T) {
	v := testVerifier(func(r *verifiers.Rollout) {
		if r.ID == "boom" {
			panic("index out of range")
		}
	})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeLines(t, in, "a", "boom", "b")
	out := filepath.Join(dir, "out")
	if _, err := Run(context.Background(), Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: []*verifiers.Verifier{v}}); err != nil {
		t.Fatal(err)
	}
	got := rewardsByID(t, out, 0)
	if r := got["boom"]; r["status"] != "error" || r["error_kind"] != "verifier" || !strings.Contains(r["error"].(string), "verifier VER-T panicked: index out of range") {
		t.Errorf("boom: %v", r)
	}
	if got["a"]["status"] != "passed" || got["b"]["status"] != "passed" {
		t.Errorf("other rows: %v %v, want passed", got["a"], got["b"])
	}
}

// genFile generates a dataset of n CRM rollouts at path.
func genFile(t *testing.T, path string, n, rowGroupRows int) {
	t.Helper()
	if _, err := gen.Run(context.Background(), gen.Config{Out: path, Rollouts: n, Seed: 3, RowGroupRows: rowGroupRows}); err != nil {
		t.Fatal(err)
	}
}

func corruptAt(t *testing.T, path string, frac float64, n int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := int(float64(len(data)) * frac)
	for i := at; i < at+n && i < len(data); i++ {
		data[i] ^= 0x5a
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeDataset writes a Parquet file with the given columns and rows.
func writeDataset(t *testing.T, path string, cols []columnar.DatasetColumn, rows [][]columnar.DatasetValue) {
	t.Helper()
	writeDatasetAs(t, path, columnar.DatasetParquet, cols, rows)
}

// writeDatasetAs writes a file of the given format, columns and rows.
func writeDatasetAs(t *testing.T, path string, format columnar.DatasetFormat, cols []columnar.DatasetColumn, rows [][]columnar.DatasetValue) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := columnar.NewDatasetWriter(f, format, cols, columnar.DatasetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// hugeWindowZstd returns a zstd frame whose header asks for a 2 TiB window,
// holding one raw block with text.
func hugeWindowZstd(text string) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint32(0xFD2FB528))
	b.WriteByte(0x00)               // frame header descriptor: window descriptor follows
	b.WriteByte(0xF8)               // window log 10+31
	hdr := uint32(len(text))<<3 | 1 // last block, raw
	b.Write([]byte{byte(hdr), byte(hdr >> 8), byte(hdr >> 16)})
	b.WriteString(text)
	return b.Bytes()
}

// TestHostileInput grades each hostile file between two good ones: the
// hostile file's problem is reported with its file and row, line or
// offset, as a row error or as that input's failure, and no row of the
// good files is lost.
func TestHostileInput(t *testing.T) {
	noop := testVerifier(func(*verifiers.Rollout) {})
	tests := []struct {
		name   string
		make   func(t *testing.T, path string)
		ext    string
		cfg    func(*Config)
		failed []string // the input fails: its error holds these
		rowErr string   // else: some row of it has this error
		rows   int      // rows of its part, when it does not fail
	}{
		{name: "truncated parquet", ext: ".parquet", make: func(t *testing.T, p string) {
			genFile(t, p, 300, 0)
			data, _ := os.ReadFile(p)
			writeFile(t, p, data[:len(data)*6/10])
		}, failed: []string{"open", "truncated parquet file"}},
		{name: "corrupt page", ext: ".parquet", make: func(t *testing.T, p string) {
			genFile(t, p, 1000, 250)
			corruptAt(t, p, 0.45, 256)
		}, failed: []string{"read", "row group"}},
		{name: "state column of the wrong type", ext: ".parquet", make: func(t *testing.T, p string) {
			cols := []columnar.DatasetColumn{{Name: "rollout_id", Type: columnar.DatasetString}, {Name: "task_id", Type: columnar.DatasetString}, {Name: "final_state", Type: columnar.DatasetInt64}}
			writeDataset(t, p, cols, [][]columnar.DatasetValue{
				{{Kind: columnar.DatasetText, Bytes: []byte("w1")}, {Kind: columnar.DatasetText, Bytes: []byte("T")}, {Kind: columnar.DatasetInt, Int: 7}},
			})
		}, rowErr: "final_state: column holds a number", rows: 1},
		{name: "corrupt zstd", ext: ".jsonl.zst", make: func(t *testing.T, p string) {
			genFile(t, p, 400, 0)
			corruptAt(t, p, 0.5, 64)
		}, failed: []string{"line", "byte offset"}},
		{name: "corrupt gzip", ext: ".jsonl.gz", make: func(t *testing.T, p string) {
			plain := strings.TrimSuffix(p, ".gz")
			genFile(t, plain, 400, 0)
			data, _ := os.ReadFile(plain)
			os.Remove(plain)
			var b bytes.Buffer
			zw := gzipWriter(&b)
			zw.Write(data)
			zw.Close()
			writeFile(t, p, b.Bytes())
			corruptAt(t, p, 0.5, 64)
		}, failed: []string{"line", "byte offset"}},
		{name: "zstd window past the decoder limit", ext: ".jsonl.zst", make: func(t *testing.T, p string) {
			writeFile(t, p, hugeWindowZstd(`{"rollout_id":"z","task_id":"T"}`+"\n"))
		}, failed: []string{"line 1", "window"}},
		{name: "100 MB line", ext: ".jsonl", make: func(t *testing.T, p string) {
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"rollout_id":"l1","task_id":"T"}` + "\n" + `{"rollout_id":"big","task_id":"T","pad":"`)
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			for range 100 {
				f.Write(chunk)
			}
			f.WriteString("\"}\n" + `{"rollout_id":"l3","task_id":"T"}` + "\n")
			f.Close()
		}, rowErr: "line 2 is longer than the limit of 67108864 bytes", rows: 3},
		{name: "line past a configured limit", ext: ".jsonl", make: func(t *testing.T, p string) {
			writeFile(t, p, []byte(`{"rollout_id":"l1","task_id":"T","pad":"`+strings.Repeat("y", 3000)+`"}`+"\n"+`{"rollout_id":"l2","task_id":"T"}`+"\n"))
		}, cfg: func(c *Config) { c.MaxLineBytes = 1000 }, rowErr: "line 1 is longer than the limit of 1000 bytes", rows: 2},
		{name: "JSON nested 100000 deep", ext: ".jsonl", make: func(t *testing.T, p string) {
			deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
			writeFile(t, p, []byte(`{"rollout_id":"d","task_id":"T","final_state":`+deep+"}\n"+`{"rollout_id":"d2","task_id":"T"}`+"\n"))
		}, rowErr: "line 1: invalid JSON at byte", rows: 2},
		{name: "invalid UTF-8", ext: ".jsonl", make: func(t *testing.T, p string) {
			writeFile(t, p, []byte("{\"rollout_id\":\"u\",\"task_id\":\"T\",\"output\":\"caf\xe9\"}\n"))
		}, rowErr: "invalid UTF-8", rows: 1},
		{name: "empty JSON Lines file", ext: ".jsonl", make: func(t *testing.T, p string) {
			writeFile(t, p, nil)
		}, rows: 0},
		{name: "empty Parquet file", ext: ".parquet", make: func(t *testing.T, p string) {
			writeFile(t, p, nil)
		}, failed: []string{"not a parquet file: only 0 bytes"}},
		{name: "Parquet file with zero rows", ext: ".parquet", make: func(t *testing.T, p string) {
			writeDataset(t, p, []columnar.DatasetColumn{{Name: "rollout_id", Type: columnar.DatasetString}, {Name: "task_id", Type: columnar.DatasetString}}, nil)
		}, rows: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			good1, good2 := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "c.jsonl")
			writeLines(t, good1, "a1", "a2", "a3")
			writeLines(t, good2, "c1", "c2", "c3")
			bad := filepath.Join(dir, "b"+tt.ext)
			tt.make(t, bad)
			out := filepath.Join(dir, "out")
			cfg := Config{Inputs: []string{good1, bad, good2}, Out: out, Format: columnar.FormatJSONL,
				Verifiers: append(crm.Verifiers(), noop), Workers: 2, BatchSize: 7}
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			done := make(chan struct{})
			var res *Result
			var err error
			go func() {
				defer close(done)
				res, err = Run(context.Background(), cfg)
			}()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("Run hangs")
			}
			for _, part := range []int{0, 2} {
				got := rewardsByID(t, out, part)
				if len(got) != 3 {
					t.Errorf("good input %d: %d rows, want 3", part, len(got))
				}
			}
			if tt.failed != nil {
				if err == nil {
					t.Fatalf("Run = nil error, want the input to fail")
				}
				msg := err.Error()
				for _, s := range append([]string{bad}, tt.failed...) {
					if !strings.Contains(msg, s) {
						t.Errorf("Run error %q lacks %q", msg, s)
					}
				}
				if res == nil || len(res.Summary.FailedInputs) != 1 || res.Summary.FailedInputs[0].Path != bad {
					t.Errorf("summary failed inputs = %+v, want %s", res.Summary.FailedInputs, bad)
				}
				if _, err := os.Stat(filepath.Join(out, "rewards", columnar.PartName(1, columnar.FormatJSONL))); err == nil {
					t.Errorf("the failed input has a part")
				}
				t.Logf("error: %v", msg)
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			rows := gaveltest.DecodeJSONL(t, filepath.Join(out, "rewards", columnar.PartName(1, columnar.FormatJSONL)))
			if len(rows) != tt.rows {
				t.Errorf("%d rows, want %d", len(rows), tt.rows)
			}
			if tt.rowErr != "" {
				found := false
				for _, r := range rows {
					if e, ok := r["error"].(string); ok && strings.Contains(e, tt.rowErr) {
						found = true
						t.Logf("row error: %s", e)
					}
				}
				if !found {
					t.Errorf("no row error holds %q; rows: %v", tt.rowErr, rows)
				}
			}
		})
	}
}

// TestDuplicateIDs counts and lists rollout ids that repeat, within a file
// and across files.
func TestDuplicateIDs(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeLines(t, a, "x", "y", "x", "z")
	writeLines(t, b, "y", "w", "x")
	res := grade(t, Config{Inputs: []string{a, b}, Out: filepath.Join(dir, "out"), Verifiers: []*verifiers.Verifier{testVerifier(func(*verifiers.Rollout) {})}})
	if got, want := res.Summary.DuplicateIDs, int64(3); got != want {
		t.Errorf("DuplicateIDs = %d, want %d", got, want)
	}
	if got, want := strings.Join(res.Summary.DuplicateIDList, ","), "x,y"; got != want {
		t.Errorf("DuplicateIDList = %s, want %s", got, want)
	}

	// With an input that cannot be read, the run ends with an error, and
	// the duplicates of the parts it wrote are still counted.
	bad := filepath.Join(dir, "c.jsonl.zst")
	if err := os.WriteFile(bad, []byte("not zstd at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{Inputs: []string{a, bad, b}, Out: filepath.Join(dir, "failed"),
		Verifiers: []*verifiers.Verifier{testVerifier(func(*verifiers.Rollout) {})}})
	if err == nil || res == nil || len(res.Summary.FailedInputs) != 1 {
		t.Fatalf("Run with an unreadable input = %v, want it to fail", err)
	}
	if res.Summary.DuplicateIDs != 3 || strings.Join(res.Summary.DuplicateIDList, ",") != "x,y" {
		t.Errorf("with a failed input: %d duplicate ids %v, want 3 [x y]", res.Summary.DuplicateIDs, res.Summary.DuplicateIDList)
	}
}

func gzipWriter(w *bytes.Buffer) *gzip.Writer { return gzip.NewWriter(w) }

// TestMetaAcrossFormats grades the same rows from Parquet and from JSON
// Lines and checks that verifiers see the same metadata: the fields that
// are not rollout fields (task_id, rollout_id, the states, output, log),
// whatever the states are and whether or not they repeat.
func TestMetaAcrossFormats(t *testing.T) {
	dir := t.TempDir()
	cols := []columnar.DatasetColumn{
		{Name: "rollout_id", Type: columnar.DatasetString}, {Name: "task_id", Type: columnar.DatasetString},
		{Name: "model", Type: columnar.DatasetString}, {Name: "final_state", Type: columnar.DatasetJSON},
		{Name: "initial_state", Type: columnar.DatasetJSON, Dictionary: true}, {Name: "log", Type: columnar.DatasetJSON},
		{Name: "sample", Type: columnar.DatasetInt64},
	}
	text := func(s string) columnar.DatasetValue {
		return columnar.DatasetValue{Kind: columnar.DatasetText, Bytes: []byte(s)}
	}
	raw := func(s string) columnar.DatasetValue {
		return columnar.DatasetValue{Kind: columnar.DatasetRaw, Bytes: []byte(s)}
	}
	big := `{"k":"` + strings.Repeat("v", 400) + `"}`
	var rows [][]columnar.DatasetValue
	for i := range 12 {
		final := raw(big)
		if i%3 == 1 {
			final = raw(`{"k":"changed"}`)
		}
		initial := raw(big)
		if i%4 == 3 {
			initial = text(big) // a string holding the state
		}
		rows = append(rows, []columnar.DatasetValue{text(fmt.Sprintf("r%d", i)), text("T"), text("m" + strconv.Itoa(i%2)), final, initial, raw(`[{"e":1}]`), {Kind: columnar.DatasetInt, Int: int64(i)}})
	}
	metas := map[string]map[string]string{}
	for _, format := range []columnar.DatasetFormat{columnar.DatasetParquet, columnar.DatasetJSONL} {
		path := filepath.Join(dir, "in."+string(format))
		writeDatasetAs(t, path, format, cols, rows)
		got := map[string]string{}
		var mu sync.Mutex
		v := testVerifier(func(r *verifiers.Rollout) {
			var m map[string]any
			if err := json.Unmarshal(r.Meta.Raw(), &m); err != nil {
				t.Errorf("metadata %q: %v", r.Meta.Raw(), err)
			}
			mu.Lock()
			got[fmt.Sprint(m["model"], m["sample"])] = fmt.Sprint(m)
			mu.Unlock()
		})
		grade(t, Config{Inputs: []string{path}, Out: filepath.Join(dir, "out-"+string(format)), Verifiers: []*verifiers.Verifier{v}})
		metas[string(format)] = got
	}
	if len(metas["parquet"]) != len(rows) {
		t.Fatalf("%d metadata objects from Parquet, want %d: %v", len(metas["parquet"]), len(rows), metas["parquet"])
	}
	if diff := cmp.Diff(metas["parquet"], metas["jsonl"]); diff != "" {
		t.Errorf("metadata differs between Parquet and JSON Lines (-parquet +jsonl):\n%s", diff)
	}
	for _, m := range metas["jsonl"] {
		if strings.Contains(m, "final_state") || strings.Contains(m, "initial_state") || strings.Contains(m, "rollout_id") || strings.Contains(m, "log") {
			t.Errorf("metadata %s holds a rollout field", m)
		}
	}
}
