package pipeline

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/remote"
)

// TestRemoteBatchElementError: in a batch, a service answers the rollout
// it could not grade with {"error": ...} and grades the others: only that
// rollout's row is an error, with the service's message, and the rows are
// the same bytes whatever the batch size and the workers. --reuse grades
// that rollout again and reuses the others; a 422 for the whole request
// still makes each of its rollouts an error.
func TestRemoteBatchElementError(t *testing.T) {
	t.Setenv("GAVEL_TEST_REMOTE_TOKEN", remoteToken)
	srv := newRemoteSrv(t)
	var fixed, whole atomic.Bool
	one := func(out string) string {
		if out == "raise" && !fixed.Load() {
			return `{"error":"KeyError: 'expected_answer'"}`
		}
		return gavelAnswer(out)
	}
	srv.answer = func(body any) (int, http.Header, string) {
		if l, ok := body.([]any); ok {
			if whole.Load() {
				return 422, nil, `{"error":"request body: not rollouts"}`
			}
			parts := make([]string, len(l))
			for i, x := range l {
				parts[i] = one(x.(map[string]any)["output"].(string))
			}
			return 200, nil, "[" + strings.Join(parts, ",") + "]"
		}
		return 200, nil, one(body.(map[string]any)["output"].(string))
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	// TASK-R rollouts are remote, every fourth is TASK-L (remoteRows).
	remoteRows(t, in, []string{"reward 1", "raise", "checks", "local", "reward 0.5", "raise", "reward 0.25", "local", "reward 1"})
	cfg := func(name string, batch, workers int, reuse string) Config {
		return Config{Inputs: []string{in}, Out: filepath.Join(dir, name), Format: columnar.FormatJSONL, Workers: workers, BatchSize: 4,
			Verifiers: gaveltest.ParseSpec(t, fmt.Sprintf(remoteSpecTmpl, srv.URL, 1, batch)), Reuse: reuse,
			Remote: &RemoteConfig{Config: remote.Config{CacheDir: "off", MaxRetries: -1}}}
	}
	res := grade(t, cfg("b3", 3, 1, ""))
	if res.Summary.Error != 2 {
		t.Errorf("%d rows in error, want 2 (the rollouts the function raised on)", res.Summary.Error)
	}
	if srv.maxBatch < 2 {
		t.Fatalf("largest batch %d: the test needs batches", srv.maxBatch)
	}
	rw, ck := rewardRows(t, filepath.Join(dir, "b3")), checkRows(t, filepath.Join(dir, "b3"))
	want := `remote verifier VER-R at ` + srv.URL + `: could not grade the rollout: "KeyError: 'expected_answer'"`
	for _, id := range []string{"r001", "r005"} {
		if got := rw[id]; got["status"] != "error" || got["reward"] != nil {
			t.Errorf("%s: %v, want an error without reward", id, got)
		}
		if c := ck[id+"/remote"]; c["status"] != "error" || c["detail"] != want {
			t.Errorf("%s check: %v, want detail %q", id, c, want)
		}
	}
	for id, reward := range map[string]float64{"r000": 1, "r002": 0.5, "r004": 0.5, "r006": 0.25, "r008": 1} {
		if got := rw[id]; got["reward"] != reward {
			t.Errorf("%s: %v, want reward %v beside the rollout in error", id, got, reward)
		}
	}
	for _, c := range []struct{ batch, workers int }{{1, 1}, {2, 3}, {3, 2}} {
		name := fmt.Sprintf("b%dw%d", c.batch, c.workers)
		grade(t, cfg(name, c.batch, c.workers, ""))
		sameParts(t, filepath.Join(dir, "b3"), filepath.Join(dir, name))
	}

	// --reuse asks again only the rollouts in error.
	fixed.Store(true)
	before := srv.posts.Load()
	s := grade(t, cfg("reused", 3, 1, filepath.Join(dir, "b3"))).Summary
	if s.Error != 0 || s.Reuse == nil || s.Reuse.Graded != 2 || s.Reuse.Reused != 7 {
		t.Errorf("--reuse: %+v, reuse %+v; want no error, the 2 rollouts in error graded again and 7 reused", s.Counts, s.Reuse)
	}
	if n := srv.posts.Load() - before; n < 1 || n > 2 {
		t.Errorf("--reuse sent %d requests, want one or two for the two rollouts", n)
	}

	// A 422 for the whole request is every one of its rollouts' error.
	whole.Store(true)
	s = grade(t, cfg("whole", 3, 1, "")).Summary
	if s.Error != 7 {
		t.Errorf("422 for each batch: %d rows in error, want the 7 remote rollouts", s.Error)
	}
}
