package mathanswer

import "testing"

func TestCompareForms(t *testing.T) {
	tests := []struct {
		name, answer, gold string
		want               bool
	}{
		{"integer", "42", "42", true},
		{"thousands", "7,425,000", "7425000", true},
		{"thousands space", "7 425 000", "7425000", true},
		{"thin space", "7\u2009425\u2009000", "7425000", true},
		{"latex thousands", "7{,}425{,}000", "7425000", true},
		{"latex thin", "7\\,425\\,000", "7425000", true},
		{"dollar", "\\$1,234.50", "1234.5", true},
		{"units", "12 \\text{ cm}", "12", true},
		{"units words", "The answer is 5 apples.", "5", true},
		{"percent", "50\\%", "50", true},
		{"percent frac", "50%", "0.5", true},
		{"degrees", "45^\\circ", "45", true},
		{"degrees braces", "45^{\\circ}", "45", true},
		{"unicode minus", "−7", "-7", true},
		{"leading zeros", "007", "7", true},
		{"sci", "1.5\\times10^{3}", "1500", true},
		{"sci e", "1.5e3", "1500", true},
		{"frac", "\\frac{1}{2}", "0.5", true},
		{"dfrac", "\\dfrac{3}{4}", "3/4", true},
		{"frac12", "\\frac12", "1/2", true},
		{"mixed", "3\\frac{1}{2}", "7/2", true},
		{"decimal in precision", "0.333333", "\\frac{1}{3}", true},
		{"decimal out", "0.33", "\\frac{1}{3}", false},
		{"radical", "2\\sqrt{2}", "\\sqrt{8}", true},
		{"cube root", "\\sqrt[3]{27}", "3", true},
		{"rationalized", "\\frac{1}{\\sqrt2}", "\\frac{\\sqrt2}{2}", true},
		{"pi", "\\frac{2\\pi}{6}", "\\pi/3", true},
		{"pi false", "\\frac{\\pi}{6}", "\\pi/3", false},
		{"algebra", "(x+1)(x+2)", "x^2+3x+2", true},
		{"algebra false", "(x+1)(x-2)", "x^2+3x+2", false},
		{"set", "\\{3, 1, 2\\}", "\\{1,2,3\\}", true},
		{"set false", "\\{1, 2\\}", "\\{1,2,3\\}", false},
		{"tuple", "(1, 2)", "(1,2)", true},
		{"tuple order", "(2, 1)", "(1,2)", false},
		{"interval", "[1, 5)", "[1,5)", true},
		{"interval ends", "(1, 5)", "[1,5)", false},
		{"union", "(2,\\infty) \\cup (-\\infty, 1)", "(-\\infty,1)\\cup(2,\\infty)", true},
		{"equation", "x = 3", "3", true},
		{"equation gold", "3", "x=3", true},
		{"relation", "2 > a", "a < 2", true},
		{"relation false", "a \\le 2", "a < 2", false},
		{"matrix", "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}", true},
		{"matrix false", "\\begin{pmatrix} 1 & 2 \\\\ 3 & 5 \\end{pmatrix}", "\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}", false},
		{"choice", "(B)", "B", true},
		{"choice text", "\\text{(B)}", "B", true},
		{"choice false", "(C)", "B", false},
		{"text", "\\text{Monday}", "monday", true},
		{"text false", "\\text{even}", "odd", false},
		{"layout", "\\left( \\dfrac{1}{2}, \\! 3 \\right)", "(1/2, 3)", true},
		{"boxed", "so we get \\boxed{\\frac{1}{2}}.", "0.5", true},
		{"phrase", "Let $n$ be the number. Then $n = 40 + 2$. The answer is 42.", "42", true},
		{"gsm8k", "She has 3 + 4 = 7 apples.\n#### 7", "7", true},
		{"last number", "I think it is 17", "17", true},
		{"pm", "3 \\pm \\sqrt{2}", "3+\\sqrt2, 3-\\sqrt2", true},
		{"inequality interval", "x < 2", "(-\\infty, 2)", true},
		{"no answer", "I cannot solve this.", "5", false},
		{"or in text", "x = 1 \\text{ or } x = 2", "\\{1, 2\\}", true},
		{"pm set", "3 \\pm \\sqrt{2}", "\\{3+\\sqrt2, 3-\\sqrt2\\}", true},
		{"product order", "2yx", "2xy", true},
		{"half power", "x^{1/2}", "\\sqrt{x}", true},
		{"choice bracket", "B)", "B", true},
		{"choice option", "Option B", "B", true},
		{"choice lower", "b", "B", true},
		{"choice value", "\\textbf{(E)}\\ 42", "E", true},
		{"words upper", "MONDAY", "\\text{Monday}", true},
		{"near integer", "1.0000001", "1", true},
		{"not near", "0.3333", "\\frac13", false},
		{"cube root exact", "8^{1/3}", "2", true},
		{"sqrt exact", "\\sqrt{49}", "7", true},
		{"in set", "x \\in [1, 2]", "[1,2]", true},
		{"computation", "so $200 - 50 = 150$", "150", true},
		{"tuple equation", "(x, y) = (2, 3)", "(2, 3)", true},
		{"relation names differ", "y = 3", "x = 3", false},
		{"money span", "Four tickets cost $50.00 and two cost $7.50, so the total is **$57.50**.", "57.5", true},
		{"cm cubed", "\\boxed{64 \\text{ cm}^3}", "64", true},
		{"unicode degrees", "45°", "45", true},
		{"percent wrong", "5%", "50", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Compare(tt.answer, tt.gold, -1)
			if err != nil {
				t.Fatalf("Compare(%q, %q): %v", tt.answer, tt.gold, err)
			}
			if v.Equal != tt.want {
				t.Errorf("Compare(%q, %q) = %v (%s), want %v", tt.answer, tt.gold, v.Equal, v.Detail, tt.want)
			}
			if !tt.want {
				return
			}
			v2, err := Compare(tt.gold, tt.answer, -1)
			if err == nil && !v2.Equal {
				t.Logf("reverse: Compare(%q, %q) = %v (%s)", tt.gold, tt.answer, v2.Equal, v2.Detail)
			}
		})
	}
}
