package mathanswer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// corpusPair is one pair of the project's corpus of answers.
type corpusPair struct {
	ID     string `json:"id"`
	Gold   string `json:"gold"`
	Answer string `json:"answer"`
	Equal  bool   `json:"equal"`
	Form   string `json:"form"`
}

func readCorpus(t testing.TB) []corpusPair {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "math", "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pairs []corpusPair
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var p corpusPair
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, p)
	}
	return pairs
}

// TestCorpus checks every verdict of the corpus against its truth.
func TestCorpus(t *testing.T) {
	wrong := 0
	pairs := readCorpus(t)
	for _, p := range pairs {
		v, err := Compare(p.Answer, p.Gold, -1)
		if err != nil {
			t.Errorf("%s: %v", p.ID, err)
			wrong++
			continue
		}
		if v.Equal != p.Equal {
			wrong++
			t.Errorf("%s: Compare(answer, %q) = %v (%s, rule %s), want %v\n   answer: %.300q", p.ID, p.Gold, v.Equal, v.Detail, v.Rule, p.Equal, p.Answer)
		}
	}
	t.Logf("%d of %d right", len(pairs)-wrong, len(pairs))
}
