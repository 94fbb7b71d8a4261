package verifiers

import (
	"strings"
	"testing"
)

func TestBindPrecedence(t *testing.T) {
	literal := &Verifier{ID: "LIT", Tasks: []string{"airline/7", "retail/1"}, Source: "lit.yaml:2"}
	long := &Verifier{ID: "LONG", Tasks: []string{"airline/1*"}, Source: "long.yaml:2"}
	short := &Verifier{ID: "SHORT", Tasks: []string{"airline/*"}, Source: "short.yaml:2"}
	other := &Verifier{ID: "OTHER", Tasks: []string{"air*"}, Source: "other.yaml:2"}
	all := &Verifier{ID: "ALL", Tasks: []string{AllTasks}, Source: "all.yaml:2"}
	b, err := Bind([]*Verifier{all, other, short, long, literal})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		task string
		want string // the verifier id; "" for none
	}{
		{"airline/7", "LIT"},   // a task id as written beats every prefix
		{"retail/1", "LIT"},    // and all
		{"airline/12", "LONG"}, // the longer prefix beats the shorter
		{"airline/1", "LONG"},  // a prefix matches the task equal to it
		{"airline/2", "SHORT"}, // the shorter prefix beats a shorter still
		{"airline/", "SHORT"},  // an empty rest still matches
		{"airways/3", "OTHER"}, // the shortest prefix beats all
		{"airline", "OTHER"},   // a task shorter than a prefix skips it
		{"retail/2", "ALL"},    // all binds what nothing else does
		{"", ""},               // a missing task has none
		{"Airline/7", "ALL"},   // ids are case-sensitive
		{"xairline/7", "ALL"},  // a prefix anchors at the start
	} {
		v := b.Lookup(tc.task)
		got := ""
		if v != nil {
			got = v.ID
		}
		if got != tc.want {
			t.Errorf("Lookup(%q) = %q, want %q", tc.task, got, tc.want)
		}
	}

	// Without all, a task nothing matches has no verifier.
	b, err = Bind([]*Verifier{short, literal})
	if err != nil {
		t.Fatal(err)
	}
	if v := b.Lookup("retail/2"); v != nil {
		t.Errorf("Lookup(retail/2) = %s, want none", v.ID)
	}
	// The order of the verifiers does not matter.
	b, err = Bind([]*Verifier{literal, long, short, other, all})
	if err != nil {
		t.Fatal(err)
	}
	if v := b.Lookup("airline/12"); v == nil || v.ID != "LONG" {
		t.Errorf("Lookup(airline/12) = %v, want LONG", v)
	}
}

func TestBindRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []string
		want string
	}{
		{"equal task ids", []string{"T1"}, []string{"T2", "T1"}, "task T1 is bound by two verifiers: A (a.yaml:1) and B (b.yaml:2)"},
		{"equal prefixes", []string{"airline/*"}, []string{"airline/*"}, "task pattern airline/* is bound by two verifiers: A (a.yaml:1) and B (b.yaml:2)"},
		{"both all", []string{AllTasks}, []string{"x", AllTasks}, "all tasks are bound by two verifiers: A (a.yaml:1) and B (b.yaml:2)"},
		{"star inside", []string{"air*line"}, nil, `verifier A (a.yaml:1): task pattern "air*line": * may only end a pattern`},
		{"two stars", []string{"airline/**"}, nil, `verifier A (a.yaml:1): task pattern "airline/**"`},
		{"empty id", []string{""}, nil, "verifier A (a.yaml:1): a task id must not be empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Verifier{ID: "A", Tasks: tc.a, Source: "a.yaml:1"}
			b := &Verifier{ID: "B", Tasks: tc.b, Source: "b.yaml:2"}
			_, err := Bind([]*Verifier{a, b})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Bind error = %v, want one containing %q", err, tc.want)
			}
		})
	}
	// A prefix and a task id it matches, or two prefixes of which one
	// extends the other, are not equal: both bind.
	for _, ok := range [][2][]string{
		{{"airline/*"}, {"airline/1"}},
		{{"airline/*"}, {"airline/1*"}},
		{{AllTasks}, {"a*"}},
		{{"airline*"}, {"airline"}},
	} {
		a := &Verifier{ID: "A", Tasks: ok[0]}
		b := &Verifier{ID: "B", Tasks: ok[1]}
		if _, err := Bind([]*Verifier{a, b}); err != nil {
			t.Errorf("Bind(%q, %q) = %v, want no error", ok[0], ok[1], err)
		}
	}
}

func TestVerifierBinds(t *testing.T) {
	v := &Verifier{ID: "A", Tasks: []string{"airline/*", "retail/3"}}
	for task, want := range map[string]bool{"airline/1": true, "retail/3": true, "retail/30": false, "air": false} {
		if got := v.Binds(task); got != want {
			t.Errorf("Binds(%q) = %v, want %v", task, got, want)
		}
	}
}
