package verifiers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// view parses JSON text ("" is missing).
func view(t *testing.T, text string) jsonview.Value {
	t.Helper()
	if text == "" {
		return jsonview.Value{}
	}
	v, err := new(jsonview.Doc).Parse([]byte(text))
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	return v
}

// changeLines writes changes one a line: "kind table key before -> after".
func changeLines(changes []Change) string {
	var lines []string
	for _, c := range changes {
		raw := func(v jsonview.Value) string {
			if !v.Exists() {
				return "-"
			}
			return string(v.Raw())
		}
		lines = append(lines, fmt.Sprintf("%s %s %s %s -> %s", c.Kind, c.Table, c.Key, raw(c.Before), raw(c.After)))
	}
	return strings.Join(lines, "\n")
}

func TestChanges(t *testing.T) {
	for _, tc := range []struct {
		name, initial, final string
		opts                 ChangeOptions
		want                 string
	}{
		{"equal states", `{"a": {"x": {"n": 1}}}`, `{"a": {"x": {"n": 1.0}}}`, ChangeOptions{}, ``},
		{"both missing", ``, ``, ChangeOptions{}, ``},
		{"missing and null tables have no rows", `{"a": null}`, `{"b": {}, "c": []}`, ChangeOptions{}, ``},
		{"object table", `{"deals": {"D1": {"n": 1}, "D2": {"n": 2}, "D3": {"n": 3}}}`,
			`{"deals": {"D3": {"n": 3.0}, "D1": {"n": 5}, "D4": {"n": 4}}}`, ChangeOptions{},
			`updated deals "D1" {"n": 1} -> {"n": 5}` + "\n" +
				`removed deals "D2" {"n": 2} -> -` + "\n" +
				`added deals "D4" - -> {"n": 4}`},
		{"array table by id, order ignored", `{"events": [{"id": 1, "t": "a"}, {"id": "2", "t": "b"}, {"id": 3, "t": "c"}]}`,
			`{"events": [{"id": 3.0, "t": "c"}, {"id": 2, "t": "b"}, {"id": 1, "t": "z"}]}`, ChangeOptions{},
			`updated events 1 {"id": 1, "t": "a"} -> {"id": 1, "t": "z"}` + "\n" +
				`removed events "2" {"id": "2", "t": "b"} -> -` + "\n" +
				`added events 2 - -> {"id": 2, "t": "b"}`},
		{"array table by a given key", `{"events": [{"uid": "a", "id": 1}]}`, `{"events": [{"uid": "a", "id": 2}]}`,
			ChangeOptions{Keys: map[string]string{"events": "uid"}},
			`updated events "a" {"uid": "a", "id": 1} -> {"uid": "a", "id": 2}`},
		{"rows without a key match by value", `{"t": [{"x": 1}, {"x": 2}, {"id": null, "x": 3}]}`, `{"t": [{"x": 2}, {"x": 1}, {"x": 4}]}`, ChangeOptions{},
			`removed t  {"id": null, "x": 3} -> -` + "\n" + `added t  - -> {"x": 4}`},
		{"repeated keys match in order", `{"t": [{"id": 1, "v": "a"}, {"id": 1, "v": "b"}]}`, `{"t": [{"id": 1, "v": "a"}]}`, ChangeOptions{},
			`removed t 1 {"id": 1, "v": "b"} -> -`},
		{"table appears", ``, `{"t": [{"id": 1}]}`, ChangeOptions{}, `added t 1 - -> {"id": 1}`},
		{"table emptied", `{"t": {"a": {}}}`, `{"t": null}`, ChangeOptions{}, `removed t "a" {} -> -`},
		{"values compared whole", `{"n": 1, "tags": ["a"], "gone": true}`, `{"n": 2, "tags": ["a"], "new": "x"}`, ChangeOptions{},
			`updated n  1 -> 2` + "\n" + `removed gone  true -> -` + "\n" + `added new  - -> "x"`},
		{"table kind changed", `{"t": {"a": {}}}`, `{"t": [{"id": "a"}]}`, ChangeOptions{}, `updated t  {"a": {}} -> [{"id": "a"}]`},
		{"array of scalars is a value", `{"t": [1, 2]}`, `{"t": [2, 1]}`, ChangeOptions{}, `updated t  [1, 2] -> [2, 1]`},
		{"a top-level object is a table of its members", `{"crm": {"deals": {"D1": {}}, "n": 1}}`, `{"crm": {"deals": {"D1": {"x": 1}}, "n": 1}}`, ChangeOptions{},
			`updated crm "deals" {"D1": {}} -> {"D1": {"x": 1}}`},
		{"nested tables", `{"crm": {"deals": {"D1": {}}, "users": [{"id": "u"}], "n": 1}}`, `{"crm": {"deals": {"D1": {"x": 1}}, "users": [], "n": 2}}`,
			ChangeOptions{Tables: []string{"crm.deals"}},
			`updated crm.deals "D1" {} -> {"x": 1}` + "\n" + `removed crm.users "u" {"id": "u"} -> -` + "\n" + `updated crm.n  1 -> 2`},
		{"nested key names the table", `{"a": {"b": [{"k": 1, "v": 1}]}}`, `{"a": {"b": [{"k": 1, "v": 2}]}}`,
			ChangeOptions{Keys: map[string]string{"a.b": "k"}},
			`updated a.b 1 {"k": 1, "v": 1} -> {"k": 1, "v": 2}`},
		{"repeated member names: the first counts", `{"t": {"a": {"n": 1}, "a": {"n": 2}}}`, `{"t": {"a": {"n": 1}}}`, ChangeOptions{}, ``},
		{"escaped member names", `{"t": {"a\"b": {"n": 1}}}`, `{"t": {"a\"b": {"n": 2}}}`, ChangeOptions{}, `updated t "a\"b" {"n": 1} -> {"n": 2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes, err := Changes(view(t, tc.initial), view(t, tc.final), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := changeLines(changes); got != tc.want {
				t.Errorf("Changes(%s, %s) =\n%s\nwant\n%s", tc.initial, tc.final, got, tc.want)
			}
		})
	}
}

// TestChangesLargeTables compares tables large enough to be indexed by
// map, with the same answers as small ones.
func TestChangesLargeTables(t *testing.T) {
	var a, b strings.Builder
	a.WriteString(`{"t": {`)
	b.WriteString(`{"t": {`)
	for i := range 100 {
		if i > 0 {
			a.WriteString(",")
			b.WriteString(",")
		}
		fmt.Fprintf(&a, `"k%d": {"n": %d}`, i, i)
		n := 99 - i
		if n == 50 {
			n = -1
		}
		fmt.Fprintf(&b, `"k%d": {"n": %d}`, 99-i, n)
	}
	a.WriteString(`, "k0": {"n": 7}}}`)
	b.WriteString(`, "new": {}}}`)
	changes, err := Changes(view(t, a.String()), view(t, b.String()), ChangeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `updated t "k50" {"n": 50} -> {"n": -1}` + "\n" + `added t "new" - -> {}`
	if got := changeLines(changes); got != want {
		t.Errorf("Changes =\n%s\nwant\n%s", got, want)
	}
}

func TestChangesErrors(t *testing.T) {
	for _, tc := range []struct{ initial, final, want string }{
		{`[]`, `{}`, "initial state is array, not an object"},
		{`{}`, `"x"`, "final state is string, not an object"},
	} {
		_, err := Changes(view(t, tc.initial), view(t, tc.final), ChangeOptions{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("Changes(%s, %s) error = %v, want %s", tc.initial, tc.final, err, tc.want)
		}
	}
}

func TestChangedFields(t *testing.T) {
	ch := Change{Kind: Updated, Before: view(t, `{"a": 1, "b": 2, "c": 3}`), After: view(t, `{"d": 4, "c": 3.0, "a": 0}`)}
	if got, want := strings.Join(ch.ChangedFields(), ","), "a,b,d"; got != want {
		t.Errorf("ChangedFields() = %s, want %s", got, want)
	}
	for _, tc := range []struct {
		table, path string
		want        bool
	}{
		{"crm.deals", "crm", true}, {"crm.deals", "crm.deals", true}, {"crm", "crm.deals", false}, {"crmx", "crm", false},
	} {
		if got := (Change{Table: tc.table}).InTable(tc.path); got != tc.want {
			t.Errorf("Change{Table: %s}.InTable(%s) = %v, want %v", tc.table, tc.path, got, tc.want)
		}
	}
}
