package verifiers

import (
	"strings"
	"testing"
)

func TestMathCheck(t *testing.T) {
	for _, tc := range []struct {
		name, text, gold string
		want             Status
		actual, expected string
		detail           string
	}{
		{"pass", `so $\boxed{\frac{6}{8}}$`, "0.75", Pass, `"3/4"`, `"0.75"`, "3/4 = 0.75"},
		{"fail", "The answer is 12.", "13", Fail, `"12"`, `"13"`, "12 ≠ 13"},
		{"no answer", "No idea at all, sorry.", "13", Fail, "", `"13"`, MathNoAnswer},
		{"gold error", "13", `\frac{1}{`, Error, "", "", "gold answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Checks
			c.MathCheck("answer", tc.text, tc.gold, DefaultMathPrecision)
			got := c.List()[0]
			if got.Status != tc.want || got.Actual != tc.actual || got.Expected != tc.expected || !strings.HasPrefix(got.Detail, tc.detail) {
				t.Errorf("MathCheck(%q, %q) = %v %s %s %q, want %v %s %s %q...", tc.text, tc.gold, got.Status, got.Actual, got.Expected, got.Detail,
					tc.want, tc.actual, tc.expected, tc.detail)
			}
			if !got.Required || got.ID != "answer" {
				t.Errorf("check = %+v, want a required check with id answer", got)
			}
		})
	}
}

func TestMathAnswerAndEqual(t *testing.T) {
	if a, ok := MathAnswer(`Thus \(x = \dfrac{1}{2}\).`); !ok || a != "x = 1/2" {
		t.Errorf("MathAnswer = %q, %v, want x = 1/2", a, ok)
	}
	if _, ok := MathAnswer("nothing to see here at all"); ok {
		t.Error("MathAnswer found an answer in prose")
	}
	if !MathEqual("0.3333", `\frac13`, 4) || MathEqual("0.3333", `\frac13`, -1) {
		t.Error("MathEqual does not compare to the precision")
	}
	if IsMathNoAnswer("0.5 = 1/2") || !IsMathNoAnswer(MathNoAnswer+" in 3 bytes") {
		t.Error("IsMathNoAnswer")
	}
}
