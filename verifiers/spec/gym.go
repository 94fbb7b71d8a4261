package spec

import (
	"go.yaml.in/yaml/v3"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// Gym is the checks array of one request to the Scale gym verifier API
// (POST /verifier), compiled as the checks of a spec verifier are: the same
// fields, the same problems at load, and the same grading, so that a check
// scores the same in a request and in a spec file.
type Gym struct {
	checks []*check
}

// GymResult is one check's result with what the gym API reports beside
// the check row: each assert's own result and the check's rows.
type GymResult struct {
	// Check is the check as a spec verifier grades it.
	Check verifiers.Check
	// Type is the check's type (state, log, sequential, manual, rubric,
	// expr).
	Type string
	// Asserts are the results of the check's asserts, in order; none for
	// rubric and expr checks, and when the rows could not be computed.
	Asserts []GymAssert
	// Rows is the JSON text of the check's _result rows, at most
	// MaxGymRows of them, for a check that did not pass (the gym API's
	// all_results); "" when it passed, for rubric and expr checks, and
	// on error.
	Rows string
}

// GymAssert is one assert's result.
type GymAssert struct {
	Comparator string
	Status     verifiers.Status
	// Actual and Expected are the compared values as JSON text; for
	// object_contains the actual value is the boolean, and Matching holds
	// the matching rows (at most 20) as a JSON list.
	Actual, Expected, Matching string
	// Detail says what was compared, and why an assert ended in error.
	Detail string
}

// MaxGymRows bounds the rows GymResult.Rows holds.
const MaxGymRows = 100

var checkTypeNames = func() map[checkKind]string {
	m := map[checkKind]string{}
	for name, k := range checkKinds {
		m[k] = name
	}
	return m
}()

// ParseGym compiles the checks array of a gym verifier request (JSON, or
// YAML); name names the text in problems ("request"). An invalid array
// returns nil and a Problems worded as `gavel spec check` words them.
func ParseGym(name string, data []byte) (*Gym, error) {
	l := &loader{file: name, data: data}
	root, err := parseYAML(data)
	if err != nil {
		line, col, msg := syntaxError(data, err)
		return nil, Problems{{File: name, Line: line, Column: col, Msg: "not valid YAML or JSON: " + msg}}
	}
	if root == nil || root.Kind != yaml.SequenceNode || len(root.Content) == 0 {
		what := "nothing"
		if root != nil {
			what = kindName(root)
		}
		return nil, Problems{{File: name, Line: 1, Column: 1, Msg: "checks must be a non-empty list, not " + what,
			Hint: `"checks": [{"id": ..., "type": "state", "table": ..., "asserts": [...]}]`}}
	}
	const what = "the request"
	g := &Gym{checks: l.checkList(root, what)}
	if len(l.problems) > 0 {
		return nil, l.problems
	}
	return g, nil
}

// Grade grades every check on r and returns their results in order. The
// checks are those a spec verifier with these checks adds, so
// verifiers.Score of them is the rollout's verdict.
func (g *Gym) Grade(r *verifiers.Rollout) []GymResult {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	out := make([]GymResult, len(g.checks))
	for i, c := range g.checks {
		res := &out[i]
		res.Check = c.grade(r, s)
		res.Type = checkTypeNames[c.kind]
		if c.kind == kindRubric || c.kind == kindExpr {
			continue
		}
		rows, err := c.rows(r, s)
		if err != nil {
			continue
		}
		if res.Check.Status != verifiers.Pass {
			shown := rows
			if len(shown) > MaxGymRows {
				shown = shown[:MaxGymRows]
			}
			res.Rows = listJSON(shown)
		}
		for _, a := range c.asserts {
			res.Asserts = append(res.Asserts, a.gym(r, rows, s))
		}
	}
	return out
}

// gym evaluates one assert for the gym API's report.
func (a *assert) gym(r *verifiers.Rollout, rows []jsonview.Value, s *scratch) GymAssert {
	out := GymAssert{Comparator: a.cmpName}
	// The matching rows live in the scratch until the next computation:
	// they are written out before eval computes again.
	act, err := a.compute(rows, s)
	if err == nil && act.note != "" {
		out.Actual = compactJSON(act.value().Raw())
		if len(act.list) > 0 {
			out.Matching = listJSON(act.list)
		}
	}
	st, detail, actual, expected := a.eval(r, rows, s)
	out.Status, out.Detail, out.Expected = st, detail, expected
	if out.Actual == "" {
		out.Actual = actual
	}
	return out
}
