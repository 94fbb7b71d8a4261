package pipeline

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/verifiers"
)

// TestHashIDStable pins hashID: hash files outlive the process, so a
// change of the function must come with a new file name.
func TestHashIDStable(t *testing.T) {
	for _, tt := range []struct {
		id   string
		want uint64
	}{
		{"", 0x226e040144470ef3},
		{"x", 0x76cb069bc7986875},
		{"rollout-00000001", 0xa37675d6d0f98f13},
		{"3f2b8a4e-1c9d-4e7a-9b1f-6d2c8e0a5b73", 0xa4311b9e97c8d85b},
	} {
		if got := hashID(tt.id); got != tt.want {
			t.Errorf("hashID(%q) = %#x, want %#x", tt.id, got, tt.want)
		}
		if got := hashID([]byte(tt.id)); got != tt.want {
			t.Errorf("hashID([]byte(%q)) = %#x, want %#x", tt.id, got, tt.want)
		}
	}
}

// TestDuplicatesFromHashFiles grades ids with random repeats across several
// files, with hash runs far shorter than a part, and checks the count and
// list against a map; then again with one part's hash file missing and
// another's truncated, which must be read back instead.
func TestDuplicatesFromHashFiles(t *testing.T) {
	defer func(n int64) { idRunLen = n }(idRunLen)
	idRunLen = 7
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	var inputs []string
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
		inputs = append(inputs, path)
	}
	var wantList []string
	for id, n := range seen {
		if n > 1 {
			wantList = append(wantList, id)
		}
	}
	sort.Strings(wantList)
	out := filepath.Join(dir, "out")
	res := grade(t, Config{Inputs: inputs, Out: out, Verifiers: []*verifiers.Verifier{testVerifier(func(*verifiers.Rollout) {})}})
	check := func(what string, count int64, list []string) {
		t.Helper()
		if count != wantCount || strings.Join(list, ",") != strings.Join(wantList, ",") {
			t.Errorf("%s: %d duplicates %v, want %d %v", what, count, list, wantCount, wantList)
		}
	}
	check("graded", res.Summary.DuplicateIDs, res.Summary.DuplicateIDList)
	for u := range inputs {
		st, err := os.Stat(idsPath(out, u))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size()%8 != 0 || st.Size() == 0 {
			t.Fatalf("%s: %d bytes", idsPath(out, u), st.Size())
		}
	}
	var parts []*partStats
	for u := range inputs {
		ps, err := readStats(out, u)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, ps)
	}
	if err := os.Remove(idsPath(out, 0)); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(idsPath(out, 2), 8); err != nil {
		t.Fatal(err)
	}
	count, list, err := findDuplicates(out, "parquet", parts, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("read back", count, list)
}
