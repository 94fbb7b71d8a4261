package results

import (
	"slices"
	"strings"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/verifiers"
)

// Score computes a row's verdict again from its check rows, with the
// reward formula f: after judging changed some, and in a rescore run; buf
// is reused. Flag rows, which follow the check rows, are not scored.
func Score(rw *columnar.RewardRow, crs []columnar.CheckRow, f verifiers.Formula, buf []verifiers.Check) []verifiers.Check {
	buf = buf[:0]
	for i := range crs {
		cr := &crs[i]
		var st verifiers.Status
		switch cr.Status {
		case verifiers.CheckPass, verifiers.FlagRaised:
			st = verifiers.Pass
		case verifiers.CheckFail, verifiers.FlagClear:
			st = verifiers.Fail
		case verifiers.CheckPending:
			st = verifiers.Pending
		default:
			st = verifiers.Error
		}
		buf = append(buf, verifiers.Check{ID: cr.CheckID, Label: cr.Label, Required: cr.Required, Status: st, Detail: cr.Detail,
			Score: cr.Score, Scored: cr.ScoreValid, Flag: cr.Kind == columnar.KindFlag, Turn: int(cr.Turn), OnTurn: cr.TurnValid})
	}
	SetVerdict(rw, verifiers.ScoreWith(f, buf, nil))
	return buf
}

// SetTurnRewards sets the turn rewards of a reward row whose verdict is
// set, from its checks (flags after them), for a verifier that scores
// turns with the turn reward formula f: null when the rollout's status is
// error, else one per agent turn (rw.Turns), a turn not scored NaN. A
// formula that fails on a turn makes the row's status error (kind
// verifier), counts kept: an error is never a reward. buf is scratch,
// returned for reuse. The list is allocated anew: the row keeps it.
func SetTurnRewards(rw *columnar.RewardRow, checks []verifiers.Check, f verifiers.Formula, buf []verifiers.Check) []verifiers.Check {
	rw.TurnRewards, rw.TurnRewardsValid = nil, false
	if rw.Status == verifiers.StatusError {
		return buf
	}
	n := 0
	if rw.TurnsValid {
		n = int(rw.Turns)
	}
	tr, buf, err := verifiers.TurnRewards(f, checks, n, make([]float64, 0, n), buf)
	if err != nil {
		rw.Status = verifiers.StatusError
		rw.Passed, rw.PassedValid = false, false
		rw.Reward, rw.RewardValid = 0, false
		rw.ErrorKind, rw.Error = columnar.Str(verifiers.KindVerifier), columnar.Str(err.Error())
		return buf
	}
	rw.TurnRewards, rw.TurnRewardsValid = tr, true
	return buf
}

// SetVerdict fills the verdict columns of a reward row.
func SetVerdict(rw *columnar.RewardRow, v verifiers.Verdict) {
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

// FlagStatus returns the status of a flag's row from the status its
// condition got as a check's: raised for pass, clear for fail, the others
// (pending, error) as they are.
func FlagStatus(checkStatus string) string {
	switch checkStatus {
	case verifiers.CheckPass:
		return verifiers.FlagRaised
	case verifiers.CheckFail:
		return verifiers.FlagClear
	}
	return checkStatus
}

// SetFlags sets the flags of a reward row again from its check rows, after
// a judge decided some of its flags: the ids of the flag rows raised, in
// their order, then the health flags the row had.
func SetFlags(rw *columnar.RewardRow, crs []columnar.CheckRow) {
	if rw.FlagRows == 0 {
		return
	}
	var health []string
	for i, f := range rw.Flags {
		if strings.HasPrefix(f, verifiers.HealthPrefix) {
			health = slices.Clone(rw.Flags[i:])
			break
		}
	}
	rw.Flags = rw.Flags[:0]
	for i := range crs {
		if crs[i].Kind == columnar.KindFlag && crs[i].Status == verifiers.FlagRaised {
			rw.Flags = append(rw.Flags, crs[i].CheckID)
		}
	}
	rw.Flags = append(rw.Flags, health...)
}
