package spec

// The CEL environment of spec expressions (`expr` checks, `detail`, and
// `{expr: ...}` values), their compilation and evaluation.
//
// Programs are compiled and planned once, at load, with a cost limit: an
// evaluation whose cost exceeds it (a runaway comprehension) stops with an
// error, which makes the check's status error, never a hang.

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
	"go.yaml.in/yaml/v3"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// CostLimit is the CEL cost limit of one evaluation: roughly the number of
// operations, each comprehension step and function call counting at least
// one. An expression exceeding it ends its check in status error.
const CostLimit = 1_000_000

// celEnv is the environment every spec expression is compiled in.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(append(celLibrary(),
		cel.Variable("final", cel.DynType),
		cel.Variable("initial", cel.DynType),
		cel.Variable("output", cel.StringType),
		cel.Variable("log", cel.DynType),
		cel.Variable("task", cel.DynType),
		cel.Variable("meta", cel.DynType),
		cel.Variable("turns", cel.DynType))...)
})

// turnVariable is the variable turn checks see beside celEnv's: the turn
// being graded.
var turnVariable = cel.Variable("turn", cel.DynType)

// letEnv is the environment of let expressions: only the initial state and
// the task are in scope, which is what makes their values shareable by
// every rollout of one initial state.
var letEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(append(celLibrary(),
		cel.Variable("initial", cel.DynType),
		cel.Variable("task", cel.DynType))...)
})

// celLibrary returns the options and functions every spec environment has.
func celLibrary() []cel.EnvOption {
	return []cel.EnvOption{
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(),
		ext.Bindings(),
		ext.TwoVarComprehensions(),
		cel.OptionalTypes(),
		cel.Function("object_contains",
			cel.Overload("object_contains_dyn_dyn", []*cel.Type{cel.DynType, cel.DynType}, cel.BoolType,
				cel.BinaryBinding(celObjectContains))),
		cel.Function("count",
			cel.Overload("count_dyn", []*cel.Type{cel.DynType}, cel.IntType,
				cel.UnaryBinding(celCount))),
		cel.Function("changes",
			cel.Overload("changes_dyn_dyn", []*cel.Type{cel.DynType, cel.DynType}, cel.MapType(cel.StringType, cel.DynType),
				cel.BinaryBinding(func(initial, final ref.Val) ref.Val { return celChanges(initial, final) })),
			cel.Overload("changes_dyn_dyn_map", []*cel.Type{cel.DynType, cel.DynType, cel.MapType(cel.StringType, cel.StringType)}, cel.MapType(cel.StringType, cel.DynType),
				cel.FunctionBinding(celChanges))),
		cel.Function("numbers_in",
			cel.Overload("numbers_in_string", []*cel.Type{cel.StringType}, cel.ListType(cel.DoubleType),
				cel.UnaryBinding(celNumbersIn))),
		verifiers.MathFunctions(),
		cel.Function("states_number",
			cel.Overload("states_number_string_dyn", []*cel.Type{cel.StringType, cel.DynType}, cel.BoolType,
				cel.BinaryBinding(func(text, value ref.Val) ref.Val {
					return celStatesNumber(text, value, types.Double(verifiers.DefaultTolerance))
				})),
			cel.Overload("states_number_string_dyn_dyn", []*cel.Type{cel.StringType, cel.DynType, cel.DynType}, cel.BoolType,
				cel.FunctionBinding(func(args ...ref.Val) ref.Val {
					return celStatesNumber(args[0], args[1], args[2])
				}))),
	}
}

// program is a compiled CEL expression.
type program struct {
	prg cel.Program
	src string
}

// compile compiles a CEL expression found at node n. wantBool requires a
// bool (or dyn) result type.
func (l *loader) compile(n *yaml.Node, src string, wantBool bool) *program {
	env := l.env
	if env == nil {
		var err error
		if env, err = celEnv(); err != nil {
			l.problem(n, "", "CEL environment: %v", err)
			return nil
		}
	}
	if l.inTurn {
		var err error
		if env, err = env.Extend(turnVariable); err != nil {
			l.problem(n, "", "CEL environment: %v", err)
			return nil
		}
	}
	return l.compileIn(env, n, src, wantBool)
}

// compileIn compiles a CEL expression in env.
func (l *loader) compileIn(env *cel.Env, n *yaml.Node, src string, wantBool bool) *program {
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		l.problem(n, "CEL variables: final, initial, output, log, task, meta, turns (and turn in turn checks); functions: object_contains, count, numbers_in, states_number, changes, math_answer, math_equal",
			"CEL expression does not compile: %v", iss.Err())
		if errs := iss.Errors(); len(errs) > 0 && errs[0].Location != nil {
			p := &l.problems[len(l.problems)-1]
			p.Line, p.Column = l.exprPosition(n, errs[0].Location.Line(), errs[0].Location.Column())
		}
		return nil
	}
	if wantBool {
		if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
			l.problem(n, "compare the value, e.g. count(x) > 0", "expr must evaluate to a bool, not %s", t)
			return nil
		}
	}
	opts := celProgramOptions
	if linear(ast) {
		opts = celLinearOptions
	}
	prg, err := env.Program(ast, opts...)
	if err != nil {
		l.problem(n, "", "CEL expression: %v", err)
		return nil
	}
	return &program{prg: prg, src: src}
}

// celProgramOptions plan every spec program: the cost limit, and CEL's
// evaluation-time optimizations.
var celProgramOptions = []cel.ProgramOption{cel.CostLimit(CostLimit), cel.EvalOptions(cel.OptOptimize)}

// celLinearOptions plan a program that is linear in its input (linear):
// no cost is tracked, which costs an allocation and a count per operation
// and can stop nothing such a program does.
var celLinearOptions = []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}

// linearFunctions are the functions whose cost is at most linear in the
// size of their arguments and whose result is at most as large as their
// arguments together: operators, comparisons, conversions and the string
// tests. replace (whose result may be the square of its input), split,
// join, the comprehensions and gavel's own functions are not among them.
var linearFunctions = map[string]bool{
	operators.Add: true, operators.Subtract: true, operators.Multiply: true, operators.Divide: true, operators.Modulo: true,
	operators.Less: true, operators.LessEquals: true, operators.Greater: true, operators.GreaterEquals: true,
	operators.Equals: true, operators.NotEquals: true, operators.LogicalAnd: true, operators.LogicalOr: true,
	operators.LogicalNot: true, operators.Negate: true, operators.Conditional: true, operators.Index: true,
	operators.OptIndex: true, operators.OptSelect: true, operators.In: true, operators.NotStrictlyFalse: true,
	"size": true, "contains": true, "startsWith": true, "endsWith": true, "matches": true,
	"int": true, "uint": true, "double": true, "string": true, "bool": true, "type": true, "dyn": true,
	"lowerAscii": true, "upperAscii": true, "trim": true, "indexOf": true, "lastIndexOf": true,
	"charAt": true, "substring": true,
}

// linear reports whether a checked expression's cost is linear in the size
// of the rollout it reads: it has no comprehension (all, exists, map,
// filter, ...) and calls only linearFunctions. Such a program cannot run
// away: CostLimit, which guards against what can, is not tracked for it.
func linear(a *cel.Ast) bool {
	ok := true
	celast.PostOrderVisit(a.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.ComprehensionKind:
			ok = false
		case celast.CallKind:
			if !linearFunctions[e.AsCall().FunctionName()] {
				ok = false
			}
		}
	}))
	return ok
}

// costExceeded reports whether err is CEL's cost limit being exceeded.
func costExceeded(err error) bool {
	var cancelled interpreter.EvalCancelledError
	return errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded
}

// eval evaluates the program on rollout r and hands the result to use
// before the arena is reset.
func (p *program) eval(r *verifiers.Rollout, s *scratch, use func(ref.Val) error) error {
	act := s.cel.bind(r)
	defer s.cel.reset()
	return p.run(act, use)
}

// run evaluates the program on the bound activation act and hands the
// result to use; exceeding the cost limit is an error that says so.
func (p *program) run(act interpreter.Activation, use func(ref.Val) error) error {
	out, _, err := p.prg.Eval(act)
	if err != nil && costExceeded(err) {
		return fmt.Errorf("expression exceeded the cost limit (%d)", CostLimit)
	}
	if err != nil {
		return err
	}
	return use(out)
}

// evalJSON evaluates the program and returns its value parsed into the
// scratch's expression document, and as JSON text.
func (p *program) evalJSON(r *verifiers.Rollout, s *scratch) (jsonview.Value, string, error) {
	var text string
	err := p.eval(r, s, func(v ref.Val) error {
		b, err := appendCEL(s.buf[:0], v)
		s.buf = b[:0]
		text = string(b)
		return err
	})
	if err != nil {
		return jsonview.Value{}, "", err
	}
	// The index reads text in place: a string's bytes never change.
	v, err := s.exprDoc.Parse(unsafe.Slice(unsafe.StringData(text), len(text)))
	if err != nil {
		return jsonview.Value{}, "", fmt.Errorf("value is not JSON: %w", err)
	}
	return v, text, nil
}

// gradeExpr runs an expr check.
func (c *check) gradeExpr(r *verifiers.Rollout, s *scratch, out verifiers.Check) verifiers.Check {
	var ok bool
	err := c.expr.eval(r, s, func(v ref.Val) error {
		b, isBool := v.(types.Bool)
		if !isBool {
			return fmt.Errorf("expr evaluated to %s, not a bool", v.Type().TypeName())
		}
		ok = bool(b)
		return nil
	})
	if err != nil {
		out.Status, out.Detail = verifiers.Error, "expr: "+err.Error()
		return out
	}
	out.Status = verifiers.Fail
	out.Actual = "false"
	if ok {
		out.Status, out.Actual = verifiers.Pass, "true"
	}
	out.Detail = "expr is " + out.Actual
	if c.detail != nil {
		err := c.detail.eval(r, s, func(v ref.Val) error {
			if str, isStr := v.(types.String); isStr {
				out.Detail = strings.Clone(string(str)) // copied: it may view the state
				return nil
			}
			b, err := appendCEL(nil, v)
			out.Detail = string(b)
			return err
		})
		if err != nil {
			out.Detail = "expr is " + out.Actual + " (detail: " + err.Error() + ")"
		}
	}
	return out
}
