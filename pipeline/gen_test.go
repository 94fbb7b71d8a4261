package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/internal/gaveltest"
)

// TestGradeGenerated grades generated CRM datasets in every input format,
// per-row and with a tasks table, and compares each row's status, error
// kind, reward and check statuses with what the generator knows by
// construction.
func TestGradeGenerated(t *testing.T) {
	tests := []struct {
		name      string
		ext       string
		tasksMode bool
		nested    bool
	}{
		{"parquet", ".parquet", false, false},
		{"jsonl", ".jsonl", false, false},
		{"jsonl.zst", ".jsonl.zst", false, false},
		{"parquet tasks mode", ".parquet", true, false},
		{"jsonl tasks mode", ".jsonl", true, false},
		{"parquet nested", ".parquet", false, true},
		{"parquet nested tasks mode", ".parquet", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "rollouts"+tt.ext)
			rowsPath := filepath.Join(dir, "expected-rows.jsonl")
			cfg := gen.Config{Out: data, Rollouts: 1500, Seed: 11, BadShare: 0.05, TasksMode: tt.tasksMode, Nested: tt.nested, ExpectedRowsOut: rowsPath, RowGroupRows: 400}
			exp, err := gen.Run(context.Background(), cfg)
			if err != nil {
				t.Fatalf("gen: %v", err)
			}
			out := filepath.Join(dir, "out")
			gcfg := Config{Inputs: []string{data}, Out: out, Format: columnar.FormatJSONL, Workers: 2, BatchSize: 64}
			if tt.tasksMode {
				gcfg.TasksFile = exp.TasksTable
			}
			res := grade(t, gcfg)

			want := gaveltest.DecodeJSONL(t, rowsPath)
			rewards := gaveltest.DecodeJSONL(t, filepath.Join(out, "rewards", "part-00000.jsonl"))
			checks := gaveltest.DecodeJSONL(t, filepath.Join(out, "checks", "part-00000.jsonl"))
			if len(rewards) != len(want) {
				t.Fatalf("%d rewards rows, want %d", len(rewards), len(want))
			}
			statuses := map[string][]any{}
			for _, c := range checks {
				id := c["rollout_id"].(string)
				statuses[id] = append(statuses[id], c["status"])
			}
			mismatches := 0
			for i, w := range want {
				g := rewards[i]
				var gotChecks any
				if c := statuses[fmt.Sprint(g["rollout_id"])]; c != nil {
					gotChecks = c
				}
				got := map[string]any{
					"rollout_id": g["rollout_id"], "status": g["status"], "error_kind": g["error_kind"],
					"reward": g["reward"], "checks": gotChecks,
				}
				exp := map[string]any{
					"rollout_id": w["rollout_id"], "status": w["status"], "error_kind": w["error_kind"],
					"reward": w["reward"], "checks": w["checks"],
				}
				if exp["rollout_id"] == nil { // a bad row without an id
					exp["rollout_id"] = fmt.Sprintf("%s#%v", data, w["row"])
				}
				if exp["checks"] != nil && len(exp["checks"].([]any)) == 0 {
					exp["checks"] = nil
				}
				if diff := cmp.Diff(exp, got); diff != "" {
					mismatches++
					if mismatches <= 5 {
						t.Errorf("row %d (%v %v, error %v) (-want +got):\n%s", i, w["task_id"], w["behaviour"], g["error"], diff)
					}
				}
			}
			if mismatches > 0 {
				t.Fatalf("%d of %d rows differ from the generator's expectations", mismatches, len(want))
			}
			s := res.Summary
			if s.Passed != exp.Totals.Passed || s.Failed != exp.Totals.Failed || s.Error != exp.Totals.Error {
				t.Errorf("summary passed/failed/error = %d/%d/%d, want %d/%d/%d", s.Passed, s.Failed, s.Error, exp.Totals.Passed, exp.Totals.Failed, exp.Totals.Error)
			}
			if s.Checks != exp.Totals.ChecksTotal {
				t.Errorf("summary checks = %d, want %d", s.Checks, exp.Totals.ChecksTotal)
			}
			if got, want := s.ErrorKinds["input"], exp.ErrorsByKind.Input; got != want {
				t.Errorf("input errors = %d, want %d", got, want)
			}
			if got, want := s.ErrorKinds["no_verifier"], exp.ErrorsByKind.NoVerifier; got != want {
				t.Errorf("no_verifier errors = %d, want %d", got, want)
			}
			for _, v := range exp.Verifiers {
				if v.VerifierID == nil {
					continue
				}
				c := s.Verifiers[*v.VerifierID]
				if c == nil || c.Passed != v.Passed || c.Failed != v.Failed || c.Error != v.Error {
					t.Errorf("verifier %s: summary %+v, want passed %d failed %d error %d", *v.VerifierID, c, v.Passed, v.Failed, v.Error)
				}
			}
		})
	}
}
