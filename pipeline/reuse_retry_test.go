package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/judge/judgetest"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// retryCase is a run of two units: a generated Parquet file, whose only
// errors repeat by construction (input errors, rows of no verifier, a
// verifier's checks in error), and a JSON Lines file of rows of every
// kind: for VER-T, which passes "ok-" rows, faults a check of "fault-"
// rows, returns an error on "err-" rows, hangs on "hang-" rows while hang
// is set and panics on "boom-" rows while boom is set; an input error, a
// row of no verifier, and rows of the judged VER-J, whose judge answers
// "answer 4:" with HTTP 500 while failing is set.
type retryCase struct {
	dir, gen, rows string
	srv            *judgetest.Server
	hang, boom     atomic.Bool
	failing        atomic.Bool
	release        chan struct{}
	calls          map[string]*atomic.Int64
	asked          int // judge requests already counted
}

func newRetryCase(t *testing.T, boomRow bool) *retryCase {
	t.Helper()
	rc := &retryCase{dir: t.TempDir(), srv: judgetest.New(t), release: make(chan struct{}), calls: map[string]*atomic.Int64{}}
	t.Cleanup(func() { close(rc.release) })
	rc.gen = filepath.Join(rc.dir, "gen.parquet")
	if _, err := gen.Run(context.Background(), gen.Config{Out: rc.gen, Rollouts: 300, Seed: 4, BadShare: 0.05}); err != nil {
		t.Fatalf("gen: %v", err)
	}
	var b bytes.Buffer
	for _, id := range []string{"ok-1", "hang-2", "fault-3", "err-4", "ok-5"} {
		fmt.Fprintf(&b, "{\"rollout_id\":%q,\"task_id\":\"T\"}\n", id)
	}
	if boomRow {
		b.WriteString(`{"rollout_id":"boom-6","task_id":"T"}` + "\n")
	}
	b.WriteString(`{"rollout_id":"bad-1","task_id":"T","final_state":"{not json"}` + "\n")
	b.WriteString(`{"rollout_id":"none-1","task_id":"TASK-NONE"}` + "\n")
	for i := range 6 {
		word := "PASS"
		if i%3 == 0 {
			word = "FAIL"
		}
		fmt.Fprintf(&b, `{"rollout_id":"j-%d","task_id":"TASK-J","output":"answer %d: %s","n":%d}`+"\n", i, i, word, i)
	}
	rc.rows = filepath.Join(rc.dir, "rows.jsonl")
	if err := os.WriteFile(rc.rows, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rc.srv.Script(func(r judgetest.Request) judgetest.Reply {
		if rc.failing.Load() && strings.Contains(r.User, "answer 4:") {
			return judgetest.Reply{Status: 500}
		}
		return judgetest.Reply{}
	})
	return rc
}

// verifierSet returns the built-in verifiers, VER-T and VER-J, their calls
// counted in rc.calls (reset).
func (rc *retryCase) verifierSet(t *testing.T) []*verifiers.Verifier {
	clear(rc.calls)
	vt := &verifiers.Verifier{ID: "VER-T", Name: "test", Tasks: []string{"T"}, Source: "test", Definition: "test",
		Grade: func(r *verifiers.Rollout, c *verifiers.Checks) error {
			switch {
			case strings.HasPrefix(r.ID, "hang-") && rc.hang.Load():
				<-rc.release
			case strings.HasPrefix(r.ID, "boom-") && rc.boom.Load():
				panic("boom")
			case strings.HasPrefix(r.ID, "fault-"):
				c.Fault("checked", true, "cannot check this rollout")
				return nil
			case strings.HasPrefix(r.ID, "err-"):
				return errors.New("cannot grade")
			}
			c.Require("ok", true, "ok")
			return nil
		}}
	vs := append(crm.Verifiers(), vt)
	vs = append(vs, gaveltest.ParseSpec(t, gaveltest.JudgedSpec)...)
	out := make([]*verifiers.Verifier, len(vs))
	for i, b := range vs {
		v := *b
		n := new(atomic.Int64)
		rc.calls[v.ID] = n
		grade := b.Grade
		v.Grade = func(r *verifiers.Rollout, c *verifiers.Checks) error {
			n.Add(1)
			return grade(r, c)
		}
		out[i] = &v
	}
	return out
}

// config returns the configuration of a run into out.
func (rc *retryCase) config(t *testing.T, out, format string) Config {
	jc := gaveltest.JudgeConfig(rc.srv, "off")
	return Config{Inputs: []string{rc.gen, rc.rows}, Out: filepath.Join(rc.dir, out), Format: format, Workers: 2, BatchSize: 16,
		Verifiers: rc.verifierSet(t), Judge: jc, Timeout: 300 * time.Millisecond, MaxStuck: 8}
}

var answerRE = regexp.MustCompile(`answer [0-9]+:`)

// asks returns the outputs the judge was asked about since the last call,
// sorted by arrival ("answer 4", ...).
func (rc *retryCase) asks() []string {
	got := rc.srv.Received()
	var out []string
	for _, r := range got[rc.asked:] {
		if m := answerRE.FindString(r.User); m != "" {
			out = append(out, strings.TrimSuffix(m, ":"))
		}
	}
	rc.asked = len(got)
	return out
}

// checkCalls fails unless the verifiers ran want times each (by id; the
// others never).
func (rc *retryCase) checkCalls(t *testing.T, name string, want map[string]int64) {
	t.Helper()
	for id, n := range rc.calls {
		if got := n.Load(); got != want[id] {
			t.Errorf("%s: verifier %s ran %d times, want %d", name, id, got, want[id])
		}
	}
}

// sameParts fails unless the rewards and checks parts and the part
// statistics of dirs a and b are byte-identical.
func sameParts(t *testing.T, a, b string) {
	t.Helper()
	sameFiles(t, a, b)
	stats, _ := filepath.Glob(filepath.Join(a, results.StatsDir, "part-*"))
	if len(stats) == 0 {
		t.Fatalf("no part statistics in %s", a)
	}
	for _, p := range stats {
		x, errX := os.ReadFile(p)
		y, errY := os.ReadFile(filepath.Join(b, results.StatsDir, filepath.Base(p)))
		if errX != nil || errY != nil || !bytes.Equal(x, y) {
			t.Errorf("%s/%s differs between %s and %s (%v %v)", results.StatsDir, filepath.Base(p), a, b, errX, errY)
		}
	}
}

// retryRowsOf returns the retry rows the statistics of unit i of dir
// count (-1: none recorded).
func retryRowsOf(t *testing.T, dir string, i int) int64 {
	t.Helper()
	ps, err := results.ReadStats(dir, i)
	if err != nil {
		t.Fatal(err)
	}
	if ps.RetryRows == nil {
		return -1
	}
	return *ps.RetryRows
}

// TestReusePaths grades two units, one with a verifier that times out and
// a judge call that fails (and fail again), then grades them again
// reusing that run three times: every unit forced whole, every unit forced
// row by row, and left to the rule. The three give byte-identical parts;
// the row path runs exactly the timed-out row's and the failed
// judgement's verifiers and asks the judge exactly that judgement again,
// and the rule takes the row path for that unit only.
func TestReusePaths(t *testing.T) {
	for _, format := range []string{columnar.FormatParquet, columnar.FormatArrow, columnar.FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			rc := newRetryCase(t, false)
			rc.hang.Store(true)
			rc.failing.Store(true)
			first := rc.config(t, "first", format)
			grade(t, first)
			if got := rc.asks(); len(got) != 6 {
				t.Fatalf("first run asked the judge %v, want the 6 judged rows", got)
			}
			if a, b := retryRowsOf(t, first.Out, 0), retryRowsOf(t, first.Out, 1); a != 0 || b != 2 {
				t.Fatalf("retry rows of the first run's parts %d and %d, want 0 and 2", a, b)
			}

			whole := rc.config(t, "whole", format)
			whole.Reuse, whole.reusePath = first.Out, reuseWhole
			res := grade(t, whole)
			if ru := res.Summary.Reuse; ru.CopiedParts != 2 || ru.Graded != 0 {
				t.Errorf("forced whole: reuse summary %+v, want both parts copied", ru)
			}
			rc.checkCalls(t, "forced whole", nil)
			if got := rc.asks(); len(got) != 0 {
				t.Errorf("forced whole asked the judge %v, want nothing", got)
			}

			rows := rc.config(t, "rows", format)
			rows.Reuse, rows.reusePath = first.Out, reuseRows
			res = grade(t, rows)
			if ru := res.Summary.Reuse; ru.CopiedParts != 0 {
				t.Errorf("forced rows: reuse summary %+v, want no part copied", ru)
			}
			rc.checkCalls(t, "forced rows", map[string]int64{"VER-T": 1, "VER-J": 1})
			if got := rc.asks(); len(got) != 1 || got[0] != "answer 4" {
				t.Errorf("forced rows asked the judge %v, want answer 4 only", got)
			}
			sameParts(t, whole.Out, rows.Out)

			auto := rc.config(t, "auto", format)
			auto.Reuse = first.Out
			res = grade(t, auto)
			if ru := res.Summary.Reuse; ru.CopiedParts != 1 {
				t.Errorf("rule: reuse summary %+v, want the generated part copied", ru)
			}
			rc.checkCalls(t, "rule", map[string]int64{"VER-T": 1, "VER-J": 1})
			if got := rc.asks(); len(got) != 1 || got[0] != "answer 4" {
				t.Errorf("rule asked the judge %v, want answer 4 only", got)
			}
			sameParts(t, auto.Out, rows.Out)
			sameParts(t, first.Out, rows.Out)
		})
	}
}

// TestReuseRetryRows grades two units, one with a verifier timeout, a
// verifier panic and a failed judge call, then again reusing that run
// with the verifier and the judge healthy: that unit is refused the
// whole path and exactly those three rows are graded again, giving the
// parts of a full run; the other unit is copied whole. Statistics written
// before retry rows were counted send their unit down the row path, which
// grades none of its rows again.
func TestReuseRetryRows(t *testing.T) {
	rc := newRetryCase(t, true)
	rc.hang.Store(true)
	rc.boom.Store(true)
	rc.failing.Store(true)
	format := columnar.FormatJSONL
	first := rc.config(t, "first", format)
	grade(t, first)
	if a, b := retryRowsOf(t, first.Out, 0), retryRowsOf(t, first.Out, 1); a != 0 || b != 3 {
		t.Fatalf("retry rows of the first run's parts %d and %d, want 0 and 3", a, b)
	}
	for _, id := range []string{"hang-2", "boom-6"} {
		if r := rewardRows(t, first.Out)[id]; r["status"] != "error" {
			t.Fatalf("first run: %s = %v, want an error", id, r)
		}
	}
	rc.asks()

	rc.hang.Store(false)
	rc.boom.Store(false)
	rc.failing.Store(false)
	again := rc.config(t, "again", format)
	again.Reuse = first.Out
	res := grade(t, again)
	if ru := res.Summary.Reuse; ru.CopiedParts != 1 {
		t.Errorf("reuse summary %+v, want the generated part only copied", ru)
	}
	rc.checkCalls(t, "again", map[string]int64{"VER-T": 2, "VER-J": 1})
	if got := rc.asks(); len(got) != 1 || got[0] != "answer 4" {
		t.Errorf("the judge was asked %v, want answer 4 only", got)
	}
	rw := rewardRows(t, again.Out)
	for _, id := range []string{"hang-2", "boom-6"} {
		if rw[id]["status"] != "passed" {
			t.Errorf("%s = %v, want passed once graded again", id, rw[id])
		}
	}
	full := rc.config(t, "full", format)
	grade(t, full)
	rc.asks()
	sameParts(t, again.Out, full.Out)

	// Statistics without the count: the row path, nothing graded again.
	path := results.StatsPath(first.Out, 0)
	var m map[string]any
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	delete(m, "retry_rows")
	if err := results.WriteJSON(path, m, false); err != nil {
		t.Fatal(err)
	}
	old := rc.config(t, "old", format)
	old.Reuse = first.Out
	res = grade(t, old)
	if ru := res.Summary.Reuse; ru.CopiedParts != 0 {
		t.Errorf("statistics without retry_rows: reuse summary %+v, want no part copied", ru)
	}
	rc.checkCalls(t, "old statistics", map[string]int64{"VER-T": 2, "VER-J": 1})
	sameFiles(t, old.Out, full.Out)
}

// TestReuseJudgeBudget: the rubric checks a run's request budget left
// pending are judged by a later run reusing it, which spends its own
// budget on them and reuses the judgements already made.
func TestReuseJudgeBudget(t *testing.T) {
	srv := judgetest.New(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(t, in, 0, 6)
	run := func(out, reuse string) *Result {
		return grade(t, Config{Inputs: []string{in}, Out: filepath.Join(dir, out), Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec),
			Judge: gaveltest.JudgeConfig(srv, "off"), JudgeMaxRequests: 2, Reuse: reuse})
	}
	res := run("first", "")
	if j := res.Summary.Judge; j.Requests != 2 || j.PendingBudget != 4 {
		t.Fatalf("first run judge summary %+v, want 2 requests and 4 pending", j)
	}
	if got := retryRowsOf(t, filepath.Join(dir, "first"), 0); got != 4 {
		t.Fatalf("first run: %d retry rows, want 4", got)
	}
	res = run("second", filepath.Join(dir, "first"))
	if ru := res.Summary.Reuse; ru.CopiedParts != 0 || ru.Reused != 2 {
		t.Errorf("second run: reuse summary %+v, want 2 rows reused and no part copied", ru)
	}
	if j := res.Summary.Judge; j.Requests != 2 || j.PendingBudget != 2 {
		t.Errorf("second run judge summary %+v, want 2 requests and 2 pending", j)
	}
	rw := rewardRows(t, filepath.Join(dir, "second"))
	pending := 0
	for _, r := range rw {
		if r["status"] == "pending" {
			pending++
		}
	}
	if pending != 2 {
		t.Errorf("second run: %d rows pending, want 2", pending)
	}
}
