package spec

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/verifiers"
)

const (
	twoEvents   = `{"events": [{"id": "E1", "title": "Lunch"}, {"id": "E2", "title": "Gym"}], "prefs": {"tz": "UTC"}}`
	addedOne    = `{"events": [{"id": "E1", "title": "Lunch"}, {"id": "E2", "title": "Gym"}, {"id": "E3", "title": "Team Meeting"}], "prefs": {"tz": "UTC"}}`
	addedEdited = `{"events": [{"id": "E1", "title": "Lunch", "room": "B"}, {"id": "E3", "title": "Team Meeting"}], "prefs": {"tz": "UTC"}}`
)

func TestUnchangedCheck(t *testing.T) {
	for _, tc := range []struct {
		name, check, initial, final string
		want                        verifiers.Status
		detail, actual              string
	}{
		{"nothing changed", "allow: []", twoEvents, twoEvents, verifiers.Pass,
			"no unexpected change (0 allowed changes)", `[]`},
		{"no allow: any change fails", "", twoEvents, addedOne, verifiers.Fail,
			`1 unexpected change: added events "E3"`,
			`[{"table":"events","kind":"added","key":"E3","before":null,"after":{"id":"E3","title":"Team Meeting"}}]`},
		{"a table allowed whole", "allow: [events]", twoEvents, addedEdited, verifiers.Pass,
			"no unexpected change (3 allowed changes)", `[]`},
		{"only additions allowed", "allow: [{table: events, where: 'change.kind == \"added\"'}]", twoEvents, addedEdited, verifiers.Fail,
			`2 unexpected changes: updated events "E1" (room); removed events "E2"`,
			`[{"table":"events","kind":"updated","key":"E1","before":{"id":"E1","title":"Lunch"},"after":{"id":"E1","title":"Lunch","room":"B"}},` +
				`{"table":"events","kind":"removed","key":"E2","before":{"id":"E2","title":"Gym"},"after":null}]`},
		{"filters see the rollout", "allow: [{table: events, where: 'change.after.title == final.events[2].title'}]", twoEvents, addedOne, verifiers.Pass,
			"no unexpected change (1 allowed change)", `[]`},
		{"another table changed", "allow: [events]", twoEvents, `{"events": [], "prefs": {"tz": "CET"}}`, verifiers.Fail,
			`1 unexpected change: updated prefs "tz"`,
			`[{"table":"prefs","kind":"updated","key":"tz","before":"UTC","after":"CET"}]`},
		{"nested table allowed through its parent", "allow: [crm]\nkeys: {crm.deals: dealId}", `{"crm": {"deals": [{"dealId": 7, "n": 1}]}}`, `{"crm": {"deals": [{"dealId": 7.0, "n": 2}]}}`, verifiers.Pass,
			"no unexpected change (1 allowed change)", `[]`},
		{"nested table keyed", "keys: {crm.deals: dealId}", `{"crm": {"deals": [{"dealId": 7, "n": 1}]}}`, `{"crm": {"deals": [{"dealId": 7.0, "n": 2}]}}`, verifiers.Fail,
			`1 unexpected change: updated crm.deals 7 (n)`,
			`[{"table":"crm.deals","kind":"updated","key":7,"before":{"dealId":7,"n":1},"after":{"dealId":7.0,"n":2}}]`},
		{"missing initial state", "allow: [events]", ``, twoEvents, verifiers.Fail,
			`1 unexpected change: added prefs "tz"`,
			`[{"table":"prefs","kind":"added","key":"tz","before":null,"after":"UTC"}]`},
		{"filter error", "allow: [{table: events, where: 'change.after.nope == 1'}]", twoEvents, addedOne, verifiers.Error,
			"allow events where: no such key: nope", ``},
		{"state not an object", "", twoEvents, `[1]`, verifiers.Error, "final state is array, not an object", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := "- id: c\n  type: unchanged\n"
			if tc.check != "" {
				check += indent(tc.check, "  ")
			}
			got := grade(t, oneCheck(check), ro{initial: tc.initial, final: tc.final})
			if len(got) != 1 {
				t.Fatalf("checks = %+v, want one", got)
			}
			c := got[0]
			if c.Status != tc.want || c.Detail != tc.detail || c.Actual != tc.actual {
				t.Errorf("check = %v %q actual %s\nwant %v %q actual %s", c.Status, c.Detail, c.Actual, tc.want, tc.detail, tc.actual)
			}
			if tc.want != verifiers.Error && c.Expected != "[]" {
				t.Errorf("expected = %s, want []", c.Expected)
			}
		})
	}
}

// TestUnchangedListsAtMost20 keeps the actual and the detail short when
// many rows changed, in a fixed order.
func TestUnchangedListsAtMost20(t *testing.T) {
	var rows []string
	for i := range 25 {
		rows = append(rows, fmt.Sprintf(`"r%02d": {"n": %d}`, i, i))
	}
	final := `{"t": {` + strings.Join(rows, ",") + `}}`
	got := grade(t, oneCheck("- {id: c, type: unchanged}"), ro{initial: `{"t": {}}`, final: final})[0]
	if got.Status != verifiers.Fail || !strings.HasPrefix(got.Detail, `25 unexpected changes: added t "r00"; added t "r01"`) ||
		!strings.HasSuffix(got.Detail, `added t "r19"; and 5 more`) {
		t.Errorf("detail = %q", got.Detail)
	}
	if n := strings.Count(got.Actual, `"kind":"added"`); n != 20 || !strings.Contains(got.Actual, `"key":"r19"`) || strings.Contains(got.Actual, `"key":"r20"`) {
		t.Errorf("actual lists %d changes: %s", n, got.Actual)
	}
}

func TestUnchangedLoadProblems(t *testing.T) {
	for _, tc := range []struct{ name, check, want string }{
		{"asserts", "- id: c\n  type: unchanged\n  asserts: [{comparator: eq, value: 1}]", "8:18: unchanged checks take no asserts"},
		{"allow not a list", "- id: c\n  type: unchanged\n  allow: events", "8:16: allow of check \"c\" must be a list"},
		{"bad allow path", "- id: c\n  type: unchanged\n  allow: [crm..deals]", "8:17: allow table \"crm..deals\": empty field name"},
		{"allow item without table", "- id: c\n  type: unchanged\n  allow: [{where: 'true'}]", "8:17: an allow item of check \"c\" has no table"},
		{"allow item unknown field", "- id: c\n  type: unchanged\n  allow: [{table: t, if: 'true'}]", "8:28: unknown field \"if\""},
		{"where does not compile", "- id: c\n  type: unchanged\n  allow: [{table: t, where: 'change.'}]", "CEL expression does not compile"},
		{"where not bool", "- id: c\n  type: unchanged\n  allow: [{table: t, where: 'change.key'}]", ""},
		{"keys not an object", "- id: c\n  type: unchanged\n  keys: [id]", "8:15: keys of check \"c\" must be an object"},
		{"empty key", "- id: c\n  type: unchanged\n  keys: {events: ''}", "the key of table events must be a non-empty string"},
		{"allow on a state check", "- id: c\n  type: state\n  table: t\n  allow: [t]\n  asserts: [{comparator: eq, value: 1}]", "allow is not a field of state checks"},
		{"change outside an allow filter", "- id: c\n  type: expr\n  expr: change.kind == 'added'", "CEL expression does not compile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(oneCheck(tc.check)))
			var ps Problems
			if tc.want == "" {
				// A dyn-typed filter compiles; its value is checked when graded.
				if err != nil {
					t.Fatalf("Parse = %v, want no problem", err)
				}
				return
			}
			if !errors.As(err, &ps) || !strings.Contains(ps[0].Error(), tc.want) {
				t.Errorf("Parse = %v, want a problem containing %q", err, tc.want)
			}
		})
	}
}

func TestCELChanges(t *testing.T) {
	for _, tc := range []struct {
		expr, initial, final string
		want                 verifiers.Status
	}{
		{`size(changes(initial, final)) == 0`, twoEvents, twoEvents, verifiers.Pass},
		{`size(changes(initial, final)) == 0`, twoEvents, addedOne, verifiers.Fail},
		{`changes(initial, final).events.added.map(c, c.after.title) == ["Team Meeting"]`, twoEvents, addedOne, verifiers.Pass},
		{`changes(initial, final).events.removed.map(c, c.key) == ["E2"] && changes(initial, final).events.updated[0].before.title == "Lunch"`, twoEvents, addedEdited, verifiers.Pass},
		{`changes(initial, final).events.added.all(c, c.table == "events" && c.kind == "added")`, twoEvents, addedEdited, verifiers.Pass},
		{`changes(initial, final, {"events": "title"}).events.updated.size() == 1`, `{"events": [{"id": 1, "title": "a"}]}`, `{"events": [{"id": 2, "title": "a"}]}`, verifiers.Pass},
		{`changes(initial, final).events.updated.size() == 0`, `{"events": [{"id": 1, "title": "a"}]}`, `{"events": [{"id": 2, "title": "a"}]}`, verifiers.Pass},
		{`changes(initial, final).events.removed.size() == 1`, `{"events": [{"id": 1, "title": "a"}]}`, `{"events": [{"id": 2, "title": "a"}]}`, verifiers.Pass},
		{`!("prefs" in changes(initial, final))`, twoEvents, addedOne, verifiers.Pass},
		{`changes({"t": {"a": 1}}, {"t": {"a": 2}}).t.updated[0].after == 2`, ``, ``, verifiers.Pass},
		{`size(changes(initial, final)) == 1`, ``, twoEvents, verifiers.Fail},
		{`size(changes(initial, final)) == 0`, `[]`, twoEvents, verifiers.Error},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			spec := oneCheck("- id: c\n  type: expr\n  expr: '" + strings.ReplaceAll(tc.expr, "'", "''") + "'")
			got := grade(t, spec, ro{initial: tc.initial, final: tc.final})[0]
			if got.Status != tc.want {
				t.Errorf("%s = %v (%s), want %v", tc.expr, got.Status, got.Detail, tc.want)
			}
		})
	}
}
