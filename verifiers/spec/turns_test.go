package spec

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/verifiers"
)

// turnsText is a conversation of three agent turns: a greeting, a tool
// call that creates a deal, and the final answer.
const turnsText = `[
 {"index":0,"text":"Hello, let me look.","tool_calls":[],"tool_results":[],"message_index":1},
 {"index":1,"text":"","tool_calls":[{"name":"create_deal","kwargs":{"name":"Acme","amount":42},"id":"c1"}],
  "tool_results":[{"eventType":"tool_result","name":"create_deal","content":"ok","id":"c1"}],"message_index":3},
 {"index":2,"text":"The deal is created: 42.","tool_calls":[],"tool_results":[],"message_index":5}]`

const turnsSpec = `verifiers:
  - id: V
    task: T
    name: turns
    checks:
      - id: answered
        type: expr
        expr: output.contains("42")
      - id: deal-made
        type: expr
        expr: turns.exists(t, t.tool_calls.exists(c, c.name == "create_deal"))
        turn: turns.filter(t, t.tool_calls.exists(c, c.name == "create_deal"))[0].index
    turn_checks:
      - id: polite
        type: expr
        expr: '!turn.text.contains("!")'
        optional: true
      - id: args-ok
        type: expr
        when: size(turn.tool_calls) > 0
        expr: turn.tool_calls.all(c, has(c.kwargs.amount) && c.kwargs.amount > 0)
      - id: number
        type: math
        gold: '"42"'
        when: turn.index == size(turns) - 1
`

func turnRollout(t *testing.T) *verifiers.Rollout {
	r := ro{output: "The deal is created: 42."}.rollout(t)
	r.Turns = state(t, turnsText)
	return r
}

func TestTurnChecks(t *testing.T) {
	v := mustParse(t, turnsSpec)[0]
	if !v.Turns || v.Credit != "" {
		t.Fatalf("Turns %v, Credit %q", v.Turns, v.Credit)
	}
	var c verifiers.Checks
	verdict := verifiers.Run(v, turnRollout(t), &c)
	type row struct {
		id     string
		status string
		turn   int
		onTurn bool
	}
	var got []row
	for _, ch := range c.List() {
		got = append(got, row{ch.ID, ch.StatusText(), ch.Turn, ch.OnTurn})
	}
	want := []row{
		{"answered", "pass", 0, false},
		{"deal-made", "pass", 1, true},
		{"polite", "pass", 0, true},
		{"polite", "pass", 1, true},
		{"args-ok", "pass", 1, true},
		{"polite", "pass", 2, true},
		{"number", "pass", 2, true},
	}
	if len(got) != len(want) {
		t.Fatalf("checks %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("check %d = %v, want %v", i, got[i], want[i])
		}
	}
	if verdict.Outcome != verifiers.Passed || verdict.ChecksTotal != 7 {
		t.Errorf("verdict %+v", verdict)
	}
	rewards, _, err := verifiers.TurnRewards(v.TurnReward, c.List(), 3, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rewards) != 3 || rewards[0] != 1 || rewards[1] != 1 || rewards[2] != 1 {
		t.Errorf("turn rewards %v", rewards)
	}
}

func TestTurnRewardsUnscoredAndFailed(t *testing.T) {
	spec := `verifiers:
  - id: V
    task: T
    name: turns
    turn_reward: all
    turn_checks:
      - id: calls-deal
        type: expr
        when: size(turn.tool_calls) > 0
        expr: turn.tool_calls[0].kwargs.amount == 41
`
	v := mustParse(t, spec)[0]
	var c verifiers.Checks
	verdict := verifiers.Run(v, turnRollout(t), &c)
	if verdict.Outcome != verifiers.Failed {
		t.Errorf("verdict %+v", verdict)
	}
	rewards, _, err := verifiers.TurnRewards(v.TurnReward, c.List(), 3, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Turns 0 and 2 have no check that applies: unscored, not 0.
	if !math.IsNaN(rewards[0]) || rewards[1] != 0 || !math.IsNaN(rewards[2]) {
		t.Errorf("turn rewards %v, want [NaN 0 NaN]", rewards)
	}
}

func TestCreditLast(t *testing.T) {
	spec := `verifiers:
  - id: V
    task: T
    name: turns
    credit: last
    checks:
      - {id: a, type: expr, expr: 'true'}
      - {id: b, type: expr, expr: 'false', optional: true}
`
	v := mustParse(t, spec)[0]
	var c verifiers.Checks
	verifiers.Run(v, turnRollout(t), &c)
	for _, ch := range c.List() {
		if !ch.OnTurn || ch.Turn != 2 {
			t.Errorf("check %s: turn %d (%v), want the last, 2", ch.ID, ch.Turn, ch.OnTurn)
		}
	}
	rewards, _, _ := verifiers.TurnRewards(v.TurnReward, c.List(), 3, nil, nil)
	if !math.IsNaN(rewards[0]) || !math.IsNaN(rewards[1]) || rewards[2] != 0.5 {
		t.Errorf("turn rewards %v, want [NaN NaN 0.5]", rewards)
	}
	// No turns: nothing credited.
	r := turnRollout(t)
	r.Turns = state(t, "[]")
	verifiers.Run(v, r, &c)
	for _, ch := range c.List() {
		if ch.OnTurn {
			t.Errorf("check %s credited with no turns", ch.ID)
		}
	}
}

func TestCreditOutOfRange(t *testing.T) {
	spec := `verifiers:
  - id: V
    task: T
    name: turns
    checks:
      - {id: a, type: expr, expr: 'true', turn: '7'}
      - {id: b, type: expr, expr: 'true', turn: '"x"'}
`
	v := mustParse(t, spec)[0]
	var c verifiers.Checks
	verdict := verifiers.Run(v, turnRollout(t), &c)
	if verdict.Outcome != verifiers.Errored || !strings.Contains(verdict.Error, "credited to turn 7, but the rollout has 3 agent turns") {
		t.Errorf("verdict %+v", verdict)
	}
	spec = strings.Replace(spec, "turn: '7'", "turn: 'null'", 1)
	v = mustParse(t, spec)[0]
	verdict = verifiers.Run(v, turnRollout(t), &c)
	if verdict.Outcome != verifiers.Errored || !strings.Contains(verdict.Error, `turn: gave "x", not a turn's index or null`) {
		t.Errorf("verdict %+v", verdict)
	}
}

func TestTurnRubricContext(t *testing.T) {
	spec := `verifiers:
  - id: V
    task: T
    name: turns
    turn_checks:
      - {id: helpful, type: rubric, rubric: the turn moves the task on}
`
	v := mustParse(t, spec)[0]
	if !v.Judged {
		t.Fatal("a verifier with a rubric turn check is not Judged")
	}
	var c verifiers.Checks
	verifiers.Run(v, turnRollout(t), &c)
	list := c.List()
	if len(list) != 3 {
		t.Fatalf("%d checks, want one per turn", len(list))
	}
	ctx := list[2].Rubric.Context
	if len(ctx) != 2 || ctx[0].Name != TurnsBeforeContext || ctx[1].Name != TurnContext {
		t.Fatalf("context %+v", ctx)
	}
	if !strings.HasPrefix(ctx[0].Value, `[{"index":0,`) || !strings.Contains(ctx[0].Value, `{"index":1,`) || strings.Contains(ctx[0].Value, `"index":2`) {
		t.Errorf("turns before: %s", ctx[0].Value)
	}
	if !strings.HasPrefix(ctx[1].Value, `{"index":2,"text":"The deal is created: 42."`) {
		t.Errorf("turn: %s", ctx[1].Value)
	}
	if got := list[0].Rubric.Context[0].Value; got != "[]" {
		t.Errorf("turns before the first: %s", got)
	}
}

func TestTurnSpecProblems(t *testing.T) {
	head := "verifiers:\n  - id: V\n    task: T\n    name: n\n"
	for _, tc := range []struct{ name, body, want string }{
		{"when on a check", "    checks: [{id: a, type: expr, expr: 'true', when: 'true'}]\n", "when is not a field of checks"},
		{"turn on a turn check", "    turn_checks: [{id: a, type: expr, expr: 'true', turn: '0'}]\n", "turn is not a field of turn checks"},
		{"state turn check", "    turn_checks: [{id: a, type: state, table: x, asserts: [{comparator: eq, value: 1}]}]\n", "state checks do not apply to a turn"},
		{"turn outside turn checks", "    checks: [{id: a, type: expr, expr: 'turn.index == 0'}]\n", "undeclared reference to 'turn'"},
		{"credit without turns", "    credit: attributed\n    checks: [{id: a, type: expr, expr: 'true'}]\n", "has credit but no turn is scored"},
		{"credit none with turn", "    credit: none\n    checks: [{id: a, type: expr, expr: 'true', turn: '0'}]\n", "credit is none"},
		{"credit last with turn", "    credit: last\n    checks: [{id: a, type: expr, expr: 'true', turn: '0'}]\n", "credit last puts every check on the last turn"},
		{"unknown credit", "    credit: first\n    turn_checks: [{id: a, type: expr, expr: 'true'}]\n", `unknown credit "first"`},
		{"turn reward without turns", "    turn_reward: all\n    checks: [{id: a, type: expr, expr: 'true'}]\n", "has turn_reward but no turn is scored"},
		{"same id", "    checks: [{id: a, type: expr, expr: 'true'}]\n    turn_checks: [{id: a, type: expr, expr: 'true'}]\n", `turn check id "a" of verifier "V" is also a check's id`},
		{"neither", "    description: x\n", "has no checks"},
	} {
		_, err := Parse("test.yaml", []byte(head+tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestCreditKeepsTurnChecks: credit: last and credit: none decide where
// the trajectory checks go; a turn check stays on its own turn.
func TestCreditKeepsTurnChecks(t *testing.T) {
	for credit, want := range map[string][]int{
		"last": {2, 0, 1, 2}, // a on the last turn, then each turn's check
		"none": {-1, 0, 1, 2},
	} {
		spec := "verifiers:\n  - id: V\n    task: T\n    name: n\n    credit: " + credit +
			"\n    checks: [{id: a, type: expr, expr: 'true'}]\n    turn_checks: [{id: t, type: expr, expr: 'turn.index < 2'}]\n"
		v := mustParse(t, spec)[0]
		var c verifiers.Checks
		verifiers.Run(v, turnRollout(t), &c)
		var got []int
		for _, ch := range c.List() {
			if ch.OnTurn {
				got = append(got, ch.Turn)
			} else {
				got = append(got, -1)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("credit %s: turns %v, want %v", credit, got, want)
		}
		rewards, _, _ := verifiers.TurnRewards(v.TurnReward, c.List(), 3, nil, nil)
		if credit == "none" && (rewards[0] != 1 || rewards[2] != 0) {
			t.Errorf("credit none: turn rewards %v, want [1 1 0]", rewards)
		}
	}
}
