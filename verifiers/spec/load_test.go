package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

func TestLoadProblems(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		// want is "line:col: message part" of the first problem.
		want string
	}{
		{"not YAML", "verifiers: [", "1:12: not valid YAML or JSON"},
		{"unknown check type", oneCheck("- id: c\n  type: sql\n  asserts: [{comparator: eq, value: 1}]"), "7:15: unknown check type \"sql\""},
		{"unknown comparator", stateAssert("{comparator: equals, value: 1}"), "10:26: unknown comparator \"equals\""},
		{"unknown function", stateAssert("{comparator: eq, function: avg, function_args: [_result], value: 1}"), "10:40: unknown function \"avg\""},
		{"unknown manual function", oneCheck("- id: c\n  type: manual\n  function: find_people\n  asserts: [{comparator: eq, value: 1}]"), "8:19: unknown manual function \"find_people\""},
		{"bad manual arguments", oneCheck("- id: c\n  type: manual\n  function: find_events_on_day\n  function_args: [\"Nov 20\"]\n  asserts: [{comparator: eq, value: 1}]"), "9:24: find_events_on_day: date \"Nov 20\" is not YYYY-MM-DD"},
		{"missing verifier id", "verifiers:\n  - task: T\n    name: n\n    checks: [{id: c, type: rubric, rubric: r}]\n", "2:5: a verifier has no id"},
		{"missing task", "verifiers:\n  - id: V\n    name: n\n    checks: [{id: c, type: rubric, rubric: r}]\n", "2:5: verifier \"V\" binds no task"},
		{"missing check type", oneCheck("- id: c\n  asserts: [{comparator: eq, value: 1}]"), "6:9: check \"c\" has no type"},
		{"missing table", oneCheck("- id: c\n  type: state\n  asserts: [{comparator: eq, value: 1}]"), "6:9: check \"c\" has no table"},
		{"missing value", stateAssert("{comparator: eq}"), "10:13: an assert of check \"c\" has no value"},
		{"missing comparator", stateAssert("{value: 1}"), "10:13: an assert of check \"c\" has no comparator"},
		{"missing asserts", oneCheck("- id: c\n  type: log"), "6:9: check \"c\" has no asserts"},
		{"empty asserts", oneCheck("- id: c\n  type: log\n  asserts: []"), "8:18: check \"c\" has an empty asserts list"},
		{"missing steps", oneCheck("- id: c\n  type: sequential"), "6:9: check \"c\" has no steps"},
		{"in value not a list", stateAssert("{comparator: in, value: abc}"), "10:37: in compares with a list, not a string"},
		{"malformed path", stateAssert("{comparator: eq, function: count, function_args: [\"_result[x]\"], value: 1}"), "10:63: malformed path \"_result[x]\""},
		{"path not under _result", stateAssert("{comparator: eq, function: count, function_args: [\"events[*]\"], value: 1}"), "10:63: malformed path \"events[*]\""},
		{"malformed table path", oneCheck("- id: c\n  type: state\n  table: crm..deals\n  asserts: [{comparator: eq, value: 1}]"), "8:16: table \"crm..deals\": empty field name"},
		{"wrong function_args count", stateAssert("{comparator: eq, function: object_contains, function_args: [\"_result[*]\"], value: true}"), "10:72: object_contains takes 2 function_args"},
		{"CEL does not compile", oneCheck("- id: c\n  type: expr\n  expr: final.events.exists(e,"), "8:37: CEL expression does not compile"},
		{"CEL value does not compile", stateAssert("{comparator: eq, value: {expr: \"1 +\"}}"), "10:48: CEL expression does not compile"},
		{"CEL not bool", oneCheck("- id: c\n  type: expr\n  expr: 1 + 2"), "8:15: expr must evaluate to a bool, not int"},
		{"bad regex", stateAssert("{comparator: regex, value: \"a(\"}"), "10:40: bad regex"},
		{"duplicate check id", oneCheck("- {id: c, type: rubric, rubric: r}\n- {id: c, type: rubric, rubric: s}"), "7:9: duplicate check id \"c\""},
		{"duplicate verifier id", "verifiers:\n  - {id: V, task: A, name: n, checks: [{id: c, type: expr, expr: 'true'}]}\n  - {id: V, task: B, name: n, checks: [{id: c, type: expr, expr: 'true'}]}\n", "3:5: duplicate verifier id \"V\""},
		{"unknown field", oneCheck("- id: c\n  type: log\n  assert: [{comparator: eq, value: 1}]"), "8:9: unknown field \"assert\""},
		{"field of another type", oneCheck("- id: c\n  type: log\n  table: events\n  asserts: [{comparator: eq, value: 1}]"), "8:16: table is not a field of log checks"},
		{"no required check", oneCheck("- {id: c, type: rubric, rubric: r, optional: true}"), "6:7: verifier \"V\" has no required check"},
		{"optional not a boolean", oneCheck("- {id: c, type: rubric, rubric: r, optional: yes please}"), "6:52: optional of check \"c\" must be a boolean"},
		{"no verifiers", "checks: []\n", "1:1: unknown field \"checks\""},
		{"empty file", "", "empty spec file"},
		{"a bare checks array", `[{"id": "c", "type": "log", "asserts": []}]`, "1:1: the spec file must be an object holding verifiers"},
		{"let reads the final state", "verifiers:\n  - id: V\n    task: T\n    name: n\n    let: {n: 'size(final.events)'}\n    checks: [{id: c, type: expr, expr: 'n > 0'}]\n", "5:20: CEL expression does not compile"},
		{"let name reserved", "verifiers:\n  - id: V\n    task: T\n    name: n\n    let: {final: '1'}\n    checks: [{id: c, type: expr, expr: 'true'}]\n", "5:11: let name \"final\" is reserved"},
		{"let name not an identifier", "verifiers:\n  - id: V\n    task: T\n    name: n\n    let: {a-b: '1'}\n    checks: [{id: c, type: expr, expr: 'true'}]\n", "5:11: let name \"a-b\" is not an identifier"},
		{"unknown reward formula", rewardSpec("most"), "5:13: reward of verifier \"V\": unknown reward formula \"most\""},
		{"reward weighs an unknown check", rewardSpec("{weighted: {c: 2, d: 1}}"), "5:31: reward of verifier \"V\" weighs unknown check \"d\""},
		{"reward weight not a number", rewardSpec("{weighted: {c: high}}"), "5:28: reward of verifier \"V\": weighted: weights must be"},
		{"reward expression does not compile", rewardSpec("{expr: 'checks.('}"), "5:20: reward of verifier \"V\": reward expression"},
		{"reward expression not a number", rewardSpec("{expr: 'true'}"), "gives bool, not a number"},
		{"flag without expr", flagSpec("{id: f, label: l}"), "7:9: flag \"f\" has no expr or rubric"},
		{"flag with expr and rubric", flagSpec("{id: f, expr: 'true', rubric: r}"), "7:39: flag \"f\" has both expr and rubric"},
		{"expr flag with a query", flagSpec("{id: f, expr: 'true', query: q}"), "7:38: query is not a field of expr flags"},
		{"flag id of a check", flagSpec("{id: c, expr: 'true'}"), "7:9: flag id \"c\" of verifier \"V\" is also a check's id"},
		{"duplicate flag id", flagSpec("{id: f, expr: 'true'}\n      - {id: f, expr: 'false'}"), "8:9: duplicate flag id \"f\""},
		{"flag expr not bool", flagSpec("{id: f, expr: '1'}"), "7:23: expr must evaluate to a bool"},
		{"flags not a list", "verifiers:\n  - id: V\n    task: T\n    name: n\n    checks: [{id: c, type: expr, expr: 'true'}]\n    flags: {id: f}\n", "6:12: flags of verifier \"V\" must be a non-empty list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tc.spec))
			var ps Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("Parse = %v, want problems", err)
			}
			got := ps[0].Error()
			if !strings.Contains(got, tc.want) {
				t.Errorf("problem = %q, want it to contain %q\nspec:\n%s", got, tc.want, tc.spec)
			}
			if !strings.HasPrefix(got, "test.yaml:") {
				t.Errorf("problem = %q, want it to start with the file name", got)
			}
		})
	}
}

// flagSpec is a spec whose verifier V has the check c and the one flag
// given (on line 7).
func flagSpec(flag string) string {
	return "verifiers:\n  - id: V\n    task: T\n    name: n\n    checks: [{id: c, type: expr, expr: 'true'}]\n    flags:\n      - " + flag + "\n"
}

func TestProblemsHaveHints(t *testing.T) {
	_, err := Parse("s.yaml", []byte(stateAssert("{comparator: equals, value: 1}")))
	if !strings.Contains(err.Error(), "(hint: one of eq, neq") {
		t.Errorf("problem = %q, want a hint listing the comparators", err)
	}
}

func TestLoadFilesAndDirectories(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("b/two.json", `{"verifiers": [{"id": "V2", "task": "T2", "name": "two", "checks": [{"id": "c", "type": "expr", "expr": "true"}]}]}`)
	write("a.yaml", "verifiers:\n  - {id: V1, tasks: [T1, T3], name: one, checks: [{id: c, type: expr, expr: 'true'}]}\n")
	write("notes.txt", "not a spec")
	vs, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range vs {
		ids = append(ids, v.ID+"@"+filepath.Base(v.Source))
	}
	if got, want := strings.Join(ids, ","), "V1@a.yaml:2,V2@two.json:1"; got != want {
		t.Errorf("loaded %s, want %s", got, want)
	}
	if vs[0].Tasks[1] != "T3" {
		t.Errorf("tasks = %v", vs[0].Tasks)
	}

	// The same id in two files is a problem; so is any problem in any file.
	dup := write("dup/x.yaml", "verifiers:\n  - {id: V1, task: T9, name: one, checks: [{id: c, type: expr, expr: 'true'}]}\n")
	if _, err := Load([]string{dir, dup}); err == nil || !strings.Contains(err.Error(), `duplicate verifier id "V1"`) {
		t.Errorf("Load with a duplicate = %v, want a duplicate id problem", err)
	}
	bad := write("bad/x.yaml", "verifiers: []\n")
	if _, err := Load([]string{bad}); err == nil || !strings.Contains(err.Error(), "x.yaml:1:12") {
		t.Errorf("Load(bad) = %v, want a positioned problem", err)
	}
	if _, err := Load([]string{filepath.Join(dir, "nope.yaml")}); err == nil {
		t.Error("Load(missing file) succeeded")
	}
}

func TestDefinitionIsCanonical(t *testing.T) {
	a := mustParse(t, "verifiers:\n  - {id: V, task: T, name: n, checks: [{id: c, type: expr, expr: 'true'}]}\n")[0]
	b := mustParse(t, `{"verifiers": [{"name": "n", "checks": [{"expr": "true", "type": "expr", "id": "c"}], "task": "T", "id": "V"}]}`)[0]
	c := mustParse(t, "verifiers:\n  - {id: V, task: T, name: n, checks: [{id: c, type: expr, expr: 'false'}]}\n")[0]
	if a.Definition != b.Definition {
		t.Errorf("definitions differ for the same spec:\n%s\n%s", a.Definition, b.Definition)
	}
	if a.Definition == c.Definition {
		t.Error("definitions equal for different specs")
	}
	if a.Source != "test.yaml:2" {
		t.Errorf("Source = %q, want test.yaml:2", a.Source)
	}
}

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		rows string // what it selects from rows [{"a":{"b":1}},{"a":{"b":2}},{"c":3}]
	}{
		{"_result", true, "whole"},
		{"_result[*]", true, `{"a":{"b":1}},{"a":{"b":2}},{"c":3}`},
		{"_result[*].a.b", true, "1,2"},
		{"_result[*].a", true, `{"b":1},{"b":2}`},
		{"_result[1]", true, `{"a":{"b":2}}`},
		{"_result[1].a.b", true, "2"},
		{"_result[3]", true, ""},
		{"_result[0].c", true, ""},
		{"_result[-1]", false, ""},
		{"_result[+1]", false, ""},
		{"_result[x]", false, ""},
		{"_result[*]a", false, ""},
		{"_result[*].", false, ""},
		{"_result[*].a..b", false, ""},
		{"_result.a", false, ""},
		{"_result[1", false, ""},
		{"result[*]", false, ""},
		{"", false, ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			p, err := ParsePath(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParsePath(%q) error = %v, want ok %v", tc.in, err, tc.ok)
			}
			if !tc.ok {
				return
			}
			rows := []string{`{"a":{"b":1}}`, `{"a":{"b":2}}`, `{"c":3}`}
			var vals []string
			in := make([]jsonview.Value, len(rows))
			for i, r := range rows {
				in[i] = state(t, r)
			}
			sel, whole := p.selectValues(nil, in)
			if whole {
				vals = []string{"whole"}
			} else {
				for _, v := range sel {
					vals = append(vals, string(v.Raw()))
				}
			}
			if got := strings.Join(vals, ","); got != tc.rows {
				t.Errorf("%s selects %s, want %s", tc.in, got, tc.rows)
			}
		})
	}
}

// Checks shared by grade calls run concurrently (go test -race).
func TestConcurrentGrading(t *testing.T) {
	v := Builtin()[0]
	r := ro{final: calendarFinal, log: `[{"eventType": "click", "clickId": "open-form"}, {"eventType": "click", "clickId": "submit-button"}]`}
	done := make(chan []verifiers.Check)
	for range 4 {
		go func() {
			var c verifiers.Checks
			var last []verifiers.Check
			for range 50 {
				c.Reset()
				_ = v.Grade(r.rollout(t), &c)
				last = append(last[:0], c.List()...)
			}
			done <- last
		}()
	}
	for range 4 {
		for _, ch := range <-done {
			if ch.Status != verifiers.Pass {
				t.Errorf("check %s = %v (%s)", ch.ID, ch.Status, ch.Detail)
			}
		}
	}
}

// rewardSpec returns a spec of one verifier V with checks c and o
// (optional) and the given reward.
func rewardSpec(reward string) string {
	return "verifiers:\n  - id: V\n    task: T\n    name: n\n    reward: " + reward + "\n" +
		"    checks:\n      - {id: c, type: expr, expr: 'true'}\n      - {id: o, type: expr, expr: 'false', optional: true}\n"
}

func TestLoadReward(t *testing.T) {
	for _, tc := range []struct {
		reward string // "" for none
		want   float64
	}{
		{"", 0.5},
		{"fraction", 0.5},
		{"all", 0},
		{"{weighted: {c: 3, o: 1}}", 0.75},
		{"{weighted: {o: -1}}", 0},
		{`{expr: "checks[0].passed ? 0.25 : 0.0"}`, 0.25},
	} {
		spec := rewardSpec(tc.reward)
		if tc.reward == "" {
			spec = strings.Replace(spec, "    reward: \n", "", 1)
		}
		vs, err := Parse("test.yaml", []byte(spec))
		if err != nil {
			t.Fatalf("Parse(reward %q): %v", tc.reward, err)
		}
		var c verifiers.Checks
		got := verifiers.Run(vs[0], &verifiers.Rollout{}, &c)
		if !got.HasReward || got.Reward != tc.want {
			t.Errorf("reward %q: Run = %v (valid %v), want %v", tc.reward, got.Reward, got.HasReward, tc.want)
		}
		if tc.reward != "" && !strings.Contains(vs[0].Definition, `"reward"`) {
			t.Errorf("reward %q: Definition %s lacks the formula: the fingerprint would not change with it", tc.reward, vs[0].Definition)
		}
	}
}
