package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/verifiers/crm"
	"github.com/gavelhq/gavel/verifiers/spec"
)

// harnessData is the fixtures of package columnar/harness.
var harnessData = filepath.Join("..", "columnar", "harness", "testdata")

// copyFixture copies the file src to dir/name and returns its path.
func copyFixture(t *testing.T, src, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// gradeHarness grades inputs, a harness's log in format from (stdin is
// read for "-"), with the verifiers of the example spec, into a JSON
// Lines result directory, and returns its rewards and checks parts.
func gradeHarness(t *testing.T, from, example string, stdin []byte, ins ...string) (rewards, checks []byte) {
	t.Helper()
	vs, err := spec.Load([]string{filepath.Join("..", "examples", "harness", example)})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	grade(t, Config{Inputs: ins, Out: out, Format: columnar.FormatJSONL, From: from,
		Verifiers: append(crm.Verifiers(), vs...), Stdin: bytes.NewReader(stdin)})
	read := func(kind string) []byte {
		data, err := os.ReadFile(filepath.Join(out, kind, "part-00000.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	return read("rewards"), read("checks")
}

// TestStdinFrom grades a harness's log from standard input and from a
// file: the rewards and checks are the same bytes but for the input's
// name ("-" for standard input, in source_file and in error messages)
// and, for tau-bench, the stem of the rollout ids (stdin); the columns
// kept by default (recorded_reward...) are kept from standard input too.
func TestStdinFrom(t *testing.T) {
	tests := []struct {
		from, fixture, name, example string
		stem                         string // the file's stem in ids, "" when ids do not hold it
		kept                         []string
	}{
		{"tau-bench", filepath.Join(harnessData, "tau-bench", "tool-calling-gpt-4o-0.0_range_0--1.json"), "airline.json", "tau-bench.yaml", "airline", []string{`"recorded_reward":`, `"recorded_scores":`}},
		{"tau2", filepath.Join(harnessData, "tau2", "results.json"), "results.json", "tau2.yaml", "", []string{`"model":`, `"recorded_reward":`}},
		{"inspect", filepath.Join(harnessData, "inspect", "log.json"), "log.json", "inspect.yaml", "", []string{`"model":`, `"run_id":`, `"recorded_reward":`}},
		{"messages", filepath.Join("..", "examples", "harness", "chats.jsonl"), "chats.jsonl", "messages.yaml", "", []string{`"model":`, `"recorded_reward":`}},
	}
	for _, tt := range tests {
		t.Run(tt.from, func(t *testing.T) {
			file := copyFixture(t, tt.fixture, t.TempDir(), tt.name)
			data, _ := os.ReadFile(file)
			fileRewards, fileChecks := gradeHarness(t, tt.from, tt.example, nil, file)
			rewards, checks := gradeHarness(t, tt.from, tt.example, data, "-")
			for _, k := range tt.kept {
				if !bytes.Contains(rewards, []byte(k)) {
					t.Errorf("rewards from standard input keep no %s:\n%s", k, rewards)
				}
			}
			// The file's name as standard input's.
			rename := func(b []byte) string {
				s := strings.ReplaceAll(string(b), `"`+file, `"-`)
				if tt.stem != "" {
					s = strings.ReplaceAll(s, `"`+tt.stem+`/`, `"stdin/`)
				}
				return s
			}
			if diff := cmp.Diff(rename(fileRewards), string(rewards)); diff != "" {
				t.Errorf("rewards from standard input (-file renamed +stdin):\n%s", diff)
			}
			if diff := cmp.Diff(rename(fileChecks), string(checks)); diff != "" {
				t.Errorf("checks from standard input (-file renamed +stdin):\n%s", diff)
			}
			if tt.stem != "" && !strings.Contains(string(rewards), `"rollout_id":"stdin/`) {
				t.Errorf("no rollout id stemmed stdin:\n%s", rewards)
			}
		})
	}
}

// TestStdinJSONLIds reads gavel's own JSON Lines from standard input: a
// row without rollout_id gets the default id, <input path as given>#<row
// index>, with "-" as the path.
func TestStdinJSONLIds(t *testing.T) {
	out := t.TempDir()
	in := `{"rollout_id":"r0","task_id":"T"}` + "\n" + `{"task_id":"T"}` + "\n"
	grade(t, Config{Inputs: []string{"-"}, Out: out, Format: columnar.FormatJSONL, Stdin: strings.NewReader(in)})
	var got []any
	for _, row := range gaveltest.DecodeJSONL(t, filepath.Join(out, "rewards", "part-00000.jsonl")) {
		got = append(got, row["rollout_id"])
	}
	if want := []any{"r0", "-#1"}; !cmp.Equal(got, want) {
		t.Errorf("rollout ids from standard input = %v, want %v", got, want)
	}
}

// TestStdinEvalArchive reads an Inspect .eval archive from standard
// input: it is spooled to a temporary file, read as the file is (ids,
// kept columns), and the temporary file is removed when the run ends.
func TestStdinEvalArchive(t *testing.T) {
	// The test's temporary directories are made under its first one,
	// not under TMPDIR once set.
	tmp := filepath.Join(t.TempDir(), "spool")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	file := copyFixture(t, filepath.Join(harnessData, "inspect", "run.eval"), t.TempDir(), "run.eval")
	data, _ := os.ReadFile(file)
	fileRewards, fileChecks := gradeHarness(t, "inspect", "inspect.yaml", nil, file)
	rewards, checks := gradeHarness(t, "inspect", "inspect.yaml", data, "-")
	rename := func(b []byte) string { return strings.ReplaceAll(string(b), `"`+file, `"-`) }
	if diff := cmp.Diff(rename(fileRewards), string(rewards)); diff != "" {
		t.Errorf("rewards from standard input (-file renamed +stdin):\n%s", diff)
	}
	if diff := cmp.Diff(rename(fileChecks), string(checks)); diff != "" {
		t.Errorf("checks from standard input (-file renamed +stdin):\n%s", diff)
	}
	if !bytes.Contains(rewards, []byte(`"Ev7kQ2/1/1"`)) || !bytes.Contains(rewards, []byte(`"recorded_reward":`)) {
		t.Errorf("rewards from an archive on standard input lack its ids or recorded_reward:\n%s", rewards)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("temporary files left after the run: %v", left)
	}
}

// TestNoInputFiles checks the error of inputs that hold no file to read:
// it names them, counts the files skipped by reason, and lists the types
// read.
func TestNoInputFiles(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	for _, name := range []string{"logs/a.txt", "logs/sub/b.txt", "logs/.DS_Store", "logs/README", "logs/results.json.gz", "logs/c.json", "empty/"} {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			os.MkdirAll(p, 0o755)
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, nil, 0o644)
	}
	empty := filepath.Join(dir, "empty")
	types := "; want .parquet, .jsonl, .ndjson, .jsonl.zst, .jsonl.gz, .arrow, .feather or .eval files, or .json logs with --from inspect, tau-bench, tau2 or atif"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"skipped", []string{logs}, "no input files in " + logs + " (6 files skipped: 2 with extension .txt, 1 hidden, 1 with extension .json, 1 with extension .json.gz, 1 without an extension)" + types},
		{"empty", []string{empty}, "no input files in " + empty + " (no files there)" + types},
		{"two", []string{empty, logs + "/sub"}, "no input files in " + empty + " and " + logs + "/sub (1 file skipped: 1 with extension .txt)" + types},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := inputs.Inputs(tt.args, "")
			ce, ok := err.(*inputs.ConfigError)
			if !ok || ce.Field != "Inputs" {
				t.Fatalf("Inputs(%v) error %v (%T), want a ConfigError of Inputs", tt.args, err, err)
			}
			if got := ce.Msg; got != tt.want {
				t.Errorf("Inputs(%v) = %q\nwant %q", tt.args, got, tt.want)
			}
		})
	}
}
