package pairwise

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/join"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/judge/judgetest"
	"github.com/gavelhq/gavel/pipeline"
)

// biasedJudge scripts srv as a judge that prefers the one output of two
// that says GOOD, and otherwise the output shown first (a position bias);
// a comparison showing BROKEN gets a reply naming neither output. Each
// reply waits delay.
func biasedJudgeDelayed(srv *judgetest.Server, delay time.Duration) {
	srv.Script(func(r judgetest.Request) judgetest.Reply {
		a, b, ok := judgetest.FencedPair(r.User)
		better := "A"
		switch {
		case !ok || strings.Contains(a, "BROKEN") || strings.Contains(b, "BROKEN"):
			better = "both"
		case !strings.Contains(a, "GOOD") && strings.Contains(b, "GOOD"):
			better = "B"
		}
		return judgetest.Reply{Body: judgetest.Completion(r.Model, judgetest.Preference(better, "scripted")), Delay: delay}
	})
}

func biasedJudge(srv *judgetest.Server) { biasedJudgeDelayed(srv, 0) }

func writeRows(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func pairwiseCfg(srv *judgetest.Server, cache, out string, inputs ...string) Config {
	return Config{Inputs: inputs, Rubric: "Says GOOD.", Out: out, Format: "jsonl",
		Judge: *gaveltest.JudgeConfig(srv, cache)}
}

func TestPairwiseOutcomes(t *testing.T) {
	srv := judgetest.New(t)
	biasedJudge(srv)
	dir := t.TempDir()
	in := filepath.Join(dir, "r.jsonl")
	writeRows(t, in,
		// m1 names its samples, out of order; m2 is told apart by order.
		`{"rollout_id":"a1","task_id":"T1","model":"m1","sample":1,"output":"plain a1"}`,
		`{"rollout_id":"a0","task_id":"T1","model":"m1","sample":0,"output":"GOOD a0"}`,
		`{"rollout_id":"b0","task_id":"T1","model":"m2","output":"plain b0"}`,
		`{"rollout_id":"b1","task_id":"T1","model":"m2","output":"GOOD b1"}`,
		`{"rollout_id":"a2","task_id":"T2","model":"m1","output":"GOOD a2"}`,
		`{"rollout_id":"b2","task_id":"T2","model":"m2","output":"GOOD b2"}`,
		`{"rollout_id":"a3","task_id":"T3","model":"m1","output":"plain a3"}`,
		`{"rollout_id":"b3","task_id":"T3","model":"m2","output":"plain b3"}`,
		`{"rollout_id":"a4","task_id":"T4","model":"m1","output":"plain a4"}`,
		`{"rollout_id":"b4","task_id":"T4","model":"m2","output":"BROKEN b4"}`,
		`{"rollout_id":"a5","task_id":"T5","model":"m1","output":"alone"}`,
		`{"rollout_id":"c","task_id":"T5","output":"no model"}`,
		`{"rollout_id":"d","task_id":"T5","model":"m2","sample":"x","output":"bad sample"}`,
	)
	out := filepath.Join(dir, "out")
	res, err := Compare(context.Background(), pairwiseCfg(srv, filepath.Join(dir, "cache"), out, in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Pair{
		{TaskID: "T1", Sample: 0, GroupA: "m1", GroupB: "m2", RolloutA: "a0", RolloutB: "b0", VerdictAB: "a", VerdictBA: "a", Outcome: OutcomeWin},
		{TaskID: "T1", Sample: 1, GroupA: "m1", GroupB: "m2", RolloutA: "a1", RolloutB: "b1", VerdictAB: "b", VerdictBA: "b", Outcome: OutcomeLoss},
		{TaskID: "T2", Sample: 0, GroupA: "m1", GroupB: "m2", RolloutA: "a2", RolloutB: "b2", VerdictAB: "a", VerdictBA: "b", Outcome: OutcomeInconsistent},
		{TaskID: "T3", Sample: 0, GroupA: "m1", GroupB: "m2", RolloutA: "a3", RolloutB: "b3", VerdictAB: "a", VerdictBA: "b", Outcome: OutcomeInconsistent},
		{TaskID: "T4", Sample: 0, GroupA: "m1", GroupB: "m2", RolloutA: "a4", RolloutB: "b4", Outcome: OutcomeError},
	}
	if len(res.Pairs) != len(want) {
		t.Fatalf("pairs = %+v, want %d", res.Pairs, len(want))
	}
	for i, w := range want {
		got := res.Pairs[i]
		if w.Outcome == OutcomeError {
			if !strings.HasPrefix(got.Error, "a first: judge: ") || !strings.Contains(got.Error, "; b first: judge: ") ||
				!strings.Contains(got.Error, "names neither output") {
				t.Errorf("pair %d error = %q, want both orders' failures naming neither output", i, got.Error)
			}
			got.Error = ""
		}
		if got != w {
			t.Errorf("pair %d = %+v, want %+v", i, got, w)
		}
	}
	if res.Rollouts != 13 || res.InputErrors != 2 || res.Unpaired != 1 {
		t.Errorf("rollouts %d, input errors %d, unpaired %d, want 13, 2, 1", res.Rollouts, res.InputErrors, res.Unpaired)
	}
	if len(res.Problems) != 2 || !strings.Contains(res.Problems[0], "#11: model: missing or null") ||
		!strings.Contains(res.Problems[1], `#12: sample: "x" is not a non-negative integer`) {
		t.Errorf("problems = %q", res.Problems)
	}
	// Each pair asked once in each order; failures are not answers.
	if res.Judge.Requests != 10 || res.Judge.Failures != 2 || res.Judge.Probes != 1 || srv.Requests() != 10 {
		t.Errorf("judge = %+v, server %d requests, want 10 requests, 2 failures, 1 probe", res.Judge, srv.Requests())
	}
	firsts := map[string]bool{}
	for _, r := range srv.Received() {
		a, b, ok := judgetest.FencedPair(r.User)
		if !ok || r.Temperature == nil || *r.Temperature != 0 || r.Seed == nil || *r.Seed != judge.Seed {
			t.Fatalf("request %q: not a pairwise prompt at temperature 0, seed 1", r.User)
		}
		firsts[a+"|"+b] = true
	}
	if !firsts["GOOD a0|plain b0"] || !firsts["plain b0|GOOD a0"] {
		t.Errorf("the pair T1/0 was not asked in both orders: %v", firsts)
	}
	rows := gaveltest.DecodeJSONL(t, filepath.Join(out, "pairs", "part-00000.jsonl"))
	if len(rows) != 5 || rows[2]["outcome"] != "inconsistent" || rows[1]["sample"] != 1.0 || rows[0]["error"] != nil ||
		rows[4]["verdict_ab"] != nil || rows[4]["error"] == nil {
		t.Errorf("pairs table = %v", rows)
	}
}

// TestPairwiseDeterministic runs the same comparison with one and with
// many requests in flight, and again from the cache: the pairs table is
// byte-identical, and the cached run asks nothing.
func TestPairwiseDeterministic(t *testing.T) {
	srv := judgetest.New(t)
	// Replies take a while, so that 16 requests may be in flight at once.
	biasedJudgeDelayed(srv, 5*time.Millisecond)
	dir := t.TempDir()
	in := filepath.Join(dir, "r.jsonl")
	var lines []string
	for task := range 12 {
		for s := range 2 {
			for _, m := range []string{"m1", "m2", "m3"} {
				word := "plain"
				if (task+s+len(m)*int(m[1]))%3 == 0 {
					word = "GOOD"
				}
				lines = append(lines, fmt.Sprintf(`{"rollout_id":"%s-%d-%d","task_id":"T%02d","model":"%s","output":"%s %s %d %d"}`,
					m, task, s, task, m, word, m, task, s))
			}
		}
	}
	writeRows(t, in, lines...)
	var tables [][]byte
	for i, c := range []struct {
		concurrency int
		cache       string
		requests    int64
	}{{1, "c1", 144}, {16, "c2", 144}, {16, "c1", 0}} {
		cfg := pairwiseCfg(srv, filepath.Join(dir, c.cache), filepath.Join(dir, fmt.Sprint("out", i)), in)
		cfg.Format = "parquet"
		cfg.Judge.Concurrency = c.concurrency
		res, err := Compare(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Judge.Requests != c.requests || len(res.Pairs) != 72 {
			t.Errorf("run %d: %d requests, %d pairs, want %d, 72", i, res.Judge.Requests, len(res.Pairs), c.requests)
		}
		b, err := os.ReadFile(res.PairsFile)
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, b)
		if i == 0 && srv.MaxInFlight() != 1 {
			t.Errorf("%d requests in flight with concurrency 1", srv.MaxInFlight())
		}
	}
	if !bytes.Equal(tables[0], tables[1]) || !bytes.Equal(tables[0], tables[2]) {
		t.Error("the pairs tables differ between concurrency 1, 16 and the cache")
	}
	if srv.MaxInFlight() < 2 {
		t.Errorf("at most %d requests in flight with concurrency 16", srv.MaxInFlight())
	}

	// --against compares each group with one only.
	cfg := pairwiseCfg(srv, filepath.Join(dir, "c1"), filepath.Join(dir, "against"), in)
	cfg.Against = "m2"
	res, err := Compare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pairs) != 48 || res.Pairs[0].GroupA != "m1" || res.Pairs[0].GroupB != "m2" || res.Pairs[1].GroupA != "m3" || res.Pairs[1].GroupB != "m2" {
		t.Errorf("against m2: %d pairs, first %+v %+v", len(res.Pairs), res.Pairs[0], res.Pairs[1])
	}
	cfg.Against = "nobody"
	var ce *inputs.ConfigError
	if _, err := Compare(context.Background(), cfg); !errors.As(err, &ce) || ce.Field != "Against" {
		t.Errorf("against an unknown group: err = %v, want a ConfigError on Against", err)
	}
}

// TestPairwiseBudgetAndProbe: the budget is spent pair by pair in order,
// both orders or none; a later run continues with the cache; a failed
// probe writes nothing.
func TestPairwiseBudgetAndProbe(t *testing.T) {
	srv := judgetest.New(t)
	biasedJudge(srv)
	dir := t.TempDir()
	in := filepath.Join(dir, "r.jsonl")
	var lines []string
	for task := range 4 {
		for _, m := range []string{"m1", "m2"} {
			lines = append(lines, fmt.Sprintf(`{"rollout_id":"%s-%d","task_id":"T%d","model":"%s","output":"out %s %d"}`, m, task, task, m, m, task))
		}
	}
	writeRows(t, in, lines...)
	cache := filepath.Join(dir, "cache")
	cfg := pairwiseCfg(srv, cache, filepath.Join(dir, "out1"), in)
	cfg.MaxRequests = 5
	res, err := Compare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, p := range res.Pairs {
		outcomes = append(outcomes, p.Outcome)
	}
	if got := strings.Join(outcomes, ","); got != "inconsistent,inconsistent,pending,pending" || res.Judge.Requests != 4 || res.Judge.PendingBudget != 2 {
		t.Errorf("budget 5: outcomes %s, %d requests, %d pending, want inconsistent,inconsistent,pending,pending, 4, 2", got, res.Judge.Requests, res.Judge.PendingBudget)
	}
	cfg.Out, cfg.MaxRequests = filepath.Join(dir, "out2"), 2
	res, err = Compare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	outcomes = outcomes[:0]
	for _, p := range res.Pairs {
		outcomes = append(outcomes, p.Outcome)
	}
	if got := strings.Join(outcomes, ","); got != "inconsistent,inconsistent,inconsistent,pending" || res.Judge.Requests != 2 || res.Judge.CacheHits < 4 {
		t.Errorf("budget 2 with the cache: outcomes %s, judge %+v", got, res.Judge)
	}

	srv.Models("another-model")
	cfg = pairwiseCfg(srv, filepath.Join(dir, "cache2"), filepath.Join(dir, "out3"), in)
	_, err = Compare(context.Background(), cfg)
	var pe *pipeline.ProbeError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a pipeline.ProbeError", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out3")); !os.IsNotExist(err) {
		t.Errorf("a failed probe left %s (stat: %v)", filepath.Join(dir, "out3"), err)
	}
}

// TestPairwiseCancel: a cancelled comparison returns the context's error
// and writes no table.
func TestPairwiseCancel(t *testing.T) {
	srv := judgetest.New(t)
	srv.Script(func(r judgetest.Request) judgetest.Reply { return judgetest.Reply{Hang: true} })
	dir := t.TempDir()
	in := filepath.Join(dir, "r.jsonl")
	writeRows(t, in, `{"task_id":"T","model":"x","output":"1"}`, `{"task_id":"T","model":"y","output":"2"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := Compare(ctx, pairwiseCfg(srv, filepath.Join(dir, "cache"), filepath.Join(dir, "out"), in))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("a cancelled comparison left its output (stat: %v)", err)
	}
}

// TestPairwiseFormats writes the pairs table in each format: the rows read
// back are the same.
func TestPairwiseFormats(t *testing.T) {
	srv := judgetest.New(t)
	biasedJudge(srv)
	dir := t.TempDir()
	in := filepath.Join(dir, "r.jsonl")
	writeRows(t, in,
		`{"rollout_id":"a","task_id":"T1","model":"m1","output":"GOOD"}`,
		`{"rollout_id":"b","task_id":"T1","model":"m2","output":"plain"}`,
		`{"rollout_id":"c","task_id":"T2","model":"m1","output":"BROKEN"}`,
		`{"rollout_id":"d","task_id":"T2","model":"m2","sample":0,"output":"plain"}`)
	var cols []string
	for _, c := range Columns {
		cols = append(cols, c.Name)
	}
	var tables []string
	for _, f := range []string{"parquet", "arrow", "jsonl"} {
		cfg := pairwiseCfg(srv, filepath.Join(dir, "cache"), filepath.Join(dir, f), in)
		cfg.Format = f
		res, err := Compare(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(res.PairsFile) != "part-00000."+f {
			t.Errorf("pairs file %s, want part-00000.%s", res.PairsFile, f)
		}
		var b strings.Builder
		err = join.Scan(filepath.Join(dir, f), "pairs", cols, func(vals []join.Value) error {
			for _, v := range vals {
				if v.Null() {
					b.WriteString("null|")
				} else {
					fmt.Fprintf(&b, "%s|", v.Data)
				}
			}
			b.WriteString("\n")
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		tables = append(tables, b.String())
	}
	want := "T1|0|m1|m2|a|b|a|a|win|null|\n"
	if !strings.HasPrefix(tables[0], want) || strings.Count(tables[0], "\n") != 2 || !strings.Contains(tables[0], "|null|null|error|a first: judge: ") {
		t.Errorf("parquet rows:\n%s\nwant first %q and an error row", tables[0], want)
	}
	if tables[1] != tables[0] || tables[2] != tables[0] {
		t.Errorf("rows differ between formats:\nparquet:\n%s\narrow:\n%s\njsonl:\n%s", tables[0], tables[1], tables[2])
	}
}

// TestPairwiseRetriesAndSpec: a 500 is retried as for rubric checks; with
// verifiers, a rollout whose task no verifier binds, or whose verifier
// gives no rubric check, is skipped with the reason.
func TestPairwiseRetriesAndSpec(t *testing.T) {
	srv := judgetest.New(t)
	biasedJudge(srv)
	srv.Enqueue(judgetest.Reply{Status: 500})
	dir := t.TempDir()
	in := filepath.Join(dir, "r.jsonl")
	writeRows(t, in,
		`{"rollout_id":"a","task_id":"TASK-J","model":"m1","output":"GOOD","n":1}`,
		`{"rollout_id":"b","task_id":"TASK-J","model":"m2","output":"plain","n":2}`,
		`{"rollout_id":"c","task_id":"TASK-OTHER","model":"m2","output":"plain"}`)
	cfg := pairwiseCfg(srv, filepath.Join(dir, "cache"), filepath.Join(dir, "out"), in)
	cfg.Judge.MaxRetries, cfg.Judge.Backoff = 2, time.Millisecond
	cfg.Rubric, cfg.Verifiers, cfg.Check = "", gaveltest.ParseSpec(t, gaveltest.JudgedSpec), "polite"
	res, err := Compare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pairs) != 1 || res.Pairs[0].Outcome != OutcomeWin || res.Judge.Retries != 1 || res.Judge.Requests != 3 {
		t.Errorf("pairs %+v, judge %+v, want one win after 1 retry in 3 requests", res.Pairs, res.Judge)
	}
	if len(res.Problems) != 1 || !strings.HasSuffix(res.Problems[0], "#2: no verifier binds task TASK-OTHER") {
		t.Errorf("problems = %q", res.Problems)
	}
	for _, r := range srv.Received() {
		if !strings.Contains(r.User, "The answer is polite.") || !strings.Contains(r.User, judge.Fence("Answer politely.")) {
			t.Errorf("the prompt lacks the spec's rubric and query:\n%s", r.User)
		}
	}
	cfg.Check, cfg.Out = "answered", filepath.Join(dir, "out2")
	if _, err := Compare(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "verifier VER-J gave no rubric check answered") {
		t.Errorf("a check that is no rubric: err = %v", err)
	}
}

// TestPairwiseOutputsOutliveBatches compares rollouts read in many
// batches (whose buffers are reused): each prompt shows the outputs of its
// own pair's rollouts.
func TestPairwiseOutputsOutliveBatches(t *testing.T) {
	srv := judgetest.New(t)
	var bad atomic.Int64
	srv.Script(func(r judgetest.Request) judgetest.Reply {
		a, b, _ := judgetest.FencedPair(r.User)
		var ma, mb string
		var ta, tb int
		fmt.Sscanf(a, "output of %s on task %d", &ma, &ta)
		fmt.Sscanf(b, "output of %s on task %d", &mb, &tb)
		if ta != tb || ma == mb || !strings.HasSuffix(a, "end") || !strings.HasSuffix(b, "end") {
			bad.Add(1)
		}
		return judgetest.Reply{Body: judgetest.Completion(r.Model, judgetest.Preference("A", ""))}
	})
	dir := t.TempDir()
	in := filepath.Join(dir, "r.jsonl")
	var lines []string
	for task := range 400 {
		for _, m := range []string{"m1", "m2"} {
			lines = append(lines, fmt.Sprintf(`{"task_id":"T%03d","model":"%s","output":"output of %s on task %d %s end"}`,
				task, m, m, task, strings.Repeat("x", task%50)))
		}
	}
	writeRows(t, in, lines...)
	cfg := pairwiseCfg(srv, "off", filepath.Join(dir, "out"), in)
	cfg.Judge.Concurrency = 4
	res, err := Compare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pairs) != 400 || res.Judge.Requests != 800 || bad.Load() != 0 {
		t.Errorf("%d pairs, %d requests, %d prompts showing other rollouts' outputs, want 400, 800, 0", len(res.Pairs), res.Judge.Requests, bad.Load())
	}
}

// TestPairwiseMapAndBy reads the outputs from another column (--map) and
// groups by another column (--by), with a tasks table giving the
// instruction.
func TestPairwiseMapAndBy(t *testing.T) {
	srv := judgetest.New(t)
	biasedJudge(srv)
	dir := t.TempDir()
	in := filepath.Join(dir, "r.jsonl")
	writeRows(t, in,
		`{"task_id":"T1","agent":7,"answer":"GOOD one"}`,
		`{"task_id":"T1","agent":"seven","answer":"plain one"}`)
	tasks := filepath.Join(dir, "tasks.jsonl")
	writeRows(t, tasks, `{"task_id":"T1","instruction":"Do the thing."}`)
	cfg := pairwiseCfg(srv, filepath.Join(dir, "cache"), filepath.Join(dir, "out"), in)
	cfg.Fields.Output, cfg.By, cfg.TasksFile = "answer", "agent", tasks
	res, err := Compare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := Pair{TaskID: "T1", GroupA: "7", GroupB: "seven", RolloutA: in + "#0", RolloutB: in + "#1", VerdictAB: "a", VerdictBA: "a", Outcome: OutcomeWin}
	if len(res.Pairs) != 1 || res.Pairs[0] != want {
		t.Errorf("pairs = %+v, want %+v", res.Pairs, want)
	}
	if u := srv.Received()[0].User; !strings.Contains(u, judge.Fence("Do the thing.")) || !strings.Contains(u, judge.Fence("GOOD one")) {
		t.Errorf("prompt lacks the task's instruction or the mapped output:\n%s", u)
	}
}
