package mathanswer

import (
	"fmt"
	"strings"
)

// NoAnswer starts the detail of an answer that could not be found.
const NoAnswer = "no answer found"

// Verdict is the outcome of comparing a text's answer with a gold answer.
type Verdict struct {
	// Equal is true when the answer equals the gold.
	Equal bool
	// Found is false when the text gives no answer that can be read.
	Found bool
	// Answer and Gold are the normalized answer and gold ("" when not
	// found).
	Answer, Gold string
	// Rule is how the answer was found.
	Rule Rule
	// Detail says how they compared ("0.5 = 1/2"), or why no answer was
	// found ("no answer found in 42 bytes").
	Detail string
}

// GoldError is a gold answer that cannot be read: a problem of the data,
// never a failed answer.
type GoldError struct {
	Gold string
	Err  error
}

func (e *GoldError) Error() string {
	return fmt.Sprintf("gold answer %q cannot be read: %v", clip(e.Gold, 200), e.Err)
}

func (e *GoldError) Unwrap() error { return e.Err }

// clip shortens s for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// Gold parses a gold answer as datasets store it: bare LaTeX or plain
// text, a number, a $-wrapped span, a solution ending in \boxed{...}, or
// GSM8K's "... #### 42".
func Gold(text string) (string, error) {
	n, err := parseGold(text)
	if err != nil {
		return "", err
	}
	return n.String(), nil
}

func parseGold(text string) (*node, error) {
	s := strings.TrimSpace(text)
	if i := strings.LastIndex(s, "####"); i >= 0 {
		s = strings.TrimSpace(s[i+4:])
	}
	if body, at := lastBoxed(s); at >= 0 {
		s = body
	} else {
		// Wrapped whole: $...$, $$...$$, \(...\), \[...\].
		for _, d := range [][2]string{{"$$", "$$"}, {"$", "$"}, {`\(`, `\)`}, {`\[`, `\]`}} {
			if len(s) >= len(d[0])+len(d[1]) && strings.HasPrefix(s, d[0]) && strings.HasSuffix(s, d[1]) {
				s = s[len(d[0]) : len(s)-len(d[1])]
				break
			}
		}
	}
	n, err := parse(s)
	if err != nil {
		return nil, &GoldError{Gold: text, Err: err}
	}
	return n, nil
}

// Find returns the answer text gives, normalized, and the rule that found
// it; ok is false when it gives none that can be read.
func Find(text string) (answer string, rule Rule, ok bool) {
	f, ok := find(text)
	if !ok || f.err != nil {
		return "", f.rule, false
	}
	return f.n.String(), f.rule, true
}

// Compare finds the answer in text and compares it with gold, numbers to
// precision decimal places (DefaultPrecision when negative). The error
// is a *GoldError: the gold cannot be read or is past a limit.
func Compare(text, gold string, precision int) (Verdict, error) {
	if precision < 0 {
		precision = DefaultPrecision
	}
	if precision > MaxPrecision {
		precision = MaxPrecision
	}
	g, err := parseGold(gold)
	if err != nil {
		return Verdict{}, err
	}
	v := Verdict{Gold: g.String()}
	f, ok := find(text)
	if !ok {
		v.Detail = NoAnswer + " in " + itoa(len(text)) + " bytes"
		return v, nil
	}
	v.Rule = f.rule
	if f.err != nil {
		if IsLimit(f.err) {
			// Found, and past a limit: a failure, but not a missing answer.
			v.Detail = fmt.Sprintf("answer %q is past a limit: %v", clip(f.text, 80), f.err)
			return v, nil
		}
		v.Detail = fmt.Sprintf("%s: %s %q cannot be read: %v", NoAnswer, f.rule, clip(f.text, 80), f.err)
		return v, nil
	}
	v.Found = true
	v.Answer = f.n.String()
	c := comparer{prec: precision}
	v.Equal = c.equal(g, f.n)
	switch {
	case c.goldErr != nil:
		return Verdict{}, &GoldError{Gold: gold, Err: c.goldErr}
	case c.ansErr != nil:
		v.Equal = false
		v.Detail = fmt.Sprintf("answer %s is past a limit: %v", clip(v.Answer, 80), c.ansErr)
		return v, nil
	}
	sign := " ≠ "
	if v.Equal {
		sign = " = "
	}
	v.Detail = clip(v.Answer, 200) + sign + clip(v.Gold, 200)
	return v, nil
}

// Equal reports whether the answers a and b are equal, each found as
// Compare finds an answer in a text, numbers to precision decimal places.
// It is false when either gives no answer or is past a limit.
func Equal(a, b string, precision int) bool {
	if precision < 0 {
		precision = DefaultPrecision
	}
	fa, ok := find(a)
	if !ok || fa.err != nil {
		return false
	}
	fb, ok := find(b)
	if !ok || fb.err != nil {
		return false
	}
	c := comparer{prec: min(precision, MaxPrecision)}
	return c.equal(fb.n, fa.n) && c.goldErr == nil && c.ansErr == nil
}
