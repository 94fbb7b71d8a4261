package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
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
