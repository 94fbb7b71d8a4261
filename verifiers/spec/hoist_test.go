package spec

import (
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// The subexpressions hoisted are the maximal ones that read only initial
// and task and hold a comprehension.
func TestHoistPicks(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string // the hoisted programs' texts
	}{
		{`size(initial.deals.filter(d, d.owner == "A")) == size(final.deals)`,
			[]string{`size(initial.deals.filter(d, d.owner == "A"))`}},
		{`cel.bind(s, initial.deals.filter(d, d.owner == task.rep), s.all(k, final.deals.exists(f, f == k)))`,
			[]string{`initial.deals.filter(d, d.owner == task.rep)`}},
		// The whole expression: an expectation derived from the initial state.
		{`initial.deals.all(d, d.owner != "")`, []string{`initial.deals.all(d, d.owner != "")`}},
		// Inside a loop over the final state: the loop-invariant part.
		{`final.deals.all(f, f in initial.deals.map(d, d.id))`, []string{`initial.deals.map(d, d.id)`}},
		// Nothing to hoist: no comprehension, or the final state is read.
		{`initial.deals[0].owner == final.deals[0].owner`, nil},
		{`initial.deals.all(d, d in final.deals)`, nil},
		{`final.deals.all(d, d.owner == "A")`, nil},
		// A comprehension variable of an enclosing loop is not world-invariant.
		{`final.deals.all(f, initial.deals.exists(d, d == f))`, nil},
		// Loop and bind variables named initial or task are not the states.
		{`final.items.all(task, task.subs.all(s, s.done))`, nil},
		{`final.items.exists(initial, initial.subs.exists(s, s))`, nil},
		{`cel.bind(task, final.t, task.subs.all(s, s.done))`, nil},
		{`initial.items.all(task, task.subs.all(s, s.done))`, []string{`initial.items.all(task, task.subs.all(s, s.done))`}},
		// A name the rewrite could capture stops hoisting.
		{`final.b.all(__gavel_h0, __gavel_h0 in initial.ys.map(z, z))`, nil},
		// A value that is a type would read as a type name: its operand is
		// hoisted instead.
		{`type(initial.a.map(x, x)) == list && final.n == 3`, []string{`initial.a.map(x, x)`}},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			env, err := celEnv()
			if err != nil {
				t.Fatal(err)
			}
			a, iss := env.Compile(tc.expr)
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			prg, h, _ := hoistExpr(env, a)
			var got []string
			if h != nil {
				if prg == nil {
					t.Fatal("hoisted programs without a rewritten expression")
				}
				for _, p := range h.progs {
					got = append(got, strings.ReplaceAll(p.src, "\n", " "))
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("hoisted (-want +got):\n%s", diff)
			}
		})
	}
}

// Hoisting changes when work is done, never a result: every expression
// grades the same with hoisting off, with hoisting computing in place
// (unshared initial state) and with the per-world memo (shared initial
// state), including errors and the cost limit.
func TestHoistingKeepsResults(t *testing.T) {
	exprs := []struct{ expr, detail string }{
		// Names that shadow the states: never hoisted, same results.
		{`[{"subs": [true]}].all(task, task.subs.all(s, s)) && cel.bind(initial, {"d": 1}, initial.exists(k, k == "d"))`, ``},
		{`type(initial.deals.map(k, k)) == list`, ``},
		{`cel.bind(s, initial.deals.transformList(k, v, v.owner == task.rep && v.status == "open", k), size(s) > 0 && s.all(k, final.deals[k].owner == "C"))`,
			`cel.bind(s, initial.deals.transformList(k, v, v.owner == task.rep, k), string(s.filter(k, final.deals[k].owner == "C").size()) + " of " + string(size(s)))`},
		{`initial.deals.all(k, has(initial.deals[k].owner))`, ``},
		{`final.deals.all(k, k in initial.deals.map(d, d))`, `initial.deals.map(d, d).join(",")`},
		// An error value hoisted: absorbed by || as in place, else an error.
		{`final.deals.d1.owner == "C" || initial.deals.exists(k, initial.deals[k].amount > 5)`, ``},
		{`initial.deals.exists(k, initial.deals[k].amount > 50)`, ``},
		{`initial.nope.exists(k, true) || true`, ``},
		{`initial.nope.exists(k, true)`, ``},
		{`initial.deals.exists(k, initial.deals[k].owner == "Z")`, ``},
		// A runaway hoisted part fails the expression, even under ||.
		{`[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, size(initial) + a + b + c + d + e + f > 0)))))) || true`, ``},
		// A short-circuit skips a hoisted value as it skipped the work in place.
		{`final.deals.d1.owner == "C" || initial.deals.map(k, [1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, a + b + c + d + e > 0)))))).size() > 0`, ``},
	}
	env, err := celEnv()
	if err != nil {
		t.Fatal(err)
	}
	hoists := 0
	for _, e := range exprs {
		a, iss := env.Compile(e.expr)
		if iss.Err() != nil {
			t.Fatal(iss.Err())
		}
		if _, h, _ := hoistExpr(env, a); h != nil {
			hoists++
		}
	}
	if hoists < len(exprs)-3 {
		t.Fatalf("%d of %d expressions hoist: the table no longer tests hoisting", hoists, len(exprs))
	}
	var b strings.Builder
	b.WriteString("verifiers:\n  - id: V\n    task: T\n    name: test\n    checks:\n")
	for i, e := range exprs {
		b.WriteString("      - id: c" + string(rune('a'+i)) + "\n        type: expr\n        expr: '" + strings.ReplaceAll(e.expr, "'", "''") + "'\n")
		if e.detail != "" {
			b.WriteString("        detail: '" + strings.ReplaceAll(e.detail, "'", "''") + "'\n")
		}
	}
	b.WriteString("      - id: value\n        type: state\n        table: deals\n        asserts:\n          - {comparator: eq, function: count, function_args: [\"_result\"], value: {expr: 'size(initial.deals.filter(k, true))'}}\n")
	spec := b.String()

	gradeWith := func(hoist, shared bool) []verifiers.Check {
		vs, err := parseHoisting(spec, hoist)
		if err != nil {
			t.Fatal(err)
		}
		return gradeWorld(t, vs[0], shared)
	}
	want := gradeWith(false, false)
	statuses := map[verifiers.Status]int{}
	for _, c := range want {
		statuses[c.Status]++
	}
	if statuses[verifiers.Pass] == 0 || statuses[verifiers.Fail] == 0 || statuses[verifiers.Error] < 3 {
		t.Fatalf("statuses %v: the table should pass, fail and error: %+v", statuses, want)
	}
	if !strings.Contains(want[10].Detail, "cost limit") || want[11].Status != verifiers.Pass {
		t.Fatalf("runaway checks: %+v", want[10:12])
	}
	for _, shared := range []bool{false, true} {
		if diff := cmp.Diff(want, gradeWith(true, shared)); diff != "" {
			t.Errorf("shared=%v: hoisted results differ (-off +on):\n%s", shared, diff)
		}
	}
}

// Rollouts of one world read its memoized values from many goroutines.
func TestHoistMemoConcurrent(t *testing.T) {
	v := loadSpec(t, "testdata/ver002.yaml")
	rs := ver002Rollouts(t, 400, 4)
	want := make([][]verifiers.Check, len(rs))
	for i, r := range rs {
		var c verifiers.Checks
		if err := v.Grade(r, &c); err != nil {
			t.Fatal(err)
		}
		want[i] = append([]verifiers.Check(nil), c.List()...)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			var c verifiers.Checks
			for i := range rs {
				i := (i + w*7) % len(rs)
				c.Reset()
				if err := v.Grade(rs[i], &c); err != nil {
					t.Error(err)
					return
				}
				if diff := cmp.Diff(want[i], c.List()); diff != "" {
					t.Errorf("rollout %d: %s", i, diff)
					return
				}
			}
		})
	}
	wg.Wait()
}

// hoistWorld is the rollout the hoisting tests grade.
var hoistWorld = ro{
	initial: `{"deals": {"d1": {"owner": "A", "status": "open", "amount": 10}, "d2": {"owner": "A", "status": "won"}, "d3": {"owner": "B", "amount": "x"}}}`,
	final:   `{"deals": {"d1": {"owner": "C", "status": "open"}, "d2": {"owner": "A", "status": "won"}, "d3": {"owner": "B"}}}`,
	task:    `{"task_id": "T", "rep": "A"}`,
	output:  "moved 1 deal",
}

// parseHoisting loads a spec with hoisting on or off.
func parseHoisting(spec string, hoist bool) ([]*verifiers.Verifier, error) {
	noHoisting = !hoist
	defer func() { noHoisting = false }()
	return Parse("test.yaml", []byte(spec))
}

// gradeWorld grades hoistWorld twice (the second time reads any memo) and
// returns the checks; shared: its initial state and task row are shared
// documents.
func gradeWorld(t testing.TB, v *verifiers.Verifier, shared bool) []verifiers.Check {
	r := hoistWorld.rollout(t)
	if shared {
		r.Initial, r.Task = sharedState(t, hoistWorld.initial), sharedState(t, hoistWorld.task)
	}
	var c verifiers.Checks
	for range 2 {
		c.Reset()
		if err := v.Grade(r, &c); err != nil {
			t.Fatal(err)
		}
	}
	return append([]verifiers.Check(nil), c.List()...)
}

// sharedState parses text into a shared document, as the pipeline's cache
// of initial states does.
func sharedState(t testing.TB, text string) jsonview.Value {
	t.Helper()
	d := new(jsonview.Doc)
	v, err := d.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	d.Share()
	return v
}

func TestSharedDocRefusesParse(t *testing.T) {
	d := new(jsonview.Doc)
	if _, err := d.Parse([]byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	d.Share()
	defer func() {
		if recover() == nil {
			t.Error("Parse into a shared Doc did not panic")
		}
	}()
	_, _ = d.Parse([]byte(`[]`))
}
