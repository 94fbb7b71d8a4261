package verifiers

import (
	"reflect"
	"strings"
	"testing"
)

func TestRunMovesFlagsAfterChecks(t *testing.T) {
	v := &Verifier{ID: "V", Flagged: true, Grade: func(r *Rollout, c *Checks) error {
		c.Flag("f1", "first flag", true, "seen")
		c.Require("a", true, "")
		c.Flag("f2", "second flag", false, "")
		c.Optional("b", false, "")
		c.FlagFault("f3", "third flag", "no log")
		return nil
	}}
	var c Checks
	verdict := Run(v, &Rollout{}, &c)
	var ids, statuses []string
	for _, ch := range c.List() {
		ids = append(ids, ch.ID)
		statuses = append(statuses, ch.StatusText())
	}
	if want := []string{"a", "b", "f1", "f2", "f3"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("order %v, want %v", ids, want)
	}
	if want := []string{"pass", "fail", "raised", "clear", "error"}; !reflect.DeepEqual(statuses, want) {
		t.Errorf("statuses %v, want %v", statuses, want)
	}
	// The flags, one of them in error, move nothing.
	if verdict.Outcome != Passed || verdict.ChecksTotal != 2 || verdict.ChecksPassed != 1 || verdict.RequiredTotal != 1 || verdict.Reward != 0.5 {
		t.Errorf("verdict %+v, want passed, 2 checks, 1 passed, 1 required, reward 0.5", verdict)
	}
	checks, flags := SplitFlags(c.List())
	if len(checks) != 2 || len(flags) != 3 || !flags[0].Raised() || flags[1].Raised() || flags[2].Raised() {
		t.Errorf("SplitFlags: %d checks, flags %+v", len(checks), flags)
	}
}

func TestFlagOfUnflaggedVerifierErrs(t *testing.T) {
	v := &Verifier{ID: "V", Grade: func(r *Rollout, c *Checks) error {
		c.Require("a", true, "")
		c.Flag("f", "a flag", true, "")
		return nil
	}}
	var c Checks
	verdict := Run(v, &Rollout{}, &c)
	if verdict.Outcome != Errored || verdict.ErrorKind != KindVerifier || !strings.Contains(verdict.Error, `flag "f"`) {
		t.Errorf("verdict %+v, want an error of the verifier naming the flag", verdict)
	}
	if len(c.List()) != 0 {
		t.Errorf("checks kept: %v", c.List())
	}
}
