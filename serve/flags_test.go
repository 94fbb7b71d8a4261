package serve

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/verifiers/spec"
)

// A verifier with flags served: each line carries the rollout's flags and
// its own check rows, its flag row last with kind flag.
func TestGradeWithFlags(t *testing.T) {
	vs, err := spec.Parse("flags.yaml", []byte(`verifiers:
  - id: V-FLAGS
    task: T-FLAGS
    name: answer holds 4
    checks:
      - {id: four, type: expr, expr: 'output.contains("4")'}
    flags:
      - {id: shouty, label: all capitals, expr: 'output == output.upperAscii()'}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, ts := newServer(t, Config{}, vs...)
	body := `{"rollout_id": "a", "task_id": "T-FLAGS", "output": "IT IS 4"}
{"rollout_id": "b", "task_id": "T-FLAGS", "output": "it is 4"}
{"rollout_id": "c", "task_id": "T-FLAGS", "output": "NO"}
`
	r := do(t, ts, "POST", "/v1/grade", "application/x-ndjson", body)
	if r.code != 200 {
		t.Fatalf("status %d: %s", r.code, r.body)
	}
	want := map[string][]any{"a": {"shouty"}, "b": {}, "c": {"shouty"}}
	lines := gradedLines(t, r.body)
	if len(lines) != 3 {
		t.Fatalf("%d lines: %s", len(lines), r.body)
	}
	for _, got := range lines {
		id := got.Rewards["rollout_id"].(string)
		if !reflect.DeepEqual(got.Rewards["flags"], want[id]) {
			t.Errorf("%s: flags %v, want %v", id, got.Rewards["flags"], want[id])
		}
		if len(got.Checks) != 2 || got.Checks[0]["kind"] != "check" || got.Checks[1]["kind"] != "flag" || got.Checks[1]["rollout_id"] != id {
			t.Errorf("%s: checks %v, want its check then its flag", id, got.Checks)
		}
	}
}

// Health flags served: with Health set, each row's flags end with its
// health flags, in a set whose verifiers have no flags of their own;
// without it, the rows have no flags column.
func TestGradeWithHealthFlags(t *testing.T) {
	vs, err := spec.Parse("plain.yaml", []byte(`verifiers:
  - id: V-PLAIN
    task: T-PLAIN
    name: answer holds 4
    checks:
      - {id: four, type: expr, expr: 'output.contains("4")'}
`))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"rollout_id": "a", "task_id": "T-PLAIN", "output": "it is 4"}
{"rollout_id": "b", "task_id": "T-PLAIN", "output": "  ", "log": [{"role": "user", "content": "hi"}]}
{"rollout_id": "c", "task_id": "T-PLAIN", "output": "4", "termination_reason": "max_turns"}
`
	want := map[string][]any{"a": {}, "b": {"health/empty-output", "health/no-agent-turn"}, "c": {"health/truncated"}}
	for _, health := range []bool{true, false} {
		_, ts := newServer(t, Config{Health: health}, vs...)
		r := do(t, ts, "POST", "/v1/grade", "application/x-ndjson", body)
		if r.code != 200 {
			t.Fatalf("status %d: %s", r.code, r.body)
		}
		for _, got := range gradedLines(t, r.body) {
			id := got.Rewards["rollout_id"].(string)
			flags, ok := got.Rewards["flags"]
			switch {
			case !health && ok:
				t.Errorf("health off, %s: flags %v, want no flags column", id, flags)
			case health && !reflect.DeepEqual(flags, want[id]):
				t.Errorf("health on, %s: flags %v, want %v", id, flags, want[id])
			case health && (len(got.Checks) != 1 || got.Checks[0]["kind"] != "check"):
				t.Errorf("health on, %s: checks %v, want one of kind check", id, got.Checks)
			}
		}
	}
}

// gradedLine is a line of /v1/grade's answer, decoded.
type gradedLine struct {
	Rewards map[string]any
	Checks  []map[string]any
}

// gradedLines decodes the lines of /v1/grade's answer body.
func gradedLines(t *testing.T, body string) []gradedLine {
	t.Helper()
	var out []gradedLine
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		var got gradedLine
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatal(err)
		}
		out = append(out, got)
	}
	return out
}
