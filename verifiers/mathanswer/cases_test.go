package mathanswer

import (
	"strings"
	"testing"
	"time"
)

// TestHardCases holds outputs where a careless reader goes wrong: the
// number found is not the answer, a form is misread, or two values are
// close without being equal.
func TestHardCases(t *testing.T) {
	tests := []struct {
		name, answer, gold string
		want               bool
	}{
		// The closing phrase: only as a phrase, and not when a later step
		// corrects it.
		{"answer as a noun", "Each correct answer is worth 5 points. She got 8 correct, so she scored 8 × 5 = 40 points.", "40", true},
		{"answer as a noun, intermediate", "Each correct answer is worth 5 points. She got 8 correct, so she scored 8 × 5 = 40 points.", "5", false},
		{"corrected answer", "The answer should be 15. Wait, I forgot the 2 broken ones: 15 - 2 = 13.", "13", true},
		{"corrected answer, first value", "The answer should be 15. Wait, I forgot the 2 broken ones: 15 - 2 = 13.", "15", false},
		{"markdown heading", "#### Step 1\nShe buys 3 packs of 12, so 36 pens.\n#### Step 2\nShe gives away 10, so 36 - 10 = 26 pens remain.", "26", true},
		{"answered", "Tom answered 8 questions. In total, 15.", "15", true},
		{"negated", "The answer is not 5.", "5", false},
		{"negative word", "The answer is negative 5.", "-5", true},
		{"negative word, sign", "The answer is negative 5.", "5", false},
		{"remark in brackets", "The answer is 9 (12 - 3).", "9", true},
		{"remark after a comma", "The final answer is 7, since 3 + 4 = 7.", "7", true},
		{"exclamation", "The answer is 12!", "12", true},
		{"remark with words", "Total = 14 (step 3)", "14", true},
		{"remark with words, product", "Total = 14 (step 3)", "42", false},
		{"comes out to", "The answer comes out to 12.", "12", true},
		// Dollar signs in prose.
		{"dollars", "Each ticket is $15, so 4 tickets cost $60.", "60", true},
		{"dollars again", "One costs $9 so three cost $27.", "27", true},
		// A number after the last span.
		{"number after span", "We get $x = 4$. Therefore, 8 cookies remain.", "8", true},
		{"named value", "Let $n$ be the number of apples.\nThe value of $n$ is 42.", "42", true},
		// Several boxes.
		{"two boxes", `The solutions are \boxed{2} and \boxed{-3}.`, "2, -3", true},
		{"two boxes, one", `The solutions are \boxed{2} and \boxed{-3}.`, "-3", false},
		// The last number and its bracket.
		{"pair in prose", "The ordered pair is (2, 3).", "(2,3)", true},
		{"interval in prose", "The interval is [2, 5).", "[2, 5)", true},
		{"glued digits", "AZYUK2A", "2", false},
		// Forms.
		{"MATH thousands", `\boxed{10,\!080}`, "10080", true},
		{"MATH thousands gold", "12000", `12,\!000`, true},
		{"absolute value", `\boxed{|-5|}`, "5", true},
		{"absolute value gold", `\boxed{|x|}`, "|x|", true},
		{"absolute value left right", `\boxed{\left| 2 - 7 \right|}`, "5", true},
		{"base subscript", `\boxed{204_5}`, "204_5", true},
		{"base subscript differs", `\boxed{204_6}`, "204_5", false},
		{"ratio", `\boxed{3:4}`, "3:4", true},
		{"time", "The train leaves at 2:30.", "2:30", true},
		{"time differs", `\boxed{2:45}`, "2:30", false},
		{"plain mixed number", "3 1/2", "7/2", true},
		{"plain mixed number, product", "3 1/2", "3/2", false},
		{"unicode root", "√12", `2\sqrt{3}`, true},
		{"unicode root, one digit", "√12", "2", false},
		{"unit mathrm", `\boxed{5 \mathrm{~m}}`, "5", true},
		{"unit per hour", `\boxed{60 km/h}`, "60", true},
		{"celsius", "The answer is 25°C.", "25", true},
		{"celsius circ", `\boxed{25^\circ C}`, "25", true},
		{"no", "The answer is no.", "No", true},
		{"no text", `\text{No}`, "no", true},
		{"name", `\boxed{Ann}`, `\text{Ann}`, true},
		{"choices in text", `\text{A,C}`, "A, C", true},
		{"choice e", "(e)", "E", true},
		{"choice value", `\textbf{(C)}\ 12`, "12", true},
		// Values close without being equal.
		{"equation is not its side", "2x+1=3", "3", false},
		{"equation with variables", "a+3z=0", "0", false},
		{"rational near pi", `\frac{355}{113}`, `\pi`, false},
		{"tiny numbers", `4.0 \times 10^{-7}`, `2.5 \times 10^{-7}`, false},
		{"tiny against zero", "0", `1.6 \times 10^{-19}`, false},
		{"tiny equal", `2.5 \times 10^{-7}`, "0.00000025", true},
		{"overflow is not infinity", "10^{400}", `\infty`, false},
		{"overflows differ", "e^{1000}", "e^{1001}", false},
		{"one over zero", `\frac{1}{0}`, `\infty`, false},
		{"large multiples", `1000000008\pi`, `1000000007\pi`, false},
		{"root of a square", "x", `\sqrt{x^2}`, false},
		{"absolute value is not the value", "1 + |x|", "x+1", false},
		{"binomial", `\frac{n(n-1)}{2}`, `\binom{n}{2}`, true},
		{"approximation", `\boxed{4\pi \approx 12.57}`, `4\pi`, true},
		{"approximation, decimal gold", `\boxed{4\pi \approx 12.57}`, "12.57", true},
		{"union of inequalities", `\boxed{x < -2 \text{ or } x > 4}`, `(-\infty, -2) \cup (4, \infty)`, true},
		{"interval membership", `x \in [-2, 7]`, `-2\le x\le 7`, true},
		{"negative base", `\boxed{(-8)^{2/3}}`, "4", true},
		{"pi against 3.14", "3.14", `\pi`, false},
		{"pi to six places", "3.141593", `\pi`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Compare(tt.answer, tt.gold, -1)
			if err != nil {
				t.Fatalf("Compare(%q, %q): %v", tt.answer, tt.gold, err)
			}
			if v.Equal != tt.want {
				t.Errorf("Compare(%q, %q) = %v (%s, rule %s), want %v", tt.answer, tt.gold, v.Equal, v.Detail, v.Rule, tt.want)
			}
		})
	}
}

// TestNestedMixedNumbers: a mixed number that is not one is parsed once,
// and a number past MaxBits is refused before it is built.
func TestNestedMixedNumbers(t *testing.T) {
	s := "1e999999"
	for range 12 {
		s = `3\frac{` + s + `}{2}`
	}
	start := time.Now()
	v, err := Compare(`\boxed{`+s+`}`, "1", -1)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Compare took %v", d)
	}
	if err != nil || v.Equal || !strings.Contains(v.Detail, "MaxBits") {
		t.Errorf("Compare = %+v, %v; want a failure naming MaxBits", v, err)
	}
}

func TestRelationText(t *testing.T) {
	v, err := Compare("x = 5+5+1 = 7 = 11", "11", -1)
	if err != nil || !v.Equal || v.Answer != "x = 11 = 7 = 11" {
		t.Errorf("Compare = %+v, %v", v, err)
	}
}

// TestDocForms checks the forms docs/math.md names.
func TestDocForms(t *testing.T) {
	for _, p := range [][3]string{
		{`7,\!425,\!000`, "7425000", "true"},
		{"negative 3", "-3", "true"},
		{"60 km/h", "60", "true"},
		{"√8", `2\sqrt{2}`, "true"},
		{`\lvert x \rvert`, "|x|", "true"},
		{`\textbf{(E)}\ 42`, "42", "true"},
		{`2:45`, "2:30", "false"},
	} {
		v, err := Compare(p[0], p[1], -1)
		if err != nil || (v.Equal != (p[2] == "true")) {
			t.Errorf("Compare(%q, %q) = %+v, %v, want %s", p[0], p[1], v, err, p[2])
		}
	}
}

// TestReviewFixes: a choice with its value as the gold, domains of
// expressions, decimals with variables, negations, limits in spans.
func TestReviewFixes(t *testing.T) {
	deep := `\boxed{` + strings.Repeat("{", 70) + "5" + strings.Repeat("}", 70) + `} so 5`
	long := "So 5, and then $" + strings.Repeat("1+", 2100) + "5$"
	for _, tc := range []struct {
		answer, gold string
		want         bool
		detail       string
	}{
		{"E", `\textbf{(E)}\ 42`, true, ""},
		{"42", `\textbf{(E)}\ 42`, true, ""},
		{"D", `\textbf{(E)}\ 42`, false, ""},
		{`(\sqrt{x})^2`, "x", true, ""},
		{`\ln(x^2)`, `2\ln x`, true, ""},
		{"0.333333x", `\frac{x}{3}`, true, ""},
		{"0.33x", `\frac{x}{3}`, false, ""},
		{"so 5", "5", true, ""},
		{"The answer is not 5. It is $6$.", "6", true, ""},
		{"The answer is not 5.", "5", false, "no answer found"},
		{deep, "5", false, "answer"},
		{long, "5", false, "answer"},
	} {
		v, err := Compare(tc.answer, tc.gold, -1)
		if err != nil || v.Equal != tc.want || !strings.HasPrefix(v.Detail, tc.detail) {
			t.Errorf("Compare(%.60q, %q) = %v %q, %v; want %v %q...", tc.answer, tc.gold, v.Equal, v.Detail, err, tc.want, tc.detail)
		}
	}
}
