package verifiers

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

func turnsRollout(t *testing.T, text string) *Rollout {
	var d jsonview.Doc
	v, err := d.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return &Rollout{ID: "r", TaskID: "T", Turns: v}
}

func TestGradeTurn(t *testing.T) {
	v := &Verifier{ID: "v", Turns: true,
		Grade: func(r *Rollout, c *Checks) error {
			c.Require("done", true, "")
			c.Optional("about-turn-0", false, "")
			c.Credit(0)
			return nil
		},
		GradeTurn: func(r *Rollout, turn jsonview.Value, c *Checks) error {
			text, _ := turn.Get("text").Str()
			c.Optional("short", len(text) < 5, "")
			return nil
		},
	}
	r := turnsRollout(t, `[{"index":0,"text":"hi"},{"index":1,"text":"a long answer"}]`)
	var c Checks
	verdict := Run(v, r, &c)
	list := c.List()
	if len(list) != 4 || verdict.Outcome != Passed {
		t.Fatalf("%d checks, verdict %+v", len(list), verdict)
	}
	for i, want := range []struct {
		turn   int
		onTurn bool
	}{{0, false}, {0, true}, {0, true}, {1, true}} {
		if list[i].Turn != want.turn || list[i].OnTurn != want.onTurn {
			t.Errorf("check %d (%s): turn %d %v, want %d %v", i, list[i].ID, list[i].Turn, list[i].OnTurn, want.turn, want.onTurn)
		}
	}
	rewards, _, err := TurnRewards(v.TurnReward, list, 2, nil, nil)
	if err != nil || rewards[0] != 0.5 || rewards[1] != 0 {
		t.Errorf("turn rewards %v %v, want [0.5 0]", rewards, err)
	}

	// credit none: the credited check counts in no turn.
	v.Credit = CreditNone
	Run(v, r, &c)
	rewards, _, _ = TurnRewards(v.TurnReward, c.List(), 2, nil, nil)
	if rewards[0] != 1 || rewards[1] != 0 {
		t.Errorf("credit none: turn rewards %v, want [1 0]", rewards)
	}

	// A verifier that does not score turns credits nothing.
	v.Turns, v.Credit = false, ""
	Run(v, r, &c)
	for _, ch := range c.List() {
		if ch.OnTurn {
			t.Errorf("check %s credited by a verifier without Turns", ch.ID)
		}
	}
}

func TestGradeTurnFailures(t *testing.T) {
	r := turnsRollout(t, `[{"index":0,"text":"hi"}]`)
	for name, gt := range map[string]func(*Rollout, jsonview.Value, *Checks) error{
		"error": func(*Rollout, jsonview.Value, *Checks) error { return errors.New("no turn text") },
		"panic": func(*Rollout, jsonview.Value, *Checks) error { panic("boom") },
	} {
		v := &Verifier{ID: "v", Turns: true, GradeTurn: gt,
			Grade: func(r *Rollout, c *Checks) error { c.Require("done", true, ""); return nil }}
		var c Checks
		verdict := Run(v, r, &c)
		if verdict.Outcome != Errored || len(c.List()) != 0 {
			t.Errorf("%s: verdict %+v, %d checks", name, verdict, len(c.List()))
		}
		if name == "error" && !strings.Contains(verdict.Error, "turn 0: no turn text") {
			t.Errorf("error: %q", verdict.Error)
		}
	}
	v := &Verifier{ID: "v", Turns: true, Grade: func(r *Rollout, c *Checks) error {
		c.Require("done", true, "")
		c.Credit(3)
		return nil
	}}
	var c Checks
	if verdict := Run(v, r, &c); verdict.Outcome != Errored || !strings.Contains(verdict.Error, "credited to turn 3, but the rollout has 1 agent turns") {
		t.Errorf("out of range: %+v", verdict)
	}
}

func TestTurnRewardsPendingAndFormula(t *testing.T) {
	checks := []Check{
		{ID: "a", Status: Pass, Turn: 0, OnTurn: true},
		{ID: "b", Status: Pending, Turn: 1, OnTurn: true},
		{ID: "c", Status: Fail, Turn: 2, OnTurn: true},
		{ID: "d", Status: Pass, Turn: 2, OnTurn: true},
		{ID: "f", Status: Pass, Flag: true, Turn: 3, OnTurn: true},
	}
	rewards, _, err := TurnRewards(All(), checks, 4, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rewards[0] != 1 || !math.IsNaN(rewards[1]) || rewards[2] != 0 || !math.IsNaN(rewards[3]) {
		t.Errorf("rewards %v, want [1 NaN 0 NaN] (a flag is never credited)", rewards)
	}
	bad := MustFormula(Expr("2.0"))
	if _, _, err := TurnRewards(bad, checks, 4, nil, nil); err == nil || !strings.Contains(err.Error(), "turn 0:") {
		t.Errorf("a formula that fails: %v", err)
	}
}

// TestAddTurn: a turn check added inside Grade stays on its turn under
// credit last and none; one of a turn the rollout lacks is an error.
func TestAddTurn(t *testing.T) {
	r := turnsRollout(t, `[{"index":0,"text":"hi"},{"index":1,"text":"bye"}]`)
	for _, credit := range []string{CreditLast, CreditNone, ""} {
		v := &Verifier{ID: "v", Turns: true, Credit: credit, Grade: func(r *Rollout, c *Checks) error {
			c.Require("done", true, "")
			c.AddTurn(0, Check{ID: "t", Required: true, Status: Pass})
			return nil
		}}
		var c Checks
		if verdict := Run(v, r, &c); verdict.Outcome != Passed {
			t.Fatalf("credit %q: %+v", credit, verdict)
		}
		if tc := c.List()[1]; !tc.OnTurn || tc.Turn != 0 {
			t.Errorf("credit %q: the turn check is on turn %d (%v), want 0", credit, tc.Turn, tc.OnTurn)
		}
		if d := c.List()[0]; credit == CreditLast != (d.OnTurn && d.Turn == 1) {
			t.Errorf("credit %q: the trajectory check on turn %d (%v)", credit, d.Turn, d.OnTurn)
		}
	}
	v := &Verifier{ID: "v", Turns: true, Grade: func(r *Rollout, c *Checks) error {
		c.Require("done", true, "")
		c.AddTurn(2, Check{ID: "t", Required: true, Status: Pass})
		return nil
	}}
	var c Checks
	if verdict := Run(v, r, &c); verdict.Outcome != Errored || !strings.Contains(verdict.Error, "turn check \"t\" is of turn 2") {
		t.Errorf("out of range: %+v", verdict)
	}
}
