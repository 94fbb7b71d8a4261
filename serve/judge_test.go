package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/judge/judgetest"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/spec"
)

// judgedSpec binds TASK-J to a verifier with an expr check and a rubric
// check.
const judgedSpec = `verifiers:
  - id: VER-J
    task: TASK-J
    name: answers judged
    checks:
      - id: answered
        type: expr
        expr: "output != ''"
      - id: polite
        type: rubric
        rubric: The answer is polite.
        query: Answer politely.
`

func judgedVerifiers(t *testing.T) []*verifiers.Verifier {
	t.Helper()
	vs, err := spec.Parse("judged.yaml", []byte(judgedSpec))
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// /v1/grade with a judge gives the rows gavel grade writes with the same
// judge: rubric checks judged (score, issues, suggestion), a failed
// judgement an error, never a score; a second request is answered from the
// cache.
func TestGradeJudged(t *testing.T) {
	dir := t.TempDir()
	var lines strings.Builder
	for i := range 6 {
		word := "PASS"
		if i%3 == 0 {
			word = "FAIL"
		}
		fmt.Fprintf(&lines, `{"rollout_id":"r%d","task_id":"TASK-J","output":"answer %d: %s"}`+"\n", i, i, word)
	}
	data := filepath.Join(dir, "rollouts.jsonl")
	if err := os.WriteFile(data, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	js := judgetest.New(t)
	cfg := func(cache string) *judge.Config {
		return &judge.Config{Model: "judge-1", BaseURL: js.URL, CacheDir: cache, MaxRetries: -1, Timeout: 5 * time.Second}
	}
	out := filepath.Join(dir, "out")
	if _, err := pipeline.Run(context.Background(), pipeline.Config{Inputs: []string{data}, Out: out, Format: columnar.FormatJSONL,
		Verifiers: judgedVerifiers(t), Judge: cfg(filepath.Join(dir, "grade-cache"))}); err != nil {
		t.Fatal(err)
	}
	wantChecks := readLines(t, filepath.Join(out, "checks", "part-00000.jsonl"))
	if !strings.Contains(strings.Join(wantChecks, "\n"), `"score":1`) {
		t.Fatalf("grade judged nothing:\n%s", strings.Join(wantChecks, "\n"))
	}

	before := js.Requests()
	s := New(Config{Judge: cfg(filepath.Join(dir, "serve-cache"))})
	if err := s.Reload(judgedVerifiers(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ts := startServer(t, s)
	gotChecks := func() []string {
		got := do(t, ts, "POST", "/v1/grade", "application/x-ndjson", lines.String())
		if got.code != 200 {
			t.Fatalf("POST /v1/grade = %d %s", got.code, got.body)
		}
		var checks []string
		for _, line := range strings.Split(strings.TrimSuffix(got.body, "\n"), "\n") {
			var l struct {
				Checks []json.RawMessage `json:"checks"`
			}
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			for _, c := range l.Checks {
				checks = append(checks, string(c))
			}
		}
		return checks
	}
	if diff := cmp.Diff(wantChecks, gotChecks()); diff != "" {
		t.Errorf("judged checks (-grade +serve):\n%s", diff)
	}
	if n := js.Requests() - before; n != 6 {
		t.Errorf("serve sent %d judge requests, want 6 (one per rollout)", n)
	}
	before = js.Requests()
	if diff := cmp.Diff(wantChecks, gotChecks()); diff != "" {
		t.Errorf("judged checks from the cache (-grade +serve):\n%s", diff)
	}
	if n := js.Requests() - before; n != 0 {
		t.Errorf("a repeated request sent %d judge requests, want 0 (the cache answers)", n)
	}
	metrics := do(t, ts, "GET", "/metrics", "", "").body
	for _, want := range []string{"gavel_judge_requests_total 6", "gavel_judge_cache_hits_total 6"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// A judge that fails makes the check an error, and the rollout too.
	js.Script(func(judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Status: 500, Body: `{"error":{"message":"boom"}}`}
	})
	got := do(t, ts, "POST", "/v1/grade", "", `{"rollout_id":"x","task_id":"TASK-J","output":"new answer: PASS"}`)
	if got.code != 200 || !strings.Contains(got.body, `"status":"error","passed":null,"reward":null`) || !strings.Contains(got.body, `HTTP 500`) {
		t.Errorf("POST /v1/grade with a failing judge = %d %s; want the rollout in status error naming HTTP 500", got.code, got.body)
	}
}

// A judge whose server cannot be reached fails the request (502), before
// any row is answered, rather than erroring every rubric check.
func TestGradeJudgeProbe(t *testing.T) {
	js := judgetest.New(t)
	url := js.URL
	js.Close()
	s := New(Config{Judge: &judge.Config{Model: "judge-1", BaseURL: url, CacheDir: "off", MaxRetries: -1, Timeout: 2 * time.Second}})
	if err := s.Reload(judgedVerifiers(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ts := startServer(t, s)
	got := do(t, ts, "POST", "/v1/grade", "", `{"rollout_id":"x","task_id":"TASK-J","output":"an answer"}`)
	if got.code != 502 || !strings.Contains(got.body, `"hint"`) {
		t.Errorf("POST /v1/grade with an unreachable judge = %d %s; want 502 with a hint", got.code, got.body)
	}
}

// startServer serves s on 127.0.0.1 for the test's duration.
func startServer(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Client().CloseIdleConnections()
		ts.Close()
	})
	return ts
}

// /get_reward's extra_logs count checks as the rewards table does: a
// judged check scored under the threshold fails (its score is not 0), and
// a check in error counts in checks_total.
func TestGetRewardJudgedChecks(t *testing.T) {
	dir := t.TempDir()
	js := judgetest.New(t)
	js.Script(func(judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Body: judgetest.Completion("judge-1", judgetest.Verdict(0.5, []string{"curt"}, "Be kinder."))}
	})
	s := New(Config{Judge: &judge.Config{Model: "judge-1", BaseURL: js.URL, CacheDir: filepath.Join(dir, "cache"), MaxRetries: -1, Timeout: 5 * time.Second},
		DefaultTask: "TASK-J"})
	if err := s.Reload(judgedVerifiers(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ts := startServer(t, s)
	got := do(t, ts, "POST", "/get_reward", "application/json", `{"query":["an answer"],"prompts":[""],"labels":["x"]}`)
	if got.code != 200 {
		t.Fatalf("POST /get_reward = %d %s", got.code, got.body)
	}
	var r struct {
		ExtraLogs map[string][]float64 `json:"extra_logs"`
	}
	if err := json.Unmarshal([]byte(got.body), &r); err != nil {
		t.Fatal(err)
	}
	// answered passes, polite is scored 0.5 under the threshold 0.8: fail.
	if p, n := r.ExtraLogs["checks_passed"], r.ExtraLogs["checks_total"]; len(p) != 1 || p[0] != 1 || len(n) != 1 || n[0] != 2 {
		t.Errorf("extra_logs %v, want checks_passed [1] and checks_total [2]", r.ExtraLogs)
	}
}
