package pipeline

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
)

// RowConfig describes a RowGrader. Verifiers are needed; every other field
// has a working zero value.
type RowConfig struct {
	// Verifiers are the verifiers to bind tasks to.
	Verifiers []*verifiers.Verifier
	// Tasks is the tasks table (LoadTasks), if any.
	Tasks inputs.Tasks
	// Fields maps rollout fields to input columns.
	Fields columnar.FieldNames
	// SourceFile is written in each reward row's source_file and names
	// rows without a rollout id (SourceFile#row).
	SourceFile string
	// Timeout bounds one verifier call as Config.Timeout does (0: 10s;
	// negative: no limit): a row whose verifier runs longer has status
	// error, kind verifier, "timed out after D".
	Timeout time.Duration
	// MaxStuck is the number of verifier calls that may be stuck past the
	// timeout at once; while that many are, Grade refuses with a
	// *StuckError (0: GOMAXPROCS).
	MaxStuck int
	// Judge, when set, judges the rubric checks of the verifiers that are
	// Judged, as Config.Judge does in a run (with no request budget); nil
	// leaves them pending. A verdict found in the cache is the one a run
	// would write.
	Judge *judge.Config
	// IndexPerByte and IndexFloor, when set, bound the index of each JSON
	// document a row is parsed into (jsonview.Doc.LimitIndex): a row
	// denser in values has status error, kind input. A server bounds its
	// memory so.
	IndexPerByte, IndexFloor int
	// JudgePanel is Config.JudgePanel.
	JudgePanel JudgePanel
	// Remote is Config.Remote (its budget aside: a RowGrader has none).
	Remote *RemoteConfig
	// Health is Config.Health.
	Health bool
}

// RowGrader grades rows handed to it one batch at a time, outside a run,
// with the same per-row code as Run: a row gets the same verdict, checks
// and reward rows as it would in a file graded by Run with the same
// verifiers, tasks, fields, keep columns, source file name and timeout. It
// is safe for concurrent use; each call takes a grader (its reusable
// documents and buffers) from a pool.
//
// Verifier calls are timed by Run's watchdog (see pool): each call grades
// on a goroutine of its own, watched while it runs; when a verifier runs
// past the timeout, a new goroutine with a new grader carries the call on
// from the row after it (the row itself a timeout error), and the stuck
// goroutine is abandoned (it exits if its verifier ever returns). The
// supervisor runs only while calls are in flight, so an idle RowGrader
// holds no goroutine.
type RowGrader struct {
	base     plan
	unit     inputs.Unit
	graders  sync.Pool
	vs       []*verifiers.Verifier
	watch    *pool // nil: calls are not timed
	maxStuck int
	// indexPerByte and indexFloor are RowConfig's.
	indexPerByte, indexFloor int
	// watchingNow, under watch.mu, says the supervisor runs.
	watchingNow bool
}

// StuckError is Grade's answer while too many verifier calls are stuck
// past the timeout: the goroutines running them cannot be stopped, so no
// more are started until some return.
type StuckError struct {
	Stuck, Limit int
	Timeout      time.Duration
}

func (e *StuckError) Error() string {
	return fmt.Sprintf("%d verifier calls are stuck past the timeout of %s (limit %d)", e.Stuck, e.Timeout, e.Limit)
}

// NewRowGrader binds the verifiers to their tasks. Two verifiers binding
// one task, or sharing an id, is a ConfigError.
func NewRowGrader(cfg RowConfig) (*RowGrader, error) {
	pp, err := newPlan(planConfig{fields: cfg.Fields, tasks: cfg.Tasks, bind: true, verifiers: cfg.Verifiers})
	if err != nil {
		return nil, err
	}
	p := *pp
	p.keep, p.health, p.flags = []string{}, cfg.Health, p.flags || cfg.Health
	if p.judging, err = newJudging(cfg.Judge, cfg.JudgePanel, cfg.Verifiers, 0); err != nil {
		return nil, err
	}
	if cfg.Remote != nil {
		rc := *cfg.Remote
		rc.MaxRequests = 0
		cfg.Remote = &rc
	}
	if p.remoting, err = newRemoting(cfg.Remote, cfg.Verifiers); err != nil {
		if p.judging != nil {
			p.judging.base.Close()
		}
		return nil, err
	}
	p.setAskers()
	g := &RowGrader{base: p, unit: inputs.Unit{Path: cfg.SourceFile}, vs: cfg.Verifiers, maxStuck: cfg.MaxStuck, indexPerByte: cfg.IndexPerByte, indexFloor: cfg.IndexFloor}
	if g.maxStuck <= 0 {
		g.maxStuck = runtime.GOMAXPROCS(0)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Timeout > 0 {
		g.watch = &pool{timeout: cfg.Timeout, base: time.Now()}
	}
	g.graders.New = func() any {
		w := &rowWorker{rg: g, g: grader{timedOut: -1}}
		w.g.limitIndex(g.indexPerByte, g.indexFloor)
		if g.watch != nil {
			w.g.watch, w.g.pool = &w.watch, g.watch
			w.watch.g = &w.g
			w.watch.takeover = w.takeover
		}
		return w
	}
	return g, nil
}

// rowWorker is a grader with its watch state, and the call it grades.
type rowWorker struct {
	rg    *RowGrader
	g     grader
	plan  plan
	watch worker
	call  *rowCall
}

// rowCall is one Grade call: its batch and results, handed from a stuck
// worker to its replacement, and done, which receives the worker that
// finished it.
type rowCall struct {
	b        *columnar.Batch
	res      batchResults
	done     chan *rowWorker
	panicked any               // a panic of the grading code, raised again by Grade
	buf      []verifiers.Check // rescoring after the judge
}

var rowCalls = sync.Pool{New: func() any { return &rowCall{done: make(chan *rowWorker, 1)} }}

// run grades the call from row from on.
func (w *rowWorker) run(from int) {
	defer func() {
		// A verifier's panic is its row's error; this is one of the
		// grading code, handed to the caller's goroutine. (An abandoned
		// worker's runtime.Goexit recovers nothing and sends nothing.)
		if p := recover(); p != nil {
			w.call.panicked = p
			w.call.done <- w
		}
	}()
	w.g.gradeBatch(&w.rg.unit, w.call.b, &w.call.res, from)
	w.call.done <- w
}

// takeover starts a new worker on the call of w, whose verifier is stuck
// on its current row (see worker.takeover).
func (w *rowWorker) takeover() *worker {
	nw := w.rg.graders.Get().(*rowWorker)
	nw.plan = w.plan
	nw.g.plan = &nw.plan
	nw.call = w.call
	row := w.g.row
	nw.g.timedOut = row
	go nw.run(row)
	return &nw.watch
}

// Grade grades the rows of b in order and calls each with every row's
// reward row and check rows, which are valid only during the call. keep
// names the metadata columns copied into the reward rows (nil: none).
// Grading stops at the first error each returns, which Grade returns.
// While too many verifier calls are stuck, it returns a *StuckError and
// grades nothing. With a judge, the batch's rubric checks that the cache
// cannot answer are asked before each is called; ctx bounds that wait, and
// a failed probe of the judge's server is returned as a *ProbeError.
func (g *RowGrader) Grade(ctx context.Context, b *columnar.Batch, keep []string, each func(rw *columnar.RewardRow, checks []columnar.CheckRow) error) error {
	return g.grade(ctx, b, keep, each, nil)
}

// GradeJudged is Grade that also hands each rollout the rows of its
// single judgements (columnar.JudgementRow), when some rubric check gets
// more than one (none otherwise).
func (g *RowGrader) GradeJudged(ctx context.Context, b *columnar.Batch, keep []string,
	each func(rw *columnar.RewardRow, checks []columnar.CheckRow, judgements []columnar.JudgementRow) error) error {
	return g.grade(ctx, b, keep, nil, each)
}

func (g *RowGrader) grade(ctx context.Context, b *columnar.Batch, keep []string, each func(rw *columnar.RewardRow, checks []columnar.CheckRow) error,
	eachJ func(rw *columnar.RewardRow, checks []columnar.CheckRow, judgements []columnar.JudgementRow) error) error {
	if g.watch != nil {
		if n := int(g.watch.stuck.Load()); n >= g.maxStuck {
			return &StuckError{Stuck: n, Limit: g.maxStuck, Timeout: g.watch.timeout}
		}
	}
	w := g.graders.Get().(*rowWorker)
	w.plan = g.base
	if keep != nil {
		w.plan.keep = keep
	}
	w.g.plan = &w.plan
	c := rowCalls.Get().(*rowCall)
	c.b = b
	c.res.reset()
	w.call = c
	if g.watch == nil {
		w.g.gradeBatch(&g.unit, b, &c.res, 0)
	} else {
		g.watching(&w.watch, true)
		go w.run(0)
		w = <-c.done // w, or the worker that took the call over
		g.watching(&w.watch, false)
		if p := c.panicked; p != nil {
			c.panicked = nil
			panic(p)
		}
	}
	w.call = nil
	w.g.timedOut = -1
	w.g.trim(maxPooledDoc)
	g.graders.Put(w)
	defer func() {
		c.res.reset()
		c.b = nil
		rowCalls.Put(c)
	}()
	for _, a := range g.base.askers {
		if a.has(&c.res) {
			var err error
			if c.buf, err = a.askNow(ctx, &c.res, c.buf); err != nil {
				return err
			}
		}
	}
	// A row has one check row per check it counts (none on an error),
	// then one per flag (CheckRows).
	checks := c.res.checks
	jfrom := 0
	for i := range c.res.rewards {
		rw := &c.res.rewards[i]
		n := rw.CheckRows()
		var err error
		if eachJ != nil {
			var jr []columnar.JudgementRow
			if i < len(c.res.jends) {
				jr = c.res.judgements[jfrom:c.res.jends[i]:c.res.jends[i]]
				jfrom = c.res.jends[i]
			}
			err = eachJ(rw, checks[:n:n], jr)
		} else {
			err = each(rw, checks[:n:n])
		}
		if err != nil {
			return err
		}
		checks = checks[n:]
	}
	return nil
}

// maxPooledDoc bounds the index a pooled grader keeps from one document:
// after a rollout of a large world, a server does not hold its index
// until the pool is emptied.
const maxPooledDoc = 4 << 20

// limitIndex bounds the index of the grader's documents (see
// jsonview.Doc.LimitIndex).
func (g *grader) limitIndex(perByte, floor int) {
	if perByte == 0 {
		return
	}
	for _, d := range []*jsonview.Doc{&g.line, &g.final, &g.initial, &g.log, &g.meta, &g.setMeta} {
		d.LimitIndex(perByte, floor)
	}
}

// trim drops the documents and buffers that hold more than max bytes.
func (g *grader) trim(max int) {
	for _, d := range []*jsonview.Doc{&g.line, &g.final, &g.initial, &g.log, &g.meta, &g.setMeta} {
		d.Shrink(max)
	}
	if cap(g.metaBuf) > max {
		g.metaBuf = nil
	}
	if cap(g.setBuf) > max {
		g.setBuf = nil
	}
}

// watching adds w to the watched workers, or removes it, and starts the
// supervisor when it is not running.
func (g *RowGrader) watching(w *worker, add bool) {
	p := g.watch
	p.mu.Lock()
	defer p.mu.Unlock()
	if !add {
		for i, l := range p.live {
			if l == w {
				last := len(p.live) - 1
				p.live[i], p.live[last] = p.live[last], nil
				p.live = p.live[:last]
				break
			}
		}
		return
	}
	p.live = append(p.live, w)
	if !g.watchingNow {
		g.watchingNow = true
		go g.supervise()
	}
}

// supervise checks the calls in flight, and returns once there are none
// (within a tenth of a second: a server's goroutines end soon after its
// last request).
func (g *RowGrader) supervise() {
	p := g.watch
	t := time.NewTicker(min(p.tick(), 100*time.Millisecond))
	defer t.Stop()
	for range t.C {
		p.mu.Lock()
		p.sweep()
		idle := len(p.live) == 0
		if idle {
			g.watchingNow = false
		}
		p.mu.Unlock()
		if idle {
			return
		}
	}
}

// Stuck returns the number of verifier calls stuck past the timeout now.
func (g *RowGrader) Stuck() int {
	if g.watch == nil {
		return 0
	}
	return int(g.watch.stuck.Load())
}

// Flags reports whether a verifier of the grader may add flags: its rows
// then have the columns of a run with flags (columnar.PartOptions.Flags).
func (g *RowGrader) Flags() bool { return g.base.flags }

// Turns reports whether a verifier of the grader scores turns: its rows
// then have the columns of a run that scores turns
// (columnar.PartOptions.Turns).
func (g *RowGrader) Turns() bool { return g.base.turns }

// Verifiers describes the grader's verifiers as manifest.json does, in
// the order they were given.
func (g *RowGrader) Verifiers() []results.ManifestVerifier {
	out := make([]results.ManifestVerifier, len(g.vs))
	for i, v := range g.vs {
		out[i] = results.ManifestVerifier{ID: v.ID, Name: v.Name, Tasks: v.Tasks, Source: v.Source, Fingerprint: g.base.judging.fingerprint(v)}
	}
	return out
}

// Close releases the judge's verdict cache, if any, after making it
// durable. The RowGrader must not be used after.
func (g *RowGrader) Close() error {
	// Asks left running by clients that went away end first; the answers
	// are made durable before the caches close.
	for _, a := range g.base.askers {
		a.wait()
	}
	err := g.base.syncAskers()
	if cErr := g.base.closeAskers(); err == nil {
		err = cErr
	}
	return err
}

// RemoteSummary counts the requests to remote verifiers of every Grade
// call so far (nil: none is bound).
func (g *RowGrader) RemoteSummary() *results.RemoteSummary {
	return g.base.remoting.summary()
}

// JudgeSummary counts the judging of every Grade call so far (nil: no
// judge).
func (g *RowGrader) JudgeSummary() *results.JudgeSummary {
	return g.base.judging.summary()
}
