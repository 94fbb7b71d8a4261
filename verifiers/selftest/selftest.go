// Package selftest runs verifiers on their fixtures: rollouts kept beside a
// verifier that it must pass, fail, or end in error on, and an automatic
// no-op rollout per task (final state equal to the initial state, empty
// output and log) that it must not pass.
//
// Fixtures of a verifier with id ID live under a fixtures root as
//
//	ID/pass/*.json    rollouts whose verdict must be passed
//	ID/fail/*.json    rollouts whose verdict must be failed
//	ID/error/*.json   rollouts whose verdict must be error
//
// Each file is one rollout as a JSON object with the input fields of a
// JSON Lines row (task_id, initial_state, final_state, output, log,
// optionally rollout_id and metadata), decoded as grading decodes such a
// row (see Decode): a state may be a JSON value or JSON text in a string,
// and a tasks table may give the initial state. A fail fixture may add
// "expect_failed": a list of check ids that must have status fail, so that
// it fails for the reason it was written for. The built-in verifiers'
// fixtures are in their packages' testdata/fixtures; a spec file's are in the
// fixtures directory beside it.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package selftest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// Expected verdicts of fixtures, named as their directories.
const (
	ExpectPass  = "pass"
	ExpectFail  = "fail"
	ExpectError = "error"
)

// Fixture is one fixture file.
type Fixture struct {
	// Name is the file's path under the verifier's directory
	// ("pass/moved.json").
	Name string
	// Expect is ExpectPass, ExpectFail or ExpectError.
	Expect string
	// Data is the file's JSON text.
	Data []byte
}

// LoadFixtures reads the fixtures of verifier id from fsys, a fixtures
// root. A verifier without a directory has no fixtures (nil, no error).
func LoadFixtures(fsys fs.FS, id string) ([]Fixture, error) {
	var out []Fixture
	for _, want := range []string{ExpectPass, ExpectFail, ExpectError} {
		dir := path.Join(id, want)
		entries, err := fs.ReadDir(fsys, dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read fixtures %s: %w", dir, err)
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			data, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
			if err != nil {
				return nil, fmt.Errorf("read fixture: %w", err)
			}
			out = append(out, Fixture{Name: want + "/" + e.Name(), Expect: want, Data: data})
		}
	}
	return out, nil
}

// HasFixtures reports whether fsys holds a fixtures directory for id.
func HasFixtures(fsys fs.FS, id string) bool {
	st, err := fs.Stat(fsys, id)
	return err == nil && st.IsDir()
}

// Case kinds.
const (
	KindFixture = "fixture"
	KindNoOp    = "no-op"
)

// Outcome is the result of one case: a fixture, or the no-op rollout of
// one task.
type Outcome struct {
	Verifier string `json:"verifier"`
	// Case is the fixture's name, or "no-op TASK".
	Case string `json:"case"`
	Kind string `json:"kind"`
	// Want is the expected verdict: passed, failed, error, or "not
	// passed" for a no-op.
	Want string `json:"want"`
	// Got is the verdict's status.
	Got string `json:"got"`
	// OK is false when the case failed.
	OK bool `json:"ok"`
	// Problem says why the case failed, or notes something about it.
	Problem string `json:"problem,omitempty"`
	// Vacuous lists the required checks that passed on a no-op rollout:
	// they pass whatever the agent does.
	Vacuous []string `json:"vacuous,omitempty"`
}

// Decode decodes a fixture's JSON text, named name, into the rollout a
// verifier sees; the rollout must stay valid after later calls. `gavel
// verifier test` passes the grading run's row decoding
// (pipeline.RowDecoder), so that a fixture is read as the same row in a
// run would be: states held as JSON text in strings, a field map, the
// tasks table.
type Decode func(name string, text []byte) (*verifiers.Rollout, error)

// expectFailed returns the check ids listed in the fixture's
// "expect_failed" member.
func expectFailed(r *verifiers.Rollout) ([]string, error) {
	ef := r.Meta.Get("expect_failed")
	if !ef.Exists() {
		return nil, nil
	}
	if ef.Kind() != jsonview.Array {
		return nil, errors.New("expect_failed is not a list of check ids")
	}
	var ids []string
	for e := ef.First(); e.Exists(); e = e.Next() {
		s, ok := e.Str()
		if !ok {
			return nil, errors.New("expect_failed is not a list of check ids")
		}
		ids = append(ids, string(s))
	}
	return ids, nil
}

// grade runs v on r through verifiers.Run, as the pipeline does, and
// returns a copy of the checks and the verdict.
func grade(v *verifiers.Verifier, r *verifiers.Rollout) (checks []verifiers.Check, verdict verifiers.Verdict) {
	var c verifiers.Checks
	verdict = verifiers.Run(v, r, &c)
	return slices.Clone(c.List()), verdict
}

// encode returns the bytes a grading writes of checks and verdict: each
// check's fields and the verdict, as JSON.
func encode(checks []verifiers.Check, verdict verifiers.Verdict) []byte {
	type row struct {
		ID, Label, Status, Detail, Actual, Expected string
		Required, Flag, Scored                      bool
		Score                                       float64
		Rubric                                      *verifiers.Rubric
	}
	rows := make([]row, len(checks))
	for i := range checks {
		c := &checks[i]
		rows[i] = row{ID: c.ID, Label: c.Label, Status: c.StatusText(), Detail: c.Detail, Actual: c.Actual, Expected: c.Expected,
			Required: c.Required, Flag: c.Flag, Scored: c.Scored, Score: c.Score, Rubric: c.Rubric}
	}
	b, err := json.Marshal(struct {
		Checks  []row
		Verdict verifiers.Verdict
	}{rows, verdict})
	if err != nil {
		return []byte("encode: " + err.Error())
	}
	return b
}

// firstDiff shows where a and b first differ, with a little context.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(i-20, 0)
	return fmt.Sprintf("at byte %d, %q against %q", i, a[from:min(i+40, len(a))], b[from:min(i+40, len(b))])
}

var wantVerdict = map[string]string{ExpectPass: verifiers.StatusPassed, ExpectFail: verifiers.StatusFailed, ExpectError: verifiers.StatusError}

// Test runs v on each fixture, read with decode, twice (a verifier must be
// deterministic), and on a no-op rollout for each task it binds (noOpTasks). The no-op's initial state
// is that of the first fixture of the task (pass fixtures first); a task
// without fixtures gets a missing state. The no-op must not pass; a
// required check that passes on it is listed as vacuous.
func Test(v *verifiers.Verifier, fixtures []Fixture, decode Decode) []Outcome {
	var out []Outcome
	initial := map[string]jsonview.Value{}
	var seen []string // the fixtures' tasks, in order
	for _, f := range fixtures {
		o := Outcome{Verifier: v.ID, Case: f.Name, Kind: KindFixture, Want: wantVerdict[f.Expect]}
		r, err := decode(f.Name, f.Data)
		var expect []string
		if err == nil {
			expect, err = expectFailed(r)
		}
		if err != nil {
			o.Problem = "bad fixture: " + err.Error()
			out = append(out, o)
			continue
		}
		if !v.Binds(r.TaskID) {
			o.Problem = fmt.Sprintf("fixture task %s is not bound by %s (it binds %s)", r.TaskID, v.ID, strings.Join(v.Tasks, ", "))
			out = append(out, o)
			continue
		}
		if _, ok := initial[r.TaskID]; !ok && r.Initial.Exists() {
			initial[r.TaskID] = r.Initial
		}
		if !slices.Contains(seen, r.TaskID) {
			seen = append(seen, r.TaskID)
		}
		checks, verdict := grade(v, r)
		// Again in a worker of its own, on the fixture decoded again, as
		// another worker of a run would grade it: the bytes written must
		// not differ.
		var again []byte
		done := make(chan struct{})
		go func() {
			defer close(done)
			r2, err := decode(f.Name, f.Data)
			if err != nil {
				again = []byte("decode: " + err.Error())
				return
			}
			c2, v2 := grade(v, r2)
			again = encode(c2, v2)
		}()
		<-done
		first := encode(checks, verdict)
		o.Got = verdict.Outcome.String()
		switch {
		case o.Got != o.Want:
			o.Problem = describe(checks, verdict)
		case !bytes.Equal(first, again):
			o.Problem = "not deterministic: two gradings of the same rollout, in separate workers, differ: " + firstDiff(first, again)
		default:
			o.OK = true
			for _, id := range expect {
				i := slices.IndexFunc(checks, func(c verifiers.Check) bool { return c.ID == id })
				if i < 0 {
					o.OK, o.Problem = false, fmt.Sprintf("expect_failed names check %q, which the verifier did not return", id)
					break
				}
				if checks[i].Status != verifiers.Fail {
					o.OK, o.Problem = false, fmt.Sprintf("check %q is %s, want fail (%s)", id, checks[i].Status, checks[i].Detail)
					break
				}
			}
		}
		out = append(out, o)
	}
	var emptyLog, emptyMeta jsonview.Doc
	logV, _ := emptyLog.Parse([]byte("[]"))
	metaV, _ := emptyMeta.Parse([]byte("{}"))
	for _, task := range noOpTasks(v, seen) {
		o := Outcome{Verifier: v.ID, Case: "no-op " + task, Kind: KindNoOp, Want: "not passed"}
		init, fromFixture := initial[task]
		r := verifiers.Rollout{ID: "no-op " + task, TaskID: task, Initial: init, Final: init, Log: logV, Meta: metaV}
		checks, verdict := grade(v, &r)
		o.Got = verdict.Outcome.String()
		for _, c := range checks {
			if c.Required && c.Status == verifiers.Pass {
				o.Vacuous = append(o.Vacuous, c.ID)
			}
		}
		switch {
		case verdict.Outcome == verifiers.Passed:
			o.Problem = "a rollout that does nothing passes"
		case verdict.Outcome == verifiers.Errored && fromFixture:
			o.Problem = "could not judge a rollout that does nothing: " + firstLine(verdict.Error)
		case verdict.Outcome == verifiers.Errored:
			o.OK = true
			o.Problem = "no fixture gives " + task + " an initial state; on a missing state: " + firstLine(verdict.Error)
		default:
			o.OK = true
			if !fromFixture {
				o.Problem = "no fixture gives " + task + " an initial state; the no-op used a missing state"
			}
		}
		out = append(out, o)
	}
	return out
}

// noOpTasks returns the tasks a no-op rollout is graded for: each task id
// v binds as written, and for a prefix or all, the fixtures' tasks it
// matches (the pattern itself when none does).
func noOpTasks(v *verifiers.Verifier, fixtureTasks []string) []string {
	var out []string
	for _, p := range v.Tasks {
		if !strings.HasSuffix(p, "*") {
			out = append(out, p)
			continue
		}
		n := len(out)
		for _, t := range fixtureTasks {
			if verifiers.MatchTask(p, t) && !slices.Contains(v.Tasks, t) && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
		if len(out) == n {
			out = append(out, p)
		}
	}
	return out
}

// describe says why a fixture got the verdict it got: the error, or the
// required checks that failed, or that every required check passed.
func describe(checks []verifiers.Check, v verifiers.Verdict) string {
	if v.Outcome == verifiers.Errored {
		return firstLine(v.Error)
	}
	var failed []string
	for _, c := range checks {
		if c.Required && c.Status != verifiers.Pass {
			failed = append(failed, fmt.Sprintf("%q %s (%s)", c.ID, c.Status, c.Detail))
		}
	}
	if len(failed) == 0 {
		return "every required check passed"
	}
	return strings.Join(failed, "; ")
}

// firstLine returns s up to its first newline: a panic's error carries the
// stack after it.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
