package spec

import (
	"strings"
	"testing"

	"github.com/gavelhq/gavel/verifiers"
)

const calendarFinal = `{"events": [
  {"id": 1, "title": "Team Meeting", "startTime": "2024-11-20T14:00:00Z", "endTime": "2024-11-20T15:00:00Z", "attendees": ["ana", "ben"], "room": null},
  {"id": 2, "title": "Lunch", "startTime": "2024-11-21T12:00:00+02:00", "endTime": "2024-11-21T13:00:00+02:00", "attendees": [], "cost": 12.5},
  {"id": 3.0, "title": "Retro", "startTime": "2024-11-20T23:30:00-01:00", "attendees": ["ana"], "cost": 30}
]}`

func TestComparatorsAndFunctions(t *testing.T) {
	for _, tc := range []struct {
		name, assert, final string
		want                verifiers.Status
	}{
		// eq, neq, deep_equal; numbers by value, objects ignoring key order.
		{"eq pass", `{comparator: eq, function: count, function_args: ["_result"], value: 3.0}`, calendarFinal, verifiers.Pass},
		{"eq fail", `{comparator: eq, function: count, function_args: ["_result"], value: 2}`, calendarFinal, verifiers.Fail},
		{"eq objects ignore key order", `{comparator: eq, function: get, function_args: ["_result[0].attendees"], value: ["ana", "ben"]}`, calendarFinal, verifiers.Pass},
		{"neq pass", `{comparator: neq, function: get, function_args: ["_result[1].title"], value: "Team Meeting"}`, calendarFinal, verifiers.Pass},
		{"neq fail", `{comparator: neq, function: get, function_args: ["_result[1].title"], value: "Lunch"}`, calendarFinal, verifiers.Fail},
		{"deep_equal pass", `{comparator: deep_equal, function: get, function_args: ["_result[2]"], value: {"cost": 30.0, "attendees": ["ana"], "startTime": "2024-11-20T23:30:00-01:00", "title": "Retro", "id": 3}}`, calendarFinal, verifiers.Pass},
		{"deep_equal fail", `{comparator: deep_equal, function: get, function_args: ["_result[2]"], value: {"id": 3}}`, calendarFinal, verifiers.Fail},
		{"eq error", `{comparator: eq, function: count, function_args: ["_result"], value: {expr: "final.nope"}}`, calendarFinal, verifiers.Error},
		{"neq error", `{comparator: neq, function: count, function_args: ["_result"], value: {expr: "1 / 0"}}`, calendarFinal, verifiers.Error},
		{"deep_equal error", `{comparator: deep_equal, function: get, function_args: ["_result[0]"], value: {expr: "final.events[9]"}}`, calendarFinal, verifiers.Error},
		{"eq whole list", `{comparator: eq, value: []}`, `{"events": []}`, verifiers.Pass},
		{"eq whole list fail", `{comparator: eq, value: []}`, calendarFinal, verifiers.Fail},
		// ordering: numbers, strings bytewise; anything else is an error.
		{"gt pass", `{comparator: gt, function: count, function_args: ["_result"], value: 0}`, calendarFinal, verifiers.Pass},
		{"gt fail", `{comparator: gt, function: count, function_args: ["_result"], value: 0}`, `{"events": []}`, verifiers.Fail},
		{"gt error", `{comparator: gt, function: get, function_args: ["_result[0].attendees"], value: 1}`, calendarFinal, verifiers.Error},
		{"gte pass", `{comparator: gte, function: sum, function_args: ["_result[*].cost"], value: 42.5}`, calendarFinal, verifiers.Pass},
		{"gte fail", `{comparator: gte, function: sum, function_args: ["_result[*].cost"], value: 42.51}`, calendarFinal, verifiers.Fail},
		{"gte error", `{comparator: gte, function: get, function_args: ["_result[0].title"], value: 1}`, calendarFinal, verifiers.Error},
		{"lt strings pass", `{comparator: lt, function: get, function_args: ["_result[1].title"], value: "Retro"}`, calendarFinal, verifiers.Pass},
		{"lt fail", `{comparator: lt, function: min, function_args: ["_result[*].cost"], value: 12.5}`, calendarFinal, verifiers.Fail},
		{"lt error null", `{comparator: lt, function: min, function_args: ["_result[*].title"], value: 1}`, calendarFinal, verifiers.Error},
		{"lte pass", `{comparator: lte, function: max, function_args: ["_result[*].cost"], value: 30}`, calendarFinal, verifiers.Pass},
		{"lte fail", `{comparator: lte, function: max, function_args: ["_result[*].cost"], value: 29.99}`, calendarFinal, verifiers.Fail},
		{"lte error", `{comparator: lte, function: exists, function_args: ["_result[*].cost"], value: 1}`, calendarFinal, verifiers.Error},
		// in
		{"in pass", `{comparator: in, function: get, function_args: ["_result[0].title"], value: ["Lunch", "Team Meeting"]}`, calendarFinal, verifiers.Pass},
		{"in fail", `{comparator: in, function: get, function_args: ["_result[0].title"], value: ["Lunch"]}`, calendarFinal, verifiers.Fail},
		{"in error", `{comparator: in, function: get, function_args: ["_result[0].title"], value: {expr: "1"}}`, calendarFinal, verifiers.Error},
		// contains
		{"contains string pass", `{comparator: contains, function: get, function_args: ["_result[0].title"], value: "Meet"}`, calendarFinal, verifiers.Pass},
		{"contains list pass", `{comparator: contains, function: get, function_args: ["_result[0].attendees"], value: "ben"}`, calendarFinal, verifiers.Pass},
		{"contains selected list pass", `{comparator: contains, function: get, function_args: ["_result[*].title"], value: "Retro"}`, calendarFinal, verifiers.Pass},
		{"contains fail", `{comparator: contains, function: get, function_args: ["_result[0].title"], value: "meet"}`, calendarFinal, verifiers.Fail},
		{"contains null false", `{comparator: contains, function: get, function_args: ["_result[0].room"], value: "x"}`, calendarFinal, verifiers.Fail},
		{"contains error", `{comparator: contains, function: count, function_args: ["_result"], value: 3}`, calendarFinal, verifiers.Error},
		// regex
		{"regex pass", `{comparator: regex, function: get, function_args: ["_result[0].startTime"], value: "^2024-11-20T"}`, calendarFinal, verifiers.Pass},
		{"regex fail", `{comparator: regex, function: get, function_args: ["_result[1].startTime"], value: "^2024-11-20T"}`, calendarFinal, verifiers.Fail},
		{"regex null false", `{comparator: regex, function: get, function_args: ["_result[9].title"], value: "x"}`, calendarFinal, verifiers.Fail},
		{"regex error", `{comparator: regex, function: get, function_args: ["_result[0].id"], value: "1"}`, calendarFinal, verifiers.Error},
		// functions
		{"object_contains pass", `{comparator: eq, function: object_contains, function_args: ["_result[*]", {"title": "Team Meeting", "attendees": ["ana", "ben"]}], value: true}`, calendarFinal, verifiers.Pass},
		{"object_contains nested numbers", `{comparator: eq, function: object_contains, function_args: ["_result[*]", {"id": 3}], value: true}`, calendarFinal, verifiers.Pass},
		{"object_contains arrays must be equal", `{comparator: eq, function: object_contains, function_args: ["_result[*]", {"attendees": ["ana"]}], value: true}`, `{"events": [{"attendees": ["ana", "ben"]}]}`, verifiers.Fail},
		{"object_contains fail", `{comparator: eq, function: object_contains, function_args: ["_result[*]", {"title": "Standup"}], value: true}`, calendarFinal, verifiers.Fail},
		{"object_contains error", `{comparator: gt, function: object_contains, function_args: ["_result[*]", {"title": "Standup"}], value: 0}`, calendarFinal, verifiers.Error},
		{"count field", `{comparator: eq, function: count, function_args: ["_result[*].cost"], value: 2}`, calendarFinal, verifiers.Pass},
		{"count fail", `{comparator: eq, function: count, function_args: ["_result[*]"], value: 2}`, calendarFinal, verifiers.Fail},
		{"count error", `{comparator: contains, function: count, function_args: ["_result[*]"], value: 2}`, calendarFinal, verifiers.Error},
		{"sum no numbers is 0", `{comparator: eq, function: sum, function_args: ["_result[*].title"], value: 0}`, calendarFinal, verifiers.Pass},
		{"sum fail", `{comparator: eq, function: sum, function_args: ["_result[*].cost"], value: 42}`, calendarFinal, verifiers.Fail},
		{"sum error", `{comparator: regex, function: sum, function_args: ["_result[*].cost"], value: "4"}`, calendarFinal, verifiers.Error},
		{"min pass", `{comparator: eq, function: min, function_args: ["_result[*].cost"], value: 12.5}`, calendarFinal, verifiers.Pass},
		{"min of nothing is null", `{comparator: eq, function: min, function_args: ["_result[*].nope"], value: null}`, calendarFinal, verifiers.Pass},
		{"min fail", `{comparator: eq, function: min, function_args: ["_result[*].cost"], value: 30}`, calendarFinal, verifiers.Fail},
		{"min error", `{comparator: gt, function: min, function_args: ["_result[*].nope"], value: 1}`, calendarFinal, verifiers.Error},
		{"max pass", `{comparator: eq, function: max, function_args: ["_result[*].cost"], value: 30}`, calendarFinal, verifiers.Pass},
		{"max fail", `{comparator: eq, function: max, function_args: ["_result[*].cost"], value: 12.5}`, calendarFinal, verifiers.Fail},
		{"max error", `{comparator: contains, function: max, function_args: ["_result[*].cost"], value: 1}`, calendarFinal, verifiers.Error},
		{"exists pass", `{comparator: eq, function: exists, function_args: ["_result[*].cost"], value: true}`, calendarFinal, verifiers.Pass},
		{"exists null is not", `{comparator: eq, function: exists, function_args: ["_result[*].room"], value: false}`, calendarFinal, verifiers.Pass},
		{"exists fail", `{comparator: eq, function: exists, function_args: ["_result[5]"], value: true}`, calendarFinal, verifiers.Fail},
		{"exists error", `{comparator: lt, function: exists, function_args: ["_result[5]"], value: true}`, calendarFinal, verifiers.Error},
		{"get list", `{comparator: eq, function: get, function_args: ["_result[*].id"], value: [1, 2, 3]}`, calendarFinal, verifiers.Pass},
		{"get nothing is null", `{comparator: eq, function: get, function_args: ["_result[7]"], value: null}`, calendarFinal, verifiers.Pass},
		{"get fail", `{comparator: eq, function: get, function_args: ["_result[0].id"], value: 2}`, calendarFinal, verifiers.Fail},
		{"get error", `{comparator: gt, function: get, function_args: ["_result[*].id"], value: 2}`, calendarFinal, verifiers.Error},
		// values derived from the initial state
		{"expr value", `{comparator: eq, function: count, function_args: ["_result"], value: {expr: "size(initial.events) + 1"}}`, calendarFinal, verifiers.Pass},
		{"expr value fail", `{comparator: eq, function: count, function_args: ["_result"], value: {expr: "size(initial.events)"}}`, calendarFinal, verifiers.Fail},
		{"expr value error", `{comparator: eq, function: count, function_args: ["_result"], value: {expr: "initial.nope"}}`, calendarFinal, verifiers.Error},
		{"expr object value", `{comparator: eq, function: object_contains, function_args: ["_result[*]", {"title": "Team Meeting"}], value: {expr: "initial.events.exists(e, e.title == 'Lunch')"}}`, calendarFinal, verifiers.Pass},
		{"expr regex value", `{comparator: regex, function: get, function_args: ["_result[0].title"], value: {expr: "'^T' + initial.events[1].title.substring(1, 2)"}}`, calendarFinal, verifiers.Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			initial := `{"events": [{"title": "Lunch"}, {"title": "Retro"}]}`
			got := grade(t, stateAssert(tc.assert), ro{final: tc.final, initial: initial})
			if len(got) != 1 || got[0].Status != tc.want {
				t.Fatalf("checks = %+v, want one with status %v", got, tc.want)
			}
		})
	}
}

func TestCheckTypes(t *testing.T) {
	const log = `[{"eventType": "click", "clickId": "open-form"}, {"eventType": "type", "text": "hi"}, {"eventType": "click", "clickId": "submit-button"}]`
	for _, tc := range []struct {
		name, check string
		r           ro
		want        verifiers.Status
		detail      string
	}{
		{"state pass", "- id: c\n  type: state\n  table: events\n  asserts: [{comparator: eq, function: count, function_args: [_result], value: 3}]",
			ro{final: calendarFinal}, verifiers.Pass, "count(_result) = 3, eq 3"},
		{"state object rows in document order", "- id: c\n  type: state\n  table: crm.deals\n  asserts: [{comparator: eq, function: get, function_args: [\"_result[*].n\"], value: [2, 1]}]",
			ro{final: `{"crm": {"deals": {"b": {"n": 2}, "a": {"n": 1}}}}`}, verifiers.Pass, ""},
		{"state initial", "- id: c\n  type: state\n  state: initial\n  table: events\n  asserts: [{comparator: eq, function: count, function_args: [_result], value: 0}]",
			ro{final: calendarFinal}, verifiers.Pass, ""},
		{"state missing table has no rows", "- id: c\n  type: state\n  table: a.b.c\n  asserts: [{comparator: eq, value: []}]",
			ro{final: `{"a": null}`}, verifiers.Pass, ""},
		{"state fail", "- id: c\n  type: state\n  table: events\n  asserts: [{comparator: eq, function: count, function_args: [_result], value: 2}]",
			ro{final: calendarFinal}, verifiers.Fail, ""},
		{"state scalar table is an error", "- id: c\n  type: state\n  table: events\n  asserts: [{comparator: eq, value: []}]",
			ro{final: `{"events": 3}`}, verifiers.Error, "final state: table events is number, not a list or object"},
		{"state path through scalar is an error", "- id: c\n  type: state\n  table: a.b\n  asserts: [{comparator: eq, value: []}]",
			ro{final: `{"a": "x"}`}, verifiers.Error, "final state: a is string, not an object"},
		{"log pass", "- id: c\n  type: log\n  asserts: [{comparator: eq, function: object_contains, function_args: [\"_result[*]\", {clickId: submit-button}], value: true}]",
			ro{log: log}, verifiers.Pass, ""},
		{"log fail", "- id: c\n  type: log\n  asserts: [{comparator: eq, function: object_contains, function_args: [\"_result[*]\", {clickId: cancel}], value: true}]",
			ro{log: log}, verifiers.Fail, ""},
		{"log error", "- id: c\n  type: log\n  asserts: [{comparator: eq, value: []}]",
			ro{log: `{"eventType": "click"}`}, verifiers.Error, "the log is object, not a list"},
		{"sequential pass", "- id: c\n  type: sequential\n  steps: [{clickId: open-form}, {clickId: submit-button}]",
			ro{log: log}, verifiers.Pass, "2 of 2 steps in order"},
		{"sequential out of order", "- id: c\n  type: sequential\n  steps: [{clickId: submit-button}, {clickId: open-form}]",
			ro{log: log}, verifiers.Fail, "1 of 2 steps in order"},
		{"sequential one event per step", "- id: c\n  type: sequential\n  steps: [{eventType: click}, {eventType: click}, {eventType: click}]",
			ro{log: log}, verifiers.Fail, "2 of 3 steps in order"},
		{"sequential with asserts", "- id: c\n  type: sequential\n  steps: [{eventType: click}]\n  asserts: [{comparator: eq, function: count, function_args: [_result], value: 2}]",
			ro{log: log}, verifiers.Fail, ""},
		{"sequential error", "- id: c\n  type: sequential\n  steps: [{eventType: click}]",
			ro{log: `"clicks"`}, verifiers.Error, ""},
		{"manual pass", "- id: c\n  type: manual\n  function: find_events_on_day\n  function_args: [\"2024-11-21\"]\n  asserts: [{comparator: eq, function: get, function_args: [\"_result[*].title\"], value: [Lunch, Retro]}]",
			ro{final: calendarFinal}, verifiers.Pass, ""},
		{"manual fail", "- id: c\n  type: manual\n  function: find_events_on_day\n  function_args: [\"2024-11-22\"]\n  asserts: [{comparator: gt, function: count, function_args: [_result], value: 0}]",
			ro{final: calendarFinal}, verifiers.Fail, ""},
		{"manual error", "- id: c\n  type: manual\n  function: find_events_on_day\n  function_args: [\"2024-11-22\"]\n  asserts: [{comparator: gt, function: count, function_args: [_result], value: 0}]",
			ro{final: `{"events": "none"}`}, verifiers.Error, "find_events_on_day: final state: table events is string, not a list or object"},
		{"rubric pending", "- id: c\n  type: rubric\n  rubric: The invitation is polite.",
			ro{}, verifiers.Pending, "The invitation is polite."},
		{"expr pass", "- id: c\n  type: expr\n  expr: final.events.exists(e, e.title == 'Team Meeting') && output.contains('done')",
			ro{final: calendarFinal, output: "done"}, verifiers.Pass, "expr is true"},
		{"expr fail with detail", "- id: c\n  type: expr\n  expr: count(final.events) == 2\n  detail: string(count(final.events)) + ' events'",
			ro{final: calendarFinal}, verifiers.Fail, "3 events"},
		{"expr error", "- id: c\n  type: expr\n  expr: final.nope.size() > 0",
			ro{final: calendarFinal}, verifiers.Error, "no such key"},
		{"expr not bool is an error", "- id: c\n  type: expr\n  expr: \"final.events[0].title == 'x' ? 1 : final.events[0]\"",
			ro{final: calendarFinal}, verifiers.Error, "not a bool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := grade(t, oneCheck(tc.check), tc.r)
			if len(got) != 1 || got[0].Status != tc.want {
				t.Fatalf("checks = %+v, want one with status %v", got, tc.want)
			}
			if !strings.Contains(got[0].Detail, tc.detail) {
				t.Errorf("detail = %q, want it to contain %q", got[0].Detail, tc.detail)
			}
		})
	}
}

func TestCELFunctionsAndVariables(t *testing.T) {
	r := ro{
		final:   calendarFinal,
		initial: `{"events": []}`,
		log:     `[{"eventType": "click", "clickId": "submit-button"}]`,
		output:  "The total is $1,234.50 for 3 events.",
		task:    `{"task_id": "T", "budget": 1234.5}`,
		meta:    `{"model": "m1"}`,
	}
	for _, tc := range []struct {
		name, expr string
		want       verifiers.Status
	}{
		{"object_contains list pass", `object_contains(final.events, {"title": "Team Meeting", "id": 1})`, verifiers.Pass},
		{"object_contains list fail", `object_contains(final.events, {"title": "Standup"})`, verifiers.Fail},
		{"object_contains object", `object_contains(final.events[0], {"attendees": ["ana", "ben"]})`, verifiers.Pass},
		{"object_contains error", `object_contains(final.nope, {})`, verifiers.Error},
		{"count pass", `count(final.events) == 3 && count(log) == 1 && count(null) == 0`, verifiers.Pass},
		{"count fail", `count(initial.events) > 0`, verifiers.Fail},
		{"count error", `count("abc") == 3`, verifiers.Error},
		{"numbers_in pass", `numbers_in(output) == [1234.5, 3.0]`, verifiers.Pass},
		{"numbers_in fail", `numbers_in(output).size() == 3`, verifiers.Fail},
		{"numbers_in error", `numbers_in(final.events[0].id) == []`, verifiers.Error},
		{"states_number pass", `states_number(output, task.budget) && states_number(output, 1234, 1)`, verifiers.Pass},
		{"states_number fail", `states_number(output, 1234)`, verifiers.Fail},
		{"states_number error", `states_number(output, "x")`, verifiers.Error},
		{"meta and task", `meta.model == "m1" && task.task_id == "T"`, verifiers.Pass},
		{"numbers by value", `final.events[2].id == 3 && final.events[1].cost > 12`, verifiers.Pass},
		{"in on objects and lists", `"title" in final.events[0] && "ana" in final.events[0].attendees && !("nope" in final)`, verifiers.Pass},
		{"has on missing state", `!has(meta.nope) && size(final) == 1`, verifiers.Pass},
		{"map equality", `final.events[0].attendees == ["ana", "ben"] && {"a": final.events[2].cost} == {"a": 30}`, verifiers.Pass},
		{"keys iterate in document order", `final.events[0].map(k, k)[1] == "title"`, verifiers.Pass},
		{"list concatenation", `size(final.events + [1]) == 4`, verifiers.Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := "- id: c\n  type: expr\n  expr: '" + strings.ReplaceAll(tc.expr, "'", "''") + "'"
			got := grade(t, oneCheck(check), r)
			if len(got) != 1 || got[0].Status != tc.want {
				t.Fatalf("checks = %+v, want one with status %v", got, tc.want)
			}
		})
	}
}

// A runaway expression ends its check in error, never a hang.
func TestCostLimit(t *testing.T) {
	expr := `[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, a + b + c + d + e + f > 0))))))`
	got := grade(t, oneCheck("- id: c\n  type: expr\n  expr: '"+expr+"'"), ro{})
	if got[0].Status != verifiers.Error || !strings.Contains(got[0].Detail, "cost limit") {
		t.Errorf("detail = %q, want it to name the cost limit", got[0].Detail)
	}
}

func TestEvidence(t *testing.T) {
	for _, tc := range []struct {
		name, assert             string
		final                    string
		wantActual, wantExpected string
	}{
		{"object_contains reports matching rows",
			`{comparator: eq, function: object_contains, function_args: ["_result[*]", {"title": "Team Meeting"}], value: true}`,
			calendarFinal,
			`[{"id":1,"title":"Team Meeting","startTime":"2024-11-20T14:00:00Z","endTime":"2024-11-20T15:00:00Z","attendees":["ana","ben"],"room":null}]`, `true`},
		{"object_contains without match", `{comparator: eq, function: object_contains, function_args: ["_result[*]", {"title": "x"}], value: true}`,
			calendarFinal, `[]`, `true`},
		{"count reports its value", `{comparator: gt, function: count, function_args: ["_result"], value: 0}`, calendarFinal, `3`, `0`},
		{"sum reports its value", `{comparator: eq, function: sum, function_args: ["_result[*].cost"], value: 1}`, calendarFinal, `42.5`, `1`},
		{"get reports its value", `{comparator: eq, function: get, function_args: ["_result[*].id"], value: [1, 2]}`, calendarFinal, `[1,2,3.0]`, `[1,2]`},
		{"no function reports the rows", `{comparator: eq, value: []}`, `{"events": {"a": {"x": 1}}}`, `[{"x":1}]`, `[]`},
		{"expr map value has sorted keys", `{comparator: eq, function: get, function_args: ["_result[0]"], value: {expr: '{"z": 1, "a": [true], "m": {"y": null, "b": "x"}}'}}`,
			`{"events": [{"x": 1}]}`, `{"x":1}`, `{"a":[true],"m":{"b":"x","y":null},"z":1}`},
		{"expr value reports the derived value", `{comparator: eq, function: count, function_args: ["_result"], value: {expr: "size(initial.events)"}}`, calendarFinal, `3`, `0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := grade(t, stateAssert(tc.assert), ro{final: tc.final, initial: `{"events": []}`})
			if got[0].Actual != tc.wantActual || got[0].Expected != tc.wantExpected {
				t.Errorf("actual, expected = %s, %s; want %s, %s", got[0].Actual, got[0].Expected, tc.wantActual, tc.wantExpected)
			}
		})
	}
}

func TestObjectContainsReportsAtMost20Rows(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"events": [`)
	for i := range 30 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"t": "x"}`)
	}
	b.WriteString("]}")
	got := grade(t, stateAssert(`{comparator: eq, function: object_contains, function_args: ["_result[*]", {"t": "x"}], value: true}`), ro{final: b.String()})
	if n := strings.Count(got[0].Actual, `{"t":"x"}`); n != 20 {
		t.Errorf("actual holds %d rows, want 20", n)
	}
	if !strings.Contains(got[0].Detail, "30 matching") {
		t.Errorf("detail = %q, want it to count 30 matching", got[0].Detail)
	}
}

func TestVerdictOfSpecChecks(t *testing.T) {
	spec := `verifiers:
  - id: V
    task: T
    name: mixed
    checks:
      - {id: req, type: expr, expr: "true"}
      - {id: opt, type: expr, optional: true, expr: "false", label: Optional one}
      - {id: judge, type: rubric, optional: true, rubric: "Is it polite?"}
`
	got := grade(t, spec, ro{})
	v := verifiers.Score(got, nil)
	if v.Outcome != verifiers.PendingOutcome || v.HasReward {
		t.Errorf("verdict = %+v, want pending without reward", v)
	}
	if got[1].Label != "Optional one" || got[1].Required || got[0].ID != "req" || got[0].Label != "req" {
		t.Errorf("check fields = %+v", got)
	}
}

func TestLet(t *testing.T) {
	spec := `verifiers:
  - id: V
    task: T
    name: lets
    let:
      titles: 'initial.events.map(e, e.title)'
      n: 'double(size(initial.events)) + task.extra'
    checks:
      - {id: kept, type: expr, expr: 'titles.all(x, final.events.exists(e, e.title == x))', detail: 'string(n)'}
      - id: count
        type: state
        table: events
        asserts: [{comparator: eq, function: count, function_args: [_result], value: {expr: 'n'}}]
`
	v := mustParse(t, spec)[0]
	initial := `{"events": [{"title": "a"}, {"title": "b"}]}`
	for _, tc := range []struct {
		name, final, task string
		want              string
	}{
		{"pass", `{"events": [{"title": "b"}, {"title": "a"}, {"title": "c"}]}`, `{"extra": 1}`, "pass pass"},
		{"same world, other final", `{"events": [{"title": "a"}]}`, `{"extra": 1}`, "fail fail"},
		{"other task row is another world", `{"events": [{"title": "b"}, {"title": "a"}]}`, `{"extra": 0}`, "pass pass"},
		{"let error ends the checks that read it in error", `{"events": []}`, ``, "error error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c verifiers.Checks
			if err := v.Grade(ro{final: tc.final, initial: initial, task: tc.task}.rollout(t), &c); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ch := range c.List() {
				got = append(got, ch.Status.String())
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("statuses = %v, want %s (%+v)", got, tc.want, c.List())
			}
		})
	}
}

// TestStringsAreNotHTMLEscaped checks that strings in details and in the
// actual and expected texts read as written: a constant value, a CEL value
// and a CEL detail holding <, > and & are not escaped for HTML.
func TestStringsAreNotHTMLEscaped(t *testing.T) {
	for _, tc := range []struct{ name, check string }{
		{"constant", "- id: c\n  type: state\n  table: x\n  asserts: [{comparator: eq, value: [\"a<b&c>\"]}]"},
		{"expr value", "- id: c\n  type: state\n  table: x\n  asserts: [{comparator: eq, value: {expr: '[\"a<b&c>\"]'}}]"},
		{"expr detail", "- id: c\n  type: expr\n  expr: 'final.x[0] == \"a<b&c>\"'\n  detail: '[final.x[0]]'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks := grade(t, oneCheck(tc.check), ro{final: `{"x": ["a<b&c>"]}`})
			c := checks[0]
			if c.Status != verifiers.Pass {
				t.Fatalf("status %v, detail %q", c.Status, c.Detail)
			}
			for _, s := range []string{c.Detail, c.Actual, c.Expected} {
				if strings.Contains(s, `\u00`) {
					t.Errorf("HTML-escaped text %q (detail %q, actual %q, expected %q)", s, c.Detail, c.Actual, c.Expected)
				}
			}
			if !strings.Contains(c.Detail+c.Actual+c.Expected, "a<b&c>") {
				t.Errorf("detail %q, actual %q, expected %q do not show a<b&c>", c.Detail, c.Actual, c.Expected)
			}
		})
	}
}

// TestLinearPrograms: an expression linear in its input runs without the
// cost limit (a test of a long output is not an error); one with a
// comprehension or a function that may outgrow its input keeps it.
func TestLinearPrograms(t *testing.T) {
	env, err := celEnv()
	if err != nil {
		t.Fatal(err)
	}
	for src, want := range map[string]bool{
		`output.contains("x") && size(output) < 100`:      true,
		`!turns[size(turns) - 1].text.startsWith("Sure")`: true,
		`final.a.b == 1 ? output.matches("^a") : false`:   true,
		`log.exists(e, e.name == "x")`:                    false,
		`output.replace("a", output) != ""`:               false,
		`numbers_in(output).size() > 0`:                   false,
		`has(final.x)`:                                    true,
	} {
		ast, iss := env.Compile(src)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", src, iss.Err())
		}
		if got := linear(ast); got != want {
			t.Errorf("linear(%s) = %v, want %v", src, got, want)
		}
	}
	long := strings.Repeat("a", 12<<20) + "x" // contains costs about a tenth of its length
	got := grade(t, oneCheck("- id: c\n  type: expr\n  expr: 'output.contains(\"x\")'"), ro{output: long})
	if got[0].Status != verifiers.Pass {
		t.Errorf("a linear expression over a long output: %v %s", got[0].Status, got[0].Detail)
	}
}
