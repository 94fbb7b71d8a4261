package verifiers

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers/mathanswer"
)

// MathNoAnswer starts the detail of a math check whose text gives no
// answer that can be read. Such checks fail, and summary.json counts them
// apart from wrong answers ("unextracted"), whichever verifier made them.
const MathNoAnswer = mathanswer.NoAnswer

// DefaultMathPrecision is the number of decimal places numbers are
// compared to when either side holds a decimal or an irrational number.
const DefaultMathPrecision = mathanswer.DefaultPrecision

// MathVerdict is the outcome of comparing the answer of a text with a gold
// answer.
type MathVerdict = mathanswer.Verdict

// MathAnswer returns the final answer that text gives, normalized ("1/2"
// for \frac{1}{2}), found by the rules of docs/math.md: the last \boxed{},
// a closing phrase, the last math span, the whole text, the last number.
// ok is false when text gives no answer that can be read.
func MathAnswer(text string) (answer string, ok bool) {
	a, _, ok := mathanswer.Find(text)
	return a, ok
}

// MathEqual reports whether the answers of a and b are equal, each found
// as MathAnswer finds it, numbers compared to precision decimal places (a
// negative precision is DefaultMathPrecision). It is false when either
// gives no answer.
func MathEqual(a, b string, precision int) bool {
	return mathanswer.Equal(a, b, precision)
}

// MathCompare finds the answer of text and compares it with gold, as the
// math check of spec files does. The error is a gold that cannot be read
// (a problem of the data: report it as a Fault, never a failure).
func MathCompare(text, gold string, precision int) (MathVerdict, error) {
	return mathanswer.Compare(text, gold, precision)
}

// MathCheck adds the check of a math answer: it passes when the answer of
// text equals gold; it fails when it does not, or when text gives none
// (its detail then starts with MathNoAnswer); it is an error when gold
// cannot be read.
func (c *Checks) MathCheck(label, text, gold string, precision int) {
	c.Add(MathCheckOf(Check{ID: label, Label: label, Required: true}, text, gold, precision))
}

// MathCheckOf completes check ch with the outcome of comparing the answer
// of text with gold: its status, actual, expected and detail.
func MathCheckOf(ch Check, text, gold string, precision int) Check {
	v, err := mathanswer.Compare(text, gold, precision)
	if err != nil {
		ch.Status, ch.Detail = Error, err.Error()
		return ch
	}
	ch.Status = passFail(v.Equal)
	ch.Actual, ch.Expected, ch.Detail = jsonString(v.Answer, v.Found), jsonString(v.Gold, true), v.Detail
	return ch
}

// jsonString is s as a JSON string, or "" (null) when not ok.
func jsonString(s string, ok bool) string {
	if !ok {
		return ""
	}
	return string(jsonview.AppendJSONString(nil, s))
}

// IsMathNoAnswer reports whether a check's detail says its text gave no
// answer.
func IsMathNoAnswer(detail string) bool { return strings.HasPrefix(detail, MathNoAnswer) }

// MathFunctions declares the math functions of CEL expressions, in spec
// checks and reward formulas alike:
//
//   - math_answer(text): the answer text gives, normalized (as
//     MathAnswer), or null when it gives none;
//   - math_equal(a, b) and math_equal(a, b, precision): whether the
//     answers of a and b are equal (as MathEqual).
//
// Their arguments are strings or numbers; null gives null and false.
func MathFunctions() cel.EnvOption {
	return cel.Lib(mathLib{})
}

type mathLib struct{}

func (mathLib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("math_answer",
			cel.Overload("math_answer_dyn", []*cel.Type{cel.DynType}, cel.DynType,
				cel.UnaryBinding(celMathAnswer))),
		cel.Function("math_equal",
			cel.Overload("math_equal_dyn_dyn", []*cel.Type{cel.DynType, cel.DynType}, cel.BoolType,
				cel.BinaryBinding(func(a, b ref.Val) ref.Val { return celMathEqual(a, b) })),
			cel.Overload("math_equal_dyn_dyn_int", []*cel.Type{cel.DynType, cel.DynType, cel.IntType}, cel.BoolType,
				cel.FunctionBinding(celMathEqual))),
	}
}

func (mathLib) ProgramOptions() []cel.ProgramOption { return nil }

// MathText is the text of a CEL value read as an answer: a string as it
// is, a number as JSON writes it; what names the value in errors.
func MathText(v ref.Val, what string) (string, error) {
	switch x := v.(type) {
	case types.String:
		return string(x), nil
	case types.Int:
		return strconv.FormatInt(int64(x), 10), nil
	case types.Uint:
		return strconv.FormatUint(uint64(x), 10), nil
	case types.Double:
		f := float64(x)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return "", fmt.Errorf("%s is %v, not a number an answer can state", what, f)
		}
		if math.Abs(f) < 1e21 {
			return strconv.FormatFloat(f, 'f', -1, 64), nil
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case types.Null:
		return "", fmt.Errorf("%s is null", what)
	}
	return "", fmt.Errorf("%s is a %s, not a string or a number", what, v.Type().(ref.Type).TypeName())
}

// celMathAnswer implements math_answer(text).
func celMathAnswer(text ref.Val) ref.Val {
	if text == types.NullValue {
		return types.NullValue
	}
	t, err := MathText(text, "math_answer's argument")
	if err != nil {
		return types.NewErr("%v", err)
	}
	a, ok := MathAnswer(t)
	if !ok {
		return types.NullValue
	}
	return types.String(a)
}

// celMathEqual implements math_equal(a, b[, precision]).
func celMathEqual(args ...ref.Val) ref.Val {
	var text [2]string
	for i := range 2 {
		if args[i] == types.NullValue {
			return types.False
		}
		t, err := MathText(args[i], "math_equal's argument")
		if err != nil {
			return types.NewErr("%v", err)
		}
		text[i] = t
	}
	prec := DefaultMathPrecision
	if len(args) == 3 {
		p, ok := args[2].(types.Int)
		if !ok || p < 0 || p > mathanswer.MaxPrecision {
			return types.NewErr("math_equal's precision must be an integer from 0 to %d, not %v", mathanswer.MaxPrecision, args[2])
		}
		prec = int(p)
	}
	return types.Bool(MathEqual(text[0], text[1], prec))
}
