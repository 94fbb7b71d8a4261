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
	// The judged flag comes first: its verdict arrives after odd was
	// raised, and the flags list keeps the verifier's order.
	spec := gaveltest.JudgedSpec + "    flags:\n      - {id: says-pass, label: says PASS, rubric: The answer says PASS.}\n      - {id: odd, label: odd n, expr: 'int(meta.n) % 2 == 1'}\n"
	for _, workers := range []int{1, 3} {
		out := filepath.Join(dir, fmt.Sprint("out", workers))
		grade(t, Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, spec),
			Judge: gaveltest.JudgeConfig(srv, filepath.Join(dir, "cache")), Workers: workers, BatchSize: 2})
		checks, rewards := checkRows(t, out), rewardRows(t, out)
		for i := range 9 {
			id := fmt.Sprintf("r%05d", i)
			r, f, j := rewards[id], checks[id+"/odd"], checks[id+"/says-pass"]
			status, reward := "passed", 1.0
			if i%3 == 0 {
				status, reward = "failed", 0.5
			}
			if r["status"] != status || r["reward"] != reward || r["checks_total"] != 2.0 {
				t.Errorf("workers %d: %s reward row = %v, want %s, %v, 2 checks", workers, id, r, status, reward)
			}
			want, wantJ, flags := "clear", "clear", []any{}
			if i%3 != 0 { // the judge passes the outputs saying PASS
				wantJ, flags = "raised", append(flags, "says-pass")
			}
			if i%2 == 1 {
				want, flags = "raised", append(flags, "odd")
			}
			if f["status"] != want || f["kind"] != "flag" || f["check_index"] != 3.0 || !reflect.DeepEqual(r["flags"], flags) {
				t.Errorf("workers %d: %s flag row %v, flags %v; want %s at index 3, flags %v", workers, id, f, r["flags"], want, flags)
			}
			if j["status"] != wantJ || j["kind"] != "flag" || j["check_index"] != 2.0 || j["score"] == nil {
				t.Errorf("workers %d: %s judged flag row %v, want %s at index 2 with a score", workers, id, j, wantJ)
			}
			if c := checks[id+"/polite"]; c["kind"] != "check" {
				t.Errorf("workers %d: %s polite kind %v", workers, id, c["kind"])
			}
		}
	}
	sameParts(t, filepath.Join(dir, "out1"), filepath.Join(dir, "out3"))
}
