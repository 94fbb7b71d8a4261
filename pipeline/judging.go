package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/judge"
	callpkg "github.com/gavelhq/gavel/judge/call"
	"github.com/gavelhq/gavel/results"
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
	baseModel string // the run's first model; "" when only verifiers name one
	models    []string
	set       JudgePanel // with defaults applied
	// multi: some rubric check gets more than one judgement, so the run
	// writes the judgements table.
	multi bool

	mu      sync.Mutex
	derived map[judge.Override]derivedJudge
	panels  map[panelKey]derivedPanel

	// Owned by the writer.
	probed   map[string]bool // by server
	budget   callpkg.Budget
	inflight map[judge.Key]*call

	asks sync.WaitGroup // one count per ask goroutine

	// shared serialises the writer-owned fields above when many
	// RowGrader calls judge at once (askNow); a run's one writer does
	// not take it. probeMu lets one of those calls probe at a time,
	// outside shared and with its caller's context.
	shared  sync.Mutex
	probeMu sync.Mutex
}

type derivedJudge struct {
	j   *judge.Judge
	err error
}

// JudgePanel says how many judgements a rubric check gets and how they
// make its verdict (judge.Panel).
type JudgePanel = judge.Panel

// Aggregates lists the values of JudgePanel.Aggregate.
var Aggregates = judge.Aggregates

// panelKey identifies the panel of a rubric check.
type panelKey struct {
	models    string // joined with NUL
	template  string
	threshold float64
}

type derivedPanel struct {
	judges []*judge.Judge
	err    error
}

// call is one judgement asked of the server, shared by the checks whose
// requests have its key.
type call struct {
	done chan struct{}
	v    judge.Verdict
	err  error
}

// ask is a rubric check left to the writer: the check row at index check
// of the batch's results, of the reward row at index row. Its judgements
// are the results' subs[from:from+n], in the order of the judgements
// table (judge model, then sample).
type ask struct {
	row, check int
	from, n    int
	jrow       int                 // the index of its first row in the results' judgements; -1: none written
	pending    bool                // left pending by the budget
	v          *verifiers.Verifier // the row's verifier, whose formulas score it again
}

// sub is one judgement of an ask.
type sub struct {
	j     *judge.Judge
	req   *judge.Request
	key   judge.Key // req's key when the ask was started (the mode may change after)
	c     *call     // set by judgeRow (cached) or by the writer
	owner bool      // the sub started c
}

// ProbeError is returned, wrapped, when the probe of a judge or a remote
// service failed (call.ProbeError); the parts completed before it stay in
// place.
type ProbeError = callpkg.ProbeError

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
// judged (then nothing is opened and no request is ever made). cfg.Model,
// when set, is the panel's first model.
func newJudging(cfg *judge.Config, set JudgePanel, vs []*verifiers.Verifier, maxRequests int64) (*judging, error) {
	if cfg != nil && cfg.Model == "" && len(set.Models) > 0 {
		c := *cfg
		c.Model = set.Models[0]
		cfg = &c
	}
	model := ""
	for _, v := range vs {
		if m := judgedBy(cfg, v); m != "" && model == "" {
			model = m
		}
	}
	if model == "" {
		return nil, nil
	}
	if set.Samples <= 0 {
		set.Samples = 1
	}
	if set.Aggregate == "" {
		set.Aggregate = "mean"
	}
	if !slices.Contains(Aggregates, set.Aggregate) {
		return nil, &inputs.ConfigError{Field: "JudgePanel", Msg: fmt.Sprintf("aggregate %q: want one of %s", set.Aggregate, strings.Join(Aggregates, ", "))}
	}
	models := set.Models
	if len(models) == 0 && cfg.Model != "" {
		models = []string{cfg.Model}
	}
	c := *cfg
	if c.Model == "" {
		c.Model = model // replaced by every verifier's own
	}
	base, err := judge.New(c)
	if err != nil {
		return nil, &inputs.ConfigError{Field: "Judge", Msg: err.Error()}
	}
	js := &judging{base: base, baseModel: cfg.Model, models: models, set: set,
		derived: map[judge.Override]derivedJudge{}, panels: map[panelKey]derivedPanel{},
		budget: callpkg.NewBudget(maxRequests), inflight: map[judge.Key]*call{}, probed: map[string]bool{}}
	for _, v := range vs {
		if judgedBy(cfg, v) == "" {
			continue
		}
		ps, err := js.panelFor(v, &verifiers.Rubric{})
		if err != nil {
			base.Close()
			return nil, &inputs.ConfigError{Field: "Judge", Msg: fmt.Sprintf("verifier %s: %v", v.ID, err)}
		}
		if len(ps)*set.Samples > 1 {
			js.multi = true
		}
	}
	return js, nil
}

// panelFor returns the judges of a rubric check of v, in order: the
// rubric's model, else the verifier's models, else the run's; the
// rubric's template and threshold, else the verifier's, else the run's.
// It returns nil when no model applies.
func (js *judging) panelFor(v *verifiers.Verifier, rb *verifiers.Rubric) ([]*judge.Judge, error) {
	models := js.models
	switch {
	case rb.Model != "":
		models = []string{rb.Model}
	case len(v.Judge.Models) > 0:
		models = v.Judge.Models
	case v.Judge.Model != "":
		models = []string{v.Judge.Model}
	}
	if len(models) == 0 {
		return nil, nil
	}
	k := panelKey{models: strings.Join(models, "\x00"), template: cmp.Or(rb.Template, v.Judge.Template), threshold: rb.Threshold}
	if k.threshold <= 0 {
		k.threshold = v.Judge.Threshold
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if d, ok := js.panels[k]; ok {
		return d.judges, d.err
	}
	var d derivedPanel
	for _, m := range models {
		o := judge.Override{Model: m, Template: k.template, Threshold: k.threshold, URL: js.set.URLs[m]}
		dj, ok := js.derived[o]
		if !ok {
			dj.j, dj.err = js.base.With(o)
			js.derived[o] = dj
		}
		if dj.err != nil {
			d = derivedPanel{err: dj.err}
			break
		}
		d.judges = append(d.judges, dj.j)
	}
	js.panels[k] = d
	return d.judges, d.err
}

// judges reports whether the run judges the rubric checks of v. js may
// be nil: no verifier is judged.
func (js *judging) judges(v *verifiers.Verifier) bool {
	if js == nil || !v.Judged {
		return false
	}
	ps, err := js.panelFor(v, &verifiers.Rubric{})
	return err == nil && len(ps) > 0
}

// partial reports whether a check of the run may aggregate the
// judgements that succeeded when others failed (JudgePanel.Partial in a
// run that writes the judgements table). js may be nil.
func (js *judging) partial() bool {
	return js != nil && js.multi && js.set.Partial
}

// fingerprint returns the manifest fingerprint of v (verifiers.Fingerprint)
// with, when it is judged, its judge's model, threshold and template. js
// may be nil: no verifier is judged.
func (js *judging) fingerprint(v *verifiers.Verifier) string {
	judge := ""
	if js.judges(v) {
		ps, _ := js.panelFor(v, &verifiers.Rubric{})
		j := ps[0]
		judge = "model=" + j.Model() + " threshold=" + strconv.FormatFloat(j.Threshold(), 'g', -1, 64) +
			" template=" + j.Template().Fingerprint()
		if js.multi {
			// Only runs with several judgements per check say more, so
			// that a one-judge run's fingerprints stay as they were.
			judge += " " + js.set.Text(ps)
		}
	}
	return verifiers.Fingerprint(v, judge)
}

// runJudge returns the judge settings that are part of the run's identity.
func (js *judging) runJudge(cfg *judge.Config) *results.RunJudge {
	if js == nil {
		return nil
	}
	url := cfg.BaseURL
	if url == "" {
		url = judge.DefaultBaseURL
	}
	rj := &results.RunJudge{Model: js.baseModel, URL: judge.RedactURL(url), Threshold: js.base.Threshold(),
		Template: js.base.Template().Version() + " sha256:" + js.base.Template().Fingerprint()}
	if js.multi {
		// Absent from one-judge runs, whose manifests stay as they were.
		rj.Models = js.models
		for _, m := range js.models {
			if u := js.set.URLs[m]; u != "" {
				if rj.URLs == nil {
					rj.URLs = map[string]string{}
				}
				rj.URLs[m] = judge.RedactURL(u)
			}
		}
		rj.Samples = js.set.Samples
		rj.Temperature = js.set.Temperature
		rj.Aggregate = js.set.Aggregate
		rj.Partial = "error"
		if js.set.Partial {
			rj.Partial = "ok"
		}
	}
	return rj
}

// judgeRow judges the rubric checks of one row, crs (the row's check rows,
// at index from in out.checks): a check whose judgements are all cached
// gets its verdict at once, the others become asks of out. It reports
// whether a check changed, so that the row's verdict must be computed
// again. In a run that writes the judgements table, each judged check
// appends its judgements' rows to out.judgements (an ask's are filled in
// by finish).
func (g *grader) judgeRow(v *verifiers.Verifier, checks []verifiers.Check, out *batchResults, row, from int) bool {
	js := g.plan.judging
	changed := false
	for i := range checks {
		c := &checks[i]
		if c.Rubric == nil || c.Status != verifiers.Pending {
			continue
		}
		cr := &out.checks[from+i]
		ps, err := js.panelFor(v, c.Rubric)
		if err != nil {
			cr.Status, cr.Detail, changed = verifiers.CheckError, "judge: "+err.Error(), true
			continue
		}
		if len(ps) == 0 {
			continue
		}
		p := judge.Prompt{Rubric: c.Rubric.Text, Instruction: c.Rubric.Instruction(&g.rollout),
			Output: g.rollout.Output, Context: promptContext(c.Rubric.Context)}
		at, all := len(out.subs), true
		for _, j := range ps {
			req, err := j.Request(p)
			if err != nil {
				out.subs = out.subs[:at]
				cr.Status, cr.Detail, changed = verifiers.CheckError, err.Error(), true
				break
			}
			for n := 0; n < js.set.Samples; n++ {
				s := sub{j: j, req: req.Sample(n, js.set.Temperature)}
				if vd, ok := j.Cached(s.req); ok {
					s.c = &call{done: closedChan, v: vd}
				} else {
					all = false
				}
				out.subs = append(out.subs, s)
			}
		}
		if cr.Status == verifiers.CheckError {
			continue
		}
		a := ask{row: row, check: from + i, from: at, n: len(out.subs) - at, jrow: -1, v: v}
		if js.multi {
			a.jrow = len(out.judgements)
			for k := 0; k < a.n; k++ {
				out.judgements = append(out.judgements, judgementRow(cr, &out.subs[at+k]))
			}
		}
		if all {
			js.apply(out, &a)
			out.subs = out.subs[:at]
			changed = true
			continue
		}
		out.asks = append(out.asks, a)
	}
	return changed
}

// judgementRow returns the row of one judgement of the check cr, its
// verdict still to be filled in (an empty status).
func judgementRow(cr *columnar.CheckRow, s *sub) columnar.JudgementRow {
	return columnar.JudgementRow{RolloutID: cr.RolloutID, TaskID: cr.TaskID, VerifierID: cr.VerifierID, CheckIndex: cr.CheckIndex,
		CheckID: cr.CheckID, JudgeModel: s.j.Model(), Sample: int32(s.req.SampleIndex()), Seed: s.req.Seed(), Temperature: s.req.Temperature()}
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

// apply gives the check of a, whose judgements have all finished, its
// verdict, and fills its rows of the judgements table. A check with one
// judgement is filled as it always was (applyVerdict). With several, its
// score is their aggregate, its status that score against the threshold
// (with majority: more than half pass), its issues and suggestion the
// first successful judgement's (the first judge's sample 0 unless it
// failed). A failed judgement makes the check an error, unless the panel
// is partial and some succeeded. The failure of a run's context is
// returned, and nothing is applied.
//
// A judged flag's row then reads raised for pass and clear for fail.
func (js *judging) apply(res *batchResults, a *ask) error {
	if err := js.applyCheck(res, a); err != nil {
		return err
	}
	if cr := &res.checks[a.check]; cr.Kind == columnar.KindFlag {
		cr.Status = results.FlagStatus(cr.Status)
	}
	return nil
}

// applyCheck is apply for a check's row.
func (js *judging) applyCheck(res *batchResults, a *ask) error {
	subs := res.subs[a.from : a.from+a.n]
	cr := &res.checks[a.check]
	var firstErr *judge.Error
	failed := 0
	for k := range subs {
		var je *judge.Error
		switch err := subs[k].c.err; {
		case err == nil:
		case errors.As(err, &je):
			failed++
			if firstErr == nil {
				firstErr = je
			}
		default: // the run's context ended: the batch is not written
			return err
		}
	}
	if a.jrow >= 0 {
		for k := range subs {
			fillJudgement(&res.judgements[a.jrow+k], &subs[k])
		}
	}
	if len(subs) == 1 {
		if firstErr != nil {
			cr.Status, cr.Detail = verifiers.CheckError, firstErr.Error()
		} else {
			applyVerdict(cr, subs[0].j, subs[0].c.v)
		}
		return nil
	}
	if failed == len(subs) || (failed > 0 && !js.set.Partial) {
		cr.Status, cr.Detail = verifiers.CheckError, fmt.Sprintf("%s (%d of %d judgements failed)", firstErr.Error(), failed, len(subs))
		return nil
	}
	j := subs[0].j
	scores := make([]float64, 0, len(subs))
	var best *judge.Verdict
	for k := range subs {
		if subs[k].c.err == nil {
			scores = append(scores, subs[k].c.v.Score)
			if best == nil {
				best = &subs[k].c.v
			}
		}
	}
	score := judge.Aggregate(js.set.Aggregate, scores, j.Threshold())
	pass := score >= j.Threshold()
	if js.set.Aggregate == "majority" {
		pass = score > 0.5
	}
	cr.Score, cr.ScoreValid = score, true
	cr.Issues, cr.IssuesValid = append([]string{}, best.Issues...), true
	cr.Suggestion = columnar.Str(best.Suggestion)
	cr.Status = verifiers.CheckFail
	cmp := "<"
	if pass {
		cr.Status, cmp = verifiers.CheckPass, ">="
	}
	models := make([]string, 0, 2)
	for k := 0; k < len(subs); k += js.set.Samples {
		models = append(models, subs[k].j.Model())
	}
	what := fmt.Sprintf("judges %s", strings.Join(models, ", "))
	if len(models) == 1 {
		what = "judge " + models[0]
	}
	if js.set.Samples > 1 {
		what += fmt.Sprintf(" x %d samples", js.set.Samples)
	}
	limit := "threshold " + strconv.FormatFloat(j.Threshold(), 'g', -1, 64)
	if js.set.Aggregate == "majority" {
		limit = "0.5" // more than half
		if !pass {
			cmp = "<="
		} else {
			cmp = ">"
		}
	}
	cr.Detail = fmt.Sprintf("%s: %s score %s %s %s (%d judgements", what, js.set.Aggregate,
		strconv.FormatFloat(score, 'g', -1, 64), cmp, limit, len(scores))
	if failed > 0 {
		cr.Detail += fmt.Sprintf("; %d of %d failed", failed, len(subs))
	}
	cr.Detail += ")"
	return nil
}

// fillJudgement fills the verdict of one judgement's row.
func fillJudgement(jr *columnar.JudgementRow, s *sub) {
	if s.c.err != nil {
		jr.Status, jr.Error = verifiers.CheckError, columnar.Str(s.c.err.Error())
		return
	}
	v := &s.c.v
	jr.Score, jr.ScoreValid = v.Score, true
	jr.Status = verifiers.CheckFail
	if v.Pass(s.j.Threshold()) {
		jr.Status = verifiers.CheckPass
	}
	if len(v.Issues) > 0 {
		jr.Issues = columnar.Str(strings.Join(v.Issues, "\n"))
	}
	if v.Suggestion != "" {
		jr.Suggestion = columnar.Str(v.Suggestion)
	}
}

// start starts the asks of a batch, in input order: a judgement already
// asked or cached is shared, the budget decides the others, a check's
// judgements all or none. The first request to a server the cache cannot
// answer is preceded by the server's probe.
func (js *judging) start(ctx context.Context, res *batchResults) error {
	for i := range res.asks {
		a := &res.asks[i]
		subs := res.subs[a.from : a.from+a.n]
		need := 0
		for k := range subs {
			s := &subs[k]
			if s.c != nil {
				continue // cached when the row was graded
			}
			s.key = s.req.Key()
			if c := js.inflight[s.key]; c != nil {
				s.c = c
				continue
			}
			if v, ok := s.j.Cached(s.req); ok {
				s.c = &call{done: closedChan, v: v}
				continue
			}
			need++
		}
		if need == 0 {
			continue
		}
		if !js.budget.Take(need) {
			// The budget is spent in input order: once a check does
			// not fit, no later one is judged.
			a.pending = true
			continue
		}
		for k := range subs {
			s := &subs[k]
			if s.c != nil {
				continue
			}
			if server := s.j.Server(); !js.probed[server] {
				if err := s.j.Probe(ctx); err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					return &ProbeError{Err: err}
				}
				js.probed[server] = true
			}
			c := &call{done: make(chan struct{})}
			s.c, s.owner = c, true
			js.inflight[s.key] = c
			// The place in the server's queue is taken here, in input
			// order (see remoting.send).
			turn := s.j.Enter()
			js.asks.Add(1)
			go func(j *judge.Judge, req *judge.Request) {
				defer js.asks.Done()
				c.v, c.err = j.AskInTurn(ctx, turn, req)
				close(c.done)
			}(s.j, s.req)
		}
	}
	return nil
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// waiting returns the done channel of a batch's first unfinished
// judgement, or nil when every one has finished.
func (js *judging) waiting(res *batchResults) <-chan struct{} {
	for i := range res.asks {
		a := &res.asks[i]
		if a.pending {
			continue
		}
		for k := a.from; k < a.from+a.n; k++ {
			if c := res.subs[k].c; c != nil {
				select {
				case <-c.done:
				default:
					return c.done
				}
			}
		}
	}
	return nil
}

// release forgets the judgements of res that its asks started, so that a
// later ask of the same key asks again.
func (js *judging) release(res *batchResults) {
	for k := range res.subs {
		if s := &res.subs[k]; s.owner && js.inflight[s.key] == s.c {
			delete(js.inflight, s.key)
		}
	}
}

// finish applies the answers of a batch's finished asks to its results
// and computes the verdicts of the rows they changed. A failed judgement
// makes its check an error (and so the rollout an error, never a score);
// a cancelled one returns the context's error.
func (js *judging) finish(res *batchResults, buf []verifiers.Check) ([]verifiers.Check, error) {
	js.release(res)
	dropped := false
	for i := range res.asks {
		a := &res.asks[i]
		if a.pending {
			if a.jrow >= 0 {
				dropped = true // its rows keep an empty status
			}
			continue
		}
		if err := js.apply(res, a); err != nil {
			return buf, err
		}
	}
	if dropped {
		// The judgements of checks left pending by the budget were not
		// made: their rows go.
		res.judgements = slices.DeleteFunc(res.judgements, func(r columnar.JudgementRow) bool { return r.Status == "" })
	}
	// Rows are in order in the results; each row's checks follow the
	// previous row's.
	at := 0
	rowsChanged := map[int]*verifiers.Verifier{}
	for i := range res.asks {
		if !res.asks[i].pending {
			rowsChanged[res.asks[i].row] = res.asks[i].v
		}
	}
	var tbuf []verifiers.Check
	for r := range res.rewards {
		rw := &res.rewards[r]
		n := rw.CheckRows()
		if v, ok := rowsChanged[r]; ok {
			buf = results.Score(rw, res.checks[at:at+n], v.Reward, buf)
			results.SetFlags(rw, res.checks[at:at+n])
			if v.Turns {
				tbuf = results.SetTurnRewards(rw, buf, v.TurnReward, tbuf)
			}
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

func (js *judging) summary() *results.JudgeSummary {
	if js == nil {
		return nil
	}
	s := js.base.Stats()
	return &results.JudgeSummary{Probes: s.Probes, Requests: s.Requests, CacheHits: s.CacheHits, Retries: s.Retries, Failures: s.Failures,
		PromptTokens: s.PromptTokens, CompletionTokens: s.CompletionTokens, PendingBudget: js.budget.Pending()}
}

// askNow judges a batch's asks and waits for them, for RowGrader, whose
// calls run on many goroutines at once: the fields a run's writer owns are
// taken under js.shared. The asks themselves run without the caller's
// cancellation, so that a judgement shared by two requests is not failed
// by one client leaving; each is bounded by the judge's own timeout. The
// verdicts are made durable before the rows are returned.
func (js *judging) askNow(ctx context.Context, res *batchResults, buf []verifiers.Check) ([]verifiers.Check, error) {
	if err := js.probeFor(ctx, res); err != nil {
		return buf, err
	}
	js.shared.Lock()
	err := js.start(context.WithoutCancel(ctx), res)
	js.shared.Unlock()
	if err != nil {
		return buf, err
	}
	for k := range res.subs {
		if c := res.subs[k].c; c != nil {
			select {
			case <-c.done:
			case <-ctx.Done():
				// The asks finish on their own, bounded by the judge's
				// timeout; a later request for one of them asks again.
				js.shared.Lock()
				js.release(res)
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

// probeFor probes, for askNow, the servers of the judgements the cache
// cannot answer, each unless a probe of it already succeeded. It runs
// outside js.shared, so a slow or failing probe holds up only the calls
// that need a probe, each for as long as its own context allows; a failed
// probe is tried again by the next call.
func (js *judging) probeFor(ctx context.Context, res *batchResults) error {
	for k := range res.subs {
		s := &res.subs[k]
		if s.c != nil {
			continue
		}
		server := s.j.Server()
		js.shared.Lock()
		probed := js.probed[server]
		js.shared.Unlock()
		if probed {
			continue
		}
		if _, ok := s.j.Cached(s.req); ok {
			continue
		}
		if err := js.probe(ctx, s.j); err != nil {
			return err
		}
	}
	return nil
}

// probe probes j's server unless a probe of it succeeded, one call at a
// time.
func (js *judging) probe(ctx context.Context, j *judge.Judge) error {
	js.probeMu.Lock()
	defer js.probeMu.Unlock()
	js.shared.Lock()
	probed := js.probed[j.Server()]
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
	js.probed[j.Server()] = true
	js.shared.Unlock()
	return nil
}
