package verifiers

import (
	"fmt"
	"math"
)

// Outcome is the status of a whole rollout, from its checks: Errored when a
// check is in error or none is required, else Failed when a required check
// failed, else PendingOutcome when a check is pending, else Passed.
type Outcome uint8

// Rollout outcomes.
const (
	Passed Outcome = iota
	Failed
	PendingOutcome
	Errored
)

// Statuses of rollouts as written in the rewards' status column, and of
// checks as written in the checks' status column: the one vocabulary every
// reader and writer of results uses.
const (
	StatusPassed  = "passed"
	StatusFailed  = "failed"
	StatusPending = "pending"
	StatusError   = "error"

	CheckPass    = "pass"
	CheckFail    = "fail"
	CheckPending = "pending"
	CheckError   = "error"
)

// String returns the outcome as written in the status column.
func (o Outcome) String() string {
	switch o {
	case Passed:
		return StatusPassed
	case Failed:
		return StatusFailed
	case PendingOutcome:
		return StatusPending
	case Errored:
		return StatusError
	}
	return "unknown"
}

// Error kinds of a rollout with status error.
const (
	KindInput      = "input"
	KindNoVerifier = "no_verifier"
	KindVerifier   = "verifier"
)

// Verdict is the result for one rollout.
type Verdict struct {
	Outcome Outcome
	// Reward is the verifier's formula's reward (default: checks passed /
	// checks total); valid only when HasReward.
	Reward    float64
	HasReward bool
	// Counts over the checks.
	ChecksTotal, ChecksPassed, RequiredTotal, RequiredPassed int32
	// ErrorKind and Error are set when Outcome is Errored.
	ErrorKind, Error string
}

// Passed returns the passed column: true for passed, false for failed, and
// ok false (null) otherwise.
func (v Verdict) Passed() (passed, ok bool) {
	switch v.Outcome {
	case Passed:
		return true, true
	case Failed:
		return false, true
	}
	return false, false
}

// Score computes the verdict of a verifier's checks by the rules of
// Outcome, with the default reward formula (fraction). gradeErr is the
// error the verifier returned or its recovered panic; with it the verdict
// is an error and the counts are zero.
func Score(checks []Check, gradeErr error) Verdict {
	return ScoreWith(Formula{}, checks, gradeErr)
}

// ScoreWith is Score with the reward computed by f. The status and the
// counts do not depend on f; a formula that fails makes the verdict an
// error (kind verifier), counts kept, and never a reward. Flags, which
// follow the checks, are not scored: they never move the verdict.
func ScoreWith(f Formula, checks []Check, gradeErr error) Verdict {
	if gradeErr != nil {
		return Verdict{Outcome: Errored, ErrorKind: KindVerifier, Error: gradeErr.Error()}
	}
	checks, _ = SplitFlags(checks)
	var v Verdict
	anyFail, anyPending := false, false
	firstErr := -1
	for i := range checks {
		c := &checks[i]
		v.ChecksTotal++
		if c.Required {
			v.RequiredTotal++
		}
		switch c.Status {
		case Pass:
			v.ChecksPassed++
			if c.Required {
				v.RequiredPassed++
			}
		case Fail:
			if c.Required {
				anyFail = true
			}
		case Pending:
			anyPending = true
		case Error:
			if firstErr < 0 {
				firstErr = i
			}
		}
	}
	switch {
	case firstErr >= 0:
		c := checks[firstErr]
		v.Outcome, v.ErrorKind = Errored, KindVerifier
		v.Error = fmt.Sprintf("check %q: %s", c.ID, c.Detail)
		return v
	case v.RequiredTotal == 0:
		v.Outcome, v.ErrorKind = Errored, KindVerifier
		v.Error = "verifier returned no required check"
		return v
	case anyFail:
		v.Outcome = Failed
	case anyPending:
		v.Outcome = PendingOutcome
	default:
		v.Outcome = Passed
	}
	if anyPending {
		return v // reward is defined only when no check is pending
	}
	r, err := f.reward(checks, v.ChecksPassed)
	if err != nil {
		v.Outcome, v.ErrorKind, v.Error = Errored, KindVerifier, err.Error()
		return v
	}
	v.Reward, v.HasReward = r, true
	return v
}

// InputError returns the verdict of a row whose input is invalid.
func InputError(msg string) Verdict {
	return Verdict{Outcome: Errored, ErrorKind: KindInput, Error: msg}
}

// NoVerifier returns the verdict of a row whose task no verifier binds.
func NoVerifier(task string) Verdict {
	return Verdict{Outcome: Errored, ErrorKind: KindNoVerifier, Error: fmt.Sprintf("no verifier binds task %q", task)}
}

// Counts are the numbers of rollouts of a set by status: the counts of
// every summary (a run's summary.json, its parts' statistics, a
// leaderboard's entries).
type Counts struct {
	Rollouts int64 `json:"rollouts"`
	Passed   int64 `json:"passed"`
	Failed   int64 `json:"failed"`
	Pending  int64 `json:"pending"`
	Error    int64 `json:"error"`
}

// Add counts one rollout with the given status. It reports false, having
// counted the rollout in Rollouts only, when status is not a rollout
// status.
func (c *Counts) Add(status string) bool {
	c.Rollouts++
	switch status {
	case StatusPassed:
		c.Passed++
	case StatusFailed:
		c.Failed++
	case StatusPending:
		c.Pending++
	case StatusError:
		c.Error++
	default:
		return false
	}
	return true
}

// Merge adds the counts of o to c.
func (c *Counts) Merge(o Counts) {
	c.Rollouts += o.Rollouts
	c.Passed += o.Passed
	c.Failed += o.Failed
	c.Pending += o.Pending
	c.Error += o.Error
}

// Rate returns the pass rate, passed / (passed + failed): pending and
// error rollouts are never in the denominator. ok is false when no rollout
// passed or failed.
func (c *Counts) Rate() (rate float64, ok bool) {
	n := c.Passed + c.Failed
	if n == 0 {
		return 0, false
	}
	return float64(c.Passed) / float64(n), true
}

// TurnRewards computes the reward of each of n agent turns from a
// rollout's checks (flags after them, as Run leaves them), appending them
// to dst[:0]: the formula f over the checks credited to the turn
// (Check.Turn), in their order. A turn no check is credited to is not
// scored, and one with a pending check not yet: both are NaN, written as
// null, never 0. buf is scratch, returned for reuse. A formula that fails
// on a turn is an error naming the turn (the rollout's status is then
// error); so is a check credited to a turn outside [0, n).
func TurnRewards(f Formula, checks []Check, n int, dst []float64, buf []Check) ([]float64, []Check, error) {
	dst = dst[:0]
	checks, _ = SplitFlags(checks)
	for i := range checks {
		if c := &checks[i]; c.OnTurn && (c.Turn < 0 || c.Turn >= n) {
			return dst, buf, fmt.Errorf("check %q is credited to turn %d, but the rollout has %d agent turns", c.ID, c.Turn, n)
		}
	}
	for t := 0; t < n; t++ {
		buf = buf[:0]
		var passed int32
		pending := false
		for i := range checks {
			c := &checks[i]
			if !c.OnTurn || c.Turn != t {
				continue
			}
			buf = append(buf, *c)
			switch c.Status {
			case Pass:
				passed++
			case Pending, Error:
				pending = true
			}
		}
		if len(buf) == 0 || pending {
			dst = append(dst, math.NaN())
			continue
		}
		r, err := f.reward(buf, passed)
		if err != nil {
			return dst, buf, fmt.Errorf("turn %d: %w", t, err)
		}
		dst = append(dst, r)
	}
	clear(buf)
	return dst, buf[:0], nil
}
