package spec

import (
	"strings"
	"testing"

	"github.com/gavelhq/gavel/verifiers"
)

func TestMathCheck(t *testing.T) {
	for _, tc := range []struct {
		name, check string
		r           ro
		want        verifiers.Status
		actual      string // "" is null
		expected    string
		detail      string // a prefix of the detail
	}{
		{"pass", "gold: meta.answer", ro{output: `So the answer is $\boxed{\frac{1}{2}}$.`, meta: `{"answer": "0.5"}`},
			verifiers.Pass, `"1/2"`, `"0.5"`, "1/2 = 0.5"},
		{"number gold", "gold: meta.answer", ro{output: "#### 72", meta: `{"answer": 72}`},
			verifiers.Pass, `"72"`, `"72"`, "72 = 72"},
		{"fail", "gold: meta.answer", ro{output: `\boxed{\{1, 2\}}`, meta: `{"answer": "\\{1,2,3\\}"}`},
			verifiers.Fail, `"{1, 2}"`, `"{1, 2, 3}"`, "{1, 2} ≠ {1, 2, 3}"},
		{"no answer", "gold: meta.answer", ro{output: "I do not know.", meta: `{"answer": "3"}`},
			verifiers.Fail, "", `"3"`, "no answer found"},
		{"answer field", "gold: task.answer\n  answer: meta.response", ro{task: `{"answer": "x^2+3x+2"}`, meta: `{"response": "(x+1)(x+2)"}`},
			verifiers.Pass, `"(x + 1)*(x + 2)"`, `"x^2 + 3*x + 2"`, ""},
		{"precision", "gold: meta.answer\n  precision: 2", ro{output: "0.33", meta: `{"answer": "\\frac13"}`},
			verifiers.Pass, `"0.33"`, `"1/3"`, ""},
		{"gold unreadable", "gold: meta.answer", ro{output: "5", meta: `{"answer": "\\frac{1}{"}`},
			verifiers.Error, "", "", "gold answer"},
		{"gold null", "gold: meta.answer", ro{output: "5", meta: `{"answer": null}`},
			verifiers.Error, "", "", "gold: gold is null"},
		{"gold past a limit", "gold: meta.answer", ro{output: "5", meta: `{"answer": "2^{2^{2^{2^{2}}}}"}`},
			verifiers.Error, "", "", "gold answer"},
		{"answer past a limit", "gold: meta.answer", ro{output: `\boxed{2^{2^{2^{2^{2}}}}}`, meta: `{"answer": "5"}`},
			verifiers.Fail, `"2^65536"`, `"5"`, "answer 2^65536 is past a limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := grade(t, oneCheck("- id: c\n  type: math\n  "+tc.check), tc.r)
			if len(got) != 1 {
				t.Fatalf("checks = %+v, want one", got)
			}
			c := got[0]
			if c.Status != tc.want || !strings.HasPrefix(c.Detail, tc.detail) {
				t.Fatalf("check = %v %q, want %v %q...", c.Status, c.Detail, tc.want, tc.detail)
			}
			if tc.want != verifiers.Error && (c.Actual != tc.actual || c.Expected != tc.expected) {
				t.Errorf("actual, expected = %s, %s, want %s, %s", c.Actual, c.Expected, tc.actual, tc.expected)
			}
		})
	}
}

func TestMathCheckProblems(t *testing.T) {
	for _, tc := range []struct{ check, want string }{
		{"- id: c\n  type: math", "has no gold"},
		{"- id: c\n  type: math\n  gold: meta.answer\n  precision: 20", "precision of"},
		{"- id: c\n  type: math\n  gold: meta.answer\n  precision: x", "precision of"},
		{"- id: c\n  type: math\n  gold: meta.answer(", "does not compile"},
		{"- id: c\n  type: math\n  gold: meta.answer\n  expr: 'true'", "expr is not a field of math checks"},
		{"- id: c\n  type: expr\n  expr: 'true'\n  gold: meta.answer", "gold is not a field of expr checks"},
	} {
		_, err := Parse("test.yaml", []byte(oneCheck(tc.check)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want a problem with %q", tc.check, err, tc.want)
		}
	}
}

func TestMathFunctions(t *testing.T) {
	r := ro{output: `Thus $x = \dfrac{3}{4}$.`, meta: `{"answer": "0.75", "n": 2}`}
	for _, tc := range []struct {
		name, expr string
		want       verifiers.Status
	}{
		{"math_answer", `math_answer(output) == "x = 3/4"`, verifiers.Pass},
		{"math_answer null", `math_answer("I have no idea at all.") == null`, verifiers.Pass},
		{"math_answer of a number", `math_answer(meta.n) == "2"`, verifiers.Pass},
		{"math_answer error", `math_answer(meta) == null`, verifiers.Error},
		{"math_equal", `math_equal(output, meta.answer)`, verifiers.Pass},
		{"math_equal false", `math_equal(output, "0.7")`, verifiers.Fail},
		{"math_equal precision", `math_equal("0.7501", meta.answer, 3) && !math_equal("0.7501", meta.answer)`, verifiers.Pass},
		{"math_equal precision error", `math_equal("1", "1", 99)`, verifiers.Error},
		{"math_equal null", `!math_equal(null, "1")`, verifiers.Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := "- id: c\n  type: expr\n  expr: '" + strings.ReplaceAll(tc.expr, "'", "''") + "'"
			got := grade(t, oneCheck(check), r)
			if len(got) != 1 || got[0].Status != tc.want {
				t.Fatalf("checks = %+v, want one with status %v", got, tc.want)
			}
		})
	}
}

// The math functions work in reward formulas too, over the checks.
func TestMathInReward(t *testing.T) {
	f, err := verifiers.Expr(`math_equal(checks[0].detail, "1/2") ? 1.0 : 0.25`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		detail string
		want   float64
	}{{"0.5", 1}, {"0.4", 0.25}} {
		v := verifiers.ScoreWith(f, []verifiers.Check{{ID: "c", Label: "c", Required: true, Status: verifiers.Pass, Detail: tc.detail}}, nil)
		if !v.HasReward || v.Reward != tc.want {
			t.Errorf("reward with detail %q = %+v, want %v", tc.detail, v, tc.want)
		}
	}
}
