package spec

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// maxMatches is how many matching rows object_contains reports in actual.
const maxMatches = 20

// scratch is the reusable memory of one Grade call: row lists, number
// documents and the CEL arena. Grade calls run concurrently, each with its
// own scratch from a pool, so the compiled checks stay read-only.
type scratch struct {
	rows, sel, matches []jsonview.Value
	buf, numBuf        []byte
	actualDoc, exprDoc jsonview.Doc
	changeDoc          jsonview.Doc // an unchanged check's change record
	cel                celScratch
	turnIndex          int // the index of s.cel.turn, when it exists
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// newGrader returns the Grade function of a verifier with these checks
// (flags among them) and turn checks: the checks in order, each credited
// to the turn its turn: names, then, turn by turn, the turn checks whose
// when: holds on the turn (Checks.AddTurn). The let values are computed
// once for the rollout, its turns included.
func newGrader(checks, turnChecks []*check, lets *letSet) func(*verifiers.Rollout, *verifiers.Checks) error {
	return func(r *verifiers.Rollout, out *verifiers.Checks) error {
		s := scratchPool.Get().(*scratch)
		defer scratchPool.Put(s)
		if lets != nil {
			s.cel.lets = lets.values(r, s)
			defer func() { s.cel.lets = nil }()
		}
		for _, c := range checks {
			ch := c.grade(r, s)
			ch.Flag = c.flag
			if c.turnOf != nil {
				c.credit(r, s, &ch)
			}
			out.Add(ch)
		}
		if len(turnChecks) == 0 {
			return nil
		}
		defer func() { s.cel.turn = jsonview.Value{} }()
		i := 0
		for t := r.Turns.First(); t.Exists(); t = t.Next() {
			s.cel.turn, s.turnIndex = t, i
			gradeTurn(turnChecks, r, s, i, out)
			i++
		}
		return nil
	}
}

// gradeTurn adds the checks of turn i, s.cel.turn: the turn checks whose
// when: holds on it.
func gradeTurn(turnChecks []*check, r *verifiers.Rollout, s *scratch, i int, out *verifiers.Checks) {
	for _, c := range turnChecks {
		if c.when != nil {
			applies, err := c.when.evalBool(r, s)
			if err != nil {
				out.AddTurn(i, verifiers.Check{ID: c.id, Label: c.label, Required: c.required, Status: verifiers.Error, Detail: "when: " + err.Error()})
				continue
			}
			if !applies {
				continue
			}
		}
		out.AddTurn(i, c.grade(r, s))
	}
}

// credit credits the graded check ch to the turn its turn: expression
// names: an integer index, or null for none. Any other value, or an
// evaluation error, makes the check an error.
func (c *check) credit(r *verifiers.Rollout, s *scratch, ch *verifiers.Check) {
	err := c.turnOf.eval(r, s, func(v ref.Val) error {
		switch x := v.(type) {
		case types.Null:
			return nil
		case types.Int:
			ch.Turn, ch.OnTurn = int(x), true
			return nil
		case types.Double:
			if f := float64(x); f == math.Trunc(f) && math.Abs(f) < 1<<31 {
				ch.Turn, ch.OnTurn = int(f), true
				return nil
			}
		}
		return fmt.Errorf("gave %s, not a turn's index or null", celText(v))
	})
	if err != nil {
		ch.Status, ch.Detail = verifiers.Error, "turn: "+err.Error()
		ch.Turn, ch.OnTurn = 0, false
	}
}

// evalBool evaluates a condition.
func (p *program) evalBool(r *verifiers.Rollout, s *scratch) (bool, error) {
	var ok bool
	err := p.eval(r, s, func(v ref.Val) error {
		b, isBool := v.(types.Bool)
		if !isBool {
			return fmt.Errorf("evaluated to %s, not a bool", v.Type().TypeName())
		}
		ok = bool(b)
		return nil
	})
	return ok, err
}

// celText returns a CEL value as JSON text, or its type's name.
func celText(v ref.Val) string {
	b, err := appendCEL(nil, v)
	if err != nil {
		return v.Type().TypeName()
	}
	return string(b)
}

// table returns the value at the dotted path fields of state: an array or
// object whose elements or member values are the rows, or Missing for no
// rows. A path through a scalar, or a scalar table, is an error.
func table(state jsonview.Value, fields []string, stateName string) (jsonview.Value, error) {
	v := state
	for i, f := range fields {
		switch v.Kind() {
		case jsonview.Missing, jsonview.Null:
			return jsonview.Value{}, nil
		case jsonview.Object:
			v = v.Get(f)
		default:
			return jsonview.Value{}, fmt.Errorf("%s state: %s is %s, not an object", stateName, joinFields(fields[:i], "the state"), v.Kind())
		}
	}
	switch v.Kind() {
	case jsonview.Missing, jsonview.Null, jsonview.Array, jsonview.Object:
		return v, nil
	}
	return jsonview.Value{}, fmt.Errorf("%s state: table %s is %s, not a list or object", stateName, strings.Join(fields, "."), v.Kind())
}

func joinFields(fields []string, root string) string {
	if len(fields) == 0 {
		return root
	}
	return strings.Join(fields, ".")
}

// appendRows appends the rows of container t (elements or member values).
func appendRows(dst []jsonview.Value, t jsonview.Value) []jsonview.Value {
	for r := t.First(); r.Exists(); r = r.Next() {
		dst = append(dst, r)
	}
	return dst
}

// rows computes the check's _result.
func (c *check) rows(r *verifiers.Rollout, s *scratch) ([]jsonview.Value, error) {
	rows := s.rows[:0]
	defer func() { s.rows = rows[:0] }()
	switch c.kind {
	case kindState:
		state, name := r.Final, "final"
		if c.initial {
			state, name = r.Initial, "initial"
		}
		t, err := table(state, c.table, name)
		if err != nil {
			return nil, err
		}
		rows = appendRows(rows, t)
	case kindLog, kindSequential:
		switch r.Log.Kind() {
		case jsonview.Missing, jsonview.Null, jsonview.Array:
		default:
			return nil, fmt.Errorf("the log is %s, not a list", r.Log.Kind())
		}
		rows = appendRows(rows, r.Log)
	case kindManual:
		var err error
		rows, err = c.manual.Call(r, c.args, rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.manual.Name, err)
		}
	}
	return rows, nil
}

// grade runs one check on one rollout.
func (c *check) grade(r *verifiers.Rollout, s *scratch) verifiers.Check {
	out := verifiers.Check{ID: c.id, Label: c.label, Required: c.required}
	switch c.kind {
	case kindRubric:
		out.Rubric, out.Status, out.Detail = c.rubricOf(r, s)
		return out
	case kindExpr:
		return c.gradeExpr(r, s, out)
	case kindUnchanged:
		return c.gradeUnchanged(r, s, out)
	case kindMath:
		return c.gradeMath(r, s, out)
	}
	rows, err := c.rows(r, s)
	if err != nil {
		out.Status, out.Detail = verifiers.Error, err.Error()
		return out
	}
	var details []string
	decided := false
	if c.kind == kindSequential {
		matched := s.matches[:0]
		done := matchSteps(rows, c.steps, &matched)
		s.matches = matched[:0]
		out.Actual, out.Expected = listJSON(matched), c.stepsText
		d := strconv.Itoa(done) + " of " + strconv.Itoa(len(c.steps)) + " steps in order"
		if done == len(c.steps) {
			out.Status = verifiers.Pass
		} else {
			out.Status, decided = verifiers.Fail, true
		}
		details = append(details, d)
	}
	for i, a := range c.asserts {
		st, detail, actual, expected := a.eval(r, rows, s)
		details = append(details, detail)
		if decided {
			continue
		}
		if st != verifiers.Pass || (i == 0 && c.kind != kindSequential) {
			out.Status, out.Actual, out.Expected = st, actual, expected
		}
		if st != verifiers.Pass {
			decided = true
		}
	}
	out.Detail = strings.Join(details, "; ")
	return out
}

// rubricOf returns what the judge is asked about a rubric check, with its
// strings copied out of the rollout; a query or context expression that
// fails makes the check an error.
func (c *check) rubricOf(r *verifiers.Rollout, s *scratch) (*verifiers.Rubric, verifiers.Status, string) {
	rb := &verifiers.Rubric{Text: c.rubric, Query: c.query}
	if c.queryExpr != nil {
		err := c.queryExpr.eval(r, s, func(v ref.Val) error {
			if str, ok := v.(types.String); ok {
				rb.Query = strings.Clone(string(str))
				return nil
			}
			b, err := appendCEL(nil, v)
			rb.Query = string(b)
			return err
		})
		if err != nil {
			return nil, verifiers.Error, "query: " + err.Error()
		}
	}
	for _, ci := range c.context {
		_, text, err := ci.prog.evalJSON(r, s)
		if err != nil {
			return nil, verifiers.Error, "context " + ci.name + ": " + err.Error()
		}
		rb.Context = append(rb.Context, verifiers.RubricContext{Name: ci.name, Value: text})
	}
	if s.cel.turn.Exists() {
		// A turn check: the judge sees the conversation up to the turn,
		// then the turn.
		b := append(s.buf[:0], '[')
		i := 0
		for t := r.Turns.First(); t.Exists() && i < s.turnIndex; t = t.Next() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCompact(b, t.Raw())
			i++
		}
		b = append(b, ']')
		rb.Context = append(rb.Context, verifiers.RubricContext{Name: TurnsBeforeContext, Value: string(b)},
			verifiers.RubricContext{Name: TurnContext, Value: compactJSON(s.cel.turn.Raw())})
		s.buf = b[:0]
	}
	return rb, verifiers.Pending, c.rubric
}

// The names of the context a judge sees of a turn check's turn: the
// agent's turns before it, then the turn.
const (
	TurnsBeforeContext = "agent turns before this turn"
	TurnContext        = "the turn to judge"
)

// matchSteps matches the steps in order against the events, each event
// matching at most one step, and returns how many steps matched; the
// matching events are appended to matched.
func matchSteps(events, steps []jsonview.Value, matched *[]jsonview.Value) int {
	k := 0
	for _, e := range events {
		if k == len(steps) {
			break
		}
		if contains(e, steps[k]) {
			*matched = append(*matched, e)
			k++
		}
	}
	return k
}

// contains reports whether v contains pattern (object_contains): every key
// of an object pattern is present in v with a value that contains the
// pattern's value; anything else (arrays included) must be equal.
func contains(v, pattern jsonview.Value) bool {
	if pattern.Kind() != jsonview.Object {
		return jsonview.Equal(v, pattern)
	}
	if v.Kind() != jsonview.Object {
		return false
	}
	for p := pattern.First(); p.Exists(); p = p.Next() {
		x := v.GetBytes(p.Key())
		if !x.Exists() || !contains(x, p) {
			return false
		}
	}
	return true
}

// actual is the compared value of an assert: one value (Missing reads as
// null) or a list of values.
type actual struct {
	v      jsonview.Value
	list   []jsonview.Value
	isList bool
	note   string // for details: "2 matches"
}

func (a actual) value() jsonview.Value {
	if !a.v.Exists() {
		return nullValue
	}
	return a.v
}

// eval runs one assert over the rows. It returns the status, the detail,
// and the actual and expected values as JSON text.
func (a *assert) eval(r *verifiers.Rollout, rows []jsonview.Value, s *scratch) (st verifiers.Status, detail, actualText, expectedText string) {
	act, err := a.compute(rows, s)
	if err != nil {
		return verifiers.Error, a.call + ": " + err.Error(), "", ""
	}
	actualText = act.json()
	want := a.value
	expectedText = a.valueText
	re := a.re
	if a.valueExpr != nil {
		v, text, err := a.valueExpr.evalJSON(r, s)
		if err != nil {
			return verifiers.Error, a.call + ": value: " + err.Error(), actualText, ""
		}
		want, expectedText = v, text
		if a.cmp == cmpRegex {
			p, ok := want.Str()
			if !ok {
				return verifiers.Error, a.call + ": regex needs a string pattern, got " + want.Kind().String(), actualText, expectedText
			}
			if re, err = regexp.Compile(string(p)); err != nil {
				return verifiers.Error, a.call + ": bad regex: " + err.Error(), actualText, expectedText
			}
		}
	}
	ok, err := a.compare(act, want, re)
	shown := short(actualText)
	if act.note != "" { // object_contains: its value, then how many rows matched
		shown = compactJSON(act.value().Raw()) + " (" + act.note + ")"
	}
	detail = a.call + " = " + shown + ", " + a.cmpName + " " + short(expectedText)
	if err != nil {
		return verifiers.Error, detail + ": " + err.Error(), actualText, expectedText
	}
	if ok {
		return verifiers.Pass, detail, actualText, expectedText
	}
	return verifiers.Fail, detail, actualText, expectedText
}

// short shortens a JSON text for a detail.
func short(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max-3] + "..."
}

// compute evaluates the assert's function over the rows.
func (a *assert) compute(rows []jsonview.Value, s *scratch) (actual, error) {
	if a.fn == fnNone {
		return actual{list: rows, isList: true}, nil
	}
	sel, whole := a.path.selectValues(s.sel[:0], rows)
	if !whole {
		s.sel = sel[:0]
	}
	switch a.fn {
	case fnObjectContains:
		if whole {
			ok := a.pattern.Kind() == jsonview.Array && equalList(rows, a.pattern)
			return actual{v: boolValue(ok)}, nil
		}
		matches := s.matches[:0]
		n := 0
		for _, v := range sel {
			if contains(v, a.pattern) {
				if n < maxMatches {
					matches = append(matches, v)
				}
				n++
			}
		}
		s.matches = matches[:0]
		note := strconv.Itoa(n) + " matching"
		return actual{v: boolValue(n > 0), list: matches, note: note}, nil
	case fnCount:
		return s.number(float64(len(sel))), nil
	case fnSum:
		sum := 0.0
		for _, v := range sel {
			if f, ok := v.Float(); ok {
				sum += f
			}
		}
		if math.IsInf(sum, 0) || math.IsNaN(sum) {
			return actual{}, fmt.Errorf("sum is out of range")
		}
		return s.number(sum), nil
	case fnMin, fnMax:
		var best jsonview.Value
		for _, v := range sel {
			if v.Kind() != jsonview.Number {
				continue
			}
			if !best.Exists() {
				best = v
				continue
			}
			c, _ := jsonview.CompareNumbers(v, best)
			if (a.fn == fnMin && c < 0) || (a.fn == fnMax && c > 0) {
				best = v
			}
		}
		return actual{v: best}, nil
	case fnExists:
		for _, v := range sel {
			if !v.IsNull() {
				return actual{v: trueValue}, nil
			}
		}
		return actual{v: falseValue}, nil
	case fnGet:
		if whole || a.path.sel == selEach {
			return actual{list: sel, isList: true}, nil
		}
		if len(sel) == 0 {
			return actual{v: nullValue}, nil
		}
		return actual{v: sel[0]}, nil
	}
	return actual{}, fmt.Errorf("unknown function")
}

// number returns a computed number as a value of the scratch's number
// document.
func (s *scratch) number(f float64) actual {
	if math.Abs(f) < 1e21 {
		s.numBuf = strconv.AppendFloat(s.numBuf[:0], f, 'f', -1, 64)
	} else {
		s.numBuf = strconv.AppendFloat(s.numBuf[:0], f, 'g', -1, 64)
	}
	v, err := s.actualDoc.Parse(s.numBuf)
	if err != nil {
		panic("spec: formatted number is not JSON: " + string(s.numBuf))
	}
	return actual{v: v}
}

// json returns the actual value as JSON text: for object_contains the
// matching rows, otherwise the value.
func (a actual) json() string {
	if a.isList || a.note != "" {
		return listJSON(a.list)
	}
	return compactJSON(a.value().Raw())
}

func listJSON(list []jsonview.Value) string {
	n := len(list) + 2
	for _, v := range list {
		n += len(v.Raw())
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, v := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCompact(b, v.Raw())
	}
	b = append(b, ']')
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again
}

func compactJSON(raw []byte) string {
	b := appendCompact(make([]byte, 0, len(raw)), raw)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// equalList compares a list of values with an array value.
func equalList(list []jsonview.Value, arr jsonview.Value) bool {
	if arr.Kind() != jsonview.Array || arr.Len() != len(list) {
		return false
	}
	i := 0
	for e := arr.First(); e.Exists(); e = e.Next() {
		if !jsonview.Equal(list[i], e) {
			return false
		}
		i++
	}
	return true
}

func (a actual) equal(want jsonview.Value) bool {
	if a.isList {
		return equalList(a.list, want)
	}
	return jsonview.Equal(a.value(), want)
}

// compare applies the comparator (eq, neq, gt, ..., numbers by value). An
// error is a type mismatch that the data caused: the check's status is
// then error.
func (a *assert) compare(act actual, want jsonview.Value, re *regexp.Regexp) (bool, error) {
	switch a.cmp {
	case cmpEq, cmpDeepEqual:
		return act.equal(want), nil
	case cmpNeq:
		return !act.equal(want), nil
	case cmpGt, cmpGte, cmpLt, cmpLte:
		if act.isList {
			return false, fmt.Errorf("%s compares numbers or strings, not a list", a.cmpName)
		}
		v := act.value()
		var c int
		switch {
		case v.Kind() == jsonview.Number && want.Kind() == jsonview.Number:
			c, _ = jsonview.CompareNumbers(v, want)
		case v.Kind() == jsonview.String && want.Kind() == jsonview.String:
			x, _ := v.Str()
			y, _ := want.Str()
			c = bytes.Compare(x, y)
		default:
			return false, fmt.Errorf("%s compares two numbers or two strings, not %s and %s", a.cmpName, v.Kind(), want.Kind())
		}
		switch a.cmp {
		case cmpGt:
			return c > 0, nil
		case cmpGte:
			return c >= 0, nil
		case cmpLt:
			return c < 0, nil
		}
		return c <= 0, nil
	case cmpIn:
		if want.Kind() != jsonview.Array {
			return false, fmt.Errorf("in needs a list value, not %s", want.Kind())
		}
		for e := want.First(); e.Exists(); e = e.Next() {
			if act.equal(e) {
				return true, nil
			}
		}
		return false, nil
	case cmpContains:
		if act.isList {
			for _, e := range act.list {
				if jsonview.Equal(e, want) {
					return true, nil
				}
			}
			return false, nil
		}
		v := act.value()
		switch v.Kind() {
		case jsonview.Null:
			return false, nil
		case jsonview.String:
			x, _ := v.Str()
			y, ok := want.Str()
			if !ok {
				return false, fmt.Errorf("contains on a string needs a string value, not %s", want.Kind())
			}
			return bytes.Contains(x, y), nil
		case jsonview.Array:
			for e := v.First(); e.Exists(); e = e.Next() {
				if jsonview.Equal(e, want) {
					return true, nil
				}
			}
			return false, nil
		}
		return false, fmt.Errorf("contains needs a string or a list, not %s", v.Kind())
	case cmpRegex:
		if act.isList {
			return false, fmt.Errorf("regex needs a string, not a list")
		}
		v := act.value()
		switch v.Kind() {
		case jsonview.Null:
			return false, nil
		case jsonview.String:
			x, _ := v.Str()
			return re.Match(x), nil
		}
		return false, fmt.Errorf("regex needs a string, not %s", v.Kind())
	}
	return false, fmt.Errorf("unknown comparator")
}
