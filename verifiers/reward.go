package verifiers

// Reward formulas: how a verifier's reward is computed from its checks.
// The formula decides only the reward column; the status rules (error when
// a check is in error or no check is required, else failed when a
// required check failed, else pending when a check is pending, else
// passed) and the counts never depend on it. A formula is evaluated only
// when the verdict has a reward at all: no check pending and no error. A
// formula that cannot give a reward in [0, 1] makes the rollout's status
// error (kind verifier): an error is never a reward.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/ext"
)

// Formula kinds, as written in specs, reward files and manifest.json.
const (
	FormulaFraction = "fraction"
	FormulaAll      = "all"
	FormulaWeighted = "weighted"
	FormulaExpr     = "expr"
)

// FormulaCostLimit is the CEL cost limit of one evaluation of a reward
// expression; an evaluation that exceeds it is a verifier error.
const FormulaCostLimit = 1_000_000

// Formula is a verifier's reward formula. The zero value is fraction:
// checks passed / all checks, required and optional together. A Formula
// is immutable and safe for concurrent use.
//
// As data (a spec's reward:, a reward file, manifest.json) a formula is
// "fraction", "all", {"weighted": {CHECK-ID: WEIGHT, ...}} or
// {"expr": "CEL"}.
type Formula struct {
	kind    string             // "" means fraction
	weights map[string]float64 // weighted
	expr    string             // expr: its source
	prog    cel.Program        // expr: compiled
}

// Fraction returns the default formula: checks passed / all checks.
func Fraction() Formula { return Formula{} }

// All returns the formula whose reward is 1 when every check passes,
// required and optional alike, and 0 otherwise.
func All() Formula { return Formula{kind: FormulaAll} }

// Weighted returns the formula that weighs each check by its id: with s = 1
// for a pass and 0 for a fail, W⁺ the positive weights and W⁻ the negative
// ones (penalties), the reward is clamp((Σ W⁺·s − Σ |W⁻|·(1−s)) / Σ W⁺, 0,
// 1). A check the weights do not name weighs 1; weight 0 leaves a check out.
// Weights must be finite. A rollout none of whose checks has a positive
// weight has no reward: its status is error.
func Weighted(weights map[string]float64) (Formula, error) {
	for id, w := range weights {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return Formula{}, fmt.Errorf("weighted: weight of check %q is not a finite number", id)
		}
	}
	return Formula{kind: FormulaWeighted, weights: maps.Clone(weights)}, nil
}

// Expr returns the formula whose reward is the value of a CEL expression
// over checks, the list of the verifier's checks in order, each a map with
// id, label, index (0-based), required, status ("pass" or "fail": a
// formula runs only when no check is pending or in error), passed (bool),
// score (a judge's score, or null when the check was not judged) and
// detail; sum(list) adds numbers, math.greatest and math.least are there
// too. The value must be a number in [0, 1]; any other value, or an
// evaluation error, makes the rollout's status error.
func Expr(src string) (Formula, error) {
	env, err := formulaEnv()
	if err != nil {
		return Formula{}, err
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return Formula{}, fmt.Errorf("reward expression %q: %w", src, iss.Err())
	}
	switch t := ast.OutputType(); {
	case t.IsExactType(cel.DoubleType), t.IsExactType(cel.IntType), t.IsExactType(cel.UintType), t.IsExactType(cel.DynType):
	default:
		return Formula{}, fmt.Errorf("reward expression %q gives %s, not a number", src, t)
	}
	prog, err := env.Program(ast, cel.CostLimit(FormulaCostLimit))
	if err != nil {
		return Formula{}, fmt.Errorf("reward expression %q: %w", src, err)
	}
	return Formula{kind: FormulaExpr, expr: src, prog: prog}, nil
}

// MustFormula returns f, or panics when err is not nil; for Go verifiers
// declared as package variables: Reward: MustFormula(Expr("...")).
func MustFormula(f Formula, err error) Formula {
	if err != nil {
		panic(err)
	}
	return f
}

// formulaEnv is the environment of reward expressions: checks, the
// standard library, math.greatest and math.least, sum(list), the sum of a
// list of numbers (0 for an empty list), and MathFunctions.
var formulaEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.CrossTypeNumericComparisons(true),
		ext.Math(),
		cel.Variable("checks", cel.ListType(cel.MapType(cel.StringType, cel.DynType))),
		MathFunctions(),
		cel.Function("sum",
			cel.Overload("sum_list", []*cel.Type{cel.ListType(cel.DynType)}, cel.DoubleType,
				cel.UnaryBinding(celSum))))
})

func celSum(v ref.Val) ref.Val {
	l, ok := v.(traits.Lister)
	if !ok {
		return types.NoSuchOverloadErr()
	}
	var sum float64
	for it := l.Iterator(); it.HasNext() == types.True; {
		switch x := it.Next().(type) {
		case types.Double:
			sum += float64(x)
		case types.Int:
			sum += float64(x)
		case types.Uint:
			sum += float64(x)
		default:
			return types.NewErr("sum: %s is not a number", x.Type().(ref.Type).TypeName())
		}
	}
	return types.Double(sum)
}

// Kind returns the formula's kind: FormulaFraction, FormulaAll,
// FormulaWeighted or FormulaExpr.
func (f Formula) Kind() string {
	if f.kind == "" {
		return FormulaFraction
	}
	return f.kind
}

// IsFraction reports whether f is the default formula.
func (f Formula) IsFraction() bool { return f.kind == "" }

// WeightedChecks returns the check ids a weighted formula names, sorted
// (nil for other kinds), so that callers can check them against the
// verifier's checks.
func (f Formula) WeightedChecks() []string {
	if f.kind != FormulaWeighted {
		return nil
	}
	ids := make([]string, 0, len(f.weights))
	for id := range f.weights {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Equal reports whether f and g are the same formula.
func (f Formula) Equal(g Formula) bool { return f.String() == g.String() }

// String returns the formula as compact JSON, its canonical text (weights
// in id order): "fraction", "all", {"weighted":{...}} or {"expr":"..."}.
func (f Formula) String() string {
	b, _ := f.MarshalJSON()
	return string(b)
}

// MarshalJSON writes the canonical text of f.
func (f Formula) MarshalJSON() ([]byte, error) {
	switch f.kind {
	case FormulaWeighted:
		return json.Marshal(map[string]map[string]float64{FormulaWeighted: f.weights})
	case FormulaExpr:
		return json.Marshal(map[string]string{FormulaExpr: f.expr})
	}
	return json.Marshal(f.Kind())
}

// UnmarshalJSON reads a formula written as data (see Formula), compiling an
// expression.
func (f *Formula) UnmarshalJSON(data []byte) error {
	g, err := ParseFormula(data)
	if err != nil {
		return err
	}
	*f = g
	return nil
}

// ParseFormula reads a formula from its JSON text (see Formula).
func ParseFormula(data []byte) (Formula, error) {
	const hint = `a formula is "fraction", "all", {"weighted": {"check-id": 2, ...}} or {"expr": "..."}`
	var name string
	if err := json.Unmarshal(data, &name); err == nil {
		switch name {
		case FormulaFraction:
			return Fraction(), nil
		case FormulaAll:
			return All(), nil
		case FormulaWeighted:
			return Formula{}, errors.New(`weighted needs its weights: {"weighted": {"check-id": 2, ...}}`)
		case FormulaExpr:
			return Formula{}, errors.New(`expr needs its expression: {"expr": "..."}`)
		}
		return Formula{}, fmt.Errorf("unknown reward formula %q: %s", name, hint)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || len(obj) != 1 {
		return Formula{}, fmt.Errorf("bad reward formula %s: %s", data, hint)
	}
	for k, v := range obj {
		switch k {
		case FormulaWeighted:
			var w map[string]float64
			if err := json.Unmarshal(v, &w); err != nil || w == nil {
				return Formula{}, fmt.Errorf(`weighted: weights must be an object of numbers by check id, not %s`, v)
			}
			return Weighted(w)
		case FormulaExpr:
			var src string
			if err := json.Unmarshal(v, &src); err != nil || strings.TrimSpace(src) == "" {
				return Formula{}, fmt.Errorf("expr: the expression must be a non-empty string, not %s", v)
			}
			return Expr(src)
		}
		return Formula{}, fmt.Errorf("unknown reward formula %q: %s", k, hint)
	}
	panic("unreachable")
}

// reward computes the reward of checks, none of which is pending or in
// error; passed is how many pass.
func (f Formula) reward(checks []Check, passed int32) (float64, error) {
	switch f.kind {
	case FormulaAll:
		if int(passed) == len(checks) {
			return 1, nil
		}
		return 0, nil
	case FormulaWeighted:
		var pos, got, penalty float64
		for i := range checks {
			w, ok := f.weights[checks[i].ID]
			if !ok {
				w = 1
			}
			pass := checks[i].Status == Pass
			switch {
			case w > 0:
				pos += w
				if pass {
					got += w
				}
			case w < 0 && !pass:
				penalty -= w
			}
		}
		if pos == 0 {
			return 0, errors.New("reward: no check with a positive weight")
		}
		return min(max((got-penalty)/pos, 0), 1), nil
	case FormulaExpr:
		return f.eval(checks)
	}
	return float64(passed) / float64(len(checks)), nil
}

// eval evaluates an expr formula.
func (f Formula) eval(checks []Check) (float64, error) {
	list := make([]any, len(checks))
	for i := range checks {
		c := &checks[i]
		var score ref.Val = types.NullValue
		if c.Scored {
			score = types.Double(c.Score)
		}
		list[i] = map[string]any{
			"id": c.ID, "label": c.Label, "index": i, "required": c.Required,
			"status": c.Status.String(), "passed": c.Status == Pass, "score": score, "detail": c.Detail,
		}
	}
	out, _, err := f.prog.Eval(map[string]any{"checks": list})
	if err != nil {
		return 0, fmt.Errorf("reward expression: %w", err)
	}
	var r float64
	switch v := out.(type) {
	case types.Double:
		r = float64(v)
	case types.Int:
		r = float64(v)
	case types.Uint:
		r = float64(v)
	default:
		return 0, fmt.Errorf("reward expression gave %s, not a number", out.Type().(ref.Type).TypeName())
	}
	if !(r >= 0 && r <= 1) {
		return 0, fmt.Errorf("reward expression gave %s, outside [0, 1]", strconv.FormatFloat(r, 'g', -1, 64))
	}
	return r, nil
}
