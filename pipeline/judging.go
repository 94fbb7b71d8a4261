package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/verifiers"
)

// judgeWindowRows bounds the rows of the batches waiting on the judge (the
// writer takes no new batch while they reach it), and so the memory a slow
// judge can hold.
const judgeWindowRows = 4096

// judging is a run's judge of rubric checks.
//
// Workers, while a batch's rows are alive, render each rubric check's
// prompt into a judge.Request and answer it from the cache when they can;
// the rest become asks in the batch's results. The writer, the one
// goroutine that sees batches in input order, spends the request budget in
// that order (so the same checks are judged whatever the number of
// workers), starts the asks (judge.Ask bounds the requests in flight), and
// keeps the batches waiting on them in a FIFO whose head is written once
// its asks have finished. A batch's token is returned when it enters the
// FIFO, so the workers keep grading while the judge is slow; the FIFO is
// bounded in rows (judgeWindowRows).
//
// Rejected: asking from the workers, which would idle them for the length
// of a request and spend the budget in completion order.
type judging struct {
	base      *judge.Judge
	baseModel string // the run's model; "" when only verifiers name one

	mu      sync.Mutex
	derived map[judge.Override]derivedJudge

	// Owned by the writer.
	probed        bool
	budget        int64 // requests left; < 0: no limit
	pendingBudget int64
	inflight      map[judge.Key]*call

	asks sync.WaitGroup // one count per ask goroutine

	// shared serialises the writer-owned fields above when many
	// RowGrader calls judge at once (judgeNow); a run's one writer does
	// not take it. probeMu lets one of those calls probe at a time,
	// outside shared and with its caller's context.
	shared  sync.Mutex
	probeMu sync.Mutex
}

type derivedJudge struct {
	j   *judge.Judge
	err error
}

// call is one judgement asked of the server, shared by the checks whose
// requests have its key.
type call struct {
	done chan struct{}
	v    judge.Verdict
	err  error
}

// ask is a rubric check left to the writer: the check row at index check
// of the batch's results, of the reward row at index row.
type ask struct {
	row, check int
	j          *judge.Judge
	req        *judge.Request
	key        judge.Key         // req's key when the ask was started (the mode may change after)
	c          *call             // set by the writer; nil: left pending by the budget
	owner      bool              // the ask started c
	reward     verifiers.Formula // the row's verifier's reward formula
}

// ProbeError is returned, wrapped, when the judge's probe failed: the
// server is unreachable, refuses the key or does not know the model. The
// parts completed before it stay in place.
type ProbeError struct {
	Err error
}

func (e *ProbeError) Error() string { return e.Err.Error() }
func (e *ProbeError) Unwrap() error { return e.Err }

// judgedBy reports the model a verifier's rubrics are judged by with
// judging configured by cfg ("" when they are not judged).
func judgedBy(cfg *judge.Config, v *verifiers.Verifier) string {
	if cfg == nil || !v.Judged {
		return ""
	}
	if v.Judge.Model != "" {
		return v.Judge.Model
	}
	return cfg.Model
}

// newJudging returns the run's judging, or nil when no verifier in vs is
// judged (then nothing is opened and no request is ever made).
func newJudging(cfg *judge.Config, vs []*verifiers.Verifier, maxRequests int64) (*judging, error) {
	model := ""
	for _, v := range vs {
		if m := judgedBy(cfg, v); m != "" && model == "" {
			model = m
		}
	}
	if model == "" {
		return nil, nil
	}
	c := *cfg
	if c.Model == "" {
		c.Model = model // replaced by every verifier's own
	}
	base, err := judge.New(c)
	if err != nil {
		return nil, &ConfigError{Field: "Judge", Msg: err.Error()}
	}
	js := &judging{base: base, baseModel: cfg.Model, derived: map[judge.Override]derivedJudge{},
		budget: -1, inflight: map[judge.Key]*call{}}
	if maxRequests > 0 {
		js.budget = maxRequests
	}
	for _, v := range vs {
		if judgedBy(cfg, v) == "" {
			continue
		}
		if _, err := js.judgeFor(v, &verifiers.Rubric{}); err != nil {
			base.Close()
			return nil, &ConfigError{Field: "Judge", Msg: fmt.Sprintf("verifier %s: %v", v.ID, err)}
		}
	}
	return js, nil
}

// judgeFor returns the judge of a rubric check of v: the rubric's
// settings, else the verifier's, else the run's. It returns nil when no
// model applies.
func (js *judging) judgeFor(v *verifiers.Verifier, rb *verifiers.Rubric) (*judge.Judge, error) {
	o := judge.Override{Model: first(rb.Model, v.Judge.Model, js.baseModel), Template: first(rb.Template, v.Judge.Template),
		Threshold: rb.Threshold}
	if o.Model == "" {
		return nil, nil
	}
	if o.Threshold <= 0 {
		o.Threshold = v.Judge.Threshold
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	d, ok := js.derived[o]
	if !ok {
		d.j, d.err = js.base.With(o)
		js.derived[o] = d
	}
	return d.j, d.err
}

func first(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// judges reports whether the run judges the rubric checks of v. js may
// be nil: no verifier is judged.
func (js *judging) judges(v *verifiers.Verifier) bool {
	if js == nil || !v.Judged {
		return false
	}
	j, err := js.judgeFor(v, &verifiers.Rubric{})
	return err == nil && j != nil
}

// fingerprint returns the manifest fingerprint of v (verifiers.Fingerprint)
// with, when it is judged, its judge's model, threshold and template. js
// may be nil: no verifier is judged.
func (js *judging) fingerprint(v *verifiers.Verifier) string {
	judge := ""
	if js.judges(v) {
		j, _ := js.judgeFor(v, &verifiers.Rubric{})
		judge = "model=" + j.Model() + " threshold=" + strconv.FormatFloat(j.Threshold(), 'g', -1, 64) +
			" template=" + j.Template().Fingerprint()
	}
	return verifiers.Fingerprint(v, judge)
}

// runJudge returns the judge settings that are part of the run's identity.
func (js *judging) runJudge(cfg *judge.Config) *RunJudge {
	if js == nil {
		return nil
	}
	url := cfg.BaseURL
	if url == "" {
		url = judge.DefaultBaseURL
	}
	return &RunJudge{Model: js.baseModel, URL: judge.RedactURL(url), Threshold: js.base.Threshold(),
		Template: js.base.Template().Version() + " sha256:" + js.base.Template().Fingerprint()}
}

// judgeRow judges the rubric checks of one row, crs (the row's check rows,
// at index from in out.checks): a cached verdict is applied at once, the
// others become asks of out. It reports whether a check changed, so that
// the row's verdict must be computed again.
func (g *grader) judgeRow(v *verifiers.Verifier, checks []verifiers.Check, out *results, row, from int) bool {
	js := g.plan.judging
	changed := false
	for i := range checks {
		c := &checks[i]
		if c.Rubric == nil || c.Status != verifiers.Pending {
			continue
		}
		cr := &out.checks[from+i]
		j, err := js.judgeFor(v, c.Rubric)
		if err != nil {
			cr.Status, cr.Detail, changed = verifiers.CheckError, "judge: "+err.Error(), true
			continue
		}
		if j == nil {
			continue
		}
		req, err := j.Request(judge.Prompt{Rubric: c.Rubric.Text, Instruction: instruction(c.Rubric, &g.rollout),
			Output: g.rollout.Output, Context: promptContext(c.Rubric.Context)})
		if err != nil {
			cr.Status, cr.Detail, changed = verifiers.CheckError, err.Error(), true
			continue
		}
		if vd, ok := j.Cached(req); ok {
			applyVerdict(cr, j, vd)
			changed = true
			continue
		}
		out.asks = append(out.asks, ask{row: row, check: from + i, j: j, req: req, reward: v.Reward})
	}
	return changed
}

// instructionFields are the fields of the task row, then of the rollout's
// metadata, read as the task instruction when a rubric has no query.
var instructionFields = []string{"instruction", "prompt", "query", "input"}

// instruction returns the task instruction the judge sees (copied out of
// the rollout).
func instruction(rb *verifiers.Rubric, r *verifiers.Rollout) string {
	if rb.Query != "" {
		return rb.Query
	}
	for _, src := range []jsonview.Value{r.Task, r.Meta} {
		for _, f := range instructionFields {
			x := src.Get(f)
			switch x.Kind() {
			case jsonview.Missing, jsonview.Null:
				continue
			case jsonview.String:
				s, _ := x.Str()
				return string(s)
			}
			return string(x.Raw())
		}
	}
	return ""
}

func promptContext(cs []verifiers.RubricContext) []judge.Context {
	if len(cs) == 0 {
		return nil
	}
	out := make([]judge.Context, len(cs))
	for i, c := range cs {
		out[i] = judge.Context{Name: c.Name, Value: c.Value}
	}
	return out
}

// applyVerdict fills a check row from a verdict of j.
func applyVerdict(cr *columnar.CheckRow, j *judge.Judge, v judge.Verdict) {
	cr.Score, cr.ScoreValid = v.Score, true
	cr.Issues, cr.IssuesValid = append([]string{}, v.Issues...), true
	cr.Suggestion = columnar.Str(v.Suggestion)
	cr.Status = verifiers.CheckFail
	cmp := "<"
	if v.Pass(j.Threshold()) {
		cr.Status, cmp = verifiers.CheckPass, ">="
	}
	cr.Detail = fmt.Sprintf("judge %s: score %s %s threshold %s", j.Model(),
		strconv.FormatFloat(v.Score, 'g', -1, 64), cmp, strconv.FormatFloat(j.Threshold(), 'g', -1, 64))
}

// rescore computes a row's verdict again from its check rows, with the
// reward formula f: after judging changed some, and in a rescore run; buf
// is reused.
func rescore(rw *columnar.RewardRow, crs []columnar.CheckRow, f verifiers.Formula, buf []verifiers.Check) []verifiers.Check {
	buf = buf[:0]
	for i := range crs {
		cr := &crs[i]
		var st verifiers.Status
		switch cr.Status {
		case verifiers.CheckPass:
			st = verifiers.Pass
		case verifiers.CheckFail:
			st = verifiers.Fail
		case verifiers.CheckPending:
			st = verifiers.Pending
		default:
			st = verifiers.Error
		}
		buf = append(buf, verifiers.Check{ID: cr.CheckID, Label: cr.Label, Required: cr.Required, Status: st, Detail: cr.Detail,
			Score: cr.Score, Scored: cr.ScoreValid})
	}
	setVerdict(rw, verifiers.ScoreWith(f, buf, nil))
	return buf
}

// setVerdict fills the verdict columns of a reward row.
func setVerdict(rw *columnar.RewardRow, v verifiers.Verdict) {
	rw.Status = v.Outcome.String()
	rw.Passed, rw.PassedValid = v.Passed()
	rw.Reward, rw.RewardValid = v.Reward, v.HasReward
	rw.ChecksTotal, rw.ChecksPassed = v.ChecksTotal, v.ChecksPassed
	rw.RequiredTotal, rw.RequiredPassed = v.RequiredTotal, v.RequiredPassed
	rw.ErrorKind, rw.Error = columnar.NullString{}, columnar.NullString{}
	if v.Outcome == verifiers.Errored {
		rw.ErrorKind = columnar.Str(v.ErrorKind)
		rw.Error = columnar.Str(v.Error)
	}
}

// start starts the asks of a batch, in input order: a judgement already
// asked or cached is shared, the budget decides the others. The first
// request the cache cannot answer is preceded by the probe.
func (js *judging) start(ctx context.Context, asks []ask) error {
	for i := range asks {
		a := &asks[i]
		k := a.req.Key()
		a.key = k
		if c := js.inflight[k]; c != nil {
			a.c = c
			continue
		}
		if v, ok := a.j.Cached(a.req); ok {
			a.c = &call{done: closedChan, v: v}
			continue
		}
		if js.budget == 0 {
			js.pendingBudget++
			continue
		}
		if !js.probed {
			if err := a.j.Probe(ctx); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return &ProbeError{Err: err}
			}
			js.probed = true
		}
		if js.budget > 0 {
			js.budget--
		}
		c := &call{done: make(chan struct{})}
		a.c, a.owner = c, true
		js.inflight[k] = c
		js.asks.Add(1)
		go func(j *judge.Judge, req *judge.Request) {
			defer js.asks.Done()
			c.v, c.err = j.Ask(ctx, req)
			close(c.done)
		}(a.j, a.req)
	}
	return nil
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// waiting returns the done channel of a batch's first unfinished ask, or
// nil when every ask has finished.
func waiting(asks []ask) <-chan struct{} {
	for i := range asks {
		if c := asks[i].c; c != nil {
			select {
			case <-c.done:
			default:
				return c.done
			}
		}
	}
	return nil
}

// finish applies the answers of a batch's finished asks to its results
// and computes the verdicts of the rows they changed. A failed judgement
// makes its check an error (and so the rollout an error, never a score);
// a cancelled one returns the context's error.
func (js *judging) finish(res *results, buf []verifiers.Check) ([]verifiers.Check, error) {
	for i := range res.asks {
		a := &res.asks[i]
		if a.c == nil {
			continue
		}
		if a.owner && js.inflight[a.key] == a.c {
			delete(js.inflight, a.key)
		}
		cr := &res.checks[a.check]
		var je *judge.Error
		switch err := a.c.err; {
		case err == nil:
			applyVerdict(cr, a.j, a.c.v)
		case errors.As(err, &je):
			cr.Status, cr.Detail = verifiers.CheckError, je.Error()
		default: // the run's context ended: the batch is not written
			return buf, err
		}
	}
	// Rows are in order in the results; each row's checks follow the
	// previous row's.
	at := 0
	rowsChanged := map[int]verifiers.Formula{}
	for i := range res.asks {
		if res.asks[i].c != nil {
			rowsChanged[res.asks[i].row] = res.asks[i].reward
		}
	}
	for r := range res.rewards {
		rw := &res.rewards[r]
		n := int(rw.ChecksTotal)
		if f, ok := rowsChanged[r]; ok {
			buf = rescore(rw, res.checks[at:at+n], f, buf)
		}
		at += n
	}
	return buf, nil
}

// sync makes the verdicts cached so far durable.
func (js *judging) sync() error {
	if js == nil {
		return nil
	}
	if err := js.base.Sync(); err != nil {
		return fmt.Errorf("judge cache: %w", err)
	}
	return nil
}

// JudgeSummary counts a run's judging: probes of the server, requests
// sent (retries included),
// verdicts found in the cache, retries, failed judgements, tokens, and
// rubric checks left pending by the request budget. It depends on the
// cache and the server as well as on the inputs: like the timing fields,
// it may differ between runs whose parts are identical.
type JudgeSummary struct {
	// Probes counts the probes of the judge's server (one before the
	// first request the cache cannot answer); Requests does not.
	Probes           int64 `json:"probes"`
	Requests         int64 `json:"requests"`
	CacheHits        int64 `json:"cache_hits"`
	Retries          int64 `json:"retries"`
	Failures         int64 `json:"failures"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	PendingBudget    int64 `json:"pending_by_budget"`
}

func (js *judging) summary() *JudgeSummary {
	if js == nil {
		return nil
	}
	s := js.base.Stats()
	return &JudgeSummary{Probes: s.Probes, Requests: s.Requests, CacheHits: s.CacheHits, Retries: s.Retries, Failures: s.Failures,
		PromptTokens: s.PromptTokens, CompletionTokens: s.CompletionTokens, PendingBudget: js.pendingBudget}
}

// judgeNow judges a batch's asks and waits for them, for RowGrader, whose
// calls run on many goroutines at once: the fields a run's writer owns are
// taken under js.shared. The asks themselves run without the caller's
// cancellation, so that a judgement shared by two requests is not failed
// by one client leaving; each is bounded by the judge's own timeout. The
// verdicts are made durable before the rows are returned.
func (js *judging) judgeNow(ctx context.Context, res *results, buf []verifiers.Check) ([]verifiers.Check, error) {
	if err := js.probeFor(ctx, res.asks); err != nil {
		return buf, err
	}
	js.shared.Lock()
	err := js.start(context.WithoutCancel(ctx), res.asks)
	js.shared.Unlock()
	if err != nil {
		return buf, err
	}
	for i := range res.asks {
		if c := res.asks[i].c; c != nil {
			select {
			case <-c.done:
			case <-ctx.Done():
				// The asks finish on their own, bounded by the judge's
				// timeout; a later request for one of them asks again.
				js.shared.Lock()
				for j := range res.asks {
					if a := &res.asks[j]; a.owner && js.inflight[a.key] == a.c {
						delete(js.inflight, a.key)
					}
				}
				js.shared.Unlock()
				return buf, ctx.Err()
			}
		}
	}
	js.shared.Lock()
	buf, err = js.finish(res, buf)
	js.shared.Unlock()
	if err != nil {
		return buf, err
	}
	return buf, js.sync()
}

// probeFor probes the judge's server, for judgeNow, before asks that the
// cache cannot answer, unless a probe already succeeded. It runs outside
// js.shared, so a slow or failing probe holds up only the calls that need
// a probe, each for as long as its own context allows; a failed probe is
// tried again by the next call.
func (js *judging) probeFor(ctx context.Context, asks []ask) error {
	js.shared.Lock()
	probed := js.probed
	js.shared.Unlock()
	if probed {
		return nil
	}
	var j *judge.Judge
	for i := range asks {
		if _, ok := asks[i].j.Cached(asks[i].req); !ok {
			j = asks[i].j
			break
		}
	}
	if j == nil {
		return nil
	}
	js.probeMu.Lock()
	defer js.probeMu.Unlock()
	js.shared.Lock()
	probed = js.probed
	js.shared.Unlock()
	if probed {
		return nil
	}
	if err := j.Probe(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &ProbeError{Err: err}
	}
	js.shared.Lock()
	js.probed = true
	js.shared.Unlock()
	return nil
}
