package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	callpkg "github.com/gavelhq/gavel/judge/call"
	"github.com/gavelhq/gavel/remote"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
)

// RemoteConfig configures a run's remote verifiers (verifiers.Verifier.Remote).
type RemoteConfig struct {
	// Remote configures the caller: cache directory, --allow-impure,
	// retries, HTTP client.
	remote.Config
	// MaxRequests is the budget of requests (0: no limit), counted in
	// requests (a batch is one) and spent in input order: the rollouts
	// beyond it stay pending, and a later run answers them from the
	// cache and asks the next ones.
	MaxRequests int64
	// Repeats asks each remote verifier this many times per rollout
	// (--verify-repeats; 0 or 1: once), each asking under a cache key of
	// its own. Answers that disagree make the rollout an error of kind
	// verifier, never a score, and count as flaky.
	Repeats int
}

// remoting asks a run's remote verifiers, with the judge's discipline and
// in the judge's shape (see judging): workers build each rollout's request
// body and answer it from the cache when they can, leaving a pending
// placeholder check and an rask otherwise; the writer, in input order,
// spends the budget, groups a verifier's rollouts into its batches, probes
// each service before its first request, and starts the requests; the
// batch waits in the writer's FIFO until they have finished, and finish
// puts each answer's checks in the place of its placeholder.
type remoting struct {
	caller  *remote.Caller
	clients map[*verifiers.Verifier]*remote.Client

	// Owned by the writer (taken under shared by RowGrader calls).
	budget   callpkg.Budget
	probed   map[*remote.Client]bool
	inflight map[callpkg.Key]*rcall
	asks     sync.WaitGroup

	shared  sync.Mutex
	probeMu sync.Mutex

	// repeats is RemoteConfig.Repeats (at least 1); flaky counts, per
	// verifier, the rollouts whose answers disagreed.
	repeats int
	flaky   map[*verifiers.Verifier]*atomic.Int64
}

// rcall is one rollout's answer asked of a service, shared by the rasks
// whose bodies have its key.
type rcall struct {
	done chan struct{}
	a    remote.Answer
	err  error
}

// rask is a rollout of a remote verifier left to the writer: reward row
// row of the batch's results, whose one placeholder check row is at index
// check.
type rask struct {
	row, check int
	v          *verifiers.Verifier
	cl         *remote.Client
	body       []byte
	key        callpkg.Key
	c          *rcall
	owner      bool
	pending    bool // left by the budget
}

// newRemoting returns the run's remoting, or nil when no verifier in vs is
// remote. Verifiers refused before any request (a gavel-protocol service
// not declared pure without AllowImpure, an unset token) are a
// ConfigError.
func newRemoting(cfg *RemoteConfig, vs []*verifiers.Verifier) (*remoting, error) {
	var remotes []*verifiers.Verifier
	for _, v := range vs {
		if v.Remote != nil {
			remotes = append(remotes, v)
		}
	}
	if len(remotes) == 0 {
		return nil, nil
	}
	if cfg == nil {
		cfg = &RemoteConfig{}
	}
	caller, err := remote.New(cfg.Config)
	if err != nil {
		return nil, &inputs.ConfigError{Field: "Remote", Msg: err.Error()}
	}
	rs := &remoting{caller: caller, clients: map[*verifiers.Verifier]*remote.Client{}, budget: callpkg.NewBudget(cfg.MaxRequests),
		probed: map[*remote.Client]bool{}, inflight: map[callpkg.Key]*rcall{}, repeats: max(cfg.Repeats, 1),
		flaky: map[*verifiers.Verifier]*atomic.Int64{}}
	for _, v := range remotes {
		rs.flaky[v] = &atomic.Int64{}
		cl, err := caller.For(v)
		if err != nil {
			caller.Close()
			return nil, &inputs.ConfigError{Field: "Remote", Msg: err.Error()}
		}
		rs.clients[v] = cl
	}
	return rs, nil
}

// impure returns the ids of the remote verifiers asked although not
// declared stateless, sorted (nil: none). Under --allow-impure a NeMo Gym
// verifier counts once its server said so (its probe).
func (rs *remoting) impure() []string {
	if rs == nil {
		return nil
	}
	var ids []string
	for v, cl := range rs.clients {
		if cl.Impure() {
			ids = append(ids, v.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// mayReuse reports whether rows of v may be taken from an earlier run: not
// when v is a remote verifier that is or may turn out impure.
func (rs *remoting) mayReuse(v *verifiers.Verifier, allowImpure bool) bool {
	if rs == nil || v.Remote == nil {
		return true
	}
	cl := rs.clients[v]
	if cl == nil || cl.Impure() {
		return false
	}
	// A NeMo Gym server says whether it is stateless only when probed;
	// under --allow-impure it may not be.
	return !(allowImpure && v.Remote.Protocol == remote.ProtocolNemoGym)
}

// askRow answers the remote verifier v of the rollout the grader decoded:
// from the cache (its checks and verdict), or with one pending placeholder
// check and an rask of out for the writer. row and check are the indexes
// the row's reward and first check rows will have in out.
func (g *grader) askRow(v *verifiers.Verifier, out *batchResults, row, check int) (verifiers.Verdict, []verifiers.Check) {
	rs := g.plan.remoting
	cl := rs.clients[v]
	g.remoteBody = cl.AppendBody(g.remoteBody[:0], &g.rollout)
	key := cl.Key(g.remoteBody)
	g.checks.Reset()
	if rs.repeats > 1 {
		return g.askRepeats(v, cl, out, row, check, key)
	}
	if a, ok := cl.Cached(key); ok {
		checks := a.AppendChecks(g.remoteChecks[:0], cl.Settings().Threshold)
		g.remoteChecks = checks
		return scoreAnswer(v, &a, checks), checks
	}
	out.rasks = append(out.rasks, rask{row: row, check: check, v: v, cl: cl, body: slices.Clone(g.remoteBody), key: key})
	g.remoteChecks = append(g.remoteChecks[:0], placeholder(v, cl))
	return verifiers.ScoreWith(v.Reward, g.remoteChecks, nil), g.remoteChecks
}

// askRepeats is askRow for a run that asks each rollout rs.repeats times
// (RemoteConfig.Repeats): answered now when every asking is cached, else
// left to the writer as rs.repeats consecutive rasks of the row.
func (g *grader) askRepeats(v *verifiers.Verifier, cl *remote.Client, out *batchResults, row, check int, key callpkg.Key) (verifiers.Verdict, []verifiers.Check) {
	rs := g.plan.remoting
	keys := make([]callpkg.Key, rs.repeats)
	answers := make([]remote.Answer, 0, rs.repeats)
	for k := range keys {
		keys[k] = key
		if k > 0 {
			keys[k] = cl.RepeatKey(g.remoteBody, k)
		}
		if a, ok := cl.Cached(keys[k]); ok && len(answers) == k {
			answers = append(answers, a)
		}
	}
	if len(answers) == rs.repeats {
		vd, checks := rs.agree(v, cl, answers, g.remoteChecks[:0])
		g.remoteChecks = checks
		return vd, checks
	}
	body := slices.Clone(g.remoteBody)
	for _, k := range keys {
		out.rasks = append(out.rasks, rask{row: row, check: check, v: v, cl: cl, body: body, key: k})
	}
	g.remoteChecks = append(g.remoteChecks[:0], placeholder(v, cl))
	return verifiers.ScoreWith(v.Reward, g.remoteChecks, nil), g.remoteChecks
}

// agree returns the verdict and checks of a rollout's answers, one per
// asking: the first answer's when they all give the same verdict, else a
// check in error saying how they disagree (remote.Disagree), counted as
// flaky. dst is reused for the checks.
func (rs *remoting) agree(v *verifiers.Verifier, cl *remote.Client, answers []remote.Answer, dst []verifiers.Check) (verifiers.Verdict, []verifiers.Check) {
	th := cl.Settings().Threshold
	vds := make([]verifiers.Verdict, len(answers))
	checks := answers[0].AppendChecks(dst[:0], th) // kept when they agree
	vds[0] = scoreAnswer(v, &answers[0], checks)
	var scratch []verifiers.Check
	for i := 1; i < len(answers); i++ {
		scratch = answers[i].AppendChecks(scratch[:0], th)
		vds[i] = scoreAnswer(v, &answers[i], scratch)
	}
	why := remote.Disagree(vds)
	if why == "" {
		return vds[0], checks
	}
	rs.flaky[v].Add(1)
	ch := placeholder(v, cl)
	ch.Status, ch.Detail = verifiers.Error, why
	checks = append(checks[:0], ch)
	return verifiers.ScoreWith(v.Reward, checks, nil), checks
}

// placeholder is the pending check of a rollout whose service has not
// answered yet (and stays so when the budget leaves it); a failed request
// turns it into a check in error (retryRow knows both by id and label).
func placeholder(v *verifiers.Verifier, cl *remote.Client) verifiers.Check {
	return verifiers.Check{ID: remoteCheckID, Label: remoteCheckLabel(v), Required: true, Status: verifiers.Pending,
		Detail: "not asked of " + cl.Server() + " (the request budget ran out)"}
}

// remoteCheckID is the id of placeholder's check.
const remoteCheckID = "remote"

// remoteLabelPrefix begins the label of placeholder's check, followed by
// the verifier's id.
const remoteLabelPrefix = "remote verifier "

// remoteCheckLabel is the label of placeholder's check for v.
func remoteCheckLabel(v *verifiers.Verifier) string { return remoteLabelPrefix + v.ID }

// isPlaceholder reports whether a check row of v is placeholder's check,
// pending or turned into an error, without building its label.
func isPlaceholder(c *columnar.CheckRow, v *verifiers.Verifier) bool {
	return c.CheckID == remoteCheckID && len(c.Label) == len(remoteLabelPrefix)+len(v.ID) &&
		strings.HasPrefix(c.Label, remoteLabelPrefix) && strings.HasSuffix(c.Label, v.ID)
}

// scoreAnswer returns the verdict of an answer's checks: with the
// verifier's own reward formula, else, for a single reward, with the
// reward itself as the rollout's reward (checks[0], the check "reward",
// holds it as its score). That is the formula checks[0].score, computed
// without evaluating CEL for every rollout, which cost a quick remote
// verifier's rollout more than the rest of its grading.
func scoreAnswer(v *verifiers.Verifier, a *remote.Answer, checks []verifiers.Check) verifiers.Verdict {
	if !a.Single() || v.Remote.RewardSet {
		return verifiers.ScoreWith(v.Reward, checks, nil)
	}
	vd := verifiers.ScoreWith(verifiers.Fraction(), checks, nil)
	if vd.HasReward {
		vd.Reward = checks[0].Score
	}
	return vd
}

// start starts the requests of a batch's rasks, in input order: an answer
// cached or asked already is shared, the budget decides the others, and a
// verifier's rollouts go in requests of its batch size, consecutive ones
// together. The first request to a service is preceded by its probe (NeMo
// Gym: GET /reverify_mode), or is itself the probe, sent alone (gavel):
// its failure to reach the service stops the run.
func (rs *remoting) start(ctx context.Context, res *batchResults) error {
	var group []*rask
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		g := group
		group = nil
		return rs.send(ctx, g)
	}
	for i := range res.rasks {
		a := &res.rasks[i]
		if c := rs.inflight[a.key]; c != nil {
			a.c = c
			continue
		}
		if an, ok := a.cl.Cached(a.key); ok {
			a.c = &rcall{done: closedChan, a: an}
			continue
		}
		if len(group) > 0 && (group[0].cl != a.cl || len(group) == a.cl.Settings().Batch) {
			if err := flush(); err != nil {
				return err
			}
		}
		if len(group) == 0 && !rs.budget.Take(1) {
			a.pending = true
			continue
		}
		c := &rcall{done: make(chan struct{})}
		a.c, a.owner = c, true
		rs.inflight[a.key] = c
		group = append(group, a)
	}
	return flush()
}

// send asks the rollouts of one request.
func (rs *remoting) send(ctx context.Context, group []*rask) error {
	cl := group[0].cl
	bodies := make([][]byte, len(group))
	keys := make([]callpkg.Key, len(group))
	for i, a := range group {
		bodies[i], keys[i] = a.body, a.key
	}
	settle := func(as []remote.Answer, err error) {
		for i, a := range group {
			if err != nil {
				a.c.err = err
			} else {
				a.c.a = as[i]
			}
			close(a.c.done)
		}
	}
	if !rs.probed[cl] {
		if err := cl.Probe(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &ProbeError{Err: err}
		}
		if cl.Settings().Protocol == remote.ProtocolGavel {
			// The first request is the probe: sent alone, and a service
			// that cannot be reached, refuses the token or has no such
			// route stops the run. Any other failure is its rollouts'
			// (a server error or a timeout after the retries, a refusal,
			// an answer that is not one): their rows are errors, as any
			// request's are, and the run goes on.
			as, err := cl.Ask(ctx, bodies, keys)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				var e *remote.Error
				if errors.As(err, &e) && probeFailure(e.Kind) {
					return &ProbeError{Err: err}
				}
			}
			rs.probed[cl] = true
			settle(as, err)
			return nil
		}
		rs.probed[cl] = true
	}
	// The place in the client's queue is taken here, in input order: a
	// later batch's requests, hanging, cannot take every slot ahead of an
	// earlier one's whose goroutine happened to run late.
	turn := cl.Enter()
	rs.asks.Add(1)
	go func() {
		defer rs.asks.Done()
		settle(cl.AskInTurn(ctx, turn, bodies, keys))
	}()
	return nil
}

// probeFailure reports whether a failure of a gavel service's first
// request says that the service is not there for the run: it cannot be
// reached, refuses the token, has no such route or answers with a status
// no service of the protocol gives.
func probeFailure(k remote.Kind) bool {
	switch k {
	case remote.KindConnection, remote.KindAuth, remote.KindNotFound, remote.KindStatus:
		return true
	}
	return false
}

// waiting returns the done channel of a batch's first unfinished
// remote request, or nil.
func (rs *remoting) waiting(res *batchResults) <-chan struct{} {
	for i := range res.rasks {
		a := &res.rasks[i]
		if a.pending || a.c == nil {
			continue
		}
		select {
		case <-a.c.done:
		default:
			return a.c.done
		}
	}
	return nil
}

// release forgets the requests the batch's rasks started.
func (rs *remoting) release(res *batchResults) {
	for i := range res.rasks {
		if a := &res.rasks[i]; a.owner && rs.inflight[a.key] == a.c {
			delete(rs.inflight, a.key)
		}
	}
}

// finish puts the answers of a batch's finished rasks in the place of
// their placeholder checks and computes those rows' verdicts. A failed
// request makes its rollouts' placeholder an error check (the rollout an
// error, never a score); a rollout the service refused or answered in the
// wrong shape likewise, with the reason; a cancelled request returns the
// context's error. Rows left by the budget keep their pending placeholder.
func (rs *remoting) finish(res *batchResults, buf []verifiers.Check) ([]verifiers.Check, error) {
	rs.release(res)
	for i := range res.rasks {
		a := &res.rasks[i]
		if !a.pending && a.c != nil && a.c.err != nil {
			var e *remote.Error
			if !errors.As(a.c.err, &e) {
				return buf, a.c.err // the run's context ended
			}
		}
	}
	old := res.checks
	checks := make([]columnar.CheckRow, 0, len(old)+len(res.rasks))
	at, next := 0, 0
	for r := range res.rewards {
		rw := &res.rewards[r]
		n := rw.CheckRows()
		if next < len(res.rasks) && res.rasks[next].row == r {
			// The row's rasks: one, or one per repeat, consecutive.
			end := next + 1
			for end < len(res.rasks) && res.rasks[end].row == r {
				end++
			}
			group := res.rasks[next:end]
			next = end
			a := &group[0]
			if !slices.ContainsFunc(group, func(a rask) bool { return a.pending }) {
				buf = buf[:0]
				var vd verifiers.Verdict
				failed := slices.IndexFunc(group, func(a rask) bool { return a.c.err != nil || a.c.a.Err != "" })
				switch {
				case failed >= 0 && group[failed].c.err != nil:
					buf = append(buf, placeholder(a.v, a.cl))
					buf[0].Status, buf[0].Detail = verifiers.Error, group[failed].c.err.Error()
					vd = verifiers.ScoreWith(a.v.Reward, buf, nil)
				case failed >= 0:
					buf = append(buf, placeholder(a.v, a.cl))
					buf[0].Status, buf[0].Detail = verifiers.Error, group[failed].c.a.Err
					vd = verifiers.ScoreWith(a.v.Reward, buf, nil)
				case len(group) > 1:
					answers := make([]remote.Answer, len(group))
					for k := range group {
						answers[k] = group[k].c.a
					}
					vd, buf = rs.agree(a.v, a.cl, answers, buf)
				default:
					buf = a.c.a.AppendChecks(buf, a.cl.Settings().Threshold)
					vd = scoreAnswer(a.v, &a.c.a, buf)
				}
				tmpl := old[at]
				results.SetVerdict(rw, vd)
				from := len(checks)
				rw.FlagRows = 0
				for k := range buf {
					checks = append(checks, remoteCheckRow(&tmpl, k, &buf[k]))
					if buf[k].Flag {
						rw.FlagRows++
					}
				}
				results.SetFlags(rw, checks[from:]) // the service's flags, then the health flags
				at += n
				continue
			}
		}
		checks = append(checks, old[at:at+n]...)
		at += n
	}
	res.checks = checks
	return buf, nil
}

// remoteCheckRow returns the row of check c, the k-th of the rollout whose
// placeholder row was tmpl.
func remoteCheckRow(tmpl *columnar.CheckRow, k int, c *verifiers.Check) columnar.CheckRow {
	cr := columnar.CheckRow{RolloutID: tmpl.RolloutID, TaskID: tmpl.TaskID, VerifierID: tmpl.VerifierID, CheckIndex: int32(k),
		CheckID: c.ID, Label: c.Label, Required: c.Required, Status: c.StatusText(), Detail: c.Detail}
	if c.Flag {
		cr.Kind = columnar.KindFlag
	}
	if c.Actual != "" {
		cr.Actual = columnar.Str(c.Actual)
	}
	if c.Expected != "" {
		cr.Expected = columnar.Str(c.Expected)
	}
	if c.Scored {
		cr.Score, cr.ScoreValid = c.Score, true
	}
	return cr
}

// sync makes the answers cached so far durable.
func (rs *remoting) sync() error {
	if rs == nil {
		return nil
	}
	if err := rs.caller.Sync(); err != nil {
		return fmt.Errorf("remote cache: %w", err)
	}
	return nil
}

// close waits for the requests in flight and closes the cache.
func (rs *remoting) close() error {
	rs.asks.Wait()
	if err := rs.caller.Close(); err != nil {
		return fmt.Errorf("remote cache: %w", err)
	}
	return nil
}

func (rs *remoting) summary() *results.RemoteSummary {
	if rs == nil {
		return nil
	}
	s := rs.caller.Stats()
	sum := &results.RemoteSummary{Probes: s.Probes, Requests: s.Requests, CacheHits: s.CacheHits, Retries: s.Retries, Failures: s.Failures,
		PendingBudget: rs.budget.Pending()}
	if rs.repeats > 1 {
		sum.Repeats = rs.repeats
		sum.Flaky = map[string]int64{}
		for v, n := range rs.flaky {
			sum.Flaky[v.ID] = n.Load()
		}
	}
	return sum
}

// askNow asks a batch's rasks and waits for them, for RowGrader (see
// askNow): the writer-owned fields are taken under rs.shared, probes one
// at a time, and the requests run without the caller's cancellation.
func (rs *remoting) askNow(ctx context.Context, res *batchResults, buf []verifiers.Check) ([]verifiers.Check, error) {
	rs.probeMu.Lock()
	rs.shared.Lock()
	err := rs.start(context.WithoutCancel(ctx), res)
	rs.shared.Unlock()
	rs.probeMu.Unlock()
	if err != nil {
		return buf, err
	}
	for i := range res.rasks {
		if c := res.rasks[i].c; c != nil {
			select {
			case <-c.done:
			case <-ctx.Done():
				rs.shared.Lock()
				rs.release(res)
				rs.shared.Unlock()
				return buf, ctx.Err()
			}
		}
	}
	rs.shared.Lock()
	buf, err = rs.finish(res, buf)
	rs.shared.Unlock()
	if err != nil {
		return buf, err
	}
	return buf, rs.sync()
}
