package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/remote"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// remoteSrv is a scripted remote verifier on 127.0.0.1: answer decides
// each POST's reply from the decoded body; GET /reverify_mode answers mode.
type remoteSrv struct {
	*httptest.Server
	mu       sync.Mutex
	answer   func(body any) (int, http.Header, string)
	mode     string
	posts    atomic.Int64
	gets     atomic.Int64
	auth     []string
	maxBatch int
}

func newRemoteSrv(t *testing.T) *remoteSrv {
	t.Helper()
	s := &remoteSrv{mode: `"stateless"`}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			s.gets.Add(1)
			io.WriteString(w, s.mode)
			return
		}
		s.posts.Add(1)
		b, _ := io.ReadAll(r.Body)
		var body any
		if err := json.Unmarshal(b, &body); err != nil {
			http.Error(w, "bad body", 400)
			return
		}
		s.mu.Lock()
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		if l, ok := body.([]any); ok && len(l) > s.maxBatch {
			s.maxBatch = len(l)
		}
		f := s.answer
		s.mu.Unlock()
		code, h, text := f(body)
		for k, v := range h {
			w.Header()[k] = v
		}
		w.WriteHeader(code)
		io.WriteString(w, text)
	}))
	t.Cleanup(s.Close)
	return s
}

// byOutput answers each rollout by its output: "reward X" gives X, "checks"
// a list of two checks, "refuse" a 422, "shape" a string, "range" 1.5.
func byOutput(one func(out string) string) func(body any) (int, http.Header, string) {
	return func(body any) (int, http.Header, string) {
		if l, ok := body.([]any); ok {
			parts := make([]string, len(l))
			for i, x := range l {
				parts[i] = one(x.(map[string]any)["output"].(string))
			}
			return 200, nil, "[" + strings.Join(parts, ",") + "]"
		}
		out, _ := body.(map[string]any)["output"].(string)
		if out == "refuse" {
			return 422, nil, `{"error":"ValueError: no expected answer"}`
		}
		return 200, nil, one(out)
	}
}

func gavelAnswer(out string) string {
	switch {
	case strings.HasPrefix(out, "reward "):
		return `{"reward": ` + strings.TrimPrefix(out, "reward ") + `}`
	case out == "checks":
		return `[{"id":"a","label":"first","required":true,"status":"pass","detail":"ok","score":0.5},{"id":"b","required":false,"status":"fail","actual":{"x":1},"expected":"y"}]`
	case out == "shape":
		return `"yes"`
	case out == "range":
		return `1.5`
	}
	return `0`
}

const remoteSpecTmpl = `verifiers:
  - id: VER-R
    task: TASK-R
    name: graded elsewhere
    remote: {url: %q, version: %d, pure: true, threshold: 0.5, batch: %d, token_env: GAVEL_TEST_REMOTE_TOKEN}
  - id: VER-L
    task: TASK-L
    name: graded here
    checks:
      - {id: answered, type: expr, expr: "output != ''"}
`

func remoteRows(t *testing.T, path string, outs []string) {
	t.Helper()
	var b bytes.Buffer
	for i, o := range outs {
		task := "TASK-R"
		if i%4 == 3 {
			task = "TASK-L"
		}
		fmt.Fprintf(&b, `{"rollout_id":"r%03d","task_id":%q,"output":%q,"expected_answer":%d}`+"\n", i, task, o, i)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

const remoteToken = "tok-SECRET-remote-5b1e"

func TestRemoteVerifier(t *testing.T) {
	t.Setenv("GAVEL_TEST_REMOTE_TOKEN", remoteToken)
	srv := newRemoteSrv(t)
	srv.answer = byOutput(gavelAnswer)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	outs := []string{"reward 0.75", "reward 0.25", "checks", "local", "refuse", "shape", "range", "local", "reward 1", "reward 0.5"}
	remoteRows(t, in, outs)
	run := func(name string, batch, workers, version int, cache string) (*Result, string) {
		t.Helper()
		out := filepath.Join(dir, name)
		cfg := Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL,
			Verifiers: gaveltest.ParseSpec(t, fmt.Sprintf(remoteSpecTmpl, srv.URL+"/grade", version, batch)), Workers: workers, BatchSize: 3,
			Remote: &RemoteConfig{Config: remote.Config{CacheDir: cache, MaxRetries: -1}}}
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return res, out
	}
	res, out := run("a", 1, 1, 1, "off")
	rw, ck := rewardRows(t, out), checkRows(t, out)
	if got := rw["r000"]; got["status"] != "passed" || got["reward"] != 0.75 {
		t.Errorf("single reward 0.75 over threshold 0.5: %v", got)
	}
	if got := rw["r001"]; got["status"] != "failed" || got["reward"] != 0.25 {
		t.Errorf("single reward 0.25: %v", got)
	}
	if c := ck["r000/reward"]; c["score"] != 0.75 || c["required"] != true || c["status"] != "pass" {
		t.Errorf("reward check: %v", c)
	}
	if got := rw["r002"]; got["status"] != "passed" || got["reward"] != 0.5 || got["checks_total"] != 2.0 {
		t.Errorf("checks answer: %v", got)
	}
	if c := ck["r002/b"]; c["actual"] != `{"x":1}` || c["expected"] != `"y"` || c["required"] != false {
		t.Errorf("check b: %v", c)
	}
	for id, want := range map[string]string{"r004": "ValueError: no expected answer", "r005": "not a string", "r006": "outside [0, 1]"} {
		got := rw[id]
		if got["status"] != "error" || got["reward"] != nil {
			t.Errorf("%s: %v, want an error without reward", id, got)
		}
		if c := ck[id+"/remote"]; c["status"] != "error" || !strings.Contains(c["detail"].(string), want) {
			t.Errorf("%s check: %v, want an error naming %q", id, c, want)
		}
	}
	if got := rw["r003"]; got["status"] != "passed" {
		t.Errorf("local verifier beside the remote: %v", got)
	}
	if res.Summary.Remote == nil || res.Summary.Remote.Requests != 8 {
		t.Errorf("summary remote %+v, want 8 requests", res.Summary.Remote)
	}
	for _, a := range srv.auth {
		if a != "Bearer "+remoteToken {
			t.Fatalf("Authorization %q", a)
		}
	}
	// The token is in no output.
	filepath.Walk(out, func(p string, fi os.FileInfo, err error) error {
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(remoteToken)) {
			t.Errorf("%s holds the token", p)
		}
		return nil
	})

	// Any number of workers, with or without batches: the same bytes.
	_, outA2 := run("a2", 1, 3, 1, "off")
	sameParts(t, out, outA2)
	_, outB := run("b", 3, 1, 1, "off")
	_, outB2 := run("b2", 3, 2, 1, "off")
	sameParts(t, outB, outB2)
	if srv.maxBatch != 3 {
		t.Errorf("largest batch %d, want 3", srv.maxBatch)
	}

	// The cache: a second run asks nothing and writes the same bytes; a
	// new version asks again.
	cache := filepath.Join(dir, "cache")
	run("c1", 1, 2, 1, cache)
	before := srv.posts.Load()
	res, outC := run("c2", 1, 2, 1, cache)
	if n := srv.posts.Load() - before; n != 3 { // the failures are not cached
		t.Errorf("cached run sent %d requests, want 3 (the rollouts that failed)", n)
	}
	sameParts(t, out, outC)
	if res.Summary.Remote.CacheHits != 5 {
		t.Errorf("cache hits %d, want 5", res.Summary.Remote.CacheHits)
	}
	before = srv.posts.Load()
	run("c3", 1, 2, 2, cache)
	if n := srv.posts.Load() - before; n != 8 {
		t.Errorf("run of version 2 sent %d requests, want 8", n)
	}
}

// TestRemoteFailures: a 5xx and a 429 with Retry-After are retried; a
// service that cannot be reached fails the probe (nothing written); a
// timeout is the rollout's error.
func TestRemoteFailures(t *testing.T) {
	t.Setenv("GAVEL_TEST_REMOTE_TOKEN", remoteToken)
	srv := newRemoteSrv(t)
	var n atomic.Int64
	srv.answer = func(body any) (int, http.Header, string) {
		switch n.Add(1) {
		case 1:
			return 200, nil, "0.5" // the probe
		case 2:
			return 503, nil, `{"error":"busy"}`
		case 3:
			return 429, http.Header{"Retry-After": {"0.01"}}, `{"error":"slow down"}`
		}
		return 200, nil, "1"
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	remoteRows(t, in, []string{"a", "b", "c"})
	cfg := Config{Inputs: []string{in}, Out: filepath.Join(dir, "a"), Format: columnar.FormatJSONL, Workers: 1,
		Verifiers: gaveltest.ParseSpec(t, fmt.Sprintf(remoteSpecTmpl, srv.URL, 1, 1)),
		Remote:    &RemoteConfig{Config: remote.Config{CacheDir: "off", Backoff: time.Millisecond}}}
	res := grade(t, cfg)
	if res.Summary.Error != 0 || res.Summary.Remote.Retries != 2 || res.Summary.Remote.Requests != 5 {
		t.Errorf("summary %+v remote %+v, want no error, 2 retries, 5 requests", res.Summary.Counts, res.Summary.Remote)
	}

	// Refused connection: the probe fails, nothing is written.
	srv.Close()
	cfg.Out = filepath.Join(dir, "b")
	_, err := Run(context.Background(), cfg)
	var ce *inputs.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "nothing was written") {
		t.Errorf("Run against a closed service = %v, want a probe failure", err)
	}
	if _, err := os.Stat(cfg.Out); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(cfg.Out)
		if len(entries) > 0 {
			t.Errorf("a failed probe left %v", entries)
		}
	}
}

// TestRemoteNemoGymPurity: a server whose reverify_mode is not stateless is
// refused unless impure verifiers are allowed; then nothing is cached and
// the run names it.
func TestRemoteNemoGymPurity(t *testing.T) {
	srv := newRemoteSrv(t)
	srv.answer = func(body any) (int, http.Header, string) {
		m := body.(map[string]any)
		if msg := nemoGymRequestProblem(m); msg != "" {
			return 422, nil, `{"detail":"` + msg + `"}`
		}
		resp := m["response"].(map[string]any)
		text := resp["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
		switch text {
		case "masked":
			return 200, nil, `{"reward": 0.0, "mask_sample": true}`
		case "judge":
			return 200, nil, `{"reward": 0.0, "_ng_failure_class": "judge_failed", "_ng_failure_judge_error": "TimeoutError: judge"}`
		}
		return 200, nil, `{"reward": 1.0, "reward_components": {"format": 1.0, "answer": 0.5}}`
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	remoteRows(t, in, []string{"x", "masked", "judge"})
	spec := fmt.Sprintf(`verifiers:
  - {id: VER-R, task: TASK-R, name: gym, remote: {url: %q, protocol: nemo-gym, version: 1}}
`, srv.URL)
	cfg := Config{Inputs: []string{in}, Out: filepath.Join(dir, "a"), Format: columnar.FormatJSONL, Workers: 1,
		Verifiers: gaveltest.ParseSpec(t, spec), Remote: &RemoteConfig{Config: remote.Config{CacheDir: filepath.Join(dir, "cache")}}}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rw, ck := rewardRows(t, cfg.Out), checkRows(t, cfg.Out)
	if rw["r000"]["reward"] != 1.0 || ck["r000/answer"]["score"] != 0.5 || ck["r000/answer"]["required"] != false {
		t.Errorf("stateless server: %v %v", rw["r000"], ck["r000/answer"])
	}
	if !strings.Contains(ck["r001/remote"]["detail"].(string), "mask_sample") || !strings.Contains(ck["r002/remote"]["detail"].(string), "TimeoutError: judge") {
		t.Errorf("failures: %v %v", ck["r001/remote"], ck["r002/remote"])
	}
	if res.Summary.Remote.Probes != 1 {
		t.Errorf("probes %d", res.Summary.Remote.Probes)
	}

	for _, mode := range []string{`"UNKNOWN"`, `"unsupported"`} {
		srv.mode = mode
		cfg.Out = filepath.Join(dir, "b")
		_, err = Run(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "not stateless") || !strings.Contains(err.Error(), "--allow-impure") {
			t.Fatalf("server of reverify_mode %s without --allow-impure: %v", mode, err)
		}
		if _, err := os.Stat(cfg.Out); !os.IsNotExist(err) {
			t.Errorf("a refused server left %s", cfg.Out)
		}
	}
	srv.mode = `"Stateless"` // compared without regard to case
	cfg.Out = filepath.Join(dir, "b2")
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("reverify_mode \"Stateless\": %v", err)
	}
	srv.mode = `"unknown"`
	cfg.Remote.AllowImpure = true
	cfg.Out = filepath.Join(dir, "c")
	before := srv.posts.Load()
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.posts.Load() - before; n != 3 {
		t.Errorf("impure run sent %d requests, want 3 (nothing from the cache)", n)
	}
	if fmt.Sprint(res.Summary.ImpureVerifiers) != "[VER-R]" {
		t.Errorf("impure_verifiers %v", res.Summary.ImpureVerifiers)
	}
	m, _ := os.ReadFile(filepath.Join(cfg.Out, "manifest.json"))
	if !bytes.Contains(m, []byte(`"impure_verifiers"`)) {
		t.Errorf("manifest without impure_verifiers")
	}
}

// TestRemoteBudget: the budget is spent in input order, a batch is one
// request, and the rollouts beyond it stay pending.
func TestRemoteBudget(t *testing.T) {
	t.Setenv("GAVEL_TEST_REMOTE_TOKEN", remoteToken)
	srv := newRemoteSrv(t)
	srv.answer = byOutput(gavelAnswer)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	outs := make([]string, 12)
	for i := range outs {
		outs[i] = "reward 1"
	}
	remoteRows(t, in, outs)
	for _, workers := range []int{1, 2} {
		cfg := Config{Inputs: []string{in}, Out: filepath.Join(dir, fmt.Sprint(workers)), Format: columnar.FormatJSONL, Workers: workers, BatchSize: 4,
			Verifiers: gaveltest.ParseSpec(t, fmt.Sprintf(remoteSpecTmpl, srv.URL, 1, 2)),
			Remote:    &RemoteConfig{Config: remote.Config{CacheDir: "off"}, MaxRequests: 2}}
		res := grade(t, cfg)
		rw := rewardRows(t, cfg.Out)
		var graded []string
		for id, r := range rw {
			if r["status"] == "passed" && r["task_id"] == "TASK-R" {
				graded = append(graded, id)
			}
		}
		// The first input batch (r000 to r003) holds three remote
		// rollouts: two requests, of 2 and 1.
		if len(graded) != 3 || rw["r000"]["status"] != "passed" || rw["r001"]["status"] != "passed" || rw["r002"]["status"] != "passed" {
			t.Errorf("workers %d: graded %v, want the first 3 remote rollouts", workers, graded)
		}
		if res.Summary.Pending != 6 || res.Summary.Remote.PendingBudget != 6 {
			t.Errorf("workers %d: pending %d, remote %+v", workers, res.Summary.Pending, res.Summary.Remote)
		}
	}
	sameParts(t, filepath.Join(dir, "1"), filepath.Join(dir, "2"))
}

// nemoGymRequestProblem checks a verify request against NeMo Gym's models
// (nemo_gym/base_resources_server.py BaseVerifyRequest, and
// nemo_gym/openai_utils.py: NeMoGymResponseCreateParamsNonStreaming, which
// forbids unknown fields and requires input; NeMoGymResponse, openai's
// Response, which requires id, created_at, model, object, output,
// parallel_tool_calls, tool_choice and tools, its output items typed).
func nemoGymRequestProblem(m map[string]any) string {
	params, ok := m["responses_create_params"].(map[string]any)
	if !ok {
		return "responses_create_params: want an object"
	}
	known := map[string]bool{"background": true, "include": true, "input": true, "instructions": true, "max_output_tokens": true,
		"max_tool_calls": true, "metadata": true, "model": true, "parallel_tool_calls": true, "previous_response_id": true, "prompt": true,
		"reasoning": true, "service_tier": true, "store": true, "temperature": true, "text": true, "tool_choice": true, "tools": true,
		"top_logprobs": true, "top_p": true, "truncation": true, "user": true, "stream": true}
	for k := range params {
		if !known[k] {
			return "responses_create_params." + k + ": extra fields not permitted"
		}
	}
	if _, ok := params["input"]; !ok {
		return "responses_create_params.input: field required"
	}
	resp, ok := m["response"].(map[string]any)
	if !ok {
		return "response: want an object"
	}
	for _, k := range []string{"id", "created_at", "model", "object", "output", "parallel_tool_calls", "tool_choice", "tools"} {
		if _, ok := resp[k]; !ok {
			return "response." + k + ": field required"
		}
	}
	items, _ := resp["output"].([]any)
	for _, it := range items {
		if _, ok := it.(map[string]any)["type"]; !ok {
			return "response.output: an item without type"
		}
	}
	return ""
}

// TestRemoteTimeoutAndMix: a request past the verifier's timeout is the
// rollout's error; remote, spec and Go verifiers grade one run, and the
// parts are the same bytes for any concurrency and any number of workers;
// a second run of answers that all succeeded asks nothing.
func TestRemoteTimeoutAndMix(t *testing.T) {
	t.Setenv("GAVEL_TEST_REMOTE_TOKEN", remoteToken)
	srv := newRemoteSrv(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv.answer = func(body any) (int, http.Header, string) {
		if body.(map[string]any)["output"] == "slow" {
			<-release
		}
		return 200, nil, "1"
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	remoteRows(t, in, []string{"a", "slow", "b", "c", "d", "e"})
	vs := append(gaveltest.ParseSpec(t, fmt.Sprintf(`verifiers:
  - id: VER-R
    task: TASK-R
    name: graded elsewhere
    remote: {url: %q, version: 1, pure: true, timeout: 300ms, token_env: GAVEL_TEST_REMOTE_TOKEN}
  - {id: VER-L, task: TASK-L, name: here, checks: [{id: answered, type: expr, expr: "output != ''"}]}
`, srv.URL)), crm.Verifiers()...)
	// A CRM rollout for the Go verifiers.
	f, _ := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"rollout_id":"crm","task_id":"TASK-004","output":"$1,234.50","final_state":{}}` + "\n")
	f.Close()
	res := grade(t, Config{Inputs: []string{in}, Out: filepath.Join(dir, "a"), Format: columnar.FormatJSONL, Workers: 1, Verifiers: vs,
		Remote: &RemoteConfig{Config: remote.Config{CacheDir: "off"}}})
	rw, ck := rewardRows(t, filepath.Join(dir, "a")), checkRows(t, filepath.Join(dir, "a"))
	if rw["r001"]["status"] != "error" || !strings.Contains(ck["r001/remote"]["detail"].(string), "no answer within 300ms") {
		t.Errorf("slow rollout: %v %v", rw["r001"], ck["r001/remote"])
	}
	if rw["crm"]["verifier_id"] != "VER-004" || rw["r003"]["verifier_id"] != "VER-L" || rw["r000"]["status"] != "passed" {
		t.Errorf("mixed run: %v %v %v", rw["crm"], rw["r003"], rw["r000"])
	}
	if res.Summary.Remote.Failures != 1 {
		t.Errorf("remote %+v", res.Summary.Remote)
	}

	// Without the slow rollout: any concurrency, any workers, same bytes;
	// the second run with the cache asks nothing.
	remoteRows(t, in, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"})
	cache := filepath.Join(dir, "cache")
	var outs []string
	for i, c := range []struct{ concurrency, workers int }{{1, 1}, {8, 2}, {3, 3}} {
		vs := gaveltest.ParseSpec(t, fmt.Sprintf(`verifiers:
  - {id: VER-R, task: TASK-R, name: graded elsewhere, remote: {url: %q, version: 1, pure: true, concurrency: %d, token_env: GAVEL_TEST_REMOTE_TOKEN}}
  - {id: VER-L, task: TASK-L, name: here, checks: [{id: answered, type: expr, expr: "output != ''"}]}
`, srv.URL, c.concurrency))
		c := c
		cacheDir := "off"
		if i > 0 {
			cacheDir = cache
		}
		out := filepath.Join(dir, fmt.Sprint("c", i))
		before := srv.posts.Load()
		grade(t, Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Workers: c.workers, BatchSize: 2, Verifiers: vs,
			Remote: &RemoteConfig{Config: remote.Config{CacheDir: cacheDir}}})
		if n := srv.posts.Load() - before; i == 2 && n != 0 {
			t.Errorf("run answered from the cache sent %d requests", n)
		}
		outs = append(outs, out)
	}
	sameParts(t, outs[0], outs[1])
	sameParts(t, outs[0], outs[2])
}

// TestReuseRemoteRetries: --reuse grades again the rollouts whose remote
// verifier failed (an HTTP error after the retries, a reply that is not an
// answer) or was not asked (the request budget), whichever path the unit
// takes, and reuses the others; once the service answers them, the parts
// are those of a run without --reuse.
func TestReuseRemoteRetries(t *testing.T) {
	t.Setenv("GAVEL_TEST_REMOTE_TOKEN", remoteToken)
	srv := newRemoteSrv(t)
	var broken atomic.Bool
	broken.Store(true)
	srv.answer = func(body any) (int, http.Header, string) {
		out, _ := body.(map[string]any)["output"].(string)
		switch {
		case broken.Load() && out == "fail":
			return 500, nil, `{"error":"down"}`
		case broken.Load() && out == "shape":
			return 200, nil, `"yes"`
		}
		return 200, nil, "1"
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	remoteRows(t, in, []string{"ok", "fail", "shape", "ok", "ok", "ok", "ok", "ok"})
	cfg := func(out, reuse string, budget int64, path reusePath) Config {
		return Config{Inputs: []string{in}, Out: filepath.Join(dir, out), Format: columnar.FormatJSONL, Workers: 1, BatchSize: 2,
			Verifiers: gaveltest.ParseSpec(t, fmt.Sprintf(remoteSpecTmpl, srv.URL, 1, 1)), Reuse: reuse, reusePath: path,
			Remote: &RemoteConfig{Config: remote.Config{CacheDir: "off", MaxRetries: 1, Backoff: time.Millisecond}, MaxRequests: budget}}
	}
	failed := grade(t, cfg("failed", "", 0, reuseAuto)).Summary
	if failed.Error != 2 {
		t.Fatalf("first run: %d errors, want 2 (the service's 500 and its reply that is not an answer)", failed.Error)
	}
	// Six rollouts are remote (remoteRows): four asked, the last two left.
	short := grade(t, cfg("short", "", 4, reuseAuto)).Summary
	if short.Pending != 2 || short.Error != 2 {
		t.Fatalf("budget of 4 requests: %d pending and %d errors, want 2 and 2", short.Pending, short.Error)
	}
	broken.Store(false)
	want := filepath.Join(dir, "want")
	grade(t, cfg("want", "", 0, reuseAuto))
	for _, tt := range []struct {
		from   string
		path   reusePath
		graded int64
	}{{"failed", reuseAuto, 2}, {"failed", reuseRows, 2}, {"short", reuseAuto, 4}, {"short", reuseRows, 4}} {
		name := fmt.Sprintf("%s-%d", tt.from, tt.path)
		before := srv.posts.Load()
		s := grade(t, cfg(name, filepath.Join(dir, tt.from), 0, tt.path)).Summary
		if s.Error != 0 || s.Pending != 0 || s.Reuse == nil || s.Reuse.Graded != tt.graded || s.Reuse.Reused != 8-tt.graded || s.Reuse.CopiedParts != 0 {
			t.Errorf("%s: %+v, reuse %+v; want no error or pending, %d graded again, the rest reused, no part copied whole",
				name, s.Counts, s.Reuse, tt.graded)
		}
		if asked := srv.posts.Load() - before; asked < tt.graded {
			t.Errorf("%s: %d requests, want the %d rollouts asked again", name, asked, tt.graded)
		}
		sameParts(t, want, filepath.Join(dir, name))
	}
}

// TestRemoteFirstRolloutFails: the first request of a gavel service is its
// probe, but a failure that is the rollout's (a server error after the
// retries, no answer within the timeout) makes that rollout's row an error
// and the run goes on; a service that has no such route stops it.
func TestRemoteFirstRolloutFails(t *testing.T) {
	t.Setenv("GAVEL_TEST_REMOTE_TOKEN", remoteToken)
	for _, tc := range []struct {
		name, first string
		probeFails  bool
	}{
		{"server error", "boom", false},
		{"timeout", "slow", false},
		{"no such route", "gone", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRemoteSrv(t)
			release := make(chan struct{})
			defer close(release)
			srv.answer = func(body any) (int, http.Header, string) {
				switch out, _ := body.(map[string]any)["output"].(string); out {
				case "boom":
					return 500, nil, `{"error":"crashed on this one"}`
				case "slow":
					select {
					case <-release:
					case <-time.After(5 * time.Second):
					}
				case "gone":
					return 404, nil, `{"error":"no route"}`
				}
				return 200, nil, "1"
			}
			dir := t.TempDir()
			in := filepath.Join(dir, "in.jsonl")
			remoteRows(t, in, []string{tc.first, "ok", "ok", "ok", "ok"})
			spec := strings.Replace(fmt.Sprintf(remoteSpecTmpl, srv.URL, 1, 1), "batch: 1,", "batch: 1, timeout: 200ms,", 1)
			cfg := Config{Inputs: []string{in}, Out: filepath.Join(dir, "out"), Format: columnar.FormatJSONL, Workers: 1,
				Verifiers: gaveltest.ParseSpec(t, spec),
				Remote:    &RemoteConfig{Config: remote.Config{CacheDir: "off", MaxRetries: 1, Backoff: time.Millisecond}}}
			res, err := Run(context.Background(), cfg)
			if tc.probeFails {
				var pe *ProbeError
				var ce *inputs.ConfigError
				if !errors.As(err, &pe) && !errors.As(err, &ce) {
					t.Fatalf("Run = %v, want the probe's failure", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run = %v, want the run to go on", err)
			}
			rw := rewardRows(t, cfg.Out)
			if res.Summary.Error != 1 || rw["r000"]["status"] != "error" || rw["r001"]["status"] != "passed" || rw["r004"]["status"] != "passed" {
				t.Errorf("summary %+v, r000 %v, r001 %v; want r000 alone in error", res.Summary.Counts, rw["r000"]["status"], rw["r001"]["status"])
			}
		})
	}
}
