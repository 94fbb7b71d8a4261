package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/judge/judgetest"
	"github.com/gavelhq/gavel/results"
)

// panelScores are the scores the panel server gives, by model, by whether
// the output says PASS, by seed (1: sample 0, 2: sample 1).
var panelScores = map[string]map[bool]map[int64]float64{
	"judge-a": {true: {1: 1, 2: 0.6}, false: {1: 0, 2: 0.2}},
	"judge-b": {true: {1: 0.8, 2: 0.2}, false: {1: 0.5, 2: 0.9}},
}

// panelServer answers per model and seed from panelScores; fail, when
// set, makes judge-b answer 500 for the rows it reports.
func panelServer(t *testing.T, fail func(output string) bool) *judgetest.Server {
	srv := judgetest.New(t)
	srv.Script(func(r judgetest.Request) judgetest.Reply {
		out, _ := judgetest.FencedOutput(r.User)
		if fail != nil && r.Model == "judge-b" && fail(out) {
			return judgetest.Reply{Status: 500}
		}
		if r.Seed == nil {
			return judgetest.Reply{Status: 400}
		}
		score, ok := panelScores[r.Model][strings.Contains(out, "PASS")][*r.Seed]
		if !ok {
			return judgetest.Reply{Status: 404}
		}
		issues := []string{}
		if score < 1 {
			issues = []string{r.Model + " issue", "second"}
		}
		return judgetest.Reply{Body: judgetest.Completion(r.Model, judgetest.Verdict(score, issues, "from "+r.Model))}
	})
	return srv
}

// meanOf, medianOf, minOf and majorityOf are an independent statement of
// the aggregates, for the tests.
func meanOf(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func medianOf(x []float64) float64 {
	s := slices.Sorted(slices.Values(x))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func majorityOf(x []float64, threshold float64) float64 {
	n := 0
	for _, v := range x {
		if v >= threshold {
			n++
		}
	}
	return float64(n) / float64(len(x))
}

func judgementRows(t *testing.T, out string) []map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(out, "judgements", "part-*.jsonl"))
	var rows []map[string]any
	for _, f := range files {
		rows = append(rows, gaveltest.DecodeJSONL(t, f)...)
	}
	return rows
}

// TestJudgePanelAggregates judges each rubric check with two models, two
// samples each, under every aggregate, and checks the check rows against
// hand-computed values and an independent implementation, the judgements
// table row by row, and the requests sent.
func TestJudgePanelAggregates(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, 4) // r0 and r3 say FAIL
	// By hand, threshold 0.6: a PASS row's judgements score 1, 0.6, 0.8,
	// 0.2 (a's samples, then b's); a FAIL row's 0, 0.2, 0.5, 0.9.
	hand := map[string]map[bool]struct {
		score float64
		pass  bool
	}{
		"mean":     {true: {0.65, true}, false: {0.4, false}},
		"median":   {true: {0.7, true}, false: {0.35, false}},
		"min":      {true: {0.2, false}, false: {0, false}},
		"majority": {true: {0.75, true}, false: {0.25, false}},
	}
	for _, agg := range Aggregates {
		t.Run(agg, func(t *testing.T) {
			srv := panelServer(t, nil)
			out := filepath.Join(dir, "out-"+agg)
			jc := gaveltest.JudgeConfig(srv, filepath.Join(dir, "cache-"+agg))
			jc.Threshold = 0.6
			res := grade(t, Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec),
				Judge: jc, JudgePanel: JudgePanel{Models: []string{"judge-a", "judge-b"}, Samples: 2, Temperature: 0.5, Aggregate: agg},
				Workers: 2, BatchSize: 3})
			checks := checkRows(t, out)
			for i := range 4 {
				passRow := i%3 != 0
				id := fmt.Sprintf("r%05d", i)
				c := checks[id+"/polite"]
				scores := []float64{panelScores["judge-a"][passRow][1], panelScores["judge-a"][passRow][2],
					panelScores["judge-b"][passRow][1], panelScores["judge-b"][passRow][2]}
				var indep float64
				switch agg {
				case "mean":
					indep = meanOf(scores)
				case "median":
					indep = medianOf(scores)
				case "min":
					indep = slices.Min(scores)
				case "majority":
					indep = majorityOf(scores, 0.6)
				}
				h := hand[agg][passRow]
				got, _ := c["score"].(float64)
				if math.Abs(got-h.score) > 1e-12 || got != indep {
					t.Errorf("%s: score %v, want %v (by hand) and %v (independent)", id, c["score"], h.score, indep)
				}
				wantStatus := "fail"
				if h.pass {
					wantStatus = "pass"
				}
				if c["status"] != wantStatus {
					t.Errorf("%s: status %v, want %s (detail %v)", id, c["status"], wantStatus, c["detail"])
				}
				// Issues and suggestion: the first judge's sample 0.
				if c["suggestion"] != "from judge-a" {
					t.Errorf("%s: suggestion %v, want the first judge's", id, c["suggestion"])
				}
				if !strings.Contains(c["detail"].(string), "judges judge-a, judge-b x 2 samples: "+agg+" score") {
					t.Errorf("%s: detail %q", id, c["detail"])
				}
			}
			// The judgements table: 4 rows per check, in order.
			rows := judgementRows(t, out)
			if len(rows) != 16 {
				t.Fatalf("%d judgement rows, want 16", len(rows))
			}
			k := 0
			for i := range 4 {
				for _, m := range []string{"judge-a", "judge-b"} {
					for s := range 2 {
						r := rows[k]
						k++
						passRow := i%3 != 0
						score := panelScores[m][passRow][int64(1+s)]
						temp := 0.0
						if s == 1 {
							temp = 0.5
						}
						status := "fail"
						if score >= 0.6 {
							status = "pass"
						}
						got := fmt.Sprintf("%v %v %v %v %v %v %v %v %v", r["rollout_id"], r["check_index"], r["check_id"], r["judge_model"],
							r["sample"], r["seed"], r["temperature"], r["score"], r["status"])
						want := fmt.Sprintf("r%05d 1 polite %s %d %d %v %v %s", i, m, s, 1+s, temp, score, status)
						if got != want {
							t.Errorf("judgement row %d = %s, want %s", k-1, got, want)
						}
						if r["error"] != nil {
							t.Errorf("judgement row %d: error %v, want null", k-1, r["error"])
						}
						if score < 1 && r["issues"] != m+" issue\nsecond" || score == 1 && r["issues"] != nil {
							t.Errorf("judgement row %d: issues %q", k-1, r["issues"])
						}
					}
				}
			}
			// Requests: 16, sample 1 at temperature 0.5 and seed 2.
			if res.Summary.Judge.Requests != 16 {
				t.Errorf("%d requests, want 16", res.Summary.Judge.Requests)
			}
			for _, r := range srv.Received() {
				if *r.Seed == 1 && *r.Temperature != 0 || *r.Seed == 2 && *r.Temperature != 0.5 {
					t.Errorf("seed %d sent with temperature %v", *r.Seed, *r.Temperature)
				}
			}
		})
	}
}

// TestJudgePanelPartial: judge-b fails on the rows whose output holds
// "1:" or "2:"; by default their checks are errors (and the rollouts),
// with --judge-partial ok they aggregate judge-a's judgements and say so.
func TestJudgePanelPartial(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, 4)
	failing := func(out string) bool { return strings.Contains(out, "answer 1:") || strings.Contains(out, "answer 2:") }
	for _, partial := range []bool{false, true} {
		t.Run(fmt.Sprint("partial=", partial), func(t *testing.T) {
			srv := panelServer(t, failing)
			out := filepath.Join(dir, fmt.Sprint("out-", partial))
			jc := gaveltest.JudgeConfig(srv, filepath.Join(dir, fmt.Sprint("cache-", partial)))
			jc.Threshold = 0.6
			res := grade(t, Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec),
				Judge: jc, JudgePanel: JudgePanel{Models: []string{"judge-a", "judge-b"}, Samples: 2, Temperature: 0.5, Partial: partial}})
			checks, rewards := checkRows(t, out), rewardRows(t, out)
			for i := range 4 {
				id := fmt.Sprintf("r%05d", i)
				c, rw := checks[id+"/polite"], rewards[id]
				if i != 1 && i != 2 {
					if c["status"] == "error" {
						t.Errorf("%s: error %v, want a verdict", id, c["detail"])
					}
					continue
				}
				detail, _ := c["detail"].(string)
				if !partial {
					if c["status"] != "error" || !strings.HasPrefix(detail, "judge: model judge-b at ") ||
						!strings.HasSuffix(detail, "(2 of 4 judgements failed)") || c["score"] != nil {
						t.Errorf("%s: check %v %q score %v, want an error naming judge-b and 2 of 4 failed", id, c["status"], detail, c["score"])
					}
					if rw["status"] != "error" || rw["reward"] != nil {
						t.Errorf("%s: rollout %v reward %v, want error and null", id, rw["status"], rw["reward"])
					}
					continue
				}
				// judge-a alone: 1 and 0.6, mean 0.8 >= 0.6.
				if c["status"] != "pass" || c["score"] != 0.8 || !strings.HasSuffix(detail, "(2 judgements; 2 of 4 failed)") {
					t.Errorf("%s: check %v score %v %q, want pass, 0.8 and 2 of 4 failed", id, c["status"], c["score"], detail)
				}
				if rw["status"] != "passed" {
					t.Errorf("%s: rollout %v, want passed", id, rw["status"])
				}
			}
			// Every judgement has its row; the failed ones say why.
			rows := judgementRows(t, out)
			errs := 0
			for _, r := range rows {
				if r["status"] == "error" {
					errs++
					if r["judge_model"] != "judge-b" || r["score"] != nil || !strings.Contains(fmt.Sprint(r["error"]), "HTTP 500") {
						t.Errorf("failed judgement row %v", r)
					}
				}
			}
			if len(rows) != 16 || errs != 4 {
				t.Errorf("%d judgement rows, %d errors; want 16 and 4", len(rows), errs)
			}
			if res.Summary.Judge.Failures != 4 {
				t.Errorf("summary: %d failures, want 4", res.Summary.Judge.Failures)
			}
		})
	}
}

// TestJudgePanelAddJudge: adding a second judge (and a second sample) to
// a cached run asks only for the new judgements.
func TestJudgePanelAddJudge(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, 6)
	srv := panelServer(t, nil)
	cache := filepath.Join(dir, "cache")
	cfg := Config{Inputs: []string{in}, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec), Judge: gaveltest.JudgeConfig(srv, cache)}
	cfg.Judge.Model = "judge-a"
	cfg.Out = filepath.Join(dir, "one")
	grade(t, cfg)
	if srv.Requests() != 6 {
		t.Fatalf("first run: %d requests, want 6", srv.Requests())
	}
	before := len(srv.Received())
	cfg.Out = filepath.Join(dir, "two")
	cfg.JudgePanel = JudgePanel{Models: []string{"judge-a", "judge-b"}}
	res := grade(t, cfg)
	got := srv.Received()[before:]
	if len(got) != 6 || res.Summary.Judge.CacheHits != 6 || res.Summary.Judge.Requests != 6 {
		t.Errorf("second judge: %d requests, summary %+v; want 6 requests and 6 cache hits", len(got), res.Summary.Judge)
	}
	for _, r := range got {
		if r.Model != "judge-b" {
			t.Errorf("second judge run asked %s", r.Model)
		}
	}
	before = len(srv.Received())
	cfg.Out = filepath.Join(dir, "three")
	cfg.JudgePanel.Samples = 2
	res = grade(t, cfg)
	got = srv.Received()[before:]
	if len(got) != 12 || res.Summary.Judge.CacheHits != 12 {
		t.Errorf("second sample: %d requests, summary %+v; want 12 requests and 12 cache hits", len(got), res.Summary.Judge)
	}
	for _, r := range got {
		if *r.Seed != 2 {
			t.Errorf("second sample run asked seed %d", *r.Seed)
		}
	}
}

// TestJudgePanelDeterministic: the parts of a panel run are byte-identical
// for any worker and judge concurrency and when answered from the cache.
func TestJudgePanelDeterministic(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, 40)
	for _, format := range []string{columnar.FormatParquet, columnar.FormatArrow, columnar.FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			srv := panelServer(t, func(out string) bool { return strings.Contains(out, "7:") })
			var first map[string][]byte
			for i, run := range []struct{ workers, batch, conc int }{{1, 1, 1}, {4, 7, 8}, {3, 5, 2}} {
				cache := filepath.Join(dir, format+"-cache")
				if i == 1 {
					cache = filepath.Join(dir, format+"-cache-fresh")
				}
				jc := gaveltest.JudgeConfig(srv, cache)
				jc.Concurrency = run.conc
				out := filepath.Join(dir, fmt.Sprintf("%s-out%d", format, i))
				grade(t, Config{Inputs: []string{in}, Out: out, Format: format, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec), Judge: jc,
					JudgePanel: JudgePanel{Models: []string{"judge-a", "judge-b"}, Samples: 2, Temperature: 0.5, Partial: true},
					Workers:    run.workers, BatchSize: run.batch})
				files := map[string][]byte{}
				for _, table := range []string{"rewards", "checks", "judgements"} {
					b, err := os.ReadFile(filepath.Join(out, table, columnar.PartName(0, format)))
					if err != nil {
						t.Fatal(err)
					}
					files[table] = b
				}
				if first == nil {
					first = files
					continue
				}
				for table, b := range files {
					if !bytes.Equal(b, first[table]) {
						t.Errorf("run %d (%+v): %s part differs from the first run's", i, run, table)
					}
				}
			}
		})
	}
}

// TestJudgePanelBudget: the budget is spent per check, all of its
// judgements or none, in input order.
func TestJudgePanelBudget(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, 8)
	for _, workers := range []int{1, 4} {
		srv := panelServer(t, nil)
		out := filepath.Join(dir, fmt.Sprint("out", workers))
		res := grade(t, Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec),
			Judge: gaveltest.JudgeConfig(srv, filepath.Join(dir, fmt.Sprint("cache", workers))), JudgeMaxRequests: 9,
			JudgePanel: JudgePanel{Models: []string{"judge-a", "judge-b"}, Samples: 2}, Workers: workers, BatchSize: 2})
		judged, pending := judgedIDs(t, out)
		if strings.Join(judged, ",") != "r00000,r00001" || pending != 6 || res.Summary.Judge.Requests != 8 || res.Summary.Judge.PendingBudget != 6 {
			t.Errorf("workers=%d: judged %v, %d pending, judge %+v; want r00000 and r00001, 6 pending, 8 requests", workers, judged, pending, res.Summary.Judge)
		}
		if rows := judgementRows(t, out); len(rows) != 8 {
			t.Errorf("workers=%d: %d judgement rows, want 8", workers, len(rows))
		}
	}
}

// TestJudgePanelURLs: a model served elsewhere is asked there, and each
// server is probed once.
func TestJudgePanelURLs(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, 3)
	a, b := panelServer(t, nil), panelServer(t, nil)
	a.Models("judge-a")
	b.Models("judge-b")
	res := grade(t, Config{Inputs: []string{in}, Out: filepath.Join(dir, "out"), Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec),
		Judge: gaveltest.JudgeConfig(a, filepath.Join(dir, "cache")), JudgePanel: JudgePanel{Models: []string{"judge-a", "judge-b"}, URLs: map[string]string{"judge-b": b.URL}}})
	if a.Requests() != 3 || b.Requests() != 3 || a.ModelRequests() != 1 || b.ModelRequests() != 1 || res.Summary.Judge.Probes != 2 {
		t.Errorf("requests %d and %d, probes %d and %d (summary %d); want 3 each and one probe of each server",
			a.Requests(), b.Requests(), a.ModelRequests(), b.ModelRequests(), res.Summary.Judge.Probes)
	}
	for _, r := range b.Received() {
		if r.Model != "judge-b" {
			t.Errorf("the second server was asked for %s", r.Model)
		}
	}
}

// TestJudgePanelResume: a panel run stopped after its first unit, then
// resumed, has the judgements parts of a run never stopped, byte for
// byte; the resumed run asks only for the units not complete, and a
// resume with another panel is refused.
func TestJudgePanelResume(t *testing.T) {
	dir := t.TempDir()
	var ins []string
	for u := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", u))
		gaveltest.WriteJudgedRows(t, p, u*4, 4)
		ins = append(ins, p)
	}
	panel := JudgePanel{Models: []string{"judge-a", "judge-b"}, Samples: 2, Temperature: 0.5}
	srv := panelServer(t, nil)
	whole := filepath.Join(dir, "whole")
	grade(t, Config{Inputs: ins, Out: whole, Format: columnar.FormatParquet, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec),
		Judge: gaveltest.JudgeConfig(srv, filepath.Join(dir, "cache-whole")), JudgePanel: panel, Workers: 1, BatchSize: 4})

	ctx, cancel := context.WithCancel(context.Background())
	out := filepath.Join(dir, "out")
	cfg := Config{Inputs: ins, Out: out, Format: columnar.FormatParquet, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec),
		Judge: gaveltest.JudgeConfig(srv, filepath.Join(dir, "cache")), JudgePanel: panel, Workers: 1, BatchSize: 4,
		Progress: &cancelAfter{rows: 4, cancel: cancel}}
	if _, err := Run(ctx, cfg); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Run = %v, want interrupted", err)
	}
	if _, err := os.Stat(filepath.Join(out, "judgements", columnar.PartName(0, columnar.FormatParquet))); err != nil {
		t.Fatalf("the first unit's judgements part is not in place: %v", err)
	}
	other := cfg
	other.Progress, other.Resume = nil, true
	other.JudgePanel.Samples = 3
	if _, err := Run(context.Background(), other); err == nil || !strings.Contains(err.Error(), "written by another run") {
		t.Errorf("resume with another panel = %v, want it refused", err)
	}
	cfg.Progress, cfg.Resume = nil, true
	res := grade(t, cfg)
	if !res.Complete || res.Summary.Rollouts != 12 {
		t.Fatalf("resumed run: complete %v, %d rollouts", res.Complete, res.Summary.Rollouts)
	}
	for u := range 3 {
		name := columnar.PartName(u, columnar.FormatParquet)
		for _, table := range []string{"judgements", "checks", "rewards"} {
			a, errA := os.ReadFile(filepath.Join(whole, table, name))
			b, errB := os.ReadFile(filepath.Join(out, table, name))
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				t.Errorf("unit %d %s: resumed part differs from the whole run's (%v, %v)", u, table, errA, errB)
			}
		}
	}
}

// TestJudgePanelReuse grades three units with a panel of two judges, two
// samples each, aggregating partial results (two rows have two judgements
// failed, so they are retry rows; one of them is the second of two
// rollouts with the same id in a row, whose judgements the first must not
// take), then reuses that run three ways, each with an empty cache
// so that every judgement asked reaches the server: every unit copied
// whole (the earlier parts, judgements included, byte for byte), every
// unit read row by row, and the rule. The last two ask exactly the retry
// rows' judgements and give the parts of a full run with a healthy
// server. A re-sharded input, whose rows join.Match finds, grades its
// judged rows again and gives the parts of a full run over it.
func TestJudgePanelReuse(t *testing.T) {
	dir := t.TempDir()
	var ins []string
	for u, rows := range []string{
		judgedLines(0, 4),
		judgedLines(4, 4),
		`{"rollout_id":"dup","task_id":"TASK-J","output":"answer 8: PASS","n":8}` + "\n" +
			`{"rollout_id":"dup","task_id":"TASK-J","output":"answer 9: FAIL","n":9}` + "\n" + judgedLines(10, 1),
	} {
		in := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", u))
		if err := os.WriteFile(in, []byte(rows), 0o644); err != nil {
			t.Fatal(err)
		}
		ins = append(ins, in)
	}
	var failing atomic.Bool
	failing.Store(true)
	srv := panelServer(t, func(out string) bool {
		return failing.Load() && (strings.HasPrefix(out, "answer 5:") || strings.HasPrefix(out, "answer 9:"))
	})
	panel := JudgePanel{Models: []string{"judge-a", "judge-b"}, Samples: 2, Temperature: 0.5, Partial: true}
	config := func(name string, ins []string) Config {
		return Config{Inputs: ins, Out: filepath.Join(dir, name), Format: columnar.FormatArrow, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec),
			Judge: gaveltest.JudgeConfig(srv, filepath.Join(dir, "cache-"+name)), JudgePanel: panel, BatchSize: 2}
	}
	first := config("first", ins)
	grade(t, first)
	if a, c := retryRowsOf(t, first.Out, 1), checkDetail(t, first.Out, "r00005"); a != 1 || !strings.HasSuffix(c, "; 2 of 4 failed)") {
		t.Fatalf("first run: unit 1 has %d retry rows and r00005's polite check says %q, want 1 and two of four failed", a, c)
	}
	failing.Store(false)
	full := config("full", ins)
	grade(t, full)

	asked := func(cfg Config) (int, *results.ReuseSummary) {
		before := srv.Requests()
		res := grade(t, cfg)
		return srv.Requests() - before, res.Summary.Reuse
	}
	whole := config("whole", ins)
	whole.Reuse, whole.reusePath = first.Out, reuseWhole
	if n, ru := asked(whole); n != 0 || ru.CopiedParts != 3 {
		t.Errorf("forced whole: %d requests, reuse %+v; want none and 3 parts copied", n, ru)
	}
	sameParts(t, whole.Out, first.Out)
	rows := config("rows", ins)
	rows.Reuse, rows.reusePath = first.Out, reuseRows
	if n, ru := asked(rows); n != 8 || ru.CopiedParts != 0 || ru.Graded != 2 || ru.Reused != 9 {
		t.Errorf("forced rows: %d requests, reuse %+v; want the 4 judgements of r00005 and of the second dup, 2 rows graded, 9 reused", n, ru)
	}
	sameParts(t, rows.Out, full.Out)
	auto := config("auto", ins)
	auto.Reuse = first.Out
	if n, ru := asked(auto); n != 8 || ru.CopiedParts != 1 || ru.Graded != 2 {
		t.Errorf("rule: %d requests, reuse %+v; want 8 judgements asked again and the first part copied", n, ru)
	}
	sameParts(t, auto.Out, full.Out)
	if got := countResultRows(t, filepath.Join(auto.Out, results.JudgementsDir)); got != 11*4 {
		t.Errorf("reusing run wrote %d judgements, want 4 for each of 11 rows", got)
	}

	// Re-sharded: one file holding every row.
	var all []byte
	for _, in := range ins {
		b, _ := os.ReadFile(in)
		all = append(all, b...)
	}
	one := filepath.Join(dir, "all.jsonl")
	if err := os.WriteFile(one, all, 0o644); err != nil {
		t.Fatal(err)
	}
	fullOne := config("full-one", []string{one})
	grade(t, fullOne)
	matched := config("matched", []string{one})
	matched.Reuse = first.Out
	if n, ru := asked(matched); n != 44 || ru.Reused != 0 {
		t.Errorf("re-sharded: %d requests, reuse %+v; want every judged row graded again (44 judgements)", n, ru)
	}
	sameParts(t, matched.Out, fullOne.Out)
}

// judgedLines returns the JSON Lines writeJudgedRows writes.
func judgedLines(from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		word := "PASS"
		if i%3 == 0 {
			word = "FAIL"
		}
		fmt.Fprintf(&b, `{"rollout_id":"r%05d","task_id":"TASK-J","output":"answer %d: %s","n":%d}`+"\n", i, i, word, i)
	}
	return b.String()
}

// countResultRows counts the rows of the parts in dir.
func countResultRows(t *testing.T, dir string) int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "part-*"))
	n := 0
	for _, f := range files {
		rr, err := columnar.OpenResult(f, []string{"rollout_id"})
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := rr.Next(); err != nil {
				break
			}
			n++
		}
		rr.Close()
	}
	return n
}

// checkDetail returns the detail of the polite check of rollout id in the
// Arrow run out.
func checkDetail(t *testing.T, out, id string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(out, "checks", "part-*"))
	for _, f := range files {
		rr, err := columnar.OpenResult(f, []string{"rollout_id", "check_id", "detail"})
		if err != nil {
			t.Fatal(err)
		}
		for {
			c, err := rr.Next()
			if err != nil {
				break
			}
			if string(c[0].Data) == id && string(c[1].Data) == "polite" {
				d := string(c[2].Data)
				rr.Close()
				return d
			}
		}
		rr.Close()
	}
	return ""
}

// TestJudgePanelSpecModels: a spec's judge: {model: [a, b]} judges its
// rubric checks with both models, without --judge-model.
func TestJudgePanelSpecModels(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, 3)
	srv := panelServer(t, nil)
	spec := strings.Replace(gaveltest.JudgedSpec, "    checks:\n", "    judge: {model: [judge-b, judge-a], threshold: 0.5}\n    checks:\n", 1)
	jc := gaveltest.JudgeConfig(srv, filepath.Join(dir, "cache"))
	jc.Model = ""
	out := filepath.Join(dir, "out")
	grade(t, Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, spec), Judge: jc})
	rows := judgementRows(t, out)
	var models []string
	for _, r := range rows {
		models = append(models, r["judge_model"].(string))
	}
	if got := strings.Join(models, ","); got != "judge-b,judge-a,judge-b,judge-a,judge-b,judge-a" {
		t.Errorf("judgements by %s, want judge-b then judge-a for each of 3 rows", got)
	}
	// r00001 says PASS: judge-b 0.8, judge-a 1; mean 0.9 >= 0.5.
	if c := checkRows(t, out)["r00001/polite"]; c["score"] != 0.9 || c["status"] != "pass" {
		t.Errorf("r00001 polite = %v %v, want 0.9 pass", c["score"], c["status"])
	}
}
