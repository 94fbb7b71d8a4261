package mathanswer

import (
	"slices"
	"strings"
)

// Rule names how an answer was found in a text.
type Rule string

// The rules, in the order they are tried: the first that finds an answer
// wins.
const (
	// RuleBoxed: the last \boxed{...} or \fbox{...}. A model that boxes an
	// answer has said which it is; nothing else is looked at, and a boxed
	// answer that cannot be read is no answer.
	RuleBoxed Rule = "boxed"
	// RulePhrase: what follows the last closing phrase ("the answer is",
	// "Answer:", "final answer", "####"), when it holds some math: the
	// math span right after it, or the rest of its sentence. It comes
	// before math spans because reasoning is full of inline math and the
	// phrase says which value is the answer ("Let $n$ be ... The answer is
	// 42.").
	RulePhrase Rule = "phrase"
	// RuleMath: the last math span, $...$, $$...$$, \(...\) or \[...\].
	RuleMath Rule = "math"
	// RuleWhole: the whole text, when all of it reads as an answer (3/4,
	// 7,425,000, x^2+1, (B), or at most two words).
	RuleWhole Rule = "whole"
	// RulePhraseWords: what follows the last closing phrase, when it is
	// only words ("The answer is Monday.").
	RulePhraseWords Rule = "phrase"
	// RuleNumber: the last number in the text.
	RuleNumber Rule = "number"
)

// maxWords is the most words (units included) an answer found in a math
// span or as the whole text may hold, and one more after a closing
// phrase; more is prose, not an answer.
const maxWords = 2

// found is an answer found in a text.
type found struct {
	n    *node
	text string // the answer's text as written
	rule Rule
	err  error // the answer found could not be read
}

// find finds the answer of text. ok is false when the text gives none.
func find(text string) (f found, ok bool) {
	// 1. The last box, with the boxes just before it that a connective
	// joins to it (\boxed{2} and \boxed{-3}).
	if body, at := lastBoxed(text); at >= 0 {
		n, err := parse(body)
		if err == nil {
			n = joinEarlier(text, at, n, lastBoxed)
		}
		return found{n: n, text: body, rule: RuleBoxed, err: err}, true
	}
	// 2. A closing phrase followed by math, when no number follows its
	// sentence (a later number is a correction or a later step).
	var phraseWords *node
	var wordsText string
	if body, at, end := afterPhrase(text); at >= 0 {
		if negated(body) {
			// "The answer is not 5": that sentence states no answer; the
			// answer is looked for after it, or there is none.
			return find(text[end:])
		}
		n, words, _, err := parseWords(body)
		if IsLimit(err) {
			return found{text: body, rule: RulePhrase, err: err}, true
		}
		if err == nil && words <= maxWords+1 {
			switch {
			case !onlyWords(n) && !hasDigit(text[end:]):
				return found{n: n, text: body, rule: RulePhrase}, true
			case onlyWords(n):
				phraseWords, wordsText = n, body
			}
		}
	}
	// 3. The last math span, unless a number in plain text follows it
	// ("We get $x = 4$. Therefore, 8 cookies remain.").
	if body, at, end := lastSpan(text); at >= 0 && !hasPlainNumber(text[end:]) {
		// A span of words is not math: "$50 and two tickets cost $".
		n, words, _, err := parseWords(body)
		if IsLimit(err) {
			return found{text: body, rule: RuleMath, err: err}, true
		}
		if err == nil && !onlyWords(n) && words <= maxWords {
			return found{n: n, text: body, rule: RuleMath}, true
		}
	}
	// 4. The whole text.
	whole := dropRemark(trimAnswer(text))
	if whole != "" && len(whole) <= MaxAnswerBytes {
		// Words beside variables are prose ("I do not know"); beside a
		// number they are units ("5 apples").
		if n, words, prose, err := parseWords(whole); err == nil && words <= maxWords && (n.op != opText || n.name != "") && (!hasSym(n) || prose == 0) {
			return found{n: n, text: whole, rule: RuleWhole}, true
		}
	}
	// 5. A closing phrase followed by words.
	if phraseWords != nil {
		return found{n: phraseWords, text: wordsText, rule: RulePhraseWords}, true
	}
	// 6. The last number, or the bracketed tuple or interval it ends.
	if body := lastNumber(text); body != "" {
		if n, err := parse(body); err == nil {
			return found{n: n, text: body, rule: RuleNumber}, true
		}
	}
	return found{}, false
}

// joinEarlier joins to answer n, found at offset at of text by last, the
// answers found just before it that only a connective separates from it
// ("\boxed{2} and \boxed{-3}", "$x = 2$ or $x = -3$"): a list, compared
// in any order.
func joinEarlier(text string, at int, n *node, last func(string) (string, int)) *node {
	elems := []*node{n}
	for len(elems) < 16 {
		body, prev := last(text[:at])
		if prev < 0 {
			break
		}
		gap := text[prev:at]
		// The gap runs from the earlier answer's start: skip its body.
		if k := strings.LastIndex(gap, body); k >= 0 {
			gap = gap[k+len(body):]
		}
		if !isConnective(strings.ToLower(strings.Trim(gap, " \t\n$}),.;"))) && strings.Trim(gap, " \t\n$}),;") != "" {
			break
		}
		m, err := parse(body)
		if err != nil || m.op == opList {
			break
		}
		elems = append(elems, m)
		at = prev
	}
	if len(elems) == 1 {
		return n
	}
	slices.Reverse(elems)
	return &node{op: opList, kids: elems}
}

// negated reports whether an answer's text starts with a negation.
func negated(s string) bool {
	w, _, _ := strings.Cut(strings.ToLower(strings.TrimLeft(s, " *_")), " ")
	switch w {
	case "not", "never", "cannot", "isn't", "not:":
		return true
	}
	return false
}

// hasDigit reports whether s holds a digit.
func hasDigit(s string) bool { return strings.IndexAny(s, "0123456789") >= 0 }

// hasPlainNumber reports whether s holds a number outside math spans and
// boxes (a digit not glued to letters).
func hasPlainNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '$' || c == '\\' && i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '[') {
			return false // more math follows: the span rule's own business
		}
		if isDigit(c) && (i == 0 || !isLetter(s[i-1])) {
			return true
		}
	}
	return false
}

// dropRemark drops a final parenthetical that holds words: "14 (step 3)".
func dropRemark(s string) string {
	if !strings.HasSuffix(s, ")") {
		return s
	}
	i := strings.LastIndexByte(s, '(')
	if i <= 0 || strings.IndexByte(s[i:], ')') != len(s)-1-i {
		return s
	}
	inner := s[i+1 : len(s)-1]
	if strings.ContainsAny(inner, "\\$") || strings.HasSuffix(s[:i], "left") {
		return s // LaTeX, not a remark
	}
	letters := 0
	for j := 0; j < len(inner); j++ {
		if isLetter(inner[j]) {
			letters++
			if letters >= 2 && j > 0 && isLetter(inner[j-1]) {
				return strings.TrimSpace(s[:i])
			}
		} else {
			letters = 0
		}
	}
	return s
}

// plainLastLine reports whether the last line of s, which starts at a
// math span, is plain text with a digit and no math span.
func plainLastLine(s string) bool {
	s = strings.TrimSpace(s)
	i := strings.LastIndexByte(s, '\n')
	if i < 0 {
		return false
	}
	line := s[i+1:]
	return strings.IndexAny(line, "0123456789") >= 0 && !strings.Contains(line, "$") && !strings.Contains(line, `\(`) && !strings.Contains(line, `\[`)
}

// onlyWords reports whether n is words alone.
func onlyWords(n *node) bool { return n.op == opText }

// trimAnswer trims spaces, markdown emphasis and a final period.
func trimAnswer(s string) string {
	s = strings.TrimSpace(s)
	for {
		t := strings.TrimSpace(strings.Trim(s, "*_"))
		t = strings.TrimSuffix(t, ".")
		t = strings.TrimSpace(t)
		if t == s {
			return s
		}
		s = t
	}
}

// maxBoxes is how many of a text's last boxes are tried, last first, for
// one that closes.
const maxBoxes = 64

// lastBoxed returns the contents of the last closed \boxed{...} or
// \fbox{...} of s among its last maxBoxes boxes, and its offset (-1 when
// there is none).
func lastBoxed(s string) (string, int) {
	ring, n := lastOffsets(s)
	offsets := ring[:min(n, maxBoxes)]
	slices.Sort(offsets)
	limit := len(s)
	for k := len(offsets) - 1; k >= 0; k-- {
		i := offsets[k]
		j := i + len(`\boxed`)
		if strings.HasPrefix(s[i:], `\fbox`) {
			j = i + len(`\fbox`)
		}
		cmdEnd := j
		for j < len(s) && s[j] == ' ' {
			j++
		}
		if j < len(s) && s[j] == '{' {
			// A box closes before the next box starts, or not at all:
			// bounding the scan keeps finding linear in the text.
			if e, ok := matchBrace(s[:limit], j); ok {
				return s[j+1 : e], i
			}
			if braceDepth(s[j:limit]) > MaxDepth {
				// Closed or not, too deep to read: the box is there, and
				// it is past a limit (find reports it).
				return s[j:limit], i
			}
		} else if j > cmdEnd && j < len(s) {
			// \boxed 5: up to the next space or dollar.
			e := j
			for e < len(s) && s[e] != ' ' && s[e] != '$' && s[e] != '\n' {
				e++
			}
			return s[j:e], i
		}
		limit = i
	}
	return "", -1
}

// braceDepth returns the deepest nesting of braces in s.
func braceDepth(s string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
			deepest = max(deepest, depth)
		case '}':
			depth--
		}
	}
	return deepest
}

// lastOffsets returns the offsets of the last maxBoxes boxes of s, in
// any order, in the first min(n, maxBoxes) places of ring: one forward pass over the backslashes (strings.IndexByte is
// much faster than strings.LastIndex, and the pass stays linear however
// many boxes the text holds).
func lastOffsets(s string) (ring [maxBoxes]int, n int) {
	for i := 0; i < len(s); {
		k := strings.IndexByte(s[i:], '\\')
		if k < 0 {
			break
		}
		i += k
		if strings.HasPrefix(s[i:], `\boxed`) || strings.HasPrefix(s[i:], `\fbox`) {
			ring[n%maxBoxes] = i
			n++
		}
		i++
	}
	return ring, n
}

// lastIndex is strings.LastIndex by forward searches, which are much
// faster on long texts.
func lastIndex(s, sub string) int {
	last := -1
	for i := 0; ; {
		k := strings.Index(s[i:], sub)
		if k < 0 {
			return last
		}
		last = i + k
		i = last + 1
	}
}

// joiners are what may join a closing phrase to its answer.
var joiners = []string{"is", "was", "should be", "would be", "will be", "comes out to", "equals", "of", "to the problem", "to this problem", "to the question"}

// afterPhrase returns what follows the last closing phrase of s: the math
// span that starts right after it, or the rest of its sentence up to a
// remark. at is the phrase's offset (-1 when s has none) and end the
// offset where its sentence ends. A closing phrase is "final answer", or
// "answer" followed by a joiner, a colon or an equals sign, or "####" at
// the start of a line and followed by a number.
func afterPhrase(s string) (body string, at, end int) {
	at = -1
	var rest string
	for _, p := range []string{"answer", "Answer", "ANSWER", "####"} {
		// From the last occurrence back (found by forward searches, which
		// are much faster than strings.LastIndex): the last phrase that
		// qualifies is usually the last occurrence, and the search stops
		// there.
		for k := lastIndex(s, p); k > at; k = strings.LastIndex(s[:k], p) {
			after := s[k+len(p):]
			if p == "####" {
				if (k == 0 || s[k-1] == '\n') && hasDigitSoon(after) {
					at, rest = k, after
				}
				continue
			}
			if len(after) > 0 && isLetter(after[0]) {
				continue // "answered"
			}
			final := k >= 6 && strings.EqualFold(s[k-6:k], "final ")
			t := strings.TrimLeft(after, " *_")
			joined := strings.HasPrefix(t, ":") || strings.HasPrefix(t, "=")
			for _, w := range joiners {
				if strings.HasPrefix(t, w) && (len(t) == len(w) || !isLetter(t[len(w)])) {
					joined = true
				}
			}
			if final || joined {
				at, rest = k, after
			}
		}
	}
	if at < 0 {
		return "", -1, 0
	}
	// Skip what joins the phrase to the answer.
	for {
		t := strings.TrimLeft(rest, " \t*:=_")
		for _, w := range joiners {
			if strings.HasPrefix(t, w) && (len(t) == len(w) || !isLetter(t[len(w)])) {
				t = t[len(w):]
				break
			}
		}
		if t == rest {
			break
		}
		rest = t
	}
	rest = strings.TrimLeft(rest, " \t\n")
	base := len(s) - len(rest)
	if body, ok := spanAt(rest); ok {
		return body, at, base + len(body) + 2*len(spanDelim(rest))
	}
	// The rest of the sentence: up to a newline, or a period followed by
	// a space or the end.
	stop := len(rest)
	if i := strings.IndexByte(rest, '\n'); i >= 0 {
		stop = i
	}
	for i := 0; i+1 < stop; i++ {
		if rest[i] == '.' && (rest[i+1] == ' ' || rest[i+1] == '\n') {
			stop = i
			break
		}
	}
	end = base + stop
	sentence := rest[:stop]
	// A remark after the answer: "9 (12 - 3)", "7, since 3 + 4 = 7".
	if i := strings.Index(sentence, " ("); i > 0 {
		sentence = sentence[:i]
	}
	for i := 0; i+2 < len(sentence); i++ {
		if sentence[i] == ',' && sentence[i+1] == ' ' && isLetter(sentence[i+2]) {
			sentence = sentence[:i]
			break
		}
	}
	sentence = strings.TrimRight(strings.TrimSpace(sentence), "!")
	return trimAnswer(sentence), at, end
}

// hasDigitSoon reports whether a digit comes within the next few bytes.
func hasDigitSoon(s string) bool {
	s = strings.TrimLeft(s, " \t$-")
	return len(s) > 0 && isDigit(s[0])
}

// spanDelim returns the opening delimiter s starts with.
func spanDelim(s string) string {
	for _, d := range []string{"$$", "$", `\(`, `\[`} {
		if strings.HasPrefix(s, d) {
			return d
		}
	}
	return ""
}

// spanAt returns the contents of the math span that s starts with.
func spanAt(s string) (string, bool) {
	for _, d := range [][2]string{{"$$", "$$"}, {"$", "$"}, {`\(`, `\)`}, {`\[`, `\]`}} {
		if strings.HasPrefix(s, d[0]) {
			if k := closeSpan(s, len(d[0]), d[1]); k >= 0 {
				return s[len(d[0]):k], true
			}
		}
	}
	return "", false
}

// closeSpan returns the offset of the closing delimiter at or after i, not
// escaped by a backslash, or -1.
func closeSpan(s string, i int, delim string) int {
	for i < len(s) {
		k := strings.Index(s[i:], delim)
		if k < 0 {
			return -1
		}
		k += i
		if delim == "$" || delim == "$$" {
			if k > 0 && s[k-1] == '\\' {
				i = k + 1
				continue
			}
		}
		return k
	}
	return -1
}

// lastSpan returns the contents of the last math span of s, its offset
// (-1 when there is none) and the offset where it ends. A $ whose closing
// $ follows a space is a dollar sign, not math ("$15, so 4 tickets cost
// $60"): the scan moves on past it.
func lastSpan(s string) (body string, at, end int) {
	at = -1
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] != '$' && s[j] != '\\' {
			j++
		}
		if j == len(s) {
			break
		}
		var open, close string
		switch {
		case strings.HasPrefix(s[j:], "$$"):
			open, close = "$$", "$$"
		case s[j] == '$':
			open, close = "$", "$"
		case strings.HasPrefix(s[j:], `\(`):
			open, close = `\(`, `\)`
		case strings.HasPrefix(s[j:], `\[`):
			open, close = `\[`, `\]`
		default:
			i = j + 2 // an escape: \$ or another command
			continue
		}
		k := closeSpan(s, j+len(open), close)
		if k < 0 {
			break
		}
		if open == "$" && k > j+1 && (s[k-1] == ' ' || s[k-1] == '\n') {
			i = j + 1 // a dollar sign
			continue
		}
		if b := strings.TrimSpace(s[j+len(open) : k]); b != "" {
			body, at, end = b, j, k+len(close)
		}
		i = k + len(close)
	}
	return body, at, end
}

// lastNumber returns the last number of s as written (a sign, digits with
// thousands separators, a decimal part, or a fraction a/b), or the
// bracketed tuple or interval it closes ("The point is (2, -3)."). Digits
// glued to letters (AZ2A) are not a number.
func lastNumber(s string) string {
	end := len(s)
	for {
		for end > 0 && !isDigit(s[end-1]) {
			end--
		}
		if end == 0 {
			return ""
		}
		start := end
		for start > 0 {
			c := s[start-1]
			if isDigit(c) || (c == '.' || c == ',' || c == '/' || c == ':') && start >= 2 && isDigit(s[start-2]) {
				start--
				continue
			}
			break
		}
		if start > 0 && isLetter(s[start-1]) || end < len(s) && isLetter(s[end]) {
			end = start
			continue
		}
		if start > 0 && s[start-1] == '-' {
			start--
		} else if start >= len("\u2212") && strings.HasSuffix(s[:start], "\u2212") {
			start -= len("\u2212")
		}
		if g := closingGroup(s, start, end); g != "" {
			return g
		}
		return s[start:end]
	}
}

// closingGroup returns the bracketed group (a, b) or [a, b) that the
// number s[start:end] ends, or "".
func closingGroup(s string, start, end int) string {
	rest := strings.TrimLeft(s[end:], " ")
	if rest == "" || rest[0] != ')' && rest[0] != ']' {
		return ""
	}
	closeAt := len(s) - len(rest)
	open := strings.LastIndexAny(s[max(0, start-80):start], "([")
	if open < 0 {
		return ""
	}
	open += max(0, start-80)
	inner := s[open+1 : start]
	if strings.ContainsAny(inner, "()[]") || !strings.Contains(inner, ",") {
		return ""
	}
	return s[open : closeAt+1]
}
