package selftest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/crm"
	"github.com/gavelhq/gavel/verifiers/spec"
)

// TestShippedFixtures runs every built-in verifier, Go and spec, on the
// fixtures shipped with it.
func TestShippedFixtures(t *testing.T) {
	all := append(crm.Verifiers(), spec.Builtin()...)
	for _, v := range all {
		t.Run(v.ID, func(t *testing.T) {
			if v.Fixtures == nil || !HasFixtures(v.Fixtures, v.ID) {
				t.Fatalf("%s ships no fixtures", v.ID)
			}
			fx, err := LoadFixtures(v.Fixtures, v.ID)
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]int{}
			for _, f := range fx {
				kinds[f.Expect]++
			}
			if kinds[ExpectPass] == 0 || kinds[ExpectFail] == 0 {
				t.Errorf("%s has %d pass and %d fail fixtures, want both", v.ID, kinds[ExpectPass], kinds[ExpectFail])
			}
			for _, o := range Test(v, fx, decode) {
				if !o.OK {
					t.Errorf("%s %s: want %s, got %s: %s", o.Verifier, o.Case, o.Want, o.Got, o.Problem)
				}
			}
		})
	}
}

// decode reads fixtures as grading reads JSON Lines rows.
func decode(name string, text []byte) (*verifiers.Rollout, error) {
	d, err := pipeline.NewRowDecoder(columnar.FieldNames{}, "")
	if err != nil {
		return nil, err
	}
	return d.Decode(name, text)
}

const state = `{"items": [1, 2]}`

func fixture(task, final, output string) string {
	return `{"task_id": "` + task + `", "initial_state": ` + state + `, "final_state": ` + final + `, "output": "` + output + `", "log": []}`
}

// changed reports whether the final state differs from the initial one.
func changed(r *verifiers.Rollout) bool {
	return string(r.Final.Raw()) != string(r.Initial.Raw())
}

func TestTest(t *testing.T) {
	honest := &verifiers.Verifier{ID: "V-HONEST", Tasks: []string{"T"}, Grade: func(r *verifiers.Rollout, c *verifiers.Checks) error {
		c.Require("state changed", changed(r), "")
		c.Require("nothing forbidden said", !strings.Contains(r.Output, "forbidden"), "")
		return nil
	}}
	lenient := &verifiers.Verifier{ID: "V-LENIENT", Tasks: []string{"T"}, Grade: func(r *verifiers.Rollout, c *verifiers.Checks) error {
		c.Require("anything goes", true, "")
		return nil
	}}
	calls := 0
	flaky := &verifiers.Verifier{ID: "V-FLAKY", Tasks: []string{"T"}, Grade: func(r *verifiers.Rollout, c *verifiers.Checks) error {
		calls++
		c.Require("state changed", changed(r), strings.Repeat("x", calls))
		return nil
	}}
	// sticky remembers the first rollout it saw: the same rollout graded
	// twice looks deterministic, another worker's decoding of it does not.
	var seenFirst *verifiers.Rollout
	sticky := &verifiers.Verifier{ID: "V-STICKY", Tasks: []string{"T"}, Grade: func(r *verifiers.Rollout, c *verifiers.Checks) error {
		if seenFirst == nil {
			seenFirst = r
		}
		c.Require("state changed", changed(r), fmt.Sprint(seenFirst == r))
		return nil
	}}
	panics := &verifiers.Verifier{ID: "V-PANIC", Tasks: []string{"T"}, Grade: func(r *verifiers.Rollout, c *verifiers.Checks) error {
		panic("boom")
	}}
	files := fstest.MapFS{
		"V/pass/ok.json":            {Data: []byte(fixture("T", `{"items": [1, 2, 3]}`, "done"))},
		"V/fail/said.json":          {Data: []byte(`{"task_id": "T", "initial_state": ` + state + `, "final_state": {"items": []}, "output": "forbidden", "expect_failed": ["nothing forbidden said"]}`)},
		"V/fail/wrong-reason.json":  {Data: []byte(`{"task_id": "T", "initial_state": ` + state + `, "final_state": {"items": []}, "output": "forbidden", "expect_failed": ["state changed"]}`)},
		"V/error/not-an-error.json": {Data: []byte(fixture("T", `{"items": []}`, "fine"))},
		"V/pass/other-task.json":    {Data: []byte(fixture("OTHER", `{}`, ""))},
		"V/pass/broken.json":        {Data: []byte(`{"task_id": `)},
		"V/pass/notes.txt":          {Data: []byte("ignored")},
	}
	fx, err := LoadFixtures(files, "V")
	if err != nil {
		t.Fatal(err)
	}
	if len(fx) != 6 {
		t.Fatalf("LoadFixtures: %d fixtures, want 6 (the .txt file ignored)", len(fx))
	}
	tests := []struct {
		name string
		v    *verifiers.Verifier
		fx   []Fixture
		want string
	}{
		{"honest verifier", honest, fx,
			"pass/broken.json= FAIL; pass/ok.json=passed; pass/other-task.json= FAIL; fail/said.json=failed; fail/wrong-reason.json=failed FAIL; error/not-an-error.json=passed FAIL; " +
				"no-op T=failed vacuous:nothing forbidden said"},
		{"a verifier that passes a no-op", lenient, fx[1:2],
			"pass/ok.json=passed; no-op T=passed FAIL vacuous:anything goes"},
		{"a verifier that is not deterministic", flaky, fx[1:2],
			"pass/ok.json=passed FAIL; no-op T=failed"},
		{"a verifier whose checks depend on the worker", sticky, fx[1:2],
			"pass/ok.json=passed FAIL; no-op T=failed"},
		{"a verifier that panics", panics, fx[1:2],
			"pass/ok.json=error FAIL; no-op T=error FAIL"},
		{"no fixtures: a no-op on a missing state", honest, nil,
			"no-op T=failed vacuous:nothing forbidden said"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarizeOutcomes(Test(tt.v, tt.fx, decode)); got != tt.want {
				t.Errorf("Test(%s) =\n  %s\nwant\n  %s", tt.v.ID, got, tt.want)
			}
		})
	}
}

// TestRowPath reads fixtures through the grading run's row decoding: a
// state written as JSON text in a string, an initial state from a tasks
// table, and a field map are seen by the verifier as a run would show them.
func TestRowPath(t *testing.T) {
	dir := t.TempDir()
	tasks := filepath.Join(dir, "tasks.jsonl")
	if err := os.WriteFile(tasks, []byte(`{"task_id": "T", "initial_state": {"items": [1, 2]}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	honest := &verifiers.Verifier{ID: "V", Tasks: []string{"T"}, Grade: func(r *verifiers.Rollout, c *verifiers.Checks) error {
		n := 0
		for e := r.Final.Get("items").First(); e.Exists(); e = e.Next() {
			n++
		}
		c.Require("one item added", r.Initial.Exists() && n == 3, fmt.Sprintf("%d items", n))
		return nil
	}}
	fixtures := func(files fstest.MapFS) []Fixture {
		fx, err := LoadFixtures(files, "V")
		if err != nil {
			t.Fatal(err)
		}
		return fx
	}
	tests := []struct {
		name      string
		fields    columnar.FieldNames
		tasksFile string
		files     fstest.MapFS
		want      string
	}{
		{"states as JSON strings", columnar.FieldNames{}, "", fstest.MapFS{
			"V/pass/strings.json": {Data: []byte(`{"task_id": "T", "initial_state": "{\"items\": [1, 2]}", "final_state": "{\"items\": [1, 2, 3]}"}`)},
			"V/fail/strings.json": {Data: []byte(`{"task_id": "T", "initial_state": "{\"items\": [1, 2]}", "final_state": "{\"items\": [1]}"}`)},
		}, "pass/strings.json=passed; fail/strings.json=failed; no-op T=failed"},
		{"a state that is bad JSON text", columnar.FieldNames{}, "", fstest.MapFS{
			"V/pass/bad.json": {Data: []byte(`{"task_id": "T", "initial_state": "{", "final_state": {"items": [1, 2, 3]}}`)},
		}, "pass/bad.json= FAIL; no-op T=failed"},
		{"initial state from the tasks table", columnar.FieldNames{}, tasks, fstest.MapFS{
			"V/pass/tasks.json": {Data: []byte(`{"task_id": "T", "final_state": {"items": [1, 2, 3]}}`)},
		}, "pass/tasks.json=passed; no-op T=failed"},
		{"without the tasks table", columnar.FieldNames{}, "", fstest.MapFS{
			"V/pass/tasks.json": {Data: []byte(`{"task_id": "T", "final_state": {"items": [1, 2, 3]}}`)},
		}, "pass/tasks.json=failed FAIL; no-op T=failed"},
		{"a field map", columnar.FieldNames{Final: "world_after"}, "", fstest.MapFS{
			"V/pass/map.json": {Data: []byte(`{"task_id": "T", "initial_state": {"items": [1, 2]}, "world_after": {"items": [1, 2, 3]}}`)},
		}, "pass/map.json=passed; no-op T=failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := pipeline.NewRowDecoder(tt.fields, tt.tasksFile)
			if err != nil {
				t.Fatal(err)
			}
			got := summarizeOutcomes(Test(honest, fixtures(tt.files), d.Decode))
			if got != tt.want {
				t.Errorf("Test =\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}

// summarizeOutcomes writes outcomes as "case=got", with FAIL and the
// vacuous checks.
func summarizeOutcomes(os []Outcome) string {
	var parts []string
	for _, o := range os {
		s := o.Case + "=" + o.Got
		if !o.OK {
			s += " FAIL"
		}
		if len(o.Vacuous) > 0 {
			s += " vacuous:" + strings.Join(o.Vacuous, ",")
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func TestNoOpTasks(t *testing.T) {
	v := &verifiers.Verifier{ID: "V", Tasks: []string{"airline/*", "retail/3", "shop/*", verifiers.AllTasks}}
	got := noOpTasks(v, []string{"retail/3", "airline/2", "airline/1", "airline/2", "other"})
	want := []string{"airline/2", "airline/1", "retail/3", "shop/*", "other"}
	if !slices.Equal(got, want) {
		t.Errorf("noOpTasks = %q, want %q", got, want)
	}
}
