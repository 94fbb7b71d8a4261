package pipeline

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/judge/judgetest"
)

// writeChats writes n chats in the messages format: chat i has 1 + i%3
// agent turns, the first of which calls create_deal with amount i, and
// the last says PASS or, for every third chat, FAIL.
func writeChats(t *testing.T, path string, n int, rows bool) {
	t.Helper()
	var b bytes.Buffer
	for i := range n {
		word := "PASS"
		if i%3 == 0 {
			word = "FAIL"
		}
		turns := 1 + i%3
		msgs := `[{"role":"user","content":"make a deal"}`
		for k := range turns {
			switch {
			case k == turns-1:
				msgs += fmt.Sprintf(`,{"role":"assistant","content":"done %d: %s"}`, i, word)
			case k == 0:
				msgs += fmt.Sprintf(`,{"role":"assistant","content":"calling","tool_calls":[{"id":"c%d","type":"function","function":{"name":"create_deal","arguments":"{\"amount\":%d}"}}]},{"role":"tool","tool_call_id":"c%d","content":"ok"}`, i, i, i)
			default:
				msgs += `,{"role":"assistant","content":"thinking"}`
			}
		}
		msgs += "]"
		out := ""
		if rows {
			out = fmt.Sprintf(`"output":"done %d: %s",`, i, word)
		}
		fmt.Fprintf(&b, `{"rollout_id":"r%05d","task_id":"TASK-J",%s"messages":%s}`+"\n", i, out, msgs)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

const turnsTestSpec = `verifiers:
  - id: VER-J
    task: TASK-J
    name: deals, turn by turn
    checks:
      - id: answered
        type: expr
        expr: "output != ''"
      - id: dealt
        type: expr
        expr: turns.exists(t, t.tool_calls.exists(c, c.name == "create_deal"))
        turn: "0"
    turn_checks:
      - id: even-amount
        type: expr
        when: size(turn.tool_calls) > 0
        expr: int(turn.tool_calls[0].kwargs.amount) % 2 == 0
        optional: true
      - id: says-pass
        type: rubric
        rubric: The answer says PASS.
        when: turn.index == size(turns) - 1
`

// TestTurnsRun grades chats, read as a harness's log and as rows of
// gavel's with a messages column, with a verifier that scores turns: the
// rewards carry a reward per agent turn (after the judge's verdicts) and
// the number of turns, the checks the turn each is credited to, the same
// for any worker count.
func TestTurnsRun(t *testing.T) {
	srv := judgetest.New(t)
	dir := t.TempDir()
	for _, rows := range []bool{false, true} {
		in := filepath.Join(dir, fmt.Sprint("in", rows, ".jsonl"))
		writeChats(t, in, 9, rows)
		from := "messages"
		if rows {
			from = ""
		}
		for _, workers := range []int{1, 3} {
			out := filepath.Join(dir, fmt.Sprint("out", rows, workers))
			grade(t, Config{Inputs: []string{in}, From: from, Out: out, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, turnsTestSpec),
				Judge: gaveltest.JudgeConfig(srv, filepath.Join(dir, "cache")), Workers: workers, BatchSize: 2})
			rewards, checks := rewardRows(t, out), checkRows(t, out)
			for i := range 9 {
				id := fmt.Sprintf("r%05d", i)
				turns := 1 + i%3
				last := 1.0
				if i%3 == 0 {
					last = 0
				}
				var want []any
				for k := range turns {
					switch {
					case k == 0 && turns == 1:
						// dealt (no deal made: failed) and says-pass
						want = append(want, (0+last)/2)
					case k == 0:
						want = append(want, (1+b2f(i%2 == 0))/2)
					case k == turns-1:
						want = append(want, last)
					default:
						want = append(want, nil) // no check applies: unscored
					}
				}
				r := rewards[id]
				if !reflect.DeepEqual(r["turn_rewards"], want) || r["turns"] != float64(turns) {
					t.Errorf("rows %v workers %d: %s turn_rewards %v, turns %v; want %v, %d", rows, workers, id, r["turn_rewards"], r["turns"], want, turns)
				}
				if c := checks[id+"/dealt"]; c["turn"] != 0.0 {
					t.Errorf("%s: dealt credited to %v, want 0", id, c["turn"])
				}
				if c := checks[id+"/answered"]; c["turn"] != nil {
					t.Errorf("%s: answered credited to %v, want none", id, c["turn"])
				}
				if c := checks[id+"/says-pass"]; c["turn"] != float64(turns-1) || c["score"] == nil {
					t.Errorf("%s: says-pass %v, want judged on turn %d", id, c, turns-1)
				}
			}
		}
		sameParts(t, filepath.Join(dir, fmt.Sprint("out", rows, 1)), filepath.Join(dir, fmt.Sprint("out", rows, 3)))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestNoTurnsNoColumns: a run whose verifiers score no turns writes no
// turn column, and its verifiers see no turns.
func TestNoTurnsNoColumns(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeChats(t, in, 3, false)
	spec := "verifiers:\n  - id: V\n    task: TASK-J\n    name: n\n    checks: [{id: none, type: expr, expr: 'size(turns) == 0'}]\n"
	out := filepath.Join(dir, "out")
	grade(t, Config{Inputs: []string{in}, From: "messages", Out: out, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, spec), Health: true})
	for id, r := range rewardRows(t, out) {
		if _, ok := r["turn_rewards"]; ok || r["status"] != "passed" {
			t.Errorf("%s: %v", id, r)
		}
		if _, ok := r["turns"]; ok {
			t.Errorf("%s: a turns column", id)
		}
	}
	for id, c := range checkRows(t, out) {
		if _, ok := c["turn"]; ok {
			t.Errorf("%s: a turn column", id)
		}
	}
}

// TestReuseWithTurns: a run that scores turns reuses the rows of an
// earlier one, its turn rewards, turn counts and the checks' turns, and
// writes the bytes of a fresh run; an earlier run that did not score
// turns lends it nothing.
func TestReuseWithTurns(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeChats(t, in, 9, true)
	spec := strings.Replace(turnsTestSpec, `      - id: says-pass
        type: rubric
        rubric: The answer says PASS.`, `      - id: says-pass
        type: expr
        expr: turn.text.contains("PASS")`, 1)
	for _, format := range []string{columnar.FormatJSONL, columnar.FormatParquet} {
		run := func(name, reuse, spec string) *Result {
			return grade(t, Config{Inputs: []string{in}, Out: filepath.Join(dir, format+name), Format: format,
				Verifiers: gaveltest.ParseSpec(t, spec), Workers: 2, BatchSize: 2, Reuse: reuse})
		}
		run("fresh", "", spec)
		res := run("again", filepath.Join(dir, format+"fresh"), spec)
		if ru := res.Summary.Reuse; ru.Reused != 9 {
			t.Errorf("%s: reused %d rollouts of 9", format, ru.Reused)
		}
		sameParts(t, filepath.Join(dir, format+"fresh"), filepath.Join(dir, format+"again"))
	}
	// VER-P scores no turns, but a run with VER-J writes its rollouts'
	// numbers of turns: an earlier run of VER-P alone lends it nothing.
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	both := filepath.Join(dir, "both.jsonl")
	if err := os.WriteFile(both, append(data, bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("TASK-J"), []byte("TASK-P")), []byte(`"r0`), []byte(`"p0`))...), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := "\n  - id: VER-P\n    task: TASK-P\n    name: n\n    checks: [{id: answered, type: expr, expr: \"output != ''\"}]\n"
	run := func(name, reuse, spec string) *Result {
		return grade(t, Config{Inputs: []string{both}, Out: filepath.Join(dir, name), Format: columnar.FormatJSONL,
			Verifiers: gaveltest.ParseSpec(t, spec), Workers: 2, BatchSize: 2, Reuse: reuse})
	}
	res := run("plain", "", "verifiers:"+plain)
	if res.Summary.Counts.Error != 9 { // TASK-J has no verifier
		t.Fatalf("plain run: %+v", res.Summary.Counts)
	}
	run("bothfresh", "", spec+strings.TrimPrefix(plain, "\n"))
	res = run("fromplain", filepath.Join(dir, "plain"), spec+strings.TrimPrefix(plain, "\n"))
	if ru := res.Summary.Reuse; ru.Reused != 0 {
		t.Errorf("reused %d rollouts of a run that scored no turns", ru.Reused)
	}
	sameParts(t, filepath.Join(dir, "bothfresh"), filepath.Join(dir, "fromplain"))
}

// TestRowDecoderTurns: a fixture (RowDecoder) with messages has its turns,
// as the row graded in a run that scores turns.
func TestRowDecoderTurns(t *testing.T) {
	d, err := NewRowDecoder(columnar.FieldNames{}, "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := d.Decode("fixture.json", []byte(`{"rollout_id":"f","task_id":"T","output":"done","messages":[{"role":"user","content":"go"},{"role":"assistant","content":"ok","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":"r"},{"role":"assistant","content":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Turns.Len(); n != 2 {
		t.Fatalf("%d turns, want 2: %s", n, r.Turns.Raw())
	}
	if s, _ := r.Turns.Index(1).Get("text").Str(); string(s) != "done" {
		t.Errorf("turn 1 text %q", s)
	}
}
