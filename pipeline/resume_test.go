package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// sameOutput compares two output directories byte for byte, file by file,
// except the timing fields of summary.json.
func sameOutput(t *testing.T, want, got string) {
	t.Helper()
	list := func(root string) map[string][]byte {
		files := map[string][]byte{}
		filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				rel, _ := filepath.Rel(root, path)
				data, _ := os.ReadFile(path)
				if rel == results.SummaryFile {
					var keep []string
					for _, l := range strings.Split(string(data), "\n") {
						if !strings.Contains(l, `"elapsed_seconds"`) && !strings.Contains(l, `"rows_per_second"`) {
							keep = append(keep, l)
						}
					}
					data = []byte(strings.Join(keep, "\n"))
				}
				files[rel] = data
			}
			return nil
		})
		return files
	}
	w, g := list(want), list(got)
	names := func(m map[string][]byte) []string {
		var s []string
		for k := range m {
			s = append(s, k)
		}
		sort.Strings(s)
		return s
	}
	if diff := cmp.Diff(names(w), names(g)); diff != "" {
		t.Fatalf("files differ (-want +got):\n%s", diff)
	}
	for name, data := range w {
		if !bytes.Equal(data, g[name]) {
			t.Errorf("%s differs from the reference run's", name)
		}
	}
}

// faultInputs writes n small JSON Lines inputs and returns their paths.
func faultInputs(t *testing.T, dir string, n int) []string {
	var paths []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("in-%d.jsonl", i))
		writeLines(t, p, fmt.Sprintf("r%d-a", i), fmt.Sprintf("r%d-b", i), fmt.Sprintf("r%d-c", i))
		paths = append(paths, p)
	}
	return paths
}

// TestOutputFaults makes writing the output fail (a full disk, a directory
// that cannot be created): the run returns an error naming the path,
// completed parts stay, and once the fault is gone --resume completes the
// run with the output of a run that never failed.
func TestOutputFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault func(t *testing.T, out string) (fix func())
		want  string
	}{
		{"full disk", func(t *testing.T, out string) func() {
			if _, err := os.Stat("/dev/full"); err != nil {
				t.Skip("no /dev/full")
			}
			// The disk fills while a resumed run writes part 2: the temporary
			// file of that part is /dev/full.
			tmp := filepath.Join(out, "rewards", ".part-00002.jsonl.tmp")
			if err := os.Symlink("/dev/full", tmp); err != nil {
				t.Fatal(err)
			}
			return func() { os.Remove(tmp) }
		}, "rewards/part-00002.jsonl: no space left on device"},
		{"directory that cannot be created", func(t *testing.T, out string) func() {
			os.MkdirAll(out, 0o755)
			writeFile(t, filepath.Join(out, "checks"), []byte("in the way"))
			return func() { os.Remove(filepath.Join(out, "checks")) }
		}, "checks: not a directory"},
		{"statistics directory that cannot be created", func(t *testing.T, out string) func() {
			os.MkdirAll(out, 0o755)
			writeFile(t, filepath.Join(out, results.StatsDir), []byte("in the way"))
			return func() { os.Remove(filepath.Join(out, results.StatsDir)) }
		}, "_stats: not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ins := faultInputs(t, dir, 4)
			var calls atomic.Int64
			v := []*verifiers.Verifier{testVerifier(func(*verifiers.Rollout) { calls.Add(1) })}
			cfg := Config{Inputs: ins, Format: columnar.FormatJSONL, Verifiers: v, Workers: 2, BatchSize: 2}

			ref := cfg
			ref.Out = filepath.Join(dir, "ref", "out")
			grade(t, ref)

			cfg.Out = filepath.Join(dir, "run", "out")
			if tt.name == "full disk" {
				// An earlier run completed parts 0 and 1 only.
				grade(t, cfg)
				for _, u := range []int{2, 3} {
					if err := results.RemoveUnit(cfg.Out, u); err != nil {
						t.Fatal(err)
					}
				}
				cfg.Resume = true
			}
			fix := tt.fault(t, cfg.Out)
			_, err := Run(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v, want an error holding %q", err, tt.want)
			}
			t.Logf("error: %v", err)
			if tt.name == "full disk" {
				for _, p := range []int{0, 1} {
					if n := len(gaveltest.DecodeJSONL(t, filepath.Join(cfg.Out, "rewards", columnar.PartName(p, cfg.Format)))); n != 3 {
						t.Errorf("part %d: %d rows after the fault, want 3", p, n)
					}
				}
			}
			fix()
			// The units done before the resume, with their parts as they
			// are: the resume keeps them and grades only the others.
			done := map[string]os.FileInfo{}
			for u := range ins {
				name := columnar.PartName(u, cfg.Format)
				if results.PartDone(cfg.Out, u, name) == nil {
					continue
				}
				for _, sub := range []string{"rewards", "checks"} {
					fi, err := os.Stat(filepath.Join(cfg.Out, sub, name))
					if err != nil {
						t.Fatal(err)
					}
					done[filepath.Join(sub, name)] = fi
				}
			}
			if tt.name == "full disk" && len(done) < 4 {
				t.Fatalf("%d parts done before the resume, want those of units 0 and 1 at least", len(done))
			}
			calls.Store(0)
			cfg.Resume = true
			grade(t, cfg)
			if got, want := calls.Load(), int64(3*(len(ins)-len(done)/2)); got != want {
				t.Errorf("the resume graded %d rollouts, want %d: those of the %d units not done", got, want, len(ins)-len(done)/2)
			}
			for name, before := range done {
				fi, err := os.Stat(filepath.Join(cfg.Out, name))
				if err != nil || !os.SameFile(fi, before) || !fi.ModTime().Equal(before.ModTime()) {
					t.Errorf("%s, done before the resume, was written again", name)
				}
			}
			// The reference directory was written under another name.
			os.Rename(filepath.Join(dir, "ref"), filepath.Join(dir, "a"))
			os.Rename(filepath.Join(dir, "run"), filepath.Join(dir, "ref"))
			sameOutput(t, filepath.Join(dir, "a", "out"), filepath.Join(dir, "ref", "out"))
		})
	}
}

// TestResumeChecksRun refuses to resume a directory written by another
// run, and resumes from scratch when there is nothing to resume.
func TestResumeChecksRun(t *testing.T) {
	dir := t.TempDir()
	ins := faultInputs(t, dir, 3)
	v := []*verifiers.Verifier{testVerifier(func(*verifiers.Rollout) {})}
	out := filepath.Join(dir, "out")
	res := grade(t, Config{Inputs: ins, Out: out, Verifiers: v, Resume: true})
	if !res.Complete || res.Summary.Rollouts != 9 {
		t.Fatalf("resume without a manifest: complete %v, %d rollouts; want a full run", res.Complete, res.Summary.Rollouts)
	}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"other inputs", Config{Inputs: ins[:2], Out: out, Verifiers: v, Resume: true}, "other inputs"},
		{"other kept columns", Config{Inputs: ins, Out: out, Verifiers: v, Resume: true, Keep: []string{"model"}}, "other configuration (kept columns: none there, model given)"},
		{"other timeout", Config{Inputs: ins, Out: out, Verifiers: v, Resume: true, Timeout: 20 * time.Second}, "other configuration (timeout: 10s there, 20s given)"},
		{"other map", Config{Inputs: ins, Out: out, Verifiers: v, Resume: true, Fields: columnar.FieldNames{Output: "answer"}}, "output column: output there, answer given"},
		{"other verifiers", Config{Inputs: ins, Out: out, Verifiers: crm.Verifiers(), Resume: true}, "other verifiers"},
		{"other format", Config{Inputs: ins, Out: out, Verifiers: v, Resume: true, Format: columnar.FormatJSONL}, "format: parquet there, jsonl given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), tt.cfg)
			var ce *inputs.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(ce.Msg, tt.want) || ce.Field != "Resume" {
				t.Errorf("Run = %v, want a ConfigError of Resume holding %q", err, tt.want)
			}
		})
	}

	// An input rewritten to the same size is another input.
	data, err := os.ReadFile(ins[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ins[0], bytes.Replace(data, []byte("r0-a"), []byte("r0-x"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Config{Inputs: ins, Out: out, Verifiers: v, Resume: true})
	var ce *inputs.ConfigError
	if want := "other inputs: " + ins[0] + " changed (its content differs)"; !errors.As(err, &ce) || !strings.Contains(ce.Msg, want) {
		t.Errorf("resume after a same-size rewrite: Run = %v, want a ConfigError holding %q", err, want)
	}

	// A file rewritten where the digest does not read (past its first
	// MiB, before its last) keeps its size and digest, not its time: so
	// does one written back as it was, at another time.
	if err := os.WriteFile(ins[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	grade(t, Config{Inputs: ins, Out: out, Verifiers: v})
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(ins[0], later, later); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Config{Inputs: ins, Out: out, Verifiers: v, Resume: true})
	if want := "other inputs: " + ins[0] + " changed (modified at "; !errors.As(err, &ce) || !strings.Contains(ce.Msg, want) {
		t.Errorf("resume after a rewrite at another time: Run = %v, want a ConfigError holding %q", err, want)
	}
}

// TestResumeNormalisedConfig resumes runs whose settings are written
// differently but mean the same: a default left implicit or given, a kept
// column list equal to the default one.
func TestResumeNormalisedConfig(t *testing.T) {
	dir := t.TempDir()
	ins := faultInputs(t, dir, 3)
	v := []*verifiers.Verifier{testVerifier(func(*verifiers.Rollout) {})}
	out := filepath.Join(dir, "out")
	grade(t, Config{Inputs: ins, Out: out, Verifiers: v, Timeout: DefaultTimeout, Format: columnar.FormatParquet})
	for _, cfg := range []Config{
		{Inputs: ins, Out: out, Verifiers: v, Resume: true},
		{Inputs: ins, Out: out, Verifiers: v, Resume: true, Timeout: DefaultTimeout, MaxLineBytes: columnar.DefaultMaxLineBytes, Workers: 3, BatchSize: 2},
		{Inputs: ins, Out: out, Verifiers: v, Resume: true, Fields: columnar.FieldNames{Output: columnar.FieldOutput}, Keep: []string{}},
	} {
		if _, err := Run(context.Background(), cfg); err != nil {
			t.Errorf("Run(timeout %v, line limit %d, fields %+v) = %v, want the run resumed", cfg.Timeout, cfg.MaxLineBytes, cfg.Fields, err)
		}
	}
}

// TestResumeOldManifest refuses to resume a directory whose manifest
// predates the config section, saying to grade it again from the start.
func TestResumeOldManifest(t *testing.T) {
	dir := t.TempDir()
	ins := faultInputs(t, dir, 2)
	v := []*verifiers.Verifier{testVerifier(func(*verifiers.Rollout) {})}
	out := filepath.Join(dir, "out")
	grade(t, Config{Inputs: ins, Out: out, Verifiers: v})
	path := filepath.Join(out, results.ManifestFile)
	var m map[string]any
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "config")
	m["flags"] = map[string]string{"timeout": "10s"}
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Config{Inputs: ins, Out: out, Verifiers: v, Resume: true})
	var ce *inputs.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "grade it again from the start") {
		t.Errorf("Run = %v, want a ConfigError saying to start again", err)
	}
}

// TestRowGroupRanges grades a Parquet file whole and cut into row-group
// ranges of several sizes: the rows, in order, are the same.
func TestRowGroupRanges(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "big.parquet")
	genFile(t, in, 1000, 90) // 12 row groups, the last short
	var want []map[string]any
	for _, per := range []int{100, 1, 5} {
		out := filepath.Join(dir, fmt.Sprintf("out-%d", per))
		res := grade(t, Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, RowGroupsPerUnit: per, Workers: 2})
		var got []map[string]any
		parts := (12 + per - 1) / per
		for p := range parts {
			got = append(got, gaveltest.DecodeJSONL(t, filepath.Join(out, "rewards", columnar.PartName(p, columnar.FormatJSONL)))...)
		}
		if _, err := os.Stat(filepath.Join(out, "rewards", columnar.PartName(parts, columnar.FormatJSONL))); err == nil {
			t.Errorf("per %d: more than %d parts", per, parts)
		}
		if res.Summary.Rollouts != 1000 {
			t.Errorf("per %d: %d rollouts, want 1000", per, res.Summary.Rollouts)
		}
		if want == nil {
			want = got
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("per %d: rows differ from the whole file's (-want +got):\n%s", per, diff)
		}
	}
}

func TestParseShard(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	tests := []struct {
		name, in string
		env      func(string) string
		want     inputs.Shard
		err      string
	}{
		{"explicit", "2/4", env(), inputs.Shard{Index: 2, Count: 4}, ""},
		{"one shard", "0/1", env(), inputs.Shard{Index: 0, Count: 1}, ""},
		{"index too large", "4/4", env(), inputs.Shard{}, "between 0 and 3"},
		{"negative", "-1/4", env(), inputs.Shard{}, "between 0 and 3"},
		{"no count", "2", env(), inputs.Shard{}, "want I/N"},
		{"zero count", "0/0", env(), inputs.Shard{}, "want I/N"},
		{"kubernetes", "auto/8", env("JOB_COMPLETION_INDEX", "5"), inputs.Shard{Index: 5, Count: 8}, ""},
		{"slurm from 1", "auto/8", env("SLURM_ARRAY_TASK_ID", "8", "SLURM_ARRAY_TASK_MIN", "1"), inputs.Shard{Index: 7, Count: 8}, ""},
		{"slurm without min", "auto/8", env("SLURM_ARRAY_TASK_ID", "3"), inputs.Shard{Index: 3, Count: 8}, ""},
		{"aws batch", "auto/8", env("AWS_BATCH_JOB_ARRAY_INDEX", "0"), inputs.Shard{Index: 0, Count: 8}, ""},
		{"cloud run", "auto/8", env("CLOUD_RUN_TASK_INDEX", "6"), inputs.Shard{Index: 6, Count: 8}, ""},
		{"no environment", "auto/8", env(), inputs.Shard{}, "no array-job index"},
		{"bad number", "auto/8", env("JOB_COMPLETION_INDEX", "x"), inputs.Shard{}, `JOB_COMPLETION_INDEX="x" is not a number`},
		{"past the count", "auto/8", env("JOB_COMPLETION_INDEX", "8"), inputs.Shard{}, "between 0 and 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := inputs.ParseShard(tt.in, tt.env)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("ParseShard(%q) = %v, %v; want error holding %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseShard(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestShardsInProcess grades three shards concurrently in one process and
// commits them: the output is the single run's.
func TestShardsInProcess(t *testing.T) {
	dir := t.TempDir()
	ins := faultInputs(t, dir, 7)
	v := []*verifiers.Verifier{testVerifier(func(*verifiers.Rollout) {})}
	grade(t, Config{Inputs: ins, Out: filepath.Join(dir, "ref", "out"), Verifiers: v})
	out := filepath.Join(dir, "run", "out")
	if _, err := results.Commit(out); err == nil || !strings.Contains(err.Error(), "no shard manifests") {
		t.Errorf("Commit of an empty directory = %v, want no shard manifests", err)
	}
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := Run(context.Background(), Config{Inputs: ins, Out: out, Verifiers: v, Shard: inputs.Shard{Index: i, Count: 3}})
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := results.Commit(out); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(out, results.ShardsDir))
	sameOutput(t, filepath.Join(dir, "ref", "out"), out)
}
