package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/judge/judgetest"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
)

// TestCommitOtherRun grades shard 0/2 of a run, then shard 1/2 with one
// thing changed: the configuration, a verifier, an input file (grown, or
// rewritten to the same size, between the two shards), or the shard
// count. Commit refuses to join
// them, naming the shard and what differs, and writes nothing: no
// manifest.json, summary.json or _SUCCESS. Unchanged, the shards commit.
func TestCommitOtherRun(t *testing.T) {
	base := func() *verifiers.Verifier { return testVerifier(func(*verifiers.Rollout) {}) }
	bumped := base()
	bumped.Version++
	tests := []struct {
		name  string
		shard func(cfg *Config, ins []string) // changes shard 1's run
		want  string
	}{
		{"same run", func(*Config, []string) {}, ""},
		{"other configuration", func(cfg *Config, _ []string) { cfg.Timeout = 20 * time.Second },
			"shard 1/2 is of another run than shard 0/2: other configuration (timeout: 10s there, 20s given)"},
		{"other verifier", func(cfg *Config, _ []string) { cfg.Verifiers = []*verifiers.Verifier{bumped} },
			"shard 1/2 is of another run than shard 0/2: other verifiers (VER-T: fingerprint "},
		{"input changed", func(_ *Config, ins []string) {
			f, err := os.OpenFile(ins[0], os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(`{"rollout_id":"late","task_id":"T"}` + "\n"); err != nil {
				t.Fatal(err)
			}
		}, "shard 1/2 is of another run than shard 0/2: other inputs: " + "IN0" + " changed (size 108, ETag none there; size 144, ETag none now)"},
		{"input rewritten, same size", func(_ *Config, ins []string) {
			data, err := os.ReadFile(ins[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(ins[0], []byte(strings.Replace(string(data), "r0-a", "r0-x", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "shard 1/2 is of another run than shard 0/2: other inputs: " + "IN0" + " changed (its content differs)"},
		{"other shard count", func(cfg *Config, _ []string) { cfg.Shard = inputs.Shard{Index: 1, Count: 3} }, "shards of two runs (of "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ins := faultInputs(t, dir, 2)
			out := filepath.Join(dir, "out")
			cfg := Config{Inputs: ins, Out: out, Verifiers: []*verifiers.Verifier{base()}, Shard: inputs.Shard{Index: 0, Count: 2}}
			if _, err := Run(context.Background(), cfg); err != nil {
				t.Fatalf("shard 0/2: %v", err)
			}
			cfg.Shard = inputs.Shard{Index: 1, Count: 2}
			tt.shard(&cfg, ins)
			if _, err := Run(context.Background(), cfg); err != nil {
				t.Fatalf("shard %v: %v", cfg.Shard, err)
			}
			_, err := results.Commit(out)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Commit = %v, want the shards joined", err)
				}
				if _, err := os.Stat(filepath.Join(out, results.SuccessFile)); err != nil {
					t.Errorf("committed run without %s: %v", results.SuccessFile, err)
				}
				return
			}
			want := strings.ReplaceAll(tt.want, "IN0", ins[0])
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Commit = %v, want an error holding %q", err, want)
			}
			for _, f := range []string{results.ManifestFile, results.SummaryFile, results.SuccessFile} {
				if _, err := os.Stat(filepath.Join(out, f)); !os.IsNotExist(err) {
					t.Errorf("refused commit wrote %s (stat: %v)", f, err)
				}
			}
		})
	}
}

// TestCommitCounters grades judged rows in two shards and commits them:
// the joined summary carries the shards' judge and reuse counters, summed
// (the same requests, tokens and reused rollouts as one process, a probe
// per shard), and a remote verifier one shard found impure is impure in
// the joined manifest and summary, so that a later --reuse leaves its rows.
func TestCommitCounters(t *testing.T) {
	srv := judgetest.New(t)
	dir := t.TempDir()
	var ins []string
	for i := range 4 {
		in := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", i))
		gaveltest.WriteJudgedRows(t, in, i*10, 10)
		ins = append(ins, in)
	}
	vs := gaveltest.ParseSpec(t, gaveltest.JudgedSpec)
	cfg := func(out, cache, reuse string, shard inputs.Shard) Config {
		return Config{Inputs: ins, Out: filepath.Join(dir, out), Format: columnar.FormatJSONL, Verifiers: vs,
			Judge: gaveltest.JudgeConfig(srv, filepath.Join(dir, cache)), Workers: 2, BatchSize: 4, Reuse: reuse, Shard: shard}
	}
	one := grade(t, cfg("one", "cache-one", "", inputs.Shard{})).Summary
	if one.Judge == nil || one.Judge.Requests != 40 || one.Judge.Probes != 1 || one.Judge.PromptTokens == 0 {
		t.Fatalf("one process: judge %+v, want 40 requests after 1 probe", one.Judge)
	}
	commitShards := func(out, cache, reuse string, edit func(out string)) *results.Summary {
		t.Helper()
		for i := range 2 {
			grade(t, cfg(out, cache, reuse, inputs.Shard{Index: i, Count: 2}))
		}
		if edit != nil {
			edit(filepath.Join(dir, out))
		}
		s, err := results.Commit(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Shard 1 found VER-R impure: its manifest and summary say so.
	impure := func(out string) {
		for _, name := range []string{results.ShardBase(1, 2) + ".manifest.json", results.ShardBase(1, 2) + ".summary.json"} {
			path := filepath.Join(out, results.ShardsDir, name)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			m["impure_verifiers"] = []string{"VER-R"}
			if data, err = json.Marshal(m); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := commitShards("sharded", "cache-sharded", "", impure)
	want := *one.Judge
	want.Probes = 2
	if s.Judge == nil || *s.Judge != want {
		t.Errorf("committed judge %+v, want %+v (one process's, a probe per shard)", s.Judge, want)
	}
	if s.Reuse != nil || s.Remote != nil {
		t.Errorf("committed reuse %+v, remote %+v; want none", s.Reuse, s.Remote)
	}
	m, err := results.ReadManifest(filepath.Join(dir, "sharded", results.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(m.ImpureVerifiers) != "[VER-R]" || fmt.Sprint(s.ImpureVerifiers) != "[VER-R]" {
		t.Errorf("committed impure verifiers: manifest %v, summary %v; want [VER-R] in both", m.ImpureVerifiers, s.ImpureVerifiers)
	}
	written, err := os.ReadFile(filepath.Join(dir, "sharded", results.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var back results.Summary
	if err := json.Unmarshal(written, &back); err != nil || back.Judge == nil || *back.Judge != want {
		t.Errorf("summary.json judge %+v (%v), want %+v", back.Judge, err, want)
	}

	// Reusing the one process's results: all is reused, from the cache's
	// answers or the parts, as one process with --reuse would count it.
	oneReuse := grade(t, cfg("one-reuse", "cache-one", filepath.Join(dir, "one"), inputs.Shard{})).Summary
	s = commitShards("sharded-reuse", "cache-one", filepath.Join(dir, "one"), nil)
	if s.Reuse == nil || oneReuse.Reuse == nil || *s.Reuse != *oneReuse.Reuse || s.Reuse.Reused != 40 || s.Reuse.CopiedParts != 4 {
		t.Errorf("committed reuse %+v, want one process's %+v: 40 reused, 4 parts copied whole", s.Reuse, oneReuse.Reuse)
	}
	// Whichever way they were made, the parts are the one process's.
	for _, out := range []string{"sharded", "one-reuse", "sharded-reuse"} {
		for _, sub := range []string{"rewards", "checks"} {
			for u := range 4 {
				name := columnar.PartName(u, columnar.FormatJSONL)
				a, _ := os.ReadFile(filepath.Join(dir, "one", sub, name))
				b, _ := os.ReadFile(filepath.Join(dir, out, sub, name))
				if len(a) == 0 || !bytes.Equal(a, b) {
					t.Errorf("%s/%s/%s differs from the one process's", out, sub, name)
				}
			}
		}
	}
}

// TestCommitStaleParts: shards of a run over fewer inputs, into the
// directory of an earlier run over more, leave its extra parts behind;
// commit removes them, so that the directory is the one a single process
// writes.
func TestCommitStaleParts(t *testing.T) {
	dir := t.TempDir()
	ins := faultInputs(t, dir, 4)
	v := []*verifiers.Verifier{testVerifier(func(*verifiers.Rollout) {})}
	out := filepath.Join(dir, "out")
	grade(t, Config{Inputs: ins, Out: out, Verifiers: v})
	if _, err := os.Stat(filepath.Join(out, "rewards", columnar.PartName(3, columnar.FormatParquet))); err != nil {
		t.Fatalf("the earlier run's last part: %v", err)
	}
	for i := range 2 {
		grade(t, Config{Inputs: ins[:2], Out: out, Verifiers: v, Shard: inputs.Shard{Index: i, Count: 2}})
	}
	if _, err := results.Commit(out); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(out, results.ShardsDir))
	want := filepath.Join(dir, "want")
	grade(t, Config{Inputs: ins[:2], Out: want, Verifiers: v})
	sameOutput(t, want, out)
}
