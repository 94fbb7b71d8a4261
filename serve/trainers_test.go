package serve

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/columnar/nemogym"
	"github.com/gavelhq/gavel/verifiers/spec"
)

// mathSpec grades an answer against the ground truth a trainer sends as
// metadata: required, the label is in the output; optional, it is short.
const mathSpec = `verifiers:
  - id: VER-MATH
    task: TASK-MATH
    name: the answer holds the label
    checks:
      - id: answer
        type: expr
        expr: "output.contains(string(meta.label))"
      - id: short
        type: expr
        optional: true
        expr: "size(output) < 20"
  - id: VER-GYM
    task: TASK-GYM
    name: the answer is the expected one
    checks:
      - id: expected
        type: expr
        expr: "output.trim() == meta.expected_answer && meta.prompt.contains('2+2')"
`

func trainerServer(t *testing.T, cfg Config) (*Server, func(method, path, body string) response) {
	t.Helper()
	vs, err := spec.Parse("math.yaml", []byte(mathSpec))
	if err != nil {
		t.Fatal(err)
	}
	s, ts := newServer(t, cfg, vs...)
	return s, func(method, path, body string) response {
		return do(t, ts, method, path, "application/json", body)
	}
}

// openRLHFRequest is a request as OpenRLHF's SingleTurnAgentExecutor
// builds it (openrlhf/utils/agent.py, _fetch_rewards_via_http): query is
// the decoded prompt and response, prompts the prompt, labels the label
// key's values, all lists of the same length.
func openRLHFRequest(queries, prompts, labels []string) string {
	b, _ := json.Marshal(map[string][]string{"query": queries, "prompts": prompts, "labels": labels})
	return string(b)
}

func TestGetReward(t *testing.T) {
	_, post := trainerServer(t, Config{DefaultTask: "TASK-MATH"})
	prompt := "<|user|>What is 6*7?<|assistant|>"
	body := openRLHFRequest(
		[]string{prompt + "It is 42.", prompt + "It is 41, I think, or maybe not.", prompt + "Forty-two, that is 42 as a number"},
		[]string{prompt, prompt, prompt}, []string{"42", "42", "42"})
	r := post("POST", "/get_reward", body)
	if r.code != 200 {
		t.Fatalf("/get_reward = %d %s", r.code, r.body)
	}
	var got struct {
		Rewards, Scores []float64
		ExtraLogs       map[string][]float64 `json:"extra_logs"`
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	// fraction: both checks pass, none, the required one only.
	want := []float64{1, 0, 0.5}
	for i := range want {
		if got.Rewards[i] != want[i] || got.Scores[i] != want[i] {
			t.Errorf("rollout %d: reward %v score %v, want %v (%s)", i, got.Rewards[i], got.Scores[i], want[i], r.body)
		}
	}
	if p := got.ExtraLogs["passed"]; len(p) != 3 || p[0] != 1 || p[1] != 0 || p[2] != 1 {
		t.Errorf("extra_logs.passed = %v, want [1 0 1]", p)
	}
	if c := got.ExtraLogs["checks_passed"]; len(c) != 3 || c[0] != 2 || c[1] != 0 || c[2] != 1 {
		t.Errorf("extra_logs.checks_passed = %v, want [2 0 1]", c)
	}
	if _, ok := got.ExtraLogs["error"]; ok {
		t.Errorf("extra_logs.error without --on-error-reward: %s", r.body)
	}

	// The task from the request, else ?task=, over the default.
	one := openRLHFRequest([]string{"It is 42."}, nil, []string{"42"})
	for _, c := range []struct{ path, body, want string }{
		{"/get_reward?task=TASK-NONE", one, `no verifier binds task \"TASK-NONE\"`},
		{"/get_reward", strings.Replace(one, `{`, `{"task":"TASK-OTHER",`, 1), `no verifier binds task \"TASK-OTHER\"`},
		{"/get_reward?task=TASK-NONE", strings.Replace(one, `{`, `{"task":["TASK-MATH"],`, 1), `"rewards":[1]`},
	} {
		if r := post("POST", c.path, c.body); !strings.Contains(r.body, c.want) {
			t.Errorf("POST %s %s = %d %s, want %s", c.path, c.body, r.code, r.body, c.want)
		}
	}
}

// TestGetRewardRefusals: a request that cannot be mapped is a 400 naming
// the field, a task without a verifier or a rollout without a reward a
// 422 naming the rollouts; never a reward of 0.
func TestGetRewardRefusals(t *testing.T) {
	_, post := trainerServer(t, Config{})
	for _, c := range []struct {
		body string
		code int
		want string
	}{
		{`{"query": "x"}`, 400, "query: want a list of strings"},
		{`{"query": ["a", "b"], "prompts": ["a"]}`, 400, "prompts: want a list as long as query (2)"},
		{`{"query": ["a"], "task": 3}`, 400, "task: want a string"},
		{`{"query": ["ab"], "prompts": ["x"], "task": "TASK-MATH"}`, 400, "query[0] does not begin with prompts[0]"},
		{`{"query": [7], "task": "TASK-MATH"}`, 400, "query[0]: want a string"},
		{`{"query": ["a"]}`, 422, "rollout 0 names no task"},
		{`{"query": ["a"], "labels": ["1"], "task": "TASK-NOPE"}`, 422, `rollout 0: no verifier binds task \"TASK-NOPE\"`},
		// No label: meta.label is missing, so the required check errs.
		{`{"query": ["a", "b 1"], "labels": [null, "1"], "task": "TASK-MATH"}`, 422, "1 of 2 rollouts could not be graded: rollout 0: "},
		{`{"query": [`, 400, "invalid JSON at byte"},
	} {
		r := post("POST", "/get_reward", c.body)
		if r.code != c.code || !strings.Contains(r.body, c.want) {
			t.Errorf("%s = %d %s, want %d with %q", c.body, r.code, r.body, c.code, c.want)
		}
		if strings.Contains(r.body, `"rewards"`) {
			t.Errorf("%s answered rewards: %s", c.body, r.body)
		}
	}
}

// TestGetRewardOnErrorReward: with --on-error-reward, a rollout that could
// not be graded gets that value and is flagged in extra_logs.error.
func TestGetRewardOnErrorReward(t *testing.T) {
	x := -1.0
	_, post := trainerServer(t, Config{OnErrorReward: &x, DefaultTask: "TASK-MATH"})
	r := post("POST", "/get_reward", `{"query": ["a", "b 1"], "labels": [null, "1"]}`)
	if r.code != 200 || !strings.Contains(r.body, `"rewards":[-1,1]`) || !strings.Contains(r.body, `"error":[1,0]`) {
		t.Errorf("= %d %s, want rewards [-1,1] and error [1,0]", r.code, r.body)
	}
	// A task without a verifier is still refused.
	if r := post("POST", "/get_reward?task=TASK-NOPE", `{"query": ["a"]}`); r.code != 422 {
		t.Errorf("unbound task with --on-error-reward = %d %s, want 422", r.code, r.body)
	}
}

// gymVerifyRequest is a verify request as NeMo Gym's rollout collection
// posts it to a resources server: the task row's fields, the Responses
// API request (responses_create_params) and the model's response.
const gymVerifyRequest = `{
  "responses_create_params": {"input": [
    {"role": "system", "content": "Answer with a number."},
    {"role": "user", "content": [{"type": "input_text", "text": "What is 2+2?"}]}
  ], "temperature": 1.0},
  "response": {"id": "resp_1", "object": "response", "created_at": 1, "model": "m", "parallel_tool_calls": false, "tool_choice": "auto", "tools": [],
    "output": [
      {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "two and two"}]},
      {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
       "content": [{"type": "output_text", "text": "4", "annotations": []}]}
    ]},
  "expected_answer": "4",
  "agent_ref": {"type": "responses_api_agents", "name": "simple_agent"},
  "reward": 0.0
}`

func TestVerify(t *testing.T) {
	_, post := trainerServer(t, Config{})
	r := post("POST", "/verify?task=TASK-GYM", gymVerifyRequest)
	if r.code != 200 {
		t.Fatalf("/verify = %d %s", r.code, r.body)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	if got["reward"] != 1.0 || !strings.Contains(r.body, `"reward":1.0`) {
		t.Errorf("reward = %v, want 1.0 written as a float: %s", got["reward"], r.body)
	}
	if rc, _ := got["reward_components"].(map[string]any); rc["expected"] != 1.0 {
		t.Errorf("reward_components = %v, want expected: 1", got["reward_components"])
	}
	if strings.Count(r.body, `"reward":`) != 1 {
		t.Errorf("the request's earlier reward is kept beside the new one: %s", r.body)
	}
	for _, k := range []string{"responses_create_params", "response", "expected_answer", "agent_ref"} {
		if _, ok := got[k]; !ok {
			t.Errorf("answer lacks the request's %s: %s", k, r.body)
		}
	}
	if _, ok := got["_ng_failure_class"]; ok {
		t.Errorf("a graded rollout has a failure class: %s", r.body)
	}

	// A wrong answer is a reward of 0 with no failure.
	wrong := strings.Replace(gymVerifyRequest, `"text": "4"`, `"text": "5"`, 1)
	if r := post("POST", "/verify", strings.Replace(wrong, `"expected_answer"`, `"task": "TASK-GYM", "expected_answer"`, 1)); !strings.Contains(r.body, `"reward":0.0,"reward_components":{"expected":0.0}`) {
		t.Errorf("wrong answer = %d %s", r.code, r.body)
	}
	// A rollout gavel cannot grade is NeMo Gym's failure shape.
	noAnswer := strings.Replace(gymVerifyRequest, `"expected_answer": "4",`, ``, 1)
	r = post("POST", "/verify?task=TASK-GYM", noAnswer)
	got = nil
	if err := json.Unmarshal([]byte(r.body), &got); err != nil || r.code != 200 {
		t.Fatalf("= %d %s (%v)", r.code, r.body, err)
	}
	if got["_ng_failure_class"] != "gavel_error" || !strings.Contains(got["error"].(string), "expected") || got["reward_components"] != nil {
		t.Errorf("failed grading = %s, want _ng_failure_class gavel_error with the reason", r.body)
	}
	for _, c := range []struct {
		path, body string
		code       int
		want       string
	}{
		{"/verify", gymVerifyRequest, 422, "the request names no task"},
		{"/verify?task=TASK-NOPE", gymVerifyRequest, 422, `no verifier binds task \"TASK-NOPE\"`},
		{"/verify?task=TASK-GYM", `{"response": {"output": []}}`, 400, "responses_create_params and response: want two objects"},
		{"/verify?task=TASK-GYM", `{"responses_create_params": {}, "response": {"output": 1}}`, 400, "response: output: want a list"},
		{"/verify?task=TASK-GYM", `[1]`, 400, "want a JSON object"},
	} {
		if r := post("POST", c.path, c.body); r.code != c.code || !strings.Contains(r.body, c.want) {
			t.Errorf("POST %s %.40s = %d %s, want %d with %q", c.path, c.body, r.code, r.body, c.code, c.want)
		}
	}
	if r := post("GET", "/reverify_mode", ""); r.code != 200 || strings.TrimSpace(r.body) != `"stateless"` {
		t.Errorf("/reverify_mode = %d %s", r.code, r.body)
	}
}

func TestResponseText(t *testing.T) {
	for _, c := range []struct{ resp, want string }{
		{`{"output": []}`, ""},
		{`{"output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}, {"type": "refusal", "refusal": "no"}, {"type": "output_text", "text": "b"}]}, {"type": "function_call", "name": "f"}, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "c\"d"}]}]}`, "a\nb\nc\"d"},
	} {
		v := parseValue(t, c.resp)
		got, err := nemogym.ResponseText(v)
		if err != nil || string(got) != c.want {
			t.Errorf("responseText(%s) = %q, %v; want %q", c.resp, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{`"plain"`, "plain"},
		{`[{"role": "user", "content": "first"}, {"role": "assistant", "content": "x"}, {"role": "user", "content": [{"type": "input_text", "text": "second"}]}]`, "second"},
		{`[{"role": "system", "content": "s"}]`, ""},
	} {
		got, err := nemogym.PromptText(parseValue(t, c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("promptText(%s) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// parseValue parses text, failing the test if it is not JSON.
func parseValue(t *testing.T, text string) jsonview.Value {
	t.Helper()
	var d jsonview.Doc
	v, err := d.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
