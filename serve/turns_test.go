package serve

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/spec"
)

// turnsVerifiers are the verifiers of examples/turns/chats.yaml, which
// score turns.
func turnsVerifiers(t *testing.T) []*verifiers.Verifier {
	t.Helper()
	text, err := os.ReadFile("../examples/turns/chats.yaml")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := spec.Parse("chats.yaml", text)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// /v1/grade in a set that scores turns: rows of gavel's own schema have
// their turns read from their messages, the rewards rows carry
// turn_rewards and turns and the check rows turn, as `gavel grade` writes
// them (docs/turns.md); a rollout whose verifier scores no turns has a
// null turn_rewards. A set that scores no turns has none of the columns.
func TestGradeWithTurns(t *testing.T) {
	chats, err := os.ReadFile("../examples/harness/chats.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	body := string(chats) + `{"rollout_id": "plain", "task_id": "TASK-004", "output": "$1,234.50", "messages": [{"role": "assistant", "content": "x"}]}` + "\n"
	// With health flags and without: the turn columns follow the flags'.
	for _, health := range []bool{false, true} {
		_, ts := newServer(t, Config{Health: health}, turnsVerifiers(t)...)
		r := do(t, ts, "POST", "/v1/grade", "application/x-ndjson", body)
		if r.code != 200 {
			t.Fatalf("health %v: status %d: %s", health, r.code, r.body)
		}
		// As docs/turns.md shows `gavel grade --from messages` grading them.
		want := map[string]struct {
			rewards []any
			turns   any
		}{
			"refund-a":  {[]any{nil, 1.0}, 2.0},
			"refund-b":  {[]any{0.5}, 1.0},
			"weather-a": {[]any{1.0, 1.0}, 2.0},
			"weather-b": {[]any{0.0, 0.0}, 2.0},
			"plain":     {nil, 1.0},
		}
		lines := gradedLines(t, r.body)
		if len(lines) != len(want) {
			t.Fatalf("%d lines, want %d: %s", len(lines), len(want), r.body)
		}
		for _, got := range lines {
			id := got.Rewards["rollout_id"].(string)
			w := want[id]
			tr, ok := got.Rewards["turn_rewards"]
			if !ok || (w.rewards == nil && tr != nil) || (w.rewards != nil && !reflect.DeepEqual(tr, w.rewards)) {
				t.Errorf("%s: turn_rewards %v (present %v), want %v", id, tr, ok, w.rewards)
			}
			if got.Rewards["turns"] != w.turns {
				t.Errorf("%s: turns %v, want %v", id, got.Rewards["turns"], w.turns)
			}
			for _, c := range got.Checks {
				if _, ok := c["turn"]; !ok {
					t.Errorf("%s: check %v has no turn", id, c)
				}
			}
		}
		// weather-b's checks: the trajectory check credited to turn 0, the
		// turn checks to their turns; the plain rollout's, to none.
		for _, got := range lines {
			var turns []any
			for _, c := range got.Checks {
				if c["kind"] != "flag" {
					turns = append(turns, c["turn"])
				}
			}
			switch got.Rewards["rollout_id"] {
			case "weather-b":
				if !reflect.DeepEqual(turns, []any{0.0, 0.0, 1.0}) {
					t.Errorf("weather-b: check turns %v, want [0 0 1]", turns)
				}
			case "plain":
				for _, tu := range turns {
					if tu != nil {
						t.Errorf("plain: check turns %v, want nulls", turns)
					}
				}
			}
		}
		// The rows as grade writes them: turn_rewards and turns after the
		// flags' columns, turn last in the checks.
		first := strings.SplitN(r.body, "\n", 2)[0]
		rewardsOrder := []string{`"input_hash":`, `"turn_rewards":`, `"turns":`, `,"checks":`}
		checksOrder := []string{`"suggestion":`, `"turn":`}
		if health {
			rewardsOrder = []string{`"input_hash":`, `"flags":`, `"output_hash":`, `"turn_rewards":`, `"turns":`, `,"checks":`}
			checksOrder = []string{`"suggestion":`, `"kind":`, `"turn":`}
		}
		for _, order := range [][]string{rewardsOrder, checksOrder} {
			at := 0
			for _, k := range order {
				i := strings.Index(first[at:], k)
				if i < 0 {
					t.Errorf("health %v: %s not after %s in %s", health, k, order[0], first)
					break
				}
				at += i
			}
		}
	}

	// A set that scores no turns: no turn columns, whatever the rows hold.
	_, plain := newServer(t, Config{})
	r := do(t, plain, "POST", "/v1/grade", "application/x-ndjson", body)
	if r.code != 200 {
		t.Fatalf("status %d: %s", r.code, r.body)
	}
	for _, got := range gradedLines(t, r.body) {
		for _, k := range []string{"turn_rewards", "turns"} {
			if v, ok := got.Rewards[k]; ok {
				t.Errorf("no turns, %s: %s %v, want no such column", got.Rewards["rollout_id"], k, v)
			}
		}
		for _, c := range got.Checks {
			if v, ok := c["turn"]; ok {
				t.Errorf("no turns, %s: check turn %v, want no such column", got.Rewards["rollout_id"], v)
			}
		}
	}
}

// gymTurnsSpec scores each turn of a NeMo Gym response: a turn calling
// the weather tool asks for Oslo, a turn that answers names it; a turn
// doing neither is not scored.
const gymTurnsSpec = `verifiers:
  - id: VER-GYM-TURNS
    task: TASK-GYM-TURNS
    name: the weather in Oslo, turn by turn
    checks:
      - {id: expected, type: expr, expr: "output.contains(meta.expected_answer)"}
    turn_checks:
      - id: asks-for-oslo
        type: expr
        when: turn.tool_calls.exists(c, c.name == "get_weather")
        expr: turn.tool_calls.all(c, c.name != "get_weather" || c.kwargs.city == "Oslo")
      - id: names-oslo
        type: expr
        when: size(turn.tool_calls) == 0
        expr: turn.text.contains("Oslo")
`

// gymTurnsRequest is a verify request whose response has three agent
// turns: a weather call (items 0 and 1), a clock call (item 3), and the
// answer (item 5).
const gymTurnsRequest = `{"responses_create_params": {"input": "Weather in Oslo?"},
  "response": {"output": [
    {"type": "reasoning", "summary": []},
    {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"},
    {"type": "function_call_output", "call_id": "c1", "output": "4C"},
    {"type": "function_call", "call_id": "c2", "name": "get_time", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c2", "output": "noon"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is 4C in Oslo at noon."}]}
  ]},
  "expected_answer": "4C", "turns": "the task row's", "step_rewards": [9]}`

// POST /verify with a verifier that scores turns: the answer carries
// step_rewards, one per agent turn of the response (the turns the
// nemo-gym format reads), null for a turn not scored, in place of the
// request's; with a verifier that scores none, the answer is the one a
// server without turns gives, byte for byte.
func TestVerifyStepRewards(t *testing.T) {
	vs, err := spec.Parse("math.yaml", []byte(mathSpec))
	if err != nil {
		t.Fatal(err)
	}
	gym, err := spec.Parse("gym.yaml", []byte(gymTurnsSpec))
	if err != nil {
		t.Fatal(err)
	}
	_, withTurns := newServer(t, Config{}, append(vs, gym...)...)
	_, without := newServer(t, Config{}, vs...)
	verify := func(path, body string) (response, map[string]any) {
		t.Helper()
		r := do(t, withTurns, "POST", path, "application/json", body)
		var got map[string]any
		if err := json.Unmarshal([]byte(r.body), &got); err != nil || r.code != 200 {
			t.Fatalf("POST %s = %d %s (%v)", path, r.code, r.body, err)
		}
		return r, got
	}

	r, got := verify("/verify?task=TASK-GYM-TURNS", gymTurnsRequest)
	if !strings.Contains(r.body, `"reward":1.0,"reward_components":{"expected":1.0,"asks-for-oslo":1.0,"names-oslo":1.0},"step_rewards":[1.0,null,1.0]}`) {
		t.Errorf("answer %s, want step_rewards [1.0,null,1.0] after reward_components", r.body)
	}
	if got["turns"] != "the task row's" || strings.Count(r.body, `"step_rewards"`) != 1 {
		t.Errorf("answer %s: want the request's turns kept and its step_rewards replaced", r.body)
	}
	wrong := strings.Replace(gymTurnsRequest, `{\"city\": \"Oslo\"}`, `{\"city\": \"Bergen\"}`, 1)
	if r, _ := verify("/verify?task=TASK-GYM-TURNS", wrong); !strings.Contains(r.body, `"step_rewards":[0.0,null,1.0]}`) {
		t.Errorf("Bergen: %s, want step_rewards [0.0,null,1.0]", r.body)
	}
	// A response with no agent turn: an empty list.
	none := `{"responses_create_params": {"input": "x"}, "response": {"output": []}, "expected_answer": ""}`
	if r, _ := verify("/verify?task=TASK-GYM-TURNS", none); !strings.Contains(r.body, `"step_rewards":[]}`) {
		t.Errorf("no turns: %s, want step_rewards []", r.body)
	}
	// A rollout gavel cannot grade: NeMo Gym's failure shape, no
	// step_rewards (the request's dropped).
	noAnswer := strings.Replace(gymTurnsRequest, `"expected_answer": "4C", `, ``, 1)
	if r, got := verify("/verify?task=TASK-GYM-TURNS", noAnswer); got["_ng_failure_class"] != "gavel_error" || strings.Contains(r.body, "step_rewards") {
		t.Errorf("failed grading: %s, want the failure shape without step_rewards", r.body)
	}

	// A verifier that scores no turns: the answer of a server without
	// turns, byte for byte, the request's own fields kept.
	for _, body := range []string{gymVerifyRequest, strings.Replace(gymVerifyRequest, `"reward": 0.0`, `"reward": 0.0, "turns": 1, "step_rewards": [1]`, 1)} {
		a := do(t, withTurns, "POST", "/verify?task=TASK-GYM", "application/json", body)
		b := do(t, without, "POST", "/verify?task=TASK-GYM", "application/json", body)
		if a.code != 200 || a.body != b.body {
			t.Errorf("a verifier without turns, in a set with turns: %d %s\nwithout turns: %d %s", a.code, a.body, b.code, b.body)
		}
		if strings.Contains(body, "step_rewards") != strings.Contains(a.body, "step_rewards") {
			t.Errorf("answer %s: a verifier without turns sets step_rewards", a.body)
		}
	}
}
