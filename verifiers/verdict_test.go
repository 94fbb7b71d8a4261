package verifiers

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScore(t *testing.T) {
	check := func(id string, required bool, s Status) Check {
		return Check{ID: id, Label: id, Required: required, Status: s, Detail: id + " detail"}
	}
	tests := []struct {
		name   string
		checks []Check
		err    error
		want   Verdict
	}{
		{
			name:   "all pass",
			checks: []Check{check("a", true, Pass), check("b", false, Pass)},
			want:   Verdict{Outcome: Passed, Reward: 1, HasReward: true, ChecksTotal: 2, ChecksPassed: 2, RequiredTotal: 1, RequiredPassed: 1},
		},
		{
			name:   "optional failure only moves the reward",
			checks: []Check{check("a", true, Pass), check("b", false, Fail), check("c", false, Fail), check("d", false, Pass)},
			want:   Verdict{Outcome: Passed, Reward: 0.5, HasReward: true, ChecksTotal: 4, ChecksPassed: 2, RequiredTotal: 1, RequiredPassed: 1},
		},
		{
			name:   "required failure fails, reward still counts optional passes",
			checks: []Check{check("a", true, Fail), check("b", true, Pass), check("c", false, Pass), check("d", false, Pass), check("e", false, Pass)},
			want:   Verdict{Outcome: Failed, Reward: 0.8, HasReward: true, ChecksTotal: 5, ChecksPassed: 4, RequiredTotal: 2, RequiredPassed: 1},
		},
		{
			name:   "all fail is a reward of 0",
			checks: []Check{check("a", true, Fail)},
			want:   Verdict{Outcome: Failed, Reward: 0, HasReward: true, ChecksTotal: 1, RequiredTotal: 1},
		},
		{
			name:   "pending beats passed, no reward",
			checks: []Check{check("a", true, Pass), check("r", false, Pending)},
			want:   Verdict{Outcome: PendingOutcome, ChecksTotal: 2, ChecksPassed: 1, RequiredTotal: 1, RequiredPassed: 1},
		},
		{
			name:   "required pending is pending",
			checks: []Check{check("r", true, Pending), check("b", false, Pass)},
			want:   Verdict{Outcome: PendingOutcome, ChecksTotal: 2, ChecksPassed: 1, RequiredTotal: 1},
		},
		{
			name:   "failed beats pending, no reward",
			checks: []Check{check("a", true, Fail), check("r", false, Pending)},
			want:   Verdict{Outcome: Failed, ChecksTotal: 2, RequiredTotal: 1},
		},
		{
			name:   "error beats failed and pending, counts kept",
			checks: []Check{check("a", true, Fail), check("r", false, Pending), check("e", false, Error), check("p", true, Pass)},
			want: Verdict{Outcome: Errored, ErrorKind: KindVerifier, Error: `check "e": e detail`,
				ChecksTotal: 4, ChecksPassed: 1, RequiredTotal: 2, RequiredPassed: 1},
		},
		{
			name:   "first error check is reported",
			checks: []Check{check("e1", true, Error), check("e2", true, Error)},
			want: Verdict{Outcome: Errored, ErrorKind: KindVerifier, Error: `check "e1": e1 detail`,
				ChecksTotal: 2, RequiredTotal: 2},
		},
		{
			name:   "no required check",
			checks: []Check{check("b", false, Pass)},
			want: Verdict{Outcome: Errored, ErrorKind: KindVerifier, Error: "verifier returned no required check",
				ChecksTotal: 1, ChecksPassed: 1},
		},
		{
			name: "no check at all",
			want: Verdict{Outcome: Errored, ErrorKind: KindVerifier, Error: "verifier returned no required check"},
		},
		{
			name:   "returned error: no counts",
			checks: []Check{check("a", true, Pass)},
			err:    errors.New("boom"),
			want:   Verdict{Outcome: Errored, ErrorKind: KindVerifier, Error: "boom"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Score(tt.checks, tt.err)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Score (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVerdictPassed(t *testing.T) {
	tests := []struct {
		o              Outcome
		passed, isNull bool
	}{
		{Passed, true, false},
		{Failed, false, false},
		{PendingOutcome, false, true},
		{Errored, false, true},
	}
	for _, tt := range tests {
		passed, ok := Verdict{Outcome: tt.o}.Passed()
		if passed != tt.passed || ok == tt.isNull {
			t.Errorf("Verdict{%v}.Passed() = %v, %v, want %v, %v", tt.o, passed, ok, tt.passed, !tt.isNull)
		}
	}
}

// TestChecksRubric: Checks.Rubric adds a required pending check carrying
// its rubric and options, and a pending rubric leaves the rollout pending.
func TestChecksRubric(t *testing.T) {
	var c Checks
	c.Require("ok", true, "")
	c.Rubric("tone", "Be kind.", WithQuery("Say hi."), WithContext("n", "1"), WithJudge("m", 0.5))
	got := c.List()[1]
	want := Check{ID: "tone", Label: "tone", Required: true, Status: Pending, Detail: "Be kind.",
		Rubric: &Rubric{Text: "Be kind.", Query: "Say hi.", Context: []RubricContext{{"n", "1"}}, Model: "m", Threshold: 0.5}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rubric check (-want +got):\n%s", diff)
	}
	if v := Score(c.List(), nil); v.Outcome != PendingOutcome || v.HasReward {
		t.Errorf("Score = %+v, want pending without a reward", v)
	}
}
