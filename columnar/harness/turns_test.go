package harness

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// testTurn is a turn as the tests read it.
type testTurn struct {
	Index        int            `json:"index"`
	Text         string         `json:"text"`
	ToolCalls    []testTurnCall `json:"tool_calls"`
	ToolResults  []testResult   `json:"tool_results"`
	MessageIndex int            `json:"message_index"`
}

type testTurnCall struct {
	Name        *string        `json:"name"`
	Kwargs      map[string]any `json:"kwargs"`
	KwargsRaw   *string        `json:"kwargs_raw"`
	KwargsError *string        `json:"kwargs_error"`
	ID          *string        `json:"id"`
	Requestor   *string        `json:"requestor"`
}

type testResult struct {
	EventType string  `json:"eventType"`
	Name      *string `json:"name"`
	Content   string  `json:"content"`
	ID        *string `json:"id"`
	IsError   bool    `json:"is_error"`
	Error     *string `json:"error"`
	Requestor *string `json:"requestor"`
}

// turnKeys are the members of a turn, in order.
var turnKeys = []string{"index", "text", "tool_calls", "tool_results", "message_index"}

// jsonKeys returns the keys of the JSON object raw in order, repeats
// included, or nil when raw is not an object.
func jsonKeys(raw []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	keys := []string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		keys = append(keys, tok.(string))
	}
	return keys
}

// checkTurns checks the shape of a rollout with turns: one line of valid
// JSON whose last member, and only member named turns, is an array of
// turns with the members turnKeys in order, indexes counting from 0 and
// message indexes rising; it returns the turns.
func checkTurns(t *testing.T, where string, rollout []byte) []testTurn {
	t.Helper()
	if !json.Valid(rollout) || bytes.ContainsAny(rollout, "\n\r") {
		t.Fatalf("%s: rollout is not one line of valid JSON: %q", where, rollout)
	}
	keys := jsonKeys(rollout)
	n := 0
	for _, k := range keys {
		if k == "turns" {
			n++
		}
	}
	if n != 1 || keys[len(keys)-1] != "turns" {
		t.Fatalf("%s: rollout members %q: want one turns, the last", where, keys)
	}
	var raw struct{ Turns []json.RawMessage }
	if err := json.Unmarshal(rollout, &raw); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	turns := make([]testTurn, len(raw.Turns))
	for i, tr := range raw.Turns {
		if k := jsonKeys(tr); !reflect.DeepEqual(k, turnKeys) {
			t.Fatalf("%s: turn %d has members %q, want %q", where, i, k, turnKeys)
		}
		if err := json.Unmarshal(tr, &turns[i]); err != nil {
			t.Fatalf("%s: turn %d: %v", where, i, err)
		}
		tu := turns[i]
		if tu.Index != i {
			t.Fatalf("%s: turn %d has index %d", where, i, tu.Index)
		}
		if tu.MessageIndex < 0 || i > 0 && tu.MessageIndex <= turns[i-1].MessageIndex {
			t.Fatalf("%s: turn %d has message_index %d after %d", where, i, tu.MessageIndex, turns[max(i-1, 0)].MessageIndex)
		}
		for _, r := range tu.ToolResults {
			if r.EventType != "tool_result" {
				t.Fatalf("%s: turn %d has a result %+v", where, i, r)
			}
		}
		var calls struct {
			ToolCalls []json.RawMessage `json:"tool_calls"`
		}
		json.Unmarshal(tr, &calls)
		for _, c := range calls.ToolCalls {
			if k := jsonKeys(c); len(k) == 0 || k[0] != "name" {
				t.Fatalf("%s: turn %d has a call %s", where, i, c)
			}
		}
	}
	return turns
}

// readTurns reads the fixture file with turns on and returns the turns of
// each rollout mapped without an error, by where.
func readTurns(t *testing.T, file string, f Format) map[string][]testTurn {
	t.Helper()
	r, err := Open(filepath.Join("testdata", file), f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.SetTurns(true)
	got := make(map[string][]testTurn)
	for {
		it, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if it.Err != nil {
			continue
		}
		got[it.Where] = checkTurns(t, it.Where, it.Rollout)
	}
	return got
}

func turnsOf(t *testing.T, all map[string][]testTurn, where string, n int) []testTurn {
	t.Helper()
	turns, ok := all[where]
	if !ok {
		t.Fatalf("no rollout at %s; have %v", where, reflect.ValueOf(all).MapKeys())
	}
	if len(turns) != n {
		t.Fatalf("%s: %d turns, want %d: %+v", where, len(turns), n, turns)
	}
	return turns
}

func str(p *string) string {
	if p == nil {
		return "<none>"
	}
	return *p
}

func wantCall(t *testing.T, c testTurnCall, name, id string, kwargs map[string]any) {
	t.Helper()
	if str(c.Name) != name || str(c.ID) != id || !reflect.DeepEqual(c.Kwargs, kwargs) || c.KwargsRaw != nil || c.Requestor != nil {
		t.Errorf("call %s %s %v, kwargs_raw %s, requestor %s; want %s %s %v", str(c.Name), str(c.ID), c.Kwargs, str(c.KwargsRaw), str(c.Requestor), name, id, kwargs)
	}
}

func wantResult(t *testing.T, r testResult, name, id, content string) {
	t.Helper()
	if str(r.Name) != name || str(r.ID) != id || r.Content != content {
		t.Errorf("result %s %s %q, want %s %s %q", str(r.Name), str(r.ID), r.Content, name, id, content)
	}
}

// testInspectTurns checks the samples of testdata/inspect/log.json, which
// run.eval holds too.
func testInspectTurns(t *testing.T, all map[string][]testTurn, first, second, third string) {
	turns := turnsOf(t, all, first, 2)
	tu := turns[0]
	if tu.Text != "" || tu.MessageIndex != 2 || len(tu.ToolCalls) != 2 || len(tu.ToolResults) != 2 {
		t.Fatalf("%s turn 0: %+v", first, tu)
	}
	wantCall(t, tu.ToolCalls[0], "get_cart", "call_a", map[string]any{"user": "u1"})
	wantCall(t, tu.ToolCalls[1], "list_coupons", "call_b", map[string]any{})
	wantResult(t, tu.ToolResults[0], "get_cart", "call_a", `{"items": [{"sku": "x", "price": 40}]}`)
	if r := tu.ToolResults[1]; !r.IsError || str(r.Error) != "Command timed out after 30 seconds" || str(r.ID) != "call_b" {
		t.Errorf("%s: result %+v, want call_b's error", first, r)
	}
	if tu := turns[1]; tu.Text != "The total is 42." || tu.MessageIndex != 5 || len(tu.ToolCalls) != 0 || len(tu.ToolResults) != 0 {
		t.Errorf("%s turn 1: %+v", first, tu)
	}

	turns = turnsOf(t, all, second, 1)
	tu = turns[0]
	if tu.Text != "Checking." || tu.MessageIndex != 2 || len(tu.ToolCalls) != 1 || len(tu.ToolResults) != 1 {
		t.Fatalf("%s turn 0: %+v", second, tu)
	}
	if c := tu.ToolCalls[0]; str(c.Name) != "get_cart" || str(c.KwargsError) != "Expecting ',' delimiter: line 1 column 12" {
		t.Errorf("%s: call %+v, want get_cart with Inspect's parse error", second, c)
	}
	wantResult(t, tu.ToolResults[0], "get_cart", "call_c", "error: bad arguments")

	turnsOf(t, all, third, 0)
}

func TestTurnsInspectEval(t *testing.T) {
	all := readTurns(t, "inspect/run.eval", Inspect)
	testInspectTurns(t, all, "sample 1 epoch 1", "sample 1 epoch 2", "sample q-2 epoch 1")
}

func TestTurnsInspectJSON(t *testing.T) {
	all := readTurns(t, "inspect/log.json", Inspect)
	testInspectTurns(t, all, "sample 1 epoch 1", "sample 1 epoch 2", "sample q-2 epoch 1")
}

func TestTurnsTauBench(t *testing.T) {
	all := readTurns(t, "tau-bench/tool-calling-gpt-4o-0.0_range_0--1.json", TauBench)
	turns := turnsOf(t, all, "element 0", 4)
	tu := turns[0]
	if tu.MessageIndex != 2 || tu.Text != "" || len(tu.ToolCalls) != 2 || len(tu.ToolResults) != 2 {
		t.Fatalf("turn 0: %+v", tu)
	}
	wantCall(t, tu.ToolCalls[0], "find_user_id_by_name_zip", "call_1", map[string]any{"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"})
	wantCall(t, tu.ToolCalls[1], "list_all_product_types", "call_2", map[string]any{}) // arguments ""
	wantResult(t, tu.ToolResults[0], "find_user_id_by_name_zip", "call_1", "yusuf_rossi_9620")
	wantResult(t, tu.ToolResults[1], "list_all_product_types", "call_2", `{"T-Shirt": "9523456873"}`)
	if tu := turns[1]; tu.Text != "I found your account. Which order?" || tu.MessageIndex != 5 || len(tu.ToolCalls)+len(tu.ToolResults) != 0 {
		t.Errorf("turn 1: %+v", tu)
	}
	tu = turns[2]
	if tu.MessageIndex != 7 || len(tu.ToolCalls) != 1 || len(tu.ToolResults) != 1 {
		t.Fatalf("turn 2: %+v", tu)
	}
	if c := tu.ToolCalls[0]; str(c.Name) != "cancel_pending_order" || c.Kwargs != nil || str(c.KwargsRaw) != "{'order_id': '#W2378156'}" ||
		!strings.HasPrefix(str(c.KwargsError), "arguments are not valid JSON") {
		t.Errorf("turn 2: call %+v, want kwargs_raw and kwargs_error", c)
	}
	wantResult(t, tu.ToolResults[0], "cancel_pending_order", "call_3", "Error: invalid arguments")
	if tu := turns[3]; tu.Text != "Your order is cancelled." || tu.MessageIndex != 9 {
		t.Errorf("turn 3: %+v", tu)
	}

	turns = turnsOf(t, all, "element 1", 1)
	if tu := turns[0]; tu.Text != "There are\n10 options." || tu.MessageIndex != 1 {
		t.Errorf("element 1: %+v", tu)
	}
	turnsOf(t, all, "element 2", 0)
}

func TestTurnsTau2(t *testing.T) {
	for _, file := range []string{"tau2/results.json", "tau2/tasks_last.json"} {
		t.Run(file, func(t *testing.T) {
			all := readTurns(t, file, Tau2)
			turns := turnsOf(t, all, "simulation 0", 4)
			if tu := turns[0]; tu.Text != "Hi! How can I help you today?" || tu.MessageIndex != 0 || len(tu.ToolCalls)+len(tu.ToolResults) != 0 {
				t.Errorf("turn 0: %+v", tu)
			}
			tu := turns[1]
			if tu.Text != "" || tu.MessageIndex != 2 || len(tu.ToolCalls) != 2 || len(tu.ToolResults) != 2 {
				t.Fatalf("turn 1: %+v", tu)
			}
			wantCall(t, tu.ToolCalls[0], "get_reservation_details", "c1", map[string]any{"reservation_id": "EHGLP3"})
			wantCall(t, tu.ToolCalls[1], "get_user_details", "c2", map[string]any{})
			wantResult(t, tu.ToolResults[0], "get_reservation_details", "c1", `{"reservation_id": "EHGLP3"}`)
			wantResult(t, tu.ToolResults[1], "get_user_details", "c2", "Error: user_id is required")
			if !tu.ToolResults[1].IsError || tu.ToolResults[0].IsError {
				t.Errorf("turn 1: results %+v, want c2's failed", tu.ToolResults)
			}
			tu = turns[2]
			if tu.MessageIndex != 5 || len(tu.ToolCalls) != 1 || len(tu.ToolResults) != 1 {
				t.Fatalf("turn 2: %+v", tu)
			}
			wantCall(t, tu.ToolCalls[0], "cancel_reservation", "c3", map[string]any{"reservation_id": "EHGLP3"})
			wantResult(t, tu.ToolResults[0], "cancel_reservation", "c3", `{"status": "cancelled"}`)
			if tu := turns[3]; tu.Text != "Done: EHGLP3 is cancelled." || tu.MessageIndex != 7 {
				t.Errorf("turn 3: %+v", tu)
			}

			// The user's tool call (check_status_bar, in a user message)
			// and its result are no agent turn's.
			turns = turnsOf(t, all, "simulation 1", 1)
			if tu := turns[0]; tu.Text != "Please toggle airplane mode." || tu.MessageIndex != 2 || len(tu.ToolCalls)+len(tu.ToolResults) != 0 {
				t.Errorf("simulation 1: %+v", tu)
			}
			if file == "tau2/results.json" {
				turnsOf(t, all, "simulation 2", 0)
			}
		})
	}
}

// TestTurnsTau2UserTools checks that a user's tool calls and results
// (requestor user) belong to no turn, even a result without an id.
func TestTurnsTau2UserTools(t *testing.T) {
	in := `{"simulations": [{"id": "s", "task_id": "t", "messages": [
		{"role": "assistant", "content": "hi"},
		{"role": "user", "content": "wait", "tool_calls": [{"id": "u1", "name": "toggle", "arguments": {}, "requestor": "user"}]},
		{"role": "tool", "content": "no id", "requestor": "user"},
		{"role": "tool", "tool_messages": [{"id": "u1", "role": "tool", "content": "on", "requestor": "user"}]},
		{"role": "assistant", "content": null, "tool_calls": [{"id": "a1", "name": "check", "arguments": {"x": 1}, "requestor": "assistant"}]},
		{"role": "tool", "id": "a1", "content": "ok", "requestor": "assistant", "error": false}]}]}`
	r, err := NewReader("results.json", strings.NewReader(in), Tau2)
	if err != nil {
		t.Fatal(err)
	}
	r.SetTurns(true)
	it, err := r.Next()
	if err != nil || it.Err != nil {
		t.Fatal(err, it.Err)
	}
	turns := checkTurns(t, it.Where, it.Rollout)
	if len(turns) != 2 {
		t.Fatalf("%d turns, want 2: %+v", len(turns), turns)
	}
	if tu := turns[0]; tu.Text != "hi" || tu.MessageIndex != 0 || len(tu.ToolCalls)+len(tu.ToolResults) != 0 {
		t.Errorf("turn 0: %+v, want no user tool calls or results", tu)
	}
	tu := turns[1]
	if tu.MessageIndex != 4 || len(tu.ToolCalls) != 1 || len(tu.ToolResults) != 1 {
		t.Fatalf("turn 1: %+v", tu)
	}
	wantCall(t, tu.ToolCalls[0], "check", "a1", map[string]any{"x": 1.0})
	wantResult(t, tu.ToolResults[0], "check", "a1", "ok")
	if m := members(it.Rollout); !bytes.Contains(m["log"], []byte(`"content":"no id"`)) {
		t.Errorf("log %s, want the user's results", m["log"])
	}
}

func TestTurnsMessages(t *testing.T) {
	all := readTurns(t, "messages/chats.jsonl", Messages)
	turns := turnsOf(t, all, "line 1", 3)
	tu := turns[0]
	if tu.MessageIndex != 2 || len(tu.ToolCalls) != 2 || len(tu.ToolResults) != 2 {
		t.Fatalf("line 1 turn 0: %+v", tu)
	}
	wantCall(t, tu.ToolCalls[0], "create_opportunity", "t1", map[string]any{"name": "ACME Expansion", "amount": 50000.0})
	wantCall(t, tu.ToolCalls[1], "list_users", "t2", map[string]any{})
	wantResult(t, tu.ToolResults[0], "create_opportunity", "t1", `{"id": "OPP-0101"}`)
	wantResult(t, tu.ToolResults[1], "list_users", "t2", `["USR-002"]`) // named after its call
	if tu := turns[1]; tu.Text != "Created OPP-0101." || tu.MessageIndex != 5 {
		t.Errorf("line 1 turn 1: %+v", tu)
	}
	if tu := turns[2]; tu.Text != "Done:\nACME Expansion, 50000." || tu.MessageIndex != 6 {
		t.Errorf("line 1 turn 2: %+v", tu)
	}

	turns = turnsOf(t, all, "line 3", 1)
	tu = turns[0]
	if tu.MessageIndex != 0 || len(tu.ToolCalls) != 2 || len(tu.ToolResults) != 1 {
		t.Fatalf("line 3 turn 0: %+v", tu)
	}
	if c := tu.ToolCalls[1]; str(c.Name) != "now" || str(c.KwargsRaw) != "[]" || str(c.KwargsError) != "arguments are array, not an object" {
		t.Errorf("line 3: call %+v", c)
	}
	wantResult(t, tu.ToolResults[0], "sum", "t9", "bad request")
	turnsOf(t, all, "line 6", 0)
}

// TestTurnsMessagesOwnMembers reads lines with their own log and turns:
// the log is the line's, the turns the messages'.
func TestTurnsMessagesOwnMembers(t *testing.T) {
	in := `{"task_id": "a", "log": [], "turns": "mine", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "hi"}], "x": 1}` + "\n" +
		`{"task_id": "b", "output": "o", "turns": [1]}` + "\n"
	r, err := NewReader("own.jsonl", strings.NewReader(in), Messages)
	if err != nil {
		t.Fatal(err)
	}
	r.SetTurns(true)
	it, err := r.Next()
	if err != nil || it.Err != nil {
		t.Fatal(err, it.Err)
	}
	turns := checkTurns(t, it.Where, it.Rollout)
	if len(turns) != 1 || turns[0].Text != "hi" || turns[0].MessageIndex != 1 {
		t.Errorf("turns %+v", turns)
	}
	if m := members(it.Rollout); string(m["log"]) != "[]" || string(m["x"]) != "1" {
		t.Errorf("rollout %s: want the line's log and x", it.Rollout)
	}
	it, err = r.Next()
	if err != nil || it.Err != nil {
		t.Fatal(err, it.Err)
	}
	if turns := checkTurns(t, it.Where, it.Rollout); len(turns) != 0 {
		t.Errorf("line 2: turns %+v, want none", turns)
	}

	r, _ = NewReader("own.jsonl", strings.NewReader(in), Messages)
	it, _ = r.Next()
	if m := members(it.Rollout); string(m["turns"]) != `"mine"` {
		t.Errorf("turns off: rollout %s, want the line's turns as metadata", it.Rollout)
	}
}

func TestTurnsNemoGym(t *testing.T) {
	all := readTurns(t, "nemo-gym/run/rollouts.jsonl", NemoGym)
	// A reasoning item and a message: one turn.
	turns := turnsOf(t, all, "line 1 (byte 0)", 1)
	if tu := turns[0]; tu.Text != `17 × 3 = 51, so the answer is \boxed{51}.` || tu.MessageIndex != 0 || len(tu.ToolCalls)+len(tu.ToolResults) != 0 {
		t.Errorf("line 1: %+v", tu)
	}
	// function_call, function_call_output, message: two turns.
	turns = turnsOf(t, all, "line 4 (byte 1716)", 2)
	tu := turns[0]
	if tu.Text != "" || tu.MessageIndex != 0 || len(tu.ToolCalls) != 1 || len(tu.ToolResults) != 1 {
		t.Fatalf("line 4 turn 0: %+v", tu)
	}
	wantCall(t, tu.ToolCalls[0], "get_weather", "call_w1", map[string]any{"city": "Oslo"})
	wantResult(t, tu.ToolResults[0], "get_weather", "call_w1", `{"temp_c": 4, "sky": "cloudy"}`)
	if tu := turns[1]; tu.Text != "It is 4 °C and cloudy in Oslo." || tu.MessageIndex != 2 || len(tu.ToolCalls)+len(tu.ToolResults) != 0 {
		t.Errorf("line 4 turn 1: %+v", tu)
	}

	all = readTurns(t, "nemo-gym/run/rollouts_failures.jsonl", NemoGym)
	turns = turnsOf(t, all, "line 1 (byte 0)", 1)
	if tu := turns[0]; tu.Text != `$3 buy a dozen: \boxed{12} eggs.` || tu.MessageIndex != 0 {
		t.Errorf("failures line 1: %+v", tu)
	}
}

// TestTurnsNemoGymGroups checks how output items group into turns.
func TestTurnsNemoGymGroups(t *testing.T) {
	line := `{"_ng_task_index": 0, "_ng_rollout_index": 0, "turns": "row's", "response": {"output": [` +
		`{"type": "function_call_output", "call_id": "early", "output": "before any turn"},` + // 0: dropped
		`{"type": "reasoning", "summary": []},` + // 1: turn 0
		`{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]},` +
		`{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"x\": 1}"},` +
		`{"type": "function_call", "call_id": "c2", "name": "g", "arguments": "oops"},` +
		`{"type": "function_call_output", "call_id": "c2", "output": "r2"},` + // 5
		`{"type": "function_call_output", "call_id": "c1", "output": "r1"},` +
		`{"type": "web_search_call", "id": "ws"},` + // 7: neither starts nor ends a turn
		`{"type": "reasoning", "summary": []},` + // 8: turn 1
		`{"type": "web_search_call", "id": "ws2"},` +
		`{"type": "message", "content": [{"type": "output_text", "text": "b"}]},` +
		`{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "c"}]},` +
		`{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "u"}]},` + // 12
		`{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "d"}]}` + // 13: turn 2
		`]}}` + "\n"
	r, err := NewReader("run.jsonl", strings.NewReader(line), NemoGym)
	if err != nil {
		t.Fatal(err)
	}
	r.SetTurns(true)
	it, err := r.Next()
	if err != nil || it.Err != nil {
		t.Fatal(err, it.Err)
	}
	turns := checkTurns(t, it.Where, it.Rollout)
	if len(turns) != 3 {
		t.Fatalf("%d turns, want 3: %+v", len(turns), turns)
	}
	tu := turns[0]
	if tu.Text != "a" || tu.MessageIndex != 1 || len(tu.ToolCalls) != 2 || len(tu.ToolResults) != 2 {
		t.Fatalf("turn 0: %+v", tu)
	}
	wantCall(t, tu.ToolCalls[0], "f", "c1", map[string]any{"x": 1.0})
	if c := tu.ToolCalls[1]; str(c.KwargsRaw) != "oops" || c.KwargsError == nil {
		t.Errorf("turn 0: call %+v, want kwargs_raw", c)
	}
	wantResult(t, tu.ToolResults[0], "g", "c2", "r2")
	wantResult(t, tu.ToolResults[1], "f", "c1", "r1")
	if tu := turns[1]; tu.Text != "b\nc" || tu.MessageIndex != 8 {
		t.Errorf("turn 1: %+v", tu)
	}
	if tu := turns[2]; tu.Text != "d" || tu.MessageIndex != 13 {
		t.Errorf("turn 2: %+v", tu)
	}
}

func TestTurnsATIF(t *testing.T) {
	all := readTurns(t, "atif/job/hello-file__Xk3pQ9a/agent/trajectory.json", ATIF)
	turns := turnsOf(t, all, "trajectory 1 (byte 0)", 3)
	tu := turns[0]
	if tu.Text != "I will write the file with printf." || tu.MessageIndex != 2 || len(tu.ToolCalls) != 1 || len(tu.ToolResults) != 1 {
		t.Fatalf("turn 0: %+v", tu)
	}
	wantCall(t, tu.ToolCalls[0], "bash", "call_1", map[string]any{"command": "printf 'Hello, world!' > hello.txt"})
	wantResult(t, tu.ToolResults[0], "bash", "call_1", "")
	tu = turns[1]
	if tu.Text != "" || tu.MessageIndex != 3 || len(tu.ToolResults) != 1 {
		t.Fatalf("turn 1: %+v", tu)
	}
	wantResult(t, tu.ToolResults[0], "bash", "call_2", "Hello, world!")
	if tu := turns[2]; tu.Text != "hello.txt now holds Hello, world!" || tu.MessageIndex != 4 || str(tu.ToolCalls[0].Name) != "mark_task_complete" {
		t.Errorf("turn 2: %+v", tu)
	}

	all = readTurns(t, "atif/batch.jsonl", ATIF)
	turns = turnsOf(t, all, "line 1 (byte 0)", 2)
	if tu := turns[0]; tu.MessageIndex != 1 || len(tu.ToolResults) != 1 || tu.ToolResults[0].Content != "NVDA close: 181.20 USD" {
		t.Errorf("line 1 turn 0: %+v", tu)
	}
	// The system step's result, without source_call_id, goes to the
	// agent step before it.
	turns = turnsOf(t, all, "line 3 (byte 817)", 2)
	tu = turns[0]
	if tu.Text != "The March bar reads 42 units." || tu.MessageIndex != 1 || len(tu.ToolResults) != 1 {
		t.Fatalf("line 3 turn 0: %+v", tu)
	}
	if r := tu.ToolResults[0]; r.Content != "history summarized to 120 tokens" || r.ID != nil || r.Name != nil {
		t.Errorf("line 3 turn 0: result %+v", r)
	}
	tu = turns[1]
	if tu.MessageIndex != 3 || len(tu.ToolResults) != 1 {
		t.Fatalf("line 3 turn 1: %+v", tu)
	}
	wantCall(t, tu.ToolCalls[0], "submit", "s1", map[string]any{"answer": 42.0})
	wantResult(t, tu.ToolResults[0], "submit", "s1", "submitted")
}

// turnFixtures are every fixture of the package, with its format.
var turnFixtures = []struct {
	file   string
	format Format
}{
	{"inspect/run.eval", Inspect},
	{"inspect/unfinished.eval", Inspect},
	{"inspect/log.json", Inspect},
	{"tau-bench/tool-calling-gpt-4o-0.0_range_0--1.json", TauBench},
	{"tau2/results.json", Tau2},
	{"tau2/tasks_last.json", Tau2},
	{"messages/chats.jsonl", Messages},
	{"nemo-gym/run/rollouts.jsonl", NemoGym},
	{"nemo-gym/run/rollouts_failures.jsonl", NemoGym},
	{"atif/job/hello-file__Xk3pQ9a/agent/trajectory.json", ATIF},
	{"atif/batch.jsonl", ATIF},
}

// compareTurns reads off, with turns off, and on, the same file with
// turns on, side by side: the same items, every rollout mapped without an
// error has turns (checkTurns), and but for turns the rollouts are the
// same.
func compareTurns(t *testing.T, off, on *Reader) {
	t.Helper()
	for i := 0; ; i++ {
		if i > 10000 {
			t.Fatal("more than 10000 items")
		}
		a, errA := off.Next()
		a.Rollout = bytes.Clone(a.Rollout)
		b, errB := on.Next()
		if (errA == nil) != (errB == nil) || (a.Err == nil) != (b.Err == nil) || a.Where != b.Where {
			t.Fatalf("item %d: turns off %s %v %v, on %s %v %v", i, a.Where, errA, a.Err, b.Where, errB, b.Err)
		}
		if errA != nil {
			return
		}
		if (a.Rollout == nil) != (b.Rollout == nil) {
			t.Fatalf("%s: rollout %s with turns off, %s on", a.Where, a.Rollout, b.Rollout)
		}
		if b.Rollout == nil {
			continue
		}
		if b.Err != nil {
			if !bytes.Equal(a.Rollout, b.Rollout) {
				t.Fatalf("%s: error rollout %s with turns off, %s on", a.Where, a.Rollout, b.Rollout)
			}
			continue
		}
		checkTurns(t, b.Where, b.Rollout)
		ma, mb := members(a.Rollout), members(b.Rollout)
		delete(ma, "turns")
		delete(mb, "turns")
		if len(ma) != len(mb) {
			t.Fatalf("%s: rollout %s with turns off, %s on", a.Where, a.Rollout, b.Rollout)
		}
		for k, v := range ma {
			if w, ok := mb[k]; !ok || !bytes.Equal(v, w) {
				t.Fatalf("%s: %s is %s with turns off, %s on", a.Where, k, v, w)
			}
		}
	}
}

// TestTurnsValid reads every fixture with turns on: every rollout is one
// line of valid JSON, with turns as checkTurns wants them, and else the
// rollout read with turns off.
func TestTurnsValid(t *testing.T) {
	for _, f := range turnFixtures {
		t.Run(f.file, func(t *testing.T) {
			path := filepath.Join("testdata", f.file)
			off, err := Open(path, f.format)
			if err != nil {
				t.Fatal(err)
			}
			defer off.Close()
			on, err := Open(path, f.format)
			if err != nil {
				t.Fatal(err)
			}
			defer on.Close()
			on.SetTurns(true)
			compareTurns(t, off, on)
		})
	}
}

// TestTurnsOff reads every fixture with turns off, and set on then off:
// no rollout has turns.
func TestTurnsOff(t *testing.T) {
	for _, f := range turnFixtures {
		for _, set := range []bool{false, true} {
			r, err := Open(filepath.Join("testdata", f.file), f.format)
			if err != nil {
				t.Fatal(err)
			}
			if set {
				r.SetTurns(true)
				r.SetTurns(false)
			}
			n := 0
			for {
				it, err := r.Next()
				if err != nil {
					break
				}
				if it.Rollout == nil {
					continue
				}
				n++
				if _, ok := members(it.Rollout)["turns"]; ok {
					t.Errorf("%s %s: rollout %s has turns", f.file, it.Where, it.Rollout)
				}
			}
			r.Close()
			if n == 0 {
				t.Errorf("%s: no rollouts", f.file)
			}
		}
	}
}

func parseJSON(t *testing.T, s string) jsonview.Value {
	t.Helper()
	var d jsonview.Doc
	v, err := d.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestChatTurns(t *testing.T) {
	// Exact bytes of a small conversation.
	got := ChatTurns([]byte("x"), parseJSON(t, `[{"role": "assistant", "content": "hi", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
		{"role": "tool", "tool_call_id": "c", "name": "f", "content": "ok"}]`))
	want := `x[{"index":0,"text":"hi","tool_calls":[{"name":"f","kwargs":{"a":1},"id":"c"}],"tool_results":[{"eventType":"tool_result","name":"f","content":"ok","id":"c"}],"message_index":0}]`
	if string(got) != want {
		t.Errorf("ChatTurns = %s\nwant %s", got, want)
	}

	for _, msgs := range []string{`[]`, `[{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "tool", "content": "r"}]`,
		`{"role": "assistant", "content": "not a list"}`, `null`, `"s"`} {
		if got := ChatTurns(nil, parseJSON(t, msgs)); string(got) != "[]" {
			t.Errorf("ChatTurns(%s) = %s, want []", msgs, got)
		}
	}

	msgs := parseJSON(t, `[
		{"role": "system", "content": "be brief"},
		{"role": "tool", "tool_call_id": "c0", "content": "before any turn"},
		{"role": "user", "content": "go"},
		{"role": "assistant", "content": [{"type": "text", "text": "one"}, {"type": "image_url", "image_url": {"url": "u"}}, {"type": "text", "text": "two"}],
		 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": \"x\", \"n\": [1, 2]}"}},
		                {"id": "c2", "type": "function", "function": {"name": "broken", "arguments": "{\"q\": "}}]},
		{"role": "assistant", "content": "second"},
		{"role": "tool", "tool_call_id": "c1", "content": "found"},
		{"role": "tool", "content": [{"type": "text", "text": "no id"}]},
		{"role": "tool", "tool_call_id": "zz", "name": "other", "content": "unknown id"},
		{"role": "tool", "tool_call_id": "c2", "content": "bad"}
	]`)
	b := ChatTurns(nil, msgs)
	var raw struct {
		Turns json.RawMessage `json:"turns"`
	}
	raw.Turns = b
	rollout, _ := json.Marshal(raw)
	turns := checkTurns(t, "ChatTurns", rollout)
	if len(turns) != 2 {
		t.Fatalf("%d turns, want 2: %s", len(turns), b)
	}
	tu := turns[0]
	if tu.Text != "one\ntwo" || tu.MessageIndex != 3 || len(tu.ToolCalls) != 2 {
		t.Fatalf("turn 0: %+v", tu)
	}
	wantCall(t, tu.ToolCalls[0], "lookup", "c1", map[string]any{"q": "x", "n": []any{1.0, 2.0}})
	if c := tu.ToolCalls[1]; str(c.Name) != "broken" || c.Kwargs != nil || str(c.KwargsRaw) != `{"q": ` ||
		!strings.HasPrefix(str(c.KwargsError), "arguments are not valid JSON") {
		t.Errorf("turn 0: call %+v, want kwargs_raw and kwargs_error", c)
	}
	// c1's and c2's results, after the second turn, are the first's.
	if len(tu.ToolResults) != 2 {
		t.Fatalf("turn 0: results %+v, want c1's and c2's", tu.ToolResults)
	}
	wantResult(t, tu.ToolResults[0], "lookup", "c1", "found")
	wantResult(t, tu.ToolResults[1], "broken", "c2", "bad")
	tu = turns[1]
	if tu.Text != "second" || tu.MessageIndex != 4 || len(tu.ToolCalls) != 0 || len(tu.ToolResults) != 2 {
		t.Fatalf("turn 1: %+v", tu)
	}
	if r := tu.ToolResults[0]; r.Content != "no id" || r.ID != nil || r.Name != nil {
		t.Errorf("turn 1: result %+v, want the one without an id", r)
	}
	wantResult(t, tu.ToolResults[1], "other", "zz", "unknown id")

	// ChatTurns writes the turns the messages format does.
	r, err := Open("testdata/messages/chats.jsonl", Messages)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.SetTurns(true)
	it, err := r.Next()
	if err != nil || it.Err != nil {
		t.Fatal(err, it.Err)
	}
	line := parseJSON(t, strings.TrimPrefix(mustRead(t, "testdata/messages/chats.jsonl"), "\ufeff"))
	if got, want := ChatTurns(nil, line.Get("messages")), members(it.Rollout)["turns"]; !bytes.Equal(got, want) {
		t.Errorf("ChatTurns = %s\nthe messages format's: %s", got, want)
	}
}

// TestResponseTurns: ResponseTurns writes the turns the nemo-gym format
// does, line by line of its fixtures and of the groups of
// TestTurnsNemoGymGroups.
func TestResponseTurns(t *testing.T) {
	if got := ResponseTurns([]byte("x"), parseJSON(t, `{"output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "4"}]}]}`)); string(got) != `x[{"index":0,"text":"4","tool_calls":[],"tool_results":[],"message_index":0}]` {
		t.Errorf("ResponseTurns = %s", got)
	}
	for _, resp := range []string{`{}`, `{"output": []}`, `{"output": 1}`, `null`,
		`{"output": [{"type": "function_call_output", "call_id": "c", "output": "r"}, {"type": "message", "role": "user", "content": "u"}]}`} {
		if got := ResponseTurns(nil, parseJSON(t, resp)); string(got) != "[]" {
			t.Errorf("ResponseTurns(%s) = %s, want []", resp, got)
		}
	}
	groups := `{"_ng_task_index": 0, "_ng_rollout_index": 0, "response": {"output": [` +
		`{"type": "function_call_output", "call_id": "early", "output": "before any turn"},` +
		`{"type": "reasoning", "summary": []},` +
		`{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"x\": 1}"},` +
		`{"type": "function_call", "call_id": "c2", "name": "g", "arguments": "oops"},` +
		`{"type": "function_call_output", "call_id": "c2", "output": "r2"},` +
		`{"type": "function_call_output", "call_id": "c1", "output": "r1"},` +
		`{"type": "web_search_call", "id": "ws"},` +
		`{"type": "message", "content": [{"type": "output_text", "text": "b"}]},` +
		`{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "u"}]},` +
		`{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "d"}]}` +
		`]}}`
	dir := t.TempDir()
	compared := 0
	for _, src := range []string{"testdata/nemo-gym/run/rollouts.jsonl", "testdata/nemo-gym/run/rollouts_failures.jsonl", ""} {
		var text string
		path := src
		if src == "" {
			path = filepath.Join(dir, "groups.jsonl")
			text = groups + "\n"
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			text = string(data)
		}
		r, err := Open(path, NemoGym)
		if err != nil {
			t.Fatal(err)
		}
		r.SetTurns(true)
		for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
			it, err := r.Next()
			if err != nil {
				t.Fatalf("%s line %d: %v", src, i+1, err)
			}
			if it.Err != nil {
				continue
			}
			resp := parseJSON(t, line).Get("response")
			if got, want := ResponseTurns(nil, resp), members(it.Rollout)["turns"]; !bytes.Equal(got, want) {
				t.Errorf("%s line %d: ResponseTurns = %s\nthe nemo-gym format's: %s", src, i+1, got, want)
			}
			compared++
		}
		r.Close()
	}
	if compared < 5 {
		t.Errorf("%d rollouts compared, want every mapped line of the fixtures", compared)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return line
}

// BenchmarkReadTurns is BenchmarkRead of the chat formats with turns on.
func BenchmarkReadTurns(b *testing.B) {
	const n = 2000
	for _, g := range []struct {
		name   string
		format Format
		gen    func(int) *genReader
	}{
		{"tau-bench", TauBench, tauBenchGen},
		{"tau2", Tau2, tau2Gen},
		{"inspect-json", Inspect, inspectJSONGen},
		{"messages", Messages, messagesGen},
	} {
		b.Run(g.name, func(b *testing.B) {
			data, err := io.ReadAll(g.gen(n))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				r, err := NewReader("bench", bytes.NewReader(data), g.format)
				if err != nil {
					b.Fatal(err)
				}
				r.SetTurns(true)
				count(b, r, n)
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rollouts/s")
		})
	}
}
