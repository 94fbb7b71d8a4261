package verifiers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScoreWith(t *testing.T) {
	check := func(id string, required bool, s Status) Check {
		return Check{ID: id, Label: id, Required: required, Status: s, Detail: id + " detail"}
	}
	judged := func(id string, s Status, score float64) Check {
		c := check(id, true, s)
		c.Score, c.Scored = score, true
		return c
	}
	weighted := func(w map[string]float64) Formula { return MustFormula(Weighted(w)) }
	expr := func(src string) Formula { return MustFormula(Expr(src)) }
	// a passes (required), b fails (optional), c passes (optional).
	mixed := []Check{check("a", true, Pass), check("b", false, Fail), check("c", false, Pass)}
	counts := func(v Verdict) Verdict {
		v.ChecksTotal, v.ChecksPassed, v.RequiredTotal, v.RequiredPassed = 3, 2, 1, 1
		return v
	}
	reward := func(r float64) Verdict { return counts(Verdict{Outcome: Passed, Reward: r, HasReward: true}) }
	verifierErr := func(msg string) Verdict {
		return counts(Verdict{Outcome: Errored, ErrorKind: KindVerifier, Error: msg})
	}
	tests := []struct {
		name    string
		formula Formula
		checks  []Check
		want    Verdict
	}{
		{"fraction", Fraction(), mixed, reward(2.0 / 3)},
		{"all: an optional failure is a 0", All(), mixed, reward(0)},
		{"all: every check passes", All(), []Check{check("a", true, Pass), check("c", false, Pass)},
			Verdict{Outcome: Passed, Reward: 1, HasReward: true, ChecksTotal: 2, ChecksPassed: 2, RequiredTotal: 1, RequiredPassed: 1}},
		{"all: a required failure fails with reward 0", All(), []Check{check("a", true, Fail)},
			Verdict{Outcome: Failed, Reward: 0, HasReward: true, ChecksTotal: 1, RequiredTotal: 1}},
		{"weighted", weighted(map[string]float64{"a": 3, "b": 1}), mixed, reward(4.0 / 5)}, // c weighs 1
		{"weighted: zero leaves a check out", weighted(map[string]float64{"b": 0}), mixed, reward(1)},
		{"weighted: a failed penalty subtracts", weighted(map[string]float64{"a": 2, "b": -1, "c": 2}), mixed, reward(3.0 / 4)},
		{"weighted: a passed penalty costs nothing", weighted(map[string]float64{"a": 2, "b": 0, "c": -5}), mixed, reward(1)},
		{"weighted: clamped at 0", weighted(map[string]float64{"a": 1, "b": -10, "c": 0}), mixed, reward(0)},
		{"weighted: no positive weight is a verifier error", weighted(map[string]float64{"a": 0, "b": -1, "c": 0}), mixed,
			verifierErr("reward: no check with a positive weight")},
		{"expr", expr(`double(checks.filter(c, c.passed && !c.required).size()) / 2.0`), mixed, reward(0.5)},
		{"expr: an int is a number", expr(`checks[0].passed ? 1 : 0`), mixed, reward(1)},
		{"expr: fields", expr(`checks[1].id == "b" && checks[1].status == "fail" && checks[1].index == 1 && checks[1].label == "b" && checks[1].detail == "b detail" && checks[1].score == null ? 0.25 : 0.0`),
			mixed, reward(0.25)},
		{"expr: judged scores", expr(`sum(checks.map(c, c.score)) / double(size(checks))`),
			[]Check{judged("j1", Pass, 0.9), judged("j2", Fail, 0.2)},
			Verdict{Outcome: Failed, Reward: 0.55, HasReward: true, ChecksTotal: 2, ChecksPassed: 1, RequiredTotal: 2, RequiredPassed: 1}},
		{"expr: sum of an empty list", expr(`sum(checks.filter(c, false).map(c, c.score))`), mixed, reward(0)},
		{"expr: sum of nulls is a verifier error", expr(`sum(checks.map(c, c.score))`), mixed,
			verifierErr("reward expression: sum: null_type is not a number")},
		{"expr: above 1 is a verifier error", expr(`1.5`), mixed, verifierErr("reward expression gave 1.5, outside [0, 1]")},
		{"expr: below 0 is a verifier error", expr(`-1`), mixed, verifierErr("reward expression gave -1, outside [0, 1]")},
		{"expr: not a number is a verifier error", expr(`checks.size() > 0 ? dyn("x") : 0`), mixed, verifierErr("reward expression gave string, not a number")},
		{"expr: null is a verifier error", expr(`checks[0].score`), mixed,
			verifierErr("reward expression gave null_type, not a number")},
		{"expr: an evaluation error is a verifier error", expr(`checks[7].score`), mixed,
			verifierErr("reward expression: index out of bounds: 7")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ScoreWith(tt.formula, tt.checks, nil)
			if got.Outcome == Passed || got.Outcome == Failed {
				// Floating-point sums: compare the reward to 1e-12.
				if d := got.Reward - tt.want.Reward; d > 1e-12 || d < -1e-12 {
					t.Errorf("reward = %v, want %v", got.Reward, tt.want.Reward)
				}
				got.Reward = tt.want.Reward
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ScoreWith(%s) (-want +got):\n%s", tt.formula, diff)
			}
		})
	}
}

// TestScoreWithKeepsStatusRules checks that no formula gives a reward to a
// pending or error verdict, nor changes its status.
func TestScoreWithKeepsStatusRules(t *testing.T) {
	formulas := []Formula{Fraction(), All(), MustFormula(Weighted(map[string]float64{"a": 1})), MustFormula(Expr(`1.0`))}
	cases := []struct {
		name   string
		checks []Check
		want   Outcome
	}{
		{"pending", []Check{{ID: "a", Required: true, Status: Pass}, {ID: "r", Required: true, Status: Pending}}, PendingOutcome},
		{"failed and pending", []Check{{ID: "a", Required: true, Status: Fail}, {ID: "r", Status: Pending}}, Failed},
		{"check error", []Check{{ID: "a", Required: true, Status: Pass}, {ID: "e", Status: Error}}, Errored},
		{"no required check", []Check{{ID: "a", Status: Pass}}, Errored},
	}
	for _, f := range formulas {
		for _, c := range cases {
			got := ScoreWith(f, c.checks, nil)
			if got.Outcome != c.want || got.HasReward {
				t.Errorf("ScoreWith(%s, %s) = %v with reward %v, want %v without reward", f, c.name, got.Outcome, got.HasReward, c.want)
			}
		}
		if got := ScoreWith(f, nil, errTest); got.Outcome != Errored || got.HasReward {
			t.Errorf("ScoreWith(%s, grade error) = %v with reward %v, want error without reward", f, got.Outcome, got.HasReward)
		}
	}
}

type testError struct{}

func (testError) Error() string { return "boom" }

var errTest error = testError{}

func TestParseFormula(t *testing.T) {
	tests := []struct {
		in, want string // want: the canonical text, or the error's start
		err      bool
	}{
		{in: `"fraction"`, want: `"fraction"`},
		{in: `"all"`, want: `"all"`},
		{in: `{"weighted": {"b": -1, "a": 2.5}}`, want: `{"weighted":{"a":2.5,"b":-1}}`},
		{in: `{"expr": "checks.size() > 0 ? 1.0 : 0.0"}`, want: `{"expr":"checks.size() \u003e 0 ? 1.0 : 0.0"}`},
		{in: `"most"`, want: `unknown reward formula "most"`, err: true},
		{in: `"weighted"`, want: `weighted needs its weights`, err: true},
		{in: `{"weighted": {"a": "x"}}`, want: `weighted: weights must be`, err: true},
		{in: `{"weighted": {"a": -1}}`, want: `{"weighted":{"a":-1}}`},
		{in: `{"weighted": {"a": 1e999}}`, want: `weighted: weights must be`, err: true},
		{in: `{"expr": "checks.("}`, want: `reward expression "checks.("`, err: true},
		{in: `{"expr": "checks.size() > 0"}`, want: `reward expression "checks.size() > 0" gives bool, not a number`, err: true},
		{in: `{"expr": "1", "all": true}`, want: `bad reward formula`, err: true},
		{in: `3`, want: `bad reward formula`, err: true},
	}
	for _, tt := range tests {
		f, err := ParseFormula([]byte(tt.in))
		switch {
		case tt.err && err == nil:
			t.Errorf("ParseFormula(%s) = %s, want error %q", tt.in, f, tt.want)
		case tt.err && !strings.HasPrefix(err.Error(), tt.want):
			t.Errorf("ParseFormula(%s) error = %q, want %q...", tt.in, err, tt.want)
		case !tt.err && err != nil:
			t.Errorf("ParseFormula(%s) error = %v", tt.in, err)
		case !tt.err && f.String() != tt.want:
			t.Errorf("ParseFormula(%s) = %s, want %s", tt.in, f, tt.want)
		}
	}
	if got := (Formula{}).String(); got != `"fraction"` {
		t.Errorf("zero Formula = %s, want \"fraction\"", got)
	}
}

// TestRunUsesReward checks that a verifier's Reward decides its rollouts'
// rewards.
func TestRunUsesReward(t *testing.T) {
	v := &Verifier{ID: "V", Reward: All(), Grade: func(r *Rollout, c *Checks) error {
		c.Require("a", true, "")
		c.Optional("b", false, "")
		return nil
	}}
	var c Checks
	if got := Run(v, &Rollout{}, &c); !got.HasReward || got.Reward != 0 {
		t.Errorf("Run with all = reward %v (valid %v), want 0", got.Reward, got.HasReward)
	}
}
