package pipeline

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
)

// TestRescoreCopiesUnchanged rescores a run with the formulas it was
// graded with: every rewards part is copied whole, without being decoded
// (a part that could not be decoded is copied as it is).
func TestRescoreCopiesUnchanged(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "rollouts.parquet")
	if _, err := gen.Run(context.Background(), gen.Config{Out: data, Rollouts: 200, Seed: 9}); err != nil {
		t.Fatalf("gen: %v", err)
	}
	graded := filepath.Join(dir, "graded")
	grade(t, Config{Inputs: []string{data}, Out: graded, Format: columnar.FormatParquet, Workers: 2})
	part := filepath.Join(graded, "rewards", columnar.PartName(0, columnar.FormatParquet))
	if err := os.WriteFile(part, []byte("not decoded"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if _, err := Rescore(context.Background(), RescoreConfig{Dir: graded, Out: out, Rewards: map[string]verifiers.Formula{}}); err != nil {
		t.Fatalf("Rescore: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(out, "rewards", columnar.PartName(0, columnar.FormatParquet)))
	if err != nil || string(got) != "not decoded" {
		t.Errorf("rewards part = %q, %v; want the graded run's, copied", got, err)
	}
}

// TestRescoreKeepsRetryRows: a rescored part keeps the count of retry
// rows of the part it rescored (rescoring changes no error and no pending
// check), so that reusing the rescored run takes the same paths.
func TestRescoreKeepsRetryRows(t *testing.T) {
	rc := newRetryCase(t, false)
	rc.hang.Store(true)
	rc.failing.Store(true)
	first := rc.config(t, "first", columnar.FormatJSONL)
	grade(t, first)
	out := filepath.Join(rc.dir, "rescored")
	// VER-T's and VER-J's formula changes: the part of the second unit
	// is rescored, not copied.
	rewards := map[string]verifiers.Formula{"VER-T": verifiers.All(), "VER-J": verifiers.All()}
	if _, err := Rescore(context.Background(), RescoreConfig{Dir: first.Out, Out: out, Rewards: rewards}); err != nil {
		t.Fatalf("Rescore: %v", err)
	}
	if x, y := readStatsFile(t, first.Out, 1), readStatsFile(t, out, 1); bytes.Equal(x, y) {
		t.Fatal("the second unit's statistics were copied, want them written again")
	}
	if got := retryRowsOf(t, out, 1); got != 2 {
		t.Errorf("rescored part: %d retry rows, want 2", got)
	}
}

func readStatsFile(t *testing.T, dir string, unit int) []byte {
	t.Helper()
	data, err := os.ReadFile(results.StatsPath(dir, unit))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
