package judge

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/gavelhq/gavel/judge/judgetest"
)

// TestSamples checks that sample 0 is sent as before samples existed
// (temperature 0, seed 1, the same cache key) and that samples 1 to N-1
// are sent with the configured temperature and distinct seeds, each on a
// key of its own.
func TestSamples(t *testing.T) {
	srv := judgetest.New(t)
	srv.Script(func(r judgetest.Request) judgetest.Reply {
		// The answer varies by seed, as a sampling server's would.
		score := float64(*r.Seed%4) / 4
		return judgetest.Reply{Body: judgetest.Completion(r.Model, judgetest.Verdict(score, []string{}, ""))}
	})
	j, _ := newJudge(t, Config{BaseURL: srv.URL, CacheDir: t.TempDir()})
	r0 := mustRequest(t, j, Prompt{Rubric: "R", Instruction: "I", Output: "O"})

	// The key of sample 0, computed as the judge computed it before
	// samples: the strings of the key, each after its length.
	h := sha256.New()
	for _, s := range []string{"gavel-judge-key-1", j.Model(), j.Template().Fingerprint(), "temperature=0 seed=1", r0.system, r0.user} {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	h2 := sha256.New()
	h2.Write(h.Sum(nil))
	h2.Write([]byte(ModeSchema))
	if got, want := r0.Key().String(), fmt.Sprintf("%x", h2.Sum(nil)); got != want {
		t.Errorf("sample 0 key = %s, want %s (the key before samples)", got, want)
	}
	if r0.Sample(0, 0.7) != r0 {
		t.Errorf("Sample(0) is not the request itself")
	}

	const n = 4
	keys := map[Key]int{}
	for i := 0; i < n; i++ {
		r := r0.Sample(i, 0.7)
		if _, dup := keys[r.Key()]; dup {
			t.Errorf("sample %d has the key of sample %d", i, keys[r.Key()])
		}
		keys[r.Key()] = i
		v, err := j.Ask(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if want := float64(SampleSeed(i)%4) / 4; v.Score != want {
			t.Errorf("sample %d score = %v, want %v", i, v.Score, want)
		}
	}
	got := srv.Received()
	if len(got) != n {
		t.Fatalf("server got %d requests, want %d", len(got), n)
	}
	seeds := map[int64]bool{}
	for i, r := range got {
		wantT, wantSeed := 0.7, int64(1+i)
		if i == 0 {
			wantT = 0
		}
		if r.Temperature == nil || *r.Temperature != wantT || r.Seed == nil || *r.Seed != wantSeed {
			t.Errorf("request %d: temperature %v seed %v, want %v and %d", i, deref(r.Temperature), deref(r.Seed), wantT, wantSeed)
		}
		if r.Seed != nil {
			seeds[*r.Seed] = true
		}
		if r.System != r0.system || r.User != r0.user {
			t.Errorf("request %d: messages differ from sample 0's", i)
		}
	}
	if len(seeds) != n {
		t.Errorf("%d distinct seeds, want %d", len(seeds), n)
	}
	// Asked again, every sample comes from the cache.
	for i := 0; i < n; i++ {
		if _, err := j.Ask(context.Background(), r0.Sample(i, 0.7)); err != nil {
			t.Fatal(err)
		}
	}
	if s := j.Stats(); s.Requests != n || s.CacheHits != n {
		t.Errorf("stats %+v, want %d requests and %d cache hits", s, n, n)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestWithURL checks that a judge derived for another server asks that
// server, shares the counters and the cache, and has its own concurrency
// limit.
func TestWithURL(t *testing.T) {
	a, b := judgetest.New(t), judgetest.New(t)
	j, _ := newJudge(t, Config{BaseURL: a.URL, CacheDir: t.TempDir()})
	k, err := j.With(Override{Model: "other", URL: b.URL})
	if err != nil {
		t.Fatal(err)
	}
	if k.Server() != b.URL || j.Server() != a.URL {
		t.Errorf("servers %s, %s; want %s, %s", j.Server(), k.Server(), a.URL, b.URL)
	}
	k2, _ := j.With(Override{Model: "third", URL: b.URL})
	if k2.c != k.c {
		t.Errorf("two judges of one server do not share its core")
	}
	p := Prompt{Rubric: "R", Output: "PASS"}
	for _, x := range []*Judge{j, k, k2} {
		if _, err := x.Ask(context.Background(), mustRequest(t, x, p)); err != nil {
			t.Fatal(err)
		}
	}
	if a.Requests() != 1 || b.Requests() != 2 {
		t.Errorf("requests %d and %d, want 1 and 2", a.Requests(), b.Requests())
	}
	if got := b.Received()[0].Model; got != "other" {
		t.Errorf("model %q at the second server, want other", got)
	}
	if _, ok := j.Cached(mustRequest(t, k, p)); !ok {
		t.Errorf("a verdict of the second server is not in the shared cache")
	}
	if s := j.Stats(); s.Requests != 3 {
		t.Errorf("shared stats count %d requests, want 3", s.Requests)
	}
}
