package pipeline

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
)

// TestDuplicatesFromHashFiles grades ids with random repeats across several
// files, with hash runs far shorter than a part, and checks the count and
// list against a map; then again with one part's hash file missing and
// another's truncated, which must be read back instead.
func TestDuplicatesFromHashFiles(t *testing.T) {
	defer results.SetIDRunLen(7)()
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	var ins []string
	seen := map[string]int{}
	var wantCount int64
	for f := 0; f < 4; f++ {
		var ids []string
		for i := 0; i < 40+f*13; i++ {
			id := fmt.Sprintf("id-%d", rng.IntN(150))
			if f == 3 {
				id = fmt.Sprintf("only-%d", i) // a part without repeats of its own
			}
			ids = append(ids, id)
			if seen[id] > 0 {
				wantCount++
			}
			seen[id]++
		}
		path := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", f))
		writeLines(t, path, ids...)
		ins = append(ins, path)
	}
	var wantList []string
	for id, n := range seen {
		if n > 1 {
			wantList = append(wantList, id)
		}
	}
	sort.Strings(wantList)
	out := filepath.Join(dir, "out")
	res := grade(t, Config{Inputs: ins, Out: out, Verifiers: []*verifiers.Verifier{testVerifier(func(*verifiers.Rollout) {})}})
	check := func(what string, count int64, list []string) {
		t.Helper()
		if count != wantCount || strings.Join(list, ",") != strings.Join(wantList, ",") {
			t.Errorf("%s: %d duplicates %v, want %d %v", what, count, list, wantCount, wantList)
		}
	}
	check("graded", res.Summary.DuplicateIDs, res.Summary.DuplicateIDList)
	for u := range ins {
		st, err := os.Stat(results.IDsPath(out, u))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size()%8 != 0 || st.Size() == 0 {
			t.Fatalf("%s: %d bytes", results.IDsPath(out, u), st.Size())
		}
	}
	var parts []*results.PartStats
	for u := range ins {
		ps, err := results.ReadStats(out, u)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, ps)
	}
	if err := os.Remove(results.IDsPath(out, 0)); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(results.IDsPath(out, 2), 8); err != nil {
		t.Fatal(err)
	}
	count, list, err := results.FindDuplicates(out, "parquet", parts, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("read back", count, list)
}
