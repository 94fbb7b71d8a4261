package rescore

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/spec"
)

// TestRescoreKeepsTurns rescores a run that scores turns: the rewards
// change with the new formula, the turn rewards and turn counts are the
// run's, and the rewards keep the columns of a run that scores turns.
func TestRescoreKeepsTurns(t *testing.T) {
	dir := t.TempDir()
	vs, err := spec.Load([]string{filepath.Join("..", "examples", "turns", "chats.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	graded := filepath.Join(dir, "graded")
	grade(t, pipeline.Config{Inputs: []string{filepath.Join("..", "examples", "harness", "chats.jsonl")}, From: "messages",
		Out: graded, Format: columnar.FormatJSONL, Verifiers: vs})
	out := filepath.Join(dir, "out")
	if _, err := Run(context.Background(), Config{Dir: graded, Out: out, Rewards: map[string]verifiers.Formula{"REFUND-TURNS": verifiers.All()}}); err != nil {
		t.Fatalf("Rescore: %v", err)
	}
	rows := gaveltest.DecodeJSONL(t, filepath.Join(out, "rewards", columnar.PartName(0, columnar.FormatJSONL)))
	want := map[string]string{
		"refund-a":  `[<nil> 1] 2 1`,
		"refund-b":  `[0.5] 1 0`, // all: 0; its turn keeps its reward
		"weather-a": `[1 1] 2 1`,
		"weather-b": `[0 0] 2 0`,
	}
	for _, r := range rows {
		got := strings.TrimSpace(strings.Join([]string{fmtAny(r["turn_rewards"]), fmtAny(r["turns"]), fmtAny(r["reward"])}, " "))
		if got != want[r["rollout_id"].(string)] {
			t.Errorf("%s: turn_rewards turns reward = %s, want %s", r["rollout_id"], got, want[r["rollout_id"].(string)])
		}
	}
	old := gaveltest.DecodeJSONL(t, filepath.Join(graded, "rewards", columnar.PartName(0, columnar.FormatJSONL)))
	if old[1]["rollout_id"] != "refund-b" || old[1]["reward"] != 0.5 {
		t.Fatalf("graded refund-b: %v", old[1])
	}
}

func fmtAny(v any) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = fmtAny(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case nil:
		return "<nil>"
	}
	return "?"
}
