package pipeline

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/remote"
)

// --verify-repeats asks each rollout of a remote verifier N times, each
// under its own cache key: answers that disagree make the rollout an
// error of kind verifier, never a score, counted as flaky; a run answered
// from the cache writes the same parts.
func TestRemoteVerifyRepeats(t *testing.T) {
	t.Setenv("GAVEL_TEST_REMOTE_TOKEN", remoteToken)
	srv := newRemoteSrv(t)
	var mu sync.Mutex
	seen := map[string]int{}
	// "flaky" passes the first time it is asked and fails after; the
	// others always give their reward.
	srv.answer = func(body any) (int, http.Header, string) {
		out, _ := body.(map[string]any)["output"].(string)
		mu.Lock()
		defer mu.Unlock()
		seen[out]++
		if out == "flaky" {
			if seen[out] == 1 {
				return 200, nil, `{"reward": 1}`
			}
			return 200, nil, `{"reward": 0}`
		}
		return 200, nil, gavelAnswer(out)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	remoteRows(t, in, []string{"flaky", "reward 1", "reward 0.25", "local"})
	cache := filepath.Join(dir, "cache")
	run := func(name string) *Result {
		t.Helper()
		cfg := Config{Inputs: []string{in}, Out: filepath.Join(dir, name), Format: columnar.FormatJSONL,
			Verifiers: gaveltest.ParseSpec(t, fmt.Sprintf(remoteSpecTmpl, srv.URL+"/grade", 1, 1)), Workers: 2, BatchSize: 2,
			Remote: &RemoteConfig{Config: remote.Config{CacheDir: cache, MaxRetries: -1}, Repeats: 3}}
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return res
	}
	res := run("a")
	if got := srv.posts.Load(); got != 9 {
		t.Errorf("%d requests, want 3 rollouts asked 3 times", got)
	}
	rw, ck := rewardRows(t, filepath.Join(dir, "a")), checkRows(t, filepath.Join(dir, "a"))
	if r := rw["r000"]; r["status"] != "error" || r["error_kind"] != "verifier" || r["reward"] != nil {
		t.Errorf("flaky rollout: %v, want an error of kind verifier without reward", r)
	}
	d, _ := ck["r000/remote"]["detail"].(string)
	if !strings.HasPrefix(d, "answers disagree: ") || strings.Count(d, "pass") != 1 || strings.Count(d, "fail") != 2 {
		t.Errorf("flaky rollout's check detail %q, want the three answers", d)
	}
	if r := rw["r001"]; r["status"] != "passed" || r["reward"] != 1.0 {
		t.Errorf("steady rollout: %v", r)
	}
	if r := rw["r002"]; r["status"] != "failed" || r["reward"] != 0.25 {
		t.Errorf("steady rollout: %v", r)
	}
	if s := res.Summary.Remote; s == nil || s.Repeats != 3 || s.Flaky["VER-R"] != 1 {
		t.Errorf("summary remote %+v, want 3 repeats and 1 flaky rollout of VER-R", s)
	}
	// From the cache: no request, the same parts, the same count.
	res = run("b")
	if got := srv.posts.Load(); got != 9 {
		t.Errorf("%d requests after a run from the cache, want 9", got)
	}
	sameFiles(t, filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	if s := res.Summary.Remote; s == nil || s.Flaky["VER-R"] != 1 {
		t.Errorf("summary remote of the cached run %+v", s)
	}
}
