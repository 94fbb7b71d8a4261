package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gavelhq/gavel/verifiers"
)

// joinRows returns a seeded set of rollouts: three tasks, each bound to a
// verifier, every status, rewards whose sums depend on their order, and
// zero to three checks each.
func joinRows(n int, seed uint64) []rr {
	rng := rand.New(rand.NewPCG(seed, 1))
	statuses := []string{verifiers.StatusPassed, verifiers.StatusFailed, verifiers.StatusError, verifiers.StatusPending}
	checkStatus := []string{verifiers.CheckPass, verifiers.CheckFail, "error"}
	rows := make([]rr, n)
	for i := range rows {
		task := rng.IntN(3)
		r := rr{id: fmt.Sprintf("r%05d", i), task: fmt.Sprintf("T%d", task), verifier: fmt.Sprintf("V%d", task),
			status: statuses[rng.IntN(len(statuses))], source: fmt.Sprintf("in%d.jsonl", i%2)}
		if r.status == verifiers.StatusPassed || r.status == verifiers.StatusFailed {
			r.reward = float64(rng.IntN(1000)) / 7
		}
		for c := range rng.IntN(4) {
			r.checks = append(r.checks, fmt.Sprintf("c%d=%s", c, checkStatus[rng.IntN(len(checkStatus))]))
		}
		rows[i] = r
	}
	return rows
}

// mutate changes a share of rows as a new run would: other statuses (flips
// among them), rewards, checks, tasks and verifiers.
func mutate(rows []rr, seed uint64) []rr {
	rng := rand.New(rand.NewPCG(seed, 2))
	out := make([]rr, len(rows))
	for i, r := range rows {
		r.checks = append([]string(nil), r.checks...)
		switch rng.IntN(10) {
		case 0:
			if r.status == verifiers.StatusPassed {
				r.status, r.reward = verifiers.StatusFailed, float64(rng.IntN(1000))/7
			} else {
				r.status, r.reward = verifiers.StatusPassed, 1.0
			}
		case 1:
			r.status, r.reward = verifiers.StatusError, nil
		case 2:
			if len(r.checks) > 0 {
				r.checks[0] = r.checks[0][:3] + verifiers.CheckFail
			}
			r.checks = append(r.checks, "new=pass")
		case 3:
			r.task, r.verifier = "T9", ""
		case 4:
			r.verifier = "V8"
		}
		out[i] = r
	}
	return out
}

func writeSummary(t *testing.T, dir string, duplicates int) {
	t.Helper()
	data := fmt.Appendf(nil, `{"duplicate_ids": %d}`, duplicates)
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func diffJSON(t *testing.T, base, cur string, cfg DiffConfig) ([]byte, *Diff) {
	t.Helper()
	d, err := Compare(base, cur, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := d.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), d
}

var joinFPs = map[string]string{"V0": "a", "V1": "b", "V2": "c", "V8": "d"}

// TestComparePartitioned compares results that do not line up (rollouts
// repeated on both sides, on one side only, reordered, with status
// changes and flips) in many partitions on disk and in one, held whole in
// memory: every count, p-value, mean, attribution and example must agree,
// the mean reward deltas to the last bit.
func TestComparePartitioned(t *testing.T) {
	rows := joinRows(3000, 1)
	cur := mutate(rows[100:], 2)                                  // 100 base-only
	base := append(rows[:2900:2900], rows[5], rows[17], rows[17]) // repeated ids; 100 current-only
	cur = append(cur, rr{id: "x1", task: "T0", verifier: "V0", status: verifiers.StatusPassed, reward: 1.0, source: "in0.jsonl"}, cur[9])
	for i, j := 0, len(cur)-1; i < j; i, j = i+2, j-2 {
		cur[i], cur[j] = cur[j], cur[i]
	}
	baseDir := writeResults(t, base, joinFPs, map[string]int64{"in0.jsonl": 10, "in1.jsonl": 20})
	curDir := writeResults(t, cur, joinFPs, map[string]int64{"in0.jsonl": 10, "in1.jsonl": 21})

	for _, examples := range []int{0, 1000} {
		want, wd := diffJSON(t, baseDir, curDir, DiffConfig{Examples: examples, MemoryBudget: 1 << 40})
		got, gd := diffJSON(t, baseDir, curDir, DiffConfig{Examples: examples, MemoryBudget: 512, TempDir: t.TempDir()})
		if wd.Partitions != 1 || gd.Partitions < 20 {
			t.Fatalf("partitions: %d and %d, want 1 and many", wd.Partitions, gd.Partitions)
		}
		if gd.DuplicateIDs != 4 || gd.BaseOnly != 100 || gd.CurOnly != 101 || gd.Regressions == 0 || len(gd.Examples) == 0 {
			t.Fatalf("the dataset lacks a case: %+v", gd)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("examples %d: partitioned diff differs from the in-memory one:\n%s\nwant\n%s", examples, got, want)
		}
	}
}

// TestCompareAligned compares results that line up, then stop lining up
// part way: the aligned pass and its fallback to partitions must give what
// the partitioned path gives for the same results.
func TestCompareAligned(t *testing.T) {
	rows := joinRows(2000, 3)
	cur := mutate(rows, 4)
	inputs := map[string]int64{"in0.jsonl": 10} // one input: the manifests list it alike
	baseDir := writeResults(t, rows, joinFPs, inputs)
	writeSummary(t, baseDir, 0)
	tests := []struct {
		name           string
		cur            []rr
		wantPartitions bool
		// interleave swaps two check rows of different rollouts in the
		// middle of the current checks.
		interleave bool
	}{
		{"lined up", cur, false, false},
		{"reversed after row 1200", append(cur[:1200:1200], reversed(cur[1200:])...), true, false},
		{"a row missing at row 700", append(cur[:700:700], cur[701:]...), true, false},
		{"check rows interleaved", cur, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			curDir := writeResults(t, tt.cur, joinFPs, inputs)
			if tt.interleave {
				interleaveChecks(t, curDir)
			}
			want, _ := diffJSON(t, baseDir, curDir, DiffConfig{Examples: 1000, MemoryBudget: 512, TempDir: t.TempDir()})
			writeSummary(t, curDir, 0)
			got, d := diffJSON(t, baseDir, curDir, DiffConfig{Examples: 1000, MemoryBudget: 512, TempDir: t.TempDir()})
			if (d.Partitions > 0) != tt.wantPartitions {
				t.Errorf("partitions %d, want some: %v", d.Partitions, tt.wantPartitions)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("aligned diff differs from the partitioned one:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func reversed(rows []rr) []rr {
	out := make([]rr, len(rows))
	for i, r := range rows {
		out[len(rows)-1-i] = r
	}
	return out
}

// interleaveChecks swaps the first two check rows of different rollouts
// past the middle of dir's checks.
func interleaveChecks(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "checks", "part-00000.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	id := func(l []byte) string {
		var v struct {
			ID string `json:"rollout_id"`
		}
		json.Unmarshal(l, &v)
		return v.ID
	}
	for i := len(lines) / 2; i+1 < len(lines); i++ {
		if id(lines[i]) != id(lines[i+1]) {
			lines[i], lines[i+1] = lines[i+1], lines[i]
			break
		}
	}
	if err := os.WriteFile(path, append(bytes.Join(lines, []byte("\n")), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
