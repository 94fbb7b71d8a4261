package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		shard func(cfg *Config, inputs []string) // changes shard 1's run
		want  string
	}{
		{"same run", func(*Config, []string) {}, ""},
		{"other configuration", func(cfg *Config, _ []string) { cfg.Timeout = 20 * time.Second },
			"shard 1/2 is of another run than shard 0/2: other configuration (timeout: 10s there, 20s given)"},
		{"other verifier", func(cfg *Config, _ []string) { cfg.Verifiers = []*verifiers.Verifier{bumped} },
			"shard 1/2 is of another run than shard 0/2: other verifiers (VER-T: fingerprint "},
		{"input changed", func(_ *Config, inputs []string) {
			f, err := os.OpenFile(inputs[0], os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(`{"rollout_id":"late","task_id":"T"}` + "\n"); err != nil {
				t.Fatal(err)
			}
		}, "shard 1/2 is of another run than shard 0/2: other inputs: " + "IN0" + " changed (size 108, ETag none there; size 144, ETag none now)"},
		{"input rewritten, same size", func(_ *Config, inputs []string) {
			data, err := os.ReadFile(inputs[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(inputs[0], []byte(strings.Replace(string(data), "r0-a", "r0-x", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "shard 1/2 is of another run than shard 0/2: other inputs: " + "IN0" + " changed (its content differs)"},
		{"other shard count", func(cfg *Config, _ []string) { cfg.Shard = Shard{1, 3} }, "shards of two runs (of "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			inputs := faultInputs(t, dir, 2)
			out := filepath.Join(dir, "out")
			cfg := Config{Inputs: inputs, Out: out, Verifiers: []*verifiers.Verifier{base()}, Shard: Shard{0, 2}}
			if _, err := Run(context.Background(), cfg); err != nil {
				t.Fatalf("shard 0/2: %v", err)
			}
			cfg.Shard = Shard{1, 2}
			tt.shard(&cfg, inputs)
			if _, err := Run(context.Background(), cfg); err != nil {
				t.Fatalf("shard %v: %v", cfg.Shard, err)
			}
			_, err := Commit(out)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Commit = %v, want the shards joined", err)
				}
				if _, err := os.Stat(filepath.Join(out, successFile)); err != nil {
					t.Errorf("committed run without %s: %v", successFile, err)
				}
				return
			}
			want := strings.ReplaceAll(tt.want, "IN0", inputs[0])
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Commit = %v, want an error holding %q", err, want)
			}
			for _, f := range []string{manifestFile, summaryFile, successFile} {
				if _, err := os.Stat(filepath.Join(out, f)); !os.IsNotExist(err) {
					t.Errorf("refused commit wrote %s (stat: %v)", f, err)
				}
			}
		})
	}
}
