package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/judge/judgetest"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// checkRows returns the checks of a jsonl run by rollout id and check id.
func checkRows(t testing.TB, out string) map[string]map[string]any {
	t.Helper()
	m := map[string]map[string]any{}
	files, _ := filepath.Glob(filepath.Join(out, "checks", "part-*.jsonl"))
	for _, f := range files {
		for _, c := range gaveltest.DecodeJSONL(t.(*testing.T), f) {
			m[c["rollout_id"].(string)+"/"+c["check_id"].(string)] = c
		}
	}
	return m
}

func rewardRows(t *testing.T, out string) map[string]map[string]any {
	t.Helper()
	m := map[string]map[string]any{}
	files, _ := filepath.Glob(filepath.Join(out, "rewards", "part-*.jsonl"))
	for _, f := range files {
		for _, r := range gaveltest.DecodeJSONL(t, f) {
			m[r["rollout_id"].(string)] = r
		}
	}
	return m
}

// TestJudgeVerdicts grades judged rows: a passing verdict passes the
// check with its score, issues and suggestion, a failing one fails it
// (and the rollout), unjudged checks have null judge columns, and the
// prompt carries the rubric, the query, the output and the context.
func TestJudgeVerdicts(t *testing.T) {
	srv := judgetest.New(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, 6)
	out := filepath.Join(dir, "out")
	res := grade(t, Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec),
		Judge: gaveltest.JudgeConfig(srv, filepath.Join(dir, "cache")), Workers: 2, BatchSize: 2})
	checks, rewards := checkRows(t, out), rewardRows(t, out)
	for i := range 6 {
		id := fmt.Sprintf("r%05d", i)
		c, a, r := checks[id+"/polite"], checks[id+"/answered"], rewards[id]
		if a["score"] != nil || a["issues"] != nil || a["suggestion"] != nil {
			t.Errorf("%s answered: judge columns %v %v %v, want null", id, a["score"], a["issues"], a["suggestion"])
		}
		if i%3 == 0 {
			if c["status"] != "fail" || c["score"] != 0.0 || fmt.Sprint(c["issues"]) != "[the output does not say PASS]" || c["suggestion"] != "Say PASS." {
				t.Errorf("%s polite = %v, want fail, score 0 and the issue", id, c)
			}
			if r["status"] != "failed" || r["reward"] != 0.5 {
				t.Errorf("%s reward row = %v, want failed 0.5", id, r)
			}
			continue
		}
		if c["status"] != "pass" || c["score"] != 1.0 || fmt.Sprint(c["issues"]) != "[]" || c["suggestion"] != "" {
			t.Errorf("%s polite = %v, want pass, score 1", id, c)
		}
		if r["status"] != "passed" || r["reward"] != 1.0 {
			t.Errorf("%s reward row = %v, want passed 1", id, r)
		}
	}
	if res.Summary.Judge == nil || res.Summary.Judge.Requests != 6 {
		t.Errorf("summary judge = %+v, want 6 requests", res.Summary.Judge)
	}
	got := srv.Received()
	if len(got) == 0 {
		t.Fatal("no request received")
	}
	u := got[0].User
	for _, want := range []string{"The answer is polite.", "Answer politely.", "answer ", `"name": "n"`} {
		if !strings.Contains(u, want) {
			t.Errorf("prompt lacks %q:\n%s", want, u)
		}
	}
	m, err := results.ReadManifest(filepath.Join(out, results.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.Judge == nil || m.Config.Judge.Model != "judge-1" || m.Config.Judge.URL != srv.URL {
		t.Errorf("manifest judge = %+v", m.Config.Judge)
	}
}

// TestJudgeFingerprint: the judge model and threshold join the judged
// verifier's fingerprint (and only its).
func TestJudgeFingerprint(t *testing.T) {
	srv := judgetest.New(t)
	vs := append(gaveltest.ParseSpec(t, gaveltest.JudgedSpec), crm.Verifiers()...)
	fp := func(jc *judge.Config) map[string]string {
		r, err := prepare(Config{Inputs: []string{"-"}, Out: t.TempDir(), Verifiers: vs, Judge: jc})
		if err != nil {
			t.Fatal(err)
		}
		if r.plan.judging != nil {
			defer r.plan.judging.base.Close()
		}
		m := map[string]string{}
		for _, v := range r.manifest.Verifiers {
			m[v.ID] = v.Fingerprint
		}
		return m
	}
	none := fp(nil)
	a := fp(gaveltest.JudgeConfig(srv, "off"))
	b := gaveltest.JudgeConfig(srv, "off")
	b.Threshold = 0.5
	c := gaveltest.JudgeConfig(srv, "off")
	c.Model = "judge-2"
	fb, fc := fp(b), fp(c)
	if none["VER-J"] == a["VER-J"] || a["VER-J"] == fb["VER-J"] || a["VER-J"] == fc["VER-J"] {
		t.Errorf("VER-J fingerprints none %s, a %s, threshold %s, model %s: want all different", none["VER-J"], a["VER-J"], fb["VER-J"], fc["VER-J"])
	}
	for id, f := range none {
		if id != "VER-J" && (a[id] != f || fc[id] != f) {
			t.Errorf("unjudged verifier %s fingerprint changed with the judge", id)
		}
	}
}

// TestJudgeManifestURL: the manifest records the judge's URL without
// user information or query.
func TestJudgeManifestURL(t *testing.T) {
	r, err := prepare(Config{Inputs: []string{"-"}, Out: t.TempDir(), Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec),
		Judge: &judge.Config{Model: "m", BaseURL: "http://user:secret@127.0.0.1:1/v1?key=abc", CacheDir: "off"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.plan.judging.base.Close()
	if got, want := r.manifest.Config.Judge.URL, "http://127.0.0.1:1/v1"; got != want {
		t.Errorf("manifest judge URL = %q, want %q", got, want)
	}
}

// TestJudgeFailures: every failure of a judgement makes the check an
// error naming the cause and the HTTP status, and the rollout an error of
// kind verifier without a reward; never a score.
func TestJudgeFailures(t *testing.T) {
	tests := []struct {
		name  string
		reply judgetest.Reply
		want  []string
	}{
		{"server error", judgetest.Reply{Status: 500}, []string{"server error", "HTTP 500"}},
		{"rate limited", judgetest.Reply{Status: 429}, []string{"rate limited", "HTTP 429"}},
		{"bad request", judgetest.Reply{Status: 400, Body: judgetest.ErrorBody("bad thing", "")}, []string{"bad request", "HTTP 400"}},
		{"context length", judgetest.Reply{Status: 400, Body: judgetest.ErrorBody("This model's maximum context length is 8192 tokens", "context_length_exceeded")}, []string{"context", "HTTP 400"}},
		{"unauthorized", judgetest.Reply{Status: 401}, []string{"not authorized", "HTTP 401"}},
		{"forbidden", judgetest.Reply{Status: 403}, []string{"not authorized", "HTTP 403"}},
		{"refusal", judgetest.Reply{Body: judgetest.Refusal("judge-1", "I can't")}, []string{"refused", "HTTP 200"}},
		{"no choices", judgetest.Reply{Body: judgetest.NoChoices("judge-1")}, []string{"no choices", "HTTP 200"}},
		{"not a verdict", judgetest.Reply{Body: judgetest.Completion("judge-1", "looks fine to me")}, []string{"not a verdict", "HTTP 200"}},
		{"score out of range", judgetest.Reply{Body: judgetest.Completion("judge-1", `{"score": 1.5, "issues": [], "suggestion": ""}`)}, []string{"outside [0, 1]"}},
		{"not json", judgetest.Reply{Body: "<html>proxy error</html>"}, []string{"not a chat completion"}},
		{"timeout", judgetest.Reply{Hang: true}, []string{"no reply within"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := judgetest.New(t)
			srv.Script(func(judgetest.Request) judgetest.Reply { return tt.reply })
			dir := t.TempDir()
			in := filepath.Join(dir, "in.jsonl")
			gaveltest.WriteJudgedRows(t, in, 1, 2)
			out := filepath.Join(dir, "out")
			jc := gaveltest.JudgeConfig(srv, "off")
			jc.Timeout = 300 * time.Millisecond
			res := grade(t, Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec), Judge: jc})
			checks, rewards := checkRows(t, out), rewardRows(t, out)
			for _, id := range []string{"r00001", "r00002"} {
				c, r := checks[id+"/polite"], rewards[id]
				if c["status"] != "error" || c["score"] != nil {
					t.Errorf("%s check = %v, want error without a score", id, c)
				}
				for _, w := range tt.want {
					if !strings.Contains(fmt.Sprint(c["detail"]), w) {
						t.Errorf("%s detail %q lacks %q", id, c["detail"], w)
					}
				}
				if r["status"] != "error" || r["error_kind"] != "verifier" || r["reward"] != nil || r["passed"] != nil {
					t.Errorf("%s rollout = %v, want error, kind verifier, null reward", id, r)
				}
			}
			if res.Summary.Error != 2 || res.Summary.Judge.Failures != 2 {
				t.Errorf("summary error %d, failures %d, want 2 and 2", res.Summary.Error, res.Summary.Judge.Failures)
			}
		})
	}
}

// TestJudgeProbe: a probe that fails before any part is complete is a
// ConfigError that leaves nothing written; after a complete part it stops
// the run with the part kept, and --resume continues.
func TestJudgeProbe(t *testing.T) {
	t.Run("before any part", func(t *testing.T) {
		srv := judgetest.New(t)
		srv.Models("other-model")
		dir := t.TempDir()
		in := filepath.Join(dir, "in.jsonl")
		gaveltest.WriteJudgedRows(t, in, 0, 3)
		out := filepath.Join(dir, "out")
		_, err := Run(context.Background(), Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL,
			Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec), Judge: gaveltest.JudgeConfig(srv, "off")})
		var ce *inputs.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "unknown model") {
			t.Fatalf("Run = %v, want a ConfigError naming the unknown model", err)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			entries, _ := os.ReadDir(out)
			t.Errorf("output directory left behind: %v", entries)
		}
		if srv.Requests() > 1 { // the probe's one-token completion
			t.Errorf("%d chat requests after a failed probe, want the probe's only", srv.Requests())
		}
	})
	t.Run("after a part", func(t *testing.T) {
		srv := judgetest.New(t)
		srv.Models("other-model")
		dir := t.TempDir()
		// The first unit's rows are bound to a verifier without rubric.
		first := filepath.Join(dir, "a.jsonl")
		os.WriteFile(first, []byte(`{"rollout_id":"x","task_id":"TASK-X","output":"hi"}`+"\n"), 0o644)
		second := filepath.Join(dir, "b.jsonl")
		gaveltest.WriteJudgedRows(t, second, 0, 3)
		vs := append(gaveltest.ParseSpec(t, gaveltest.JudgedSpec), gaveltest.ParseSpec(t, `verifiers:
  - {id: VER-X, task: TASK-X, name: x, checks: [{id: ok, type: expr, expr: "true"}]}
`)...)
		out := filepath.Join(dir, "out")
		cfg := Config{Inputs: []string{first, second}, Out: out, Format: columnar.FormatJSONL, Verifiers: vs, Judge: gaveltest.JudgeConfig(srv, "off"), Workers: 1}
		_, err := Run(context.Background(), cfg)
		var ce *inputs.ConfigError
		var pe *ProbeError
		if err == nil || errors.As(err, &ce) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "--resume") {
			t.Fatalf("Run = %v, want a probe error (not a ConfigError) saying --resume", err)
		}
		if results.PartDone(out, 0, "part-00000.jsonl") == nil {
			t.Fatal("the first part is not complete")
		}
		srv.Models("judge-1")
		cfg.Resume = true
		res := grade(t, cfg)
		if !res.Complete || res.Summary.Rollouts != 4 {
			t.Errorf("resumed run: complete %v, %d rollouts, want complete with 4", res.Complete, res.Summary.Rollouts)
		}
	})
}

// TestJudgeSlowServer: with a slow judge the requests in flight never pass
// the concurrency, reach it, and the workers grade every row while the
// first request still waits.
func TestJudgeSlowServer(t *testing.T) {
	srv := judgetest.New(t)
	const rows = 600
	var graded atomic.Int64
	vs := gaveltest.ParseSpec(t, gaveltest.JudgedSpec)
	inner := vs[0].Grade
	vs[0].Grade = func(r *verifiers.Rollout, c *verifiers.Checks) error {
		graded.Add(1)
		return inner(r, c)
	}
	var first atomic.Bool
	allGraded := make(chan bool, 1)
	srv.Script(func(req judgetest.Request) judgetest.Reply {
		if first.CompareAndSwap(false, true) {
			deadline := time.Now().Add(10 * time.Second)
			for graded.Load() < rows && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			allGraded <- graded.Load() == rows
		}
		return judgetest.Reply{Delay: 20 * time.Millisecond}
	})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, rows)
	jc := gaveltest.JudgeConfig(srv, "off")
	jc.Concurrency = 8
	res := grade(t, Config{Inputs: []string{in}, Out: filepath.Join(dir, "out"), Format: columnar.FormatJSONL, Verifiers: vs, Judge: jc, Workers: 2, BatchSize: 16})
	if !<-allGraded {
		t.Errorf("the workers did not grade every row while the first judge request waited")
	}
	if got := srv.MaxInFlight(); got != 8 {
		t.Errorf("max requests in flight = %d, want 8 (the concurrency)", got)
	}
	if res.Summary.Judge.Requests != rows {
		t.Errorf("%d requests, want %d", res.Summary.Judge.Requests, rows)
	}
}

// judgedIDs returns the sorted rollout ids whose rubric check was judged.
func judgedIDs(t *testing.T, out string) (judged []string, pending int) {
	for k, c := range checkRows(t, out) {
		if !strings.HasSuffix(k, "/polite") {
			continue
		}
		switch c["status"] {
		case "pending":
			pending++
		default:
			judged = append(judged, c["rollout_id"].(string))
		}
	}
	sort.Strings(judged)
	return judged, pending
}

// TestJudgeBudget: the budget is spent in input order, so the same rows
// are judged with 1 or 4 workers; the rest stay pending and are counted;
// a second run with the cache answers those and asks the next ones.
func TestJudgeBudget(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, 200)
	var want []string
	for i := range 30 {
		want = append(want, fmt.Sprintf("r%05d", i))
	}
	for _, workers := range []int{1, 4} {
		srv := judgetest.New(t)
		srv.Script(func(judgetest.Request) judgetest.Reply { return judgetest.Reply{Delay: time.Millisecond} })
		cache := filepath.Join(dir, fmt.Sprint("cache", workers))
		out := filepath.Join(dir, fmt.Sprint("out", workers))
		cfg := Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec),
			Judge: gaveltest.JudgeConfig(srv, cache), JudgeMaxRequests: 30, Workers: workers, BatchSize: 8}
		res := grade(t, cfg)
		got, pending := judgedIDs(t, out)
		if strings.Join(got, ",") != strings.Join(want, ",") || pending != 170 {
			t.Errorf("workers=%d: judged %v, %d pending; want the first 30 and 170 pending", workers, got, pending)
		}
		if res.Summary.Judge.PendingBudget != 170 || res.Summary.Judge.Requests != 30 {
			t.Errorf("workers=%d: summary judge %+v, want 170 pending by the budget, 30 requests", workers, res.Summary.Judge)
		}
		if res.Summary.Pending != 170 {
			t.Errorf("workers=%d: %d pending rollouts, want 170", workers, res.Summary.Pending)
		}
		res = grade(t, cfg)
		got, pending = judgedIDs(t, out)
		if len(got) != 60 || got[59] != "r00059" || pending != 140 || res.Summary.Judge.CacheHits != 30 || res.Summary.Judge.Requests != 30 {
			t.Errorf("workers=%d: second run judged %d (last %v), %d pending, judge %+v; want 60 judged, 140 pending, 30 hits and 30 requests",
				workers, len(got), got[len(got)-1], pending, res.Summary.Judge)
		}
	}
}

// TestJudgeCache: the same run again makes no request, no probe, and
// writes byte-identical parts, in every format.
func TestJudgeCache(t *testing.T) {
	for _, format := range []string{columnar.FormatParquet, columnar.FormatArrow, columnar.FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			srv := judgetest.New(t)
			dir := t.TempDir()
			in := filepath.Join(dir, "in.jsonl")
			gaveltest.WriteJudgedRows(t, in, 0, 50)
			cfg := Config{Inputs: []string{in}, Format: format, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec),
				Judge: gaveltest.JudgeConfig(srv, filepath.Join(dir, "cache")), Workers: 3, BatchSize: 7}
			cfg.Out = filepath.Join(dir, "a")
			grade(t, cfg)
			n, probes := srv.Requests(), srv.ModelRequests()
			cfg.Out = filepath.Join(dir, "b")
			res := grade(t, cfg)
			if srv.Requests() != n || srv.ModelRequests() != probes {
				t.Errorf("second run sent %d requests and %d probes, want none", srv.Requests()-n, srv.ModelRequests()-probes)
			}
			if res.Summary.Judge.CacheHits != 50 || res.Summary.Judge.Requests != 0 {
				t.Errorf("second run judge %+v, want 50 hits, no request", res.Summary.Judge)
			}
			for _, sub := range []string{"rewards", "checks"} {
				name := columnar.PartName(0, format)
				a, _ := os.ReadFile(filepath.Join(dir, "a", sub, name))
				b, _ := os.ReadFile(filepath.Join(dir, "b", sub, name))
				if len(a) == 0 || !bytes.Equal(a, b) {
					t.Errorf("%s/%s differs between the runs", sub, name)
				}
			}
		})
	}
}

// TestJudgeResumeAfterCrash: a run stopped after its first parts (verdicts
// synced before each part) is resumed asking only the rows of the parts
// not written.
func TestJudgeResumeAfterCrash(t *testing.T) {
	srv := judgetest.New(t)
	dir := t.TempDir()
	var ins []string
	for u := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", u))
		gaveltest.WriteJudgedRows(t, p, u*10, 10)
		ins = append(ins, p)
	}
	// Rows 15 to 29 hang until the run is stopped.
	var hung atomic.Int64
	srv.Script(func(req judgetest.Request) judgetest.Reply {
		if lastUnit.MatchString(req.User) {
			hung.Add(1)
			return judgetest.Reply{Hang: true}
		}
		return judgetest.Reply{}
	})
	ctx, cancel := context.WithCancel(context.Background())
	out := filepath.Join(dir, "out")
	cache := filepath.Join(dir, "cache")
	cfg := Config{Inputs: ins, Out: out, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec),
		Judge: gaveltest.JudgeConfig(srv, cache), Workers: 2, BatchSize: 4}
	// Stopped in the middle of the second unit: rows 10 to 14 were
	// judged (and cached), rows 15 to 29 are in flight.
	cfg.Progress = &cancelAfter{rows: 14, cancel: cancel}
	_, err := Run(ctx, cfg)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Run = %v, want interrupted", err)
	}
	// A request the stopped run sent may reach the server after Run
	// returned: count the first run's requests once they stop coming.
	before := settled(srv.Requests)
	srv.Script(nil)
	cfg.Progress = nil
	cfg.Resume = true
	res := grade(t, cfg)
	// The rows written before the stop (0 to 13; 10 to 13 in the unit
	// graded again) are answered from the cache: the resumed run asks for
	// rows 14 to 29 at most, those in flight (which hung) and those not
	// sent; by timing, row 14 and rows answered as the run stopped may be
	// among them. It asks for no fewer than the rows never answered.
	answered := before - int(hung.Load())
	if got := srv.Requests() - before; got > 16 || got < 30-answered {
		t.Errorf("resumed run sent %d requests, want %d to 16 (%d rows answered before the stop)", got, 30-answered, answered)
	}
	if !res.Complete || res.Summary.Rollouts != 30 || res.Summary.Pending != 0 {
		t.Errorf("resumed run: complete %v, %d rollouts, %d pending", res.Complete, res.Summary.Rollouts, res.Summary.Pending)
	}
}

// lastUnit matches the outputs of rows 15 to 29.
var lastUnit = regexp.MustCompile(`answer (1[5-9]|2[0-9]):`)

// cancelAfter cancels the run once rows rows are written.
type cancelAfter struct {
	rows, n int
	cancel  context.CancelFunc
}

func (c *cancelAfter) SetTotal(int64) {}
func (c *cancelAfter) Finish()        {}
func (c *cancelAfter) Add(n int) {
	c.n += n
	if c.n >= c.rows {
		c.cancel()
	}
}

// TestJudgeKeyNeverShown: the API key appears in no output file and no
// error, even when the server echoes it.
func TestJudgeKeyNeverShown(t *testing.T) {
	const key = "sk-test-very-secret-4242"
	t.Setenv("GAVEL_TEST_JUDGE_KEY", key)
	srv := judgetest.New(t)
	srv.RequireKey(key)
	srv.Script(func(req judgetest.Request) judgetest.Reply {
		if strings.Contains(req.User, "answer 2") {
			return judgetest.Reply{Status: http.StatusBadRequest, Body: judgetest.ErrorBody("bad key "+key, "")}
		}
		return judgetest.Reply{}
	})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, 4)
	out := filepath.Join(dir, "out")
	jc := gaveltest.JudgeConfig(srv, filepath.Join(dir, "cache"))
	jc.APIKeyEnv = "GAVEL_TEST_JUDGE_KEY"
	res := grade(t, Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec), Judge: jc})
	if res.Summary.Judge.Requests != 4 || res.Summary.Error != 1 {
		t.Fatalf("judge %+v, %d errors: want 4 requests and 1 error", res.Summary.Judge, res.Summary.Error)
	}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := os.ReadFile(path)
		if bytes.Contains(data, []byte(key)) {
			t.Errorf("%s holds the API key", path)
		}
		return nil
	})
	// A wrong key stops the run at the probe, without the key.
	t.Setenv("GAVEL_TEST_JUDGE_KEY", key+"-wrong")
	_, err := Run(context.Background(), Config{Inputs: []string{in}, Out: filepath.Join(dir, "out2"), Format: columnar.FormatJSONL,
		Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec), Judge: judgeCfg2(jc, "off")})
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("Run with a wrong key = %v, want a 401 without the key", err)
	}
}

func judgeCfg2(jc *judge.Config, cache string) *judge.Config {
	c := *jc
	c.CacheDir = cache
	return &c
}

// TestNoJudgeWithoutRubrics: with a judge configured but no judged
// verifier bound, nothing of the judge starts: no probe, no request, no
// cache directory.
func TestNoJudgeWithoutRubrics(t *testing.T) {
	srv := judgetest.New(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"rollout_id":"x","task_id":"TASK-X","output":"hi"}`+"\n"), 0o644)
	cache := filepath.Join(dir, "cache")
	vs := append(gaveltest.ParseSpec(t, `verifiers:
  - {id: VER-X, task: TASK-X, name: x, checks: [{id: ok, type: expr, expr: "true"}]}
`), crm.Verifiers()...)
	r, err := prepare(Config{Inputs: []string{in}, Out: filepath.Join(dir, "out"), Verifiers: vs, Judge: gaveltest.JudgeConfig(srv, cache)})
	if err != nil {
		t.Fatal(err)
	}
	if r.plan.judging != nil {
		t.Fatal("a judge was started without a judged verifier")
	}
	res := grade(t, Config{Inputs: []string{in}, Out: filepath.Join(dir, "out"), Verifiers: vs, Judge: gaveltest.JudgeConfig(srv, cache)})
	if srv.Requests()+srv.ModelRequests() != 0 {
		t.Errorf("%d requests and %d probes, want none", srv.Requests(), srv.ModelRequests())
	}
	if _, err := os.Stat(cache); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cache directory created: %v", err)
	}
	if res.Summary.Judge != nil {
		t.Errorf("summary judge = %+v, want none", res.Summary.Judge)
	}
	m, _ := results.ReadManifest(filepath.Join(dir, "out", results.ManifestFile))
	if m.Config.Judge != nil {
		t.Errorf("manifest judge = %+v, want none", m.Config.Judge)
	}
}

// TestJudgeGoVerifier: a Go verifier's c.Rubric is judged like a spec's,
// with its own threshold, and its instruction read from the row's prompt
// field.
func TestJudgeGoVerifier(t *testing.T) {
	srv := judgetest.New(t)
	srv.Script(func(req judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Body: judgetest.Completion(req.Model, judgetest.Verdict(0.6, []string{}, ""))}
	})
	v := &verifiers.Verifier{ID: "VER-G", Name: "go", Tasks: []string{"TASK-G"}, Judged: true, Definition: "go",
		Grade: func(r *verifiers.Rollout, c *verifiers.Checks) error {
			c.Rubric("strict", "Be exact.")
			c.Rubric("lenient", "Be kind.", verifiers.WithJudge("", 0.5), verifiers.WithContext("k", `"v"`))
			return nil
		}}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"rollout_id":"g","task_id":"TASK-G","output":"hello","prompt":"Greet the user."}`+"\n"), 0o644)
	out := filepath.Join(dir, "out")
	grade(t, Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: []*verifiers.Verifier{v}, Judge: gaveltest.JudgeConfig(srv, "off")})
	checks := checkRows(t, out)
	if checks["g/strict"]["status"] != "fail" || checks["g/lenient"]["status"] != "pass" {
		t.Errorf("strict %v, lenient %v: want fail (0.6 < 0.8) and pass (0.6 >= 0.5)", checks["g/strict"], checks["g/lenient"])
	}
	for _, r := range srv.Received() {
		if !strings.Contains(r.User, "Greet the user.") {
			t.Errorf("prompt lacks the row's prompt field:\n%s", r.User)
		}
	}
}

// settled returns count() once it has not changed for 200 ms (at most 10 s).
func settled(count func() int) int {
	n := count()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		m := count()
		if m == n {
			return n
		}
		n = m
	}
	return n
}
