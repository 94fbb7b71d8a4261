package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/crm"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares the decoded rows of got with the golden file, or
// rewrites the golden file with -update.
func golden(t *testing.T, got, goldenPath string) {
	t.Helper()
	if *update {
		data, err := os.ReadFile(got)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := gaveltest.DecodeJSONL(t, goldenPath)
	if diff := cmp.Diff(want, gaveltest.DecodeJSONL(t, got)); diff != "" {
		t.Errorf("%s differs from %s (-want +got):\n%s", got, goldenPath, diff)
	}
}

func grade(t *testing.T, cfg Config) *Result {
	t.Helper()
	if cfg.Verifiers == nil {
		cfg.Verifiers = crm.Verifiers()
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// TestBadRows grades one row for every kind of bad row (docs/grading.md,
// "Input": each gets status error, never stopping the run) beside good
// rows, and compares the decoded results with goldens.
func TestBadRows(t *testing.T) {
	in := filepath.Join("..", "testdata", "badrows", "input.jsonl")
	out := t.TempDir()
	res := grade(t, Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Workers: 2, BatchSize: 3})
	golden(t, filepath.Join(out, "rewards", "part-00000.jsonl"), filepath.Join("..", "testdata", "badrows", "rewards.golden.jsonl"))
	golden(t, filepath.Join(out, "checks", "part-00000.jsonl"), filepath.Join("..", "testdata", "badrows", "checks.golden.jsonl"))
	if res.ErrorRows == 0 {
		t.Errorf("ErrorRows = 0, want the bad rows counted")
	}
	// Every rule must be visible in the golden rows; a golden rewritten with
	// a regression would otherwise pass silently.
	byID := map[string]map[string]any{}
	for _, r := range gaveltest.DecodeJSONL(t, filepath.Join(out, "rewards", "part-00000.jsonl")) {
		byID[r["rollout_id"].(string)] = r
	}
	lineID := filepath.Join("..", "testdata", "badrows", "input.jsonl") + "#"
	tests := []struct {
		id, status, kind, errContains string
	}{
		{"ok-1", "passed", "", ""},
		{"no-task", "error", "input", "task_id: missing, null or empty"},
		{"null-task", "error", "input", "task_id: missing, null or empty"},
		{"empty-task", "error", "input", "task_id: missing, null or empty"},
		{"numeric-task", "error", "no_verifier", `no verifier binds task "4"`},
		{"bad-state", "error", "input", "final_state: invalid JSON at byte 11"},
		{"log-object", "error", "input", "log: not a JSON array"},
		{"log-bad-text", "error", "input", "log: invalid JSON at byte"},
		{"output-number", "error", "input", "output: not a string"},
		{lineID + "9", "error", "input", "rollout_id: want a string or a number, got boolean"},
		{lineID + "10", "error", "input", "line 11: not a JSON object"},
		{lineID + "11", "error", "input", "line 12: invalid JSON at byte"},
		{lineID + "13", "passed", "", ""},
		{"12", "failed", "", ""},
		{"unknown-task", "error", "no_verifier", `no verifier binds task "TASK-999"`},
		{"null-final", "passed", "", ""},
		{"string-states", "passed", "", ""},
		{"id-float", "error", "no_verifier", `no verifier binds task "7"`},
	}
	for _, tt := range tests {
		r, ok := byID[tt.id]
		if !ok {
			t.Errorf("no rewards row for %s", tt.id)
			continue
		}
		if r["status"] != tt.status {
			t.Errorf("%s: status %v, want %s (error %v)", tt.id, r["status"], tt.status, r["error"])
		}
		if tt.kind != "" && r["error_kind"] != tt.kind {
			t.Errorf("%s: error_kind %v, want %s", tt.id, r["error_kind"], tt.kind)
		}
		if tt.errContains != "" {
			if e, _ := r["error"].(string); !strings.Contains(e, tt.errContains) {
				t.Errorf("%s: error %q, want it to contain %q", tt.id, e, tt.errContains)
			}
		}
		if tt.status == "error" && r["reward"] != nil {
			t.Errorf("%s: reward %v on an error row, want null", tt.id, r["reward"])
		}
	}
	if len(byID) != 18 {
		t.Errorf("%d rewards rows, want 18 (19 lines, one blank)", len(byID))
	}
}

// TestDeterminism grades one input with different worker counts and batch
// sizes, in every format, and compares the output files byte for byte.
func TestDeterminism(t *testing.T) {
	in := filepath.Join("..", "testdata", "badrows", "input.jsonl")
	ins := []string{in, in, in}
	for _, format := range []string{columnar.FormatParquet, columnar.FormatArrow, columnar.FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			var first map[string][]byte
			for _, c := range []struct{ workers, batch int }{{1, 256}, {2, 1}, {2, 5}, {4, 7}} {
				out := t.TempDir()
				grade(t, Config{Inputs: ins, Out: out, Format: format, Workers: c.workers, BatchSize: c.batch})
				files := readTree(t, out)
				if first == nil {
					first = files
					continue
				}
				if len(files) != len(first) {
					t.Fatalf("workers=%d batch=%d: %d files, want %d", c.workers, c.batch, len(files), len(first))
				}
				for name, data := range first {
					if !bytes.Equal(files[name], data) {
						t.Errorf("workers=%d batch=%d: %s differs", c.workers, c.batch, name)
					}
				}
			}
		})
	}
}

// readTree reads every file under dir, with summary.json's timing fields
// removed.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == "summary.json" {
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				return err
			}
			delete(m, "elapsed_seconds")
			delete(m, "rows_per_second")
			data, _ = json.Marshal(m)
		}
		files[rel] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestBindConflict(t *testing.T) {
	a := &verifiers.Verifier{ID: "A", Tasks: []string{"T1"}, Source: "a.go:1"}
	b := &verifiers.Verifier{ID: "B", Tasks: []string{"T2", "T1"}, Source: "b.go:2"}
	_, err := Bind([]*verifiers.Verifier{a, b})
	want := "task T1 is bound by two verifiers: A (a.go:1) and B (b.go:2)"
	if err == nil || err.Error() != want {
		t.Fatalf("Bind error = %v, want %q", err, want)
	}
	_, err = Bind([]*verifiers.Verifier{a, {ID: "A", Source: "c.go:3"}})
	if err == nil || !strings.Contains(err.Error(), "verifier id A is defined twice") {
		t.Fatalf("Bind error = %v, want a duplicate id error", err)
	}
}

func TestInputs(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b/2.jsonl", "a.parquet", "b/1.jsonl.zst", "notes.txt", "c.ndjson.gz"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, nil, 0o644)
	}
	units, skipped, err := inputs.Inputs([]string{dir, filepath.Join(dir, "b", "*.jsonl"), "-"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range units {
		rel, _ := filepath.Rel(dir, u.Path)
		if u.Path == "-" {
			rel = "-"
		}
		got = append(got, rel+":"+u.Format)
	}
	want := []string{"a.parquet:parquet", "b/1.jsonl.zst:jsonl", "b/2.jsonl:jsonl", "c.ndjson.gz:jsonl", "b/2.jsonl:jsonl", "-:jsonl"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
	if len(skipped) != 1 || filepath.Base(skipped[0]) != "notes.txt" {
		t.Errorf("skipped = %v, want notes.txt", skipped)
	}
	for _, bad := range [][]string{{filepath.Join(dir, "notes.txt")}, {filepath.Join(dir, "missing.jsonl")}, {filepath.Join(dir, "*.csv")}} {
		if _, _, err := inputs.Inputs(bad, ""); err == nil {
			t.Errorf("Inputs(%v) succeeded, want a configuration error", bad)
		} else if _, ok := err.(*inputs.ConfigError); !ok {
			t.Errorf("Inputs(%v) error %T, want *ConfigError", bad, err)
		}
	}
}

// TestMapKeepStdin reads renamed fields with --map, keeps chosen metadata
// columns with --keep, and reads JSON Lines from standard input.
func TestMapKeepStdin(t *testing.T) {
	state := `{"users":{},"stages":{"S1":{"id":"S1","probability":50,"isClosed":false}},"opportunities":{"O1":{"id":"O1","ownerId":"U1","stageId":"S1","status":"open","amount":10}}}`
	line := `{"id":"r1","task":"TASK-004","world_after":` + state + `,"world_before":` + state + `,"answer":"5","team":"blue","sample":3}` + "\n"
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	fields := columnar.FieldNames{ID: "id", Task: "task", Final: "world_after", Initial: "world_before", Output: "answer"}
	tests := []struct {
		name string
		ins  []string
		keep []string
		want map[string]any
	}{
		{"file, default keep", []string{in}, nil, map[string]any{"rollout_id": "r1", "status": "passed", "sample": "3", "source_file": in}},
		{"stdin, chosen keep", []string{"-"}, []string{"team"}, map[string]any{"rollout_id": "r1", "status": "passed", "team": "blue", "source_file": "-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			grade(t, Config{Inputs: tt.ins, Out: out, Format: columnar.FormatJSONL, Fields: fields, Keep: tt.keep, Stdin: strings.NewReader(line)})
			rows := gaveltest.DecodeJSONL(t, filepath.Join(out, "rewards", "part-00000.jsonl"))
			if len(rows) != 1 {
				t.Fatalf("%d rows, want 1", len(rows))
			}
			got := map[string]any{}
			for k := range tt.want {
				got[k] = rows[0][k]
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rewards row (-want +got):\n%s\nrow: %v", diff, rows[0])
			}
		})
	}
}
