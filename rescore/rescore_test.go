package rescore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/judge/judgetest"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/crm"
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
	grade(t, pipeline.Config{Inputs: []string{data}, Out: graded, Format: columnar.FormatParquet, Workers: 2})
	part := filepath.Join(graded, "rewards", columnar.PartName(0, columnar.FormatParquet))
	if err := os.WriteFile(part, []byte("not decoded"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if _, err := Run(context.Background(), Config{Dir: graded, Out: out, Rewards: map[string]verifiers.Formula{}}); err != nil {
		t.Fatalf("Rescore: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(out, "rewards", columnar.PartName(0, columnar.FormatParquet)))
	if err != nil || string(got) != "not decoded" {
		t.Errorf("rewards part = %q, %v; want the graded run's, copied", got, err)
	}
}

// TestRescoreKeepsRetryRows: a rescored part keeps the count of retry
// rows of the part it rescored (rescoring changes no error and no pending
// check), so that reusing the rescored run takes the same paths. The
// count is set in the graded part's statistics, as a part with rows to
// grade again records it.
func TestRescoreKeepsRetryRows(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "rollouts.parquet")
	if _, err := gen.Run(context.Background(), gen.Config{Out: data, Rollouts: 200, Seed: 9}); err != nil {
		t.Fatalf("gen: %v", err)
	}
	first := filepath.Join(dir, "graded")
	grade(t, pipeline.Config{Inputs: []string{data}, Out: first, Format: columnar.FormatJSONL})
	ps, err := results.ReadStats(first, 0)
	if err != nil {
		t.Fatal(err)
	}
	retry := int64(2)
	ps.RetryRows = &retry
	if err := results.WriteStats(first, ps); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "rescored")
	// Every formula changes: the part is rescored, not copied.
	rewards := map[string]verifiers.Formula{}
	for _, v := range crm.Verifiers() {
		rewards[v.ID] = verifiers.All()
	}
	if _, err := Run(context.Background(), Config{Dir: first, Out: out, Rewards: rewards}); err != nil {
		t.Fatalf("Rescore: %v", err)
	}
	if x, y := readStatsFile(t, first, 0), readStatsFile(t, out, 0); bytes.Equal(x, y) {
		t.Fatal("the unit's statistics were copied, want them written again")
	}
	got, err := results.ReadStats(out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.RetryRows == nil || *got.RetryRows != 2 {
		t.Errorf("rescored part: retry rows %v, want 2", got.RetryRows)
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

// grade runs cfg, with the CRM verifiers when it names none, failing t on
// an error.
func grade(t *testing.T, cfg pipeline.Config) *pipeline.Result {
	t.Helper()
	if cfg.Verifiers == nil {
		cfg.Verifiers = crm.Verifiers()
	}
	res, err := pipeline.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// TestJudgePanelRescore: rescoring a panel run keeps its judgements parts.
func TestJudgePanelRescore(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, 4)
	srv := judgetest.New(t)
	out := filepath.Join(dir, "out")
	grade(t, pipeline.Config{Inputs: []string{in}, Out: out, Format: columnar.FormatArrow, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec),
		Judge: gaveltest.JudgeConfig(srv, filepath.Join(dir, "cache")), JudgePanel: pipeline.JudgePanel{Models: []string{"judge-a", "judge-b"}}})
	re := filepath.Join(dir, "re")
	if _, err := Run(context.Background(), Config{Dir: out, Out: re}); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join("judgements", columnar.PartName(0, columnar.FormatArrow))
	a, errA := os.ReadFile(filepath.Join(out, name))
	b, errB := os.ReadFile(filepath.Join(re, name))
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Errorf("rescored judgements part: %v, %v, or it differs", errA, errB)
	}
}
