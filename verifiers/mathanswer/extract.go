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
	// 1. The last box.
	if body, at := lastBoxed(text); at >= 0 {
		n, err := parse(body)
		return found{n: n, text: body, rule: RuleBoxed, err: err}, true
	}
	// 2. A closing phrase followed by math.
	var phraseWords *node
	var wordsText string
	if body, at := afterPhrase(text); at >= 0 {
		if n, words, err := parseWords(body); err == nil && words <= maxWords+1 {
			if !onlyWords(n) {
				return found{n: n, text: body, rule: RulePhrase}, true
			}
			phraseWords, wordsText = n, body
		}
	}
	// 3. The last math span, unless the last line is plain text that
	// states a number ("Hence, the number of solutions is 3.").
	if body, at := lastSpan(text); at >= 0 && !plainLastLine(text[at:]) {
		// A span of words is not math: "$50 and two tickets cost $".
		if n, words, err := parseWords(body); err == nil && !onlyWords(n) && words <= maxWords {
			return found{n: n, text: body, rule: RuleMath}, true
		}
	}
	// 4. The whole text.
	whole := trimAnswer(text)
	if whole != "" && len(whole) <= MaxAnswerBytes {
		// Words beside variables are prose ("I do not know"); beside a
		// number they are units ("5 apples").
		if n, words, err := parseWords(whole); err == nil && words <= maxWords && (n.op != opText || n.name != "") && (!hasSym(n) || proseWords(whole) == 0) {
			return found{n: n, text: whole, rule: RuleWhole}, true
		}
	}
	// 5. A closing phrase followed by words.
	if phraseWords != nil {
		return found{n: phraseWords, text: wordsText, rule: RulePhraseWords}, true
	}
	// 6. The last number.
	if body := lastNumber(text); body != "" {
		if n, err := parse(body); err == nil {
			return found{n: n, text: body, rule: RuleNumber}, true
		}
	}
	return found{}, false
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
	// One forward pass keeps the offsets of the last maxBoxes boxes:
	// strings.Index is much faster than strings.LastIndex, and the pass is
	// linear however many boxes the text holds.
	var ring [maxBoxes]int
	n := 0
	for _, cmd := range [...]string{`\boxed`, `\fbox`} {
		for i := 0; ; {
			k := strings.Index(s[i:], cmd)
			if k < 0 {
				break
			}
			ring[n%maxBoxes] = i + k
			n++
			i += k + len(cmd)
		}
	}
	offsets := ring[:min(n, maxBoxes)]
	if n > maxBoxes {
		// Boxes of both kinds beyond the ring: keep the last of all.
		offsets = lastOffsets(s)
	}
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

// lastOffsets returns the offsets of the last maxBoxes boxes of s of
// either kind, when the ring of one pass per kind may have mixed them.
func lastOffsets(s string) []int {
	var ring [maxBoxes]int
	n := 0
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
	return append([]int(nil), ring[:min(n, maxBoxes)]...)
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

// phrases are the closing phrases, lowercase, each with what may follow
// it before the answer.
var phrases = []string{"answer", "####"}

// afterPhrase returns what follows the last closing phrase of s: the math
// span that starts right after it, or the rest of its sentence or line.
// The offset is -1 when s has no closing phrase.
func afterPhrase(s string) (string, int) {
	at, end := -1, 0
	for _, p := range []string{"answer", "Answer", "ANSWER", "####"} {
		if i := lastIndex(s, p); i > at {
			at, end = i, i+len(p)
		}
	}
	if at < 0 {
		return "", -1
	}
	rest := s[end:]
	// Skip what joins the phrase to the answer: "is", ":", "=", "**",
	// "should be", "would be", "of", "will be".
	for {
		t := strings.TrimLeft(rest, " \t*:=_")
		for _, w := range []string{"is", "was", "should be", "would be", "will be", "of", "to the problem", "to this problem", "to the question"} {
			if strings.HasPrefix(t, w+" ") || strings.HasPrefix(t, w+":") || strings.HasPrefix(t, w+"$") || strings.HasPrefix(t, w+"\\") || t == w {
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
	if body, ok := spanAt(rest); ok {
		return body, at
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
	return trimAnswer(rest[:stop]), at
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

// lastSpan returns the contents of the last math span of s and its
// offset, -1 when there is none.
func lastSpan(s string) (string, int) {
	body, at := "", -1
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
		if b := strings.TrimSpace(s[j+len(open) : k]); b != "" {
			body, at = b, j
		}
		i = k + len(close)
	}
	return body, at
}

// lastNumber returns the last number of s as written: a sign, digits with
// thousands separators, a decimal part, or a fraction a/b.
func lastNumber(s string) string {
	end := len(s)
	for end > 0 && !isDigit(s[end-1]) {
		end--
	}
	if end == 0 {
		return ""
	}
	start := end
	for start > 0 {
		c := s[start-1]
		switch {
		case isDigit(c):
			start--
		case (c == '.' || c == ',' || c == '/') && start >= 2 && isDigit(s[start-2]):
			start--
		default:
			goto signed
		}
	}
signed:
	if start > 0 && s[start-1] == '-' {
		start--
	} else if start >= len("\u2212") && strings.HasSuffix(s[:start], "\u2212") {
		start -= len("\u2212")
	}
	return s[start:end]
}
