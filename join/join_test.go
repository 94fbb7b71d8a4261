package join

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeDir writes a result directory in JSON Lines: one rewards row per id
// (with two checks each, unless told otherwise), and a manifest and
// summary as gavel writes them.
func writeDir(t *testing.T, input string, ids []string, duplicates int) string {
	t.Helper()
	dir := t.TempDir()
	var rw, cw strings.Builder
	for i, id := range ids {
		fmt.Fprintf(&rw, `{"rollout_id":%q,"status":"passed","checks_total":2,"n":%d}`+"\n", id, i)
		for c := range 2 {
			fmt.Fprintf(&cw, `{"rollout_id":%q,"check_id":"c%d"}`+"\n", id, c)
		}
	}
	for table, text := range map[string]string{Rewards: rw.String(), Checks: cw.String()} {
		if err := os.MkdirAll(filepath.Join(dir, table), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, table, "part-00000.jsonl"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	manifest := fmt.Sprintf(`{"inputs":[{"path":%q,"size":1,"rows":%d,"part":"part-00000.jsonl","complete":true}]}`, input, len(ids))
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644)
	os.WriteFile(filepath.Join(dir, "summary.json"), fmt.Appendf(nil, `{"duplicate_ids":%d}`, duplicates), 0o644)
	return dir
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	return out
}

// TestJoinOrder joins in one partition, in many, and on the aligned path:
// the same pairs, each with its checks, in the documented order.
func TestJoinOrder(t *testing.T) {
	left := ids("r", 500)
	right := append(slices.Clone(left[100:]), "x1", "x2") // 99 left-only, 2 right-only
	slices.Reverse(right)
	right = append([]string{left[0]}, right...)
	lines := func(l, r []string, lDups, rDups int, budget int64) ([]string, *Stats) {
		ld, err := Open(writeDir(t, "in.jsonl", l, lDups))
		if err != nil {
			t.Fatal(err)
		}
		rd, err := Open(writeDir(t, "in.jsonl", r, rDups))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		lastPart, lastOrdinal, rightOnly := -2, int64(-1), false
		cfg := Config{Rewards: []string{"n"}, Checks: []string{"check_id"}, MemoryBudget: budget, TempDir: t.TempDir()}
		st, err := Join(context.Background(), ld, rd, cfg, func(p *Pair) error {
			if p.Partition != lastPart {
				lastPart, lastOrdinal, rightOnly = p.Partition, -1, false
			}
			var s string
			for _, row := range []*Row{p.Left, p.Right} {
				if row == nil {
					s += " -"
					continue
				}
				s += fmt.Sprintf(" %s/%s/%d", row.ID, row.Values[0].Data, len(row.Checks))
			}
			if p.Left == nil {
				rightOnly = true
			} else if rightOnly || p.Left.Ordinal <= lastOrdinal {
				t.Errorf("pair %s out of order in partition %d", s, p.Partition)
			} else {
				lastOrdinal = p.Left.Ordinal
			}
			got = append(got, s)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		return got, st
	}
	// oracle pairs l and r by id from the lists themselves: a row's n is
	// its index in its list, and each row has its two checks.
	oracle := func(l, r []string) []string {
		at := map[string]int{}
		for j, id := range r {
			at[id] = j
		}
		var out []string
		for i, id := range l {
			if j, ok := at[id]; ok {
				out = append(out, fmt.Sprintf(" %s/%d/2 %s/%d/2", id, i, id, j))
				delete(at, id)
			} else {
				out = append(out, fmt.Sprintf(" %s/%d/2 -", id, i))
			}
		}
		for id, j := range at {
			out = append(out, fmt.Sprintf(" - %s/%d/2", id, j))
		}
		slices.Sort(out)
		return out
	}
	want := oracle(left, right)
	if len(want) != 502 {
		t.Fatalf("oracle: %d pairs, want 502", len(want))
	}
	// The manifests differ (in rows): no aligned pass.
	one, st1 := lines(left, right, 0, 0, 1<<40)
	many, stN := lines(left, right, 0, 0, 1024)
	if st1.Partitions != 1 || stN.Partitions < 2 || st1.Aligned != 0 {
		t.Fatalf("stats %+v and %+v, want 1 partition and many", st1, stN)
	}
	if !slices.Equal(one, want) {
		t.Errorf("one partition:\n%s", lineDiff(one, want))
	}
	if !slices.Equal(many, want) {
		t.Errorf("many partitions:\n%s", lineDiff(many, want))
	}
	if st1.LeftRows != 500 || st1.RightRows != 403 {
		t.Errorf("stats %+v; want 500 and 403 rows", st1)
	}
	same, st := lines(left, left, 0, 0, 64)
	if st.Aligned != 500 || st.Partitions != 0 {
		t.Errorf("aligned: stats %+v, want 500 aligned pairs", st)
	}
	if want := oracle(left, left); !slices.Equal(same, want) {
		t.Errorf("aligned:\n%s", lineDiff(same, want))
	}
	// A summary that counts duplicates sends the join to partitions.
	if _, st := lines(left, left, 0, 1, 1<<40); st.Aligned != 0 || st.Partitions != 1 {
		t.Errorf("duplicates in the summary: stats %+v, want no aligned pair", st)
	}
}
