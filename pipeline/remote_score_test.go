package pipeline

import (
	"testing"

	"github.com/gavelhq/gavel/remote"
	"github.com/gavelhq/gavel/verifiers"
)

// TestScoreAnswerIsFormula checks that scoreAnswer, which scores a single
// reward without evaluating CEL, gives the verdict of the formula it
// stands for (checks[0].score), and that a verifier's own formula and an
// answer of checks go through ScoreWith unchanged.
func TestScoreAnswerIsFormula(t *testing.T) {
	single := verifiers.MustFormula(verifiers.Expr("checks[0].score"))
	own := verifiers.MustFormula(verifiers.Expr("checks[0].passed ? 1.0 : 0.25"))
	f := func(x float64) *float64 { return &x }
	answers := []remote.Answer{
		{Reward: f(0)}, {Reward: f(1)}, {Reward: f(0.5)}, {Reward: f(0.999999)}, {Reward: f(1e-9)},
		{Reward: f(0.7), Components: []remote.Component{{Name: "format", Score: 0.2}, {Name: "answer", Score: 1}}},
		{Reward: f(0.3), Components: []remote.Component{{Name: "answer", Score: 0}}},
		{Checks: []remote.Check{{ID: "a", Required: true, Status: "pass"}, {ID: "b", Required: false, Status: "fail"}}},
		{Checks: []remote.Check{{ID: "a", Required: true, Status: "fail"}}},
		{Reward: f(0.6), Checks: []remote.Check{{Flag: true, ID: "f", Status: "raised"}}},
		{Checks: []remote.Check{{Flag: true, ID: "f", Status: "clear"}, {ID: "a", Required: true, Status: "pass"}}},
	}
	for _, threshold := range []float64{1, 0.5, 0} {
		for i, a := range answers {
			checks := a.AppendChecks(nil, threshold)
			for _, rewardSet := range []bool{false, true} {
				v := &verifiers.Verifier{ID: "V", Remote: &verifiers.RemoteSettings{RewardSet: rewardSet}}
				want := verifiers.ScoreWith(verifiers.Fraction(), checks, nil)
				if rewardSet {
					v.Reward = own
					want = verifiers.ScoreWith(own, checks, nil)
				} else if a.Single() {
					want = verifiers.ScoreWith(single, checks, nil)
				}
				if got := scoreAnswer(v, &a, checks); got != want {
					t.Errorf("answer %d, threshold %v, own formula %v: scoreAnswer = %+v, want %+v", i, threshold, rewardSet, got, want)
				}
			}
		}
	}
}
