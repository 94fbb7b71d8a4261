package pipeline

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/judge/judgetest"
)

// A judged verifier with a flag: each rollout's check rows are its two
// checks, then its flag row, and the judge's verdicts are scored on the
// rollout's own rows in every batch, whatever the flag rows between them.
func TestJudgeWithFlags(t *testing.T) {
	srv := judgetest.New(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, 9)
	spec := gaveltest.JudgedSpec + "    flags:\n      - {id: odd, label: odd n, expr: 'int(meta.n) % 2 == 1'}\n"
	for _, workers := range []int{1, 3} {
		out := filepath.Join(dir, fmt.Sprint("out", workers))
		grade(t, Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, spec),
			Judge: gaveltest.JudgeConfig(srv, filepath.Join(dir, "cache")), Workers: workers, BatchSize: 2})
		checks, rewards := checkRows(t, out), rewardRows(t, out)
		for i := range 9 {
			id := fmt.Sprintf("r%05d", i)
			r, f := rewards[id], checks[id+"/odd"]
			status, reward := "passed", 1.0
			if i%3 == 0 {
				status, reward = "failed", 0.5
			}
			if r["status"] != status || r["reward"] != reward || r["checks_total"] != 2.0 {
				t.Errorf("workers %d: %s reward row = %v, want %s, %v, 2 checks", workers, id, r, status, reward)
			}
			want, flags := "clear", []any{}
			if i%2 == 1 {
				want, flags = "raised", []any{"odd"}
			}
			if f["status"] != want || f["kind"] != "flag" || f["check_index"] != 2.0 || !reflect.DeepEqual(r["flags"], flags) {
				t.Errorf("workers %d: %s flag row %v, flags %v; want %s at index 2, flags %v", workers, id, f, r["flags"], want, flags)
			}
			if c := checks[id+"/polite"]; c["kind"] != "check" {
				t.Errorf("workers %d: %s polite kind %v", workers, id, c["kind"])
			}
		}
	}
	sameParts(t, filepath.Join(dir, "out1"), filepath.Join(dir, "out3"))
}
