package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// turnChats are chats in the messages format: two refunds and two
// weather questions (as examples/harness/chats.jsonl), and a chat of a
// task no verifier binds (status error, its turn rewards null).
const turnChats = `{"rollout_id": "refund-a", "task_id": "refund-1", "model": "model-a", "messages": [{"role": "user", "content": "Please refund order 42."}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "issue_refund", "arguments": "{\"order_id\": \"42\"}"}}]}, {"role": "tool", "tool_call_id": "c1", "name": "issue_refund", "content": "refunded"}, {"role": "assistant", "content": "Your refund for order 42 is on its way."}]}
{"rollout_id": "refund-b", "task_id": "refund-1", "model": "model-b", "messages": [{"role": "user", "content": "Please refund order 42."}, {"role": "assistant", "content": "I have refunded order 42."}]}
{"rollout_id": "weather-a", "task_id": "weather-2", "model": "model-a", "messages": [{"role": "user", "content": "Weather in Oslo?"}, {"role": "assistant", "content": "", "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}, {"role": "tool", "tool_call_id": "c2", "name": "get_weather", "content": "4C, rain"}, {"role": "assistant", "content": "It is 4C and raining in Oslo."}]}
{"rollout_id": "weather-b", "task_id": "weather-2", "model": "model-b", "messages": [{"role": "user", "content": "Weather in Oslo?"}, {"role": "assistant", "content": "", "tool_calls": [{"id": "c3", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Bergen\"}"}}]}, {"role": "tool", "tool_call_id": "c3", "name": "get_weather", "content": "sunny"}, {"role": "assistant", "content": "It is sunny."}]}
{"rollout_id": "other-a", "task_id": "other-3", "model": "model-c", "messages": [{"role": "user", "content": "Hello?"}, {"role": "assistant", "content": "Hello."}]}
`

// turnSpec scores the chats turn by turn (as examples/turns/chats.yaml):
// refund-a's turns are [null, 1] (its first, a tool call, not scored),
// refund-b's [0.5], weather-a's [1, 1], weather-b's [0, 0].
const turnSpec = `verifiers:
  - id: WEATHER-TURNS
    task: weather-2
    name: Weather looked up for Oslo, turn by turn
    checks:
      - id: looked-up
        type: expr
        expr: turns.exists(t, t.tool_calls.exists(c, c.name == "get_weather" && c.kwargs.city == "Oslo"))
        turn: >-
          turns.exists(t, t.tool_calls.exists(c, c.name == "get_weather"))
          ? turns.filter(t, t.tool_calls.exists(c, c.name == "get_weather"))[0].index : null
    turn_checks:
      - id: asks-for-oslo
        type: expr
        when: size(turn.tool_calls) > 0
        expr: turn.tool_calls.all(c, c.kwargs.city == "Oslo")
      - id: names-oslo
        type: expr
        when: size(turn.tool_calls) == 0
        expr: turn.text.contains("Oslo")
  - id: REFUND-TURNS
    task: refund-1
    name: Order 42 refunded, credited to the last turn
    credit: last
    checks:
      - id: refunded
        type: expr
        expr: turns.exists(t, t.tool_calls.exists(c, c.name == "issue_refund" && c.kwargs.order_id == "42"))
    turn_checks:
      - id: names-order
        type: expr
        when: size(turn.tool_calls) == 0
        expr: turn.text.contains("42")
`

// turnSpecEveryTurn is turnSpec with asks-for-oslo checked on every turn
// (on a turn without calls it passes): weather-b's turns become [0, 0.5],
// its status failed as before; weather-a's stay [1, 1].
var turnSpecEveryTurn = strings.Replace(turnSpec, "        when: size(turn.tool_calls) > 0\n", "", 1)

// turnSpecNoTurns scores no turns: one trajectory check per task.
const turnSpecNoTurns = `verifiers:
  - id: WEATHER-TURNS
    task: weather-2
    name: Weather answered
    checks:
      - {id: answered, type: expr, expr: "size(turns) > 0"}
  - id: REFUND-TURNS
    task: refund-1
    name: Refund answered
    checks:
      - {id: answered, type: expr, expr: "size(turns) > 0"}
`

// gradeTurnChats grades turnChats with spec into dir/name (JSON Lines)
// and returns the result directory.
func gradeTurnChats(t *testing.T, dir, name, spec string) string {
	t.Helper()
	chats := writeFile(t, filepath.Join(dir, "chats.jsonl"), turnChats)
	specFile := writeFile(t, filepath.Join(dir, name+".yaml"), spec)
	out := filepath.Join(dir, name)
	if code, _, stderr := runCLI(t, "grade", "--quiet", "--from", "messages", "--spec", specFile, "--format", "jsonl", "--out", out, chats); code != 0 && code != 3 {
		t.Fatalf("grade %s: exit %d: %s", name, code, stderr)
	}
	return out
}

// TestDiffTurnRewards compares runs that score turns: a run against
// itself changes no turn rewards; against a run whose turn check applies
// to every turn, weather-b is listed although its status did not change;
// against a run that scores no turns, one line says so.
func TestDiffTurnRewards(t *testing.T) {
	dir := t.TempDir()
	base := gradeTurnChats(t, dir, "base", turnSpec)
	again := gradeTurnChats(t, dir, "again", turnSpec)
	every := gradeTurnChats(t, dir, "every", turnSpecEveryTurn)
	plain := gradeTurnChats(t, dir, "plain", turnSpecNoTurns)

	type diffJSON struct {
		Regressions        int64            `json:"regressions"`
		Examples           []map[string]any `json:"examples"`
		TurnRewardsChanged *int64           `json:"turn_rewards_changed"`
		TurnExamples       []struct {
			RolloutID string     `json:"rollout_id"`
			Verifier  string     `json:"verifier"`
			Base      []*float64 `json:"base"`
			Current   []*float64 `json:"current"`
		} `json:"turn_examples"`
		TurnsOnly string `json:"turns_only"`
	}
	diff := func(args ...string) (diffJSON, string) {
		t.Helper()
		code, stdout, stderr := runCLI(t, append([]string{"diff", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("gavel diff --json %v: exit %d: %s", args, code, stderr)
		}
		var d diffJSON
		if err := json.Unmarshal([]byte(stdout), &d); err != nil {
			t.Fatalf("gavel diff --json %v: %v\n%s", args, err, stdout)
		}
		return d, stdout
	}

	if d, out := diff(base, again); d.TurnRewardsChanged == nil || *d.TurnRewardsChanged != 0 || len(d.TurnExamples) != 0 || d.TurnsOnly != "" {
		t.Errorf("diff of a run with itself: want 0 turn rewards changed:\n%s", out)
	}
	if _, stdout, _ := runCLI(t, "diff", base, again); !strings.Contains(stdout, "turn rewards changed: 0 of 5 paired rollouts\n") {
		t.Errorf("diff of a run with itself (text):\n%s", stdout)
	}

	d, out := diff(base, every)
	num := func(p *float64) string {
		if p == nil {
			return "null"
		}
		b, _ := json.Marshal(*p)
		return string(b)
	}
	var got []string
	for _, c := range d.TurnExamples {
		var b, cur []string
		for _, x := range c.Base {
			b = append(b, num(x))
		}
		for _, x := range c.Current {
			cur = append(cur, num(x))
		}
		got = append(got, c.RolloutID+" "+c.Verifier+" ["+strings.Join(b, ",")+"] ["+strings.Join(cur, ",")+"]")
	}
	if d.TurnRewardsChanged == nil || *d.TurnRewardsChanged != 1 || d.Regressions != 0 || len(d.Examples) != 0 ||
		strings.Join(got, "; ") != "weather-b WEATHER-TURNS [0,0] [0,0.5]" {
		t.Errorf("diff with a turn check on every turn: turn examples %q; want weather-b alone, no status change:\n%s", got, out)
	}
	for _, tt := range []struct {
		format string
		want   []string
	}{
		{"text", []string{"turn rewards changed: 1 of 5 paired rollouts\n", "\nturn rewards changed (base -> current)\n  weather-b  WEATHER-TURNS  [0,0] -> [0,0.5]\n"}},
		{"markdown", []string{"- turn rewards changed: 1 of 5 paired rollouts\n", "#### Turn rewards changed\n\n| rollout | verifier | base | current |\n| --- | --- | --- | --- |\n| weather-b | WEATHER-TURNS | [0,0] | [0,0.5] |\n"}},
	} {
		code, stdout, stderr := runCLI(t, "diff", "--format", tt.format, base, every)
		if code != 0 {
			t.Fatalf("gavel diff --format %s: exit %d: %s", tt.format, code, stderr)
		}
		for _, w := range tt.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("gavel diff --format %s lacks %q:\n%s", tt.format, w, stdout)
			}
		}
	}

	// One side scores turns: one line, no list.
	d, out = diff(plain, base)
	if d.TurnsOnly != "current" || d.TurnRewardsChanged != nil || strings.Contains(out, "turn_examples") {
		t.Errorf("diff of a run without turns against one with: want turns_only current and no count:\n%s", out)
	}
	_, stdout, _ := runCLI(t, "diff", base, plain)
	if !strings.Contains(stdout, "turn rewards: only the base run scores turns; not compared\n") || strings.Contains(stdout, "turn rewards changed") {
		t.Errorf("diff of a run with turns against one without:\n%s", stdout)
	}
}

// TestReportTurns shows the turns of refund-a: turn 0 not scored, turn 1
// rewarded 1 by refunded (credited to the last turn) and names-order.
func TestReportTurns(t *testing.T) {
	dir := t.TempDir()
	base := gradeTurnChats(t, dir, "base", turnSpec)
	plain := gradeTurnChats(t, dir, "plain", turnSpecNoTurns)
	code, stdout, stderr := runCLI(t, "report", "--format", "markdown", "--turns", "refund-a", "--turns", "other-a", base)
	if code != 0 {
		t.Fatalf("report --turns: exit %d: %s", code, stderr)
	}
	want := "## Turns of refund-a\n\nVerifier REFUND-TURNS, status passed, reward 1.0000; 2 agent turns.\n\n" +
		"| turn | reward | checks credited to the turn |\n| --- | --- | --- |\n" +
		"| 0 | not scored | (none) |\n" +
		"| 1 | 1.0000 | refunded: pass (expr is true) / names-order: pass (expr is true) |\n"
	if !strings.Contains(stdout, want) {
		t.Errorf("report --turns refund-a lacks\n%s\nin:\n%s", want, stdout)
	}
	// A rollout whose turn rewards are null (no verifier: status error).
	if !strings.Contains(stdout, "## Turns of other-a\n\nVerifier (none), status error, reward -; 1 agent turn. Its turn rewards are null") ||
		!strings.Contains(stdout, "| 0 | not scored | (none) |\n") {
		t.Errorf("report --turns other-a:\n%s", stdout)
	}
	code, stdout, stderr = runCLI(t, "report", "--turns", "refund-a", base)
	if code != 0 {
		t.Fatalf("report --turns (html): exit %d: %s", code, stderr)
	}
	for _, w := range []string{
		"<h2>Turns of <code>refund-a</code></h2>",
		`<tr class="turn"><td>0</td><td>not scored</td><td class="name">(none)</td></tr>`,
		`<tr class="turn"><td>1</td><td>1.0000</td><td class="name"><p>refunded: pass (expr is true)</p><p>names-order: pass (expr is true)</p></td></tr>`,
	} {
		if !strings.Contains(stdout, w) {
			t.Errorf("report --turns refund-a (html) lacks %q:\n%.3000s", w, stdout)
		}
	}
	if _, stdout, _ := runCLI(t, "report", "--format", "markdown", base); strings.Contains(stdout, "Turns of") {
		t.Errorf("report without --turns has a turns section:\n%s", stdout)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--turns", "nope", base}, "--turns nope: no rollout nope in " + base},
		{[]string{"--turns", "refund-a", plain}, "--turns refund-a: the run in " + plain + " does not score turns"},
	} {
		code, _, stderr := runCLI(t, append([]string{"report"}, tt.args...)...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("gavel report %v: exit %d, stderr %q; want 1 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

// TestLeaderboardTurnRewards checks the mean turn reward of each model:
// model-a's turns [null, 1] and [1, 1] give 1, model-b's [0.5] and
// [0, 0] 0.5/3, model-c's none (null, -).
func TestLeaderboardTurnRewards(t *testing.T) {
	dir := t.TempDir()
	base := gradeTurnChats(t, dir, "base", turnSpec)
	plain := gradeTurnChats(t, dir, "plain", turnSpecNoTurns)
	code, stdout, stderr := runCLI(t, "leaderboard", "--turn-rewards", "--format", "json", base)
	if code != 0 {
		t.Fatalf("leaderboard --turn-rewards: exit %d: %s", code, stderr)
	}
	var lb struct {
		Entries []struct {
			Group          []string        `json:"group"`
			MeanTurnReward json.RawMessage `json:"mean_turn_reward"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(stdout), &lb); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range lb.Entries {
		got[strings.Join(e.Group, ",")] = string(e.MeanTurnReward)
	}
	want := map[string]string{"model-a": "1", "model-b": "0.16666666666666666", "model-c": "null"}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("mean_turn_reward of %s = %q, want %q\n%s", k, got[k], w, stdout)
		}
	}
	code, stdout, stderr = runCLI(t, "leaderboard", "--turn-rewards", "--k", "1", base)
	if code != 0 {
		t.Fatalf("leaderboard --turn-rewards: exit %d: %s", code, stderr)
	}
	for _, w := range []string{"mean turn reward", "1.0000            2", "0.1667            2", "-                 1"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("leaderboard --turn-rewards lacks %q:\n%s", w, stdout)
		}
	}
	if _, stdout, _ := runCLI(t, "leaderboard", "--format", "json", base); strings.Contains(stdout, "mean_turn_reward") {
		t.Errorf("leaderboard without --turn-rewards has mean_turn_reward:\n%s", stdout)
	}
	code, _, stderr = runCLI(t, "leaderboard", "--turn-rewards", plain)
	if code != 1 || !strings.Contains(stderr, "--turn-rewards: the run in "+plain+" does not score turns") {
		t.Errorf("leaderboard --turn-rewards of a run without turns: exit %d, stderr %q", code, stderr)
	}
}
