package mathanswer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is a token's kind.
type tokKind uint8

const (
	tEOF   tokKind = iota
	tNum           // text: the digits, separators removed
	tSym           // text: one letter, or a Greek letter's name
	tWord          // text: a word (lowercased), a unit or a connective
	tFunc          // text: sin, cos, log, ln, sqrt, frac, binom, ...
	tConst         // text: pi, e, inf
	tText          // text: the contents of \text{...}
	tOp            // text: + - * / ^ _ ! % , ; & | = < <= > >= != in pm cup rowsep deg
	tOpen          // text: ( [ { \{ | floor ceil
	tClose         // text: ) ] } \} floor ceil
	tBegin         // text: the environment's name
	tEnd           // text: the environment's name
	tEmpty         // the empty set
	tReals         // the real numbers
)

// token is one token of an answer.
type token struct {
	kind  tokKind
	text  string
	space bool // whitespace came before it
	pos   int  // its byte offset in the answer
}

// funcs are the function names known with or without a backslash.
var funcs = map[string]string{
	"sin": "sin", "cos": "cos", "tan": "tan", "sec": "sec", "csc": "csc", "cot": "cot",
	"arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
	"log": "log", "ln": "ln", "exp": "exp", "sqrt": "sqrt", "lg": "log10",
}

// units are the two-letter words read as units after a number ("5 cm");
// words of three letters or more are always words.
var units = map[string]bool{
	"cm": true, "mm": true, "km": true, "kg": true, "mg": true, "ml": true, "mL": true,
	"ft": true, "hr": true, "in": false, "lb": true, "oz": true, "mi": true, "yd": true,
	"am": true, "pm": true, "or": true, "is": true, "of": true, "no": true,
	"so": true, "ok": true, "it": true,
}

// commandOps and runeOps are the commands and characters that are
// operators: the operator each stands for.
var (
	commandOps = map[string]string{
		"cdot": "*", "times": "*", "ast": "*", "cdotp": "*", "div": "/", "pm": "pm", "mp": "pm",
		"le": "<=", "leq": "<=", "leqslant": "<=", "leqq": "<=", "ge": ">=", "geq": ">=", "geqslant": ">=", "geqq": ">=",
		"lt": "<", "gt": ">", "ne": "!=", "neq": "!=", "equiv": "=", "simeq": "=", "cong": "=", "approx": "~",
		"in": "in", "cup": "cup",
	}
	runeOps = map[rune]string{
		'\u2212': "-", '\u2013': "-", '×': "*", '·': "*", '⋅': "*", '∙': "*", '÷': "/", '≈': "~",
		'≤': "<=", '⩽': "<=", '≥': ">=", '⩾': ">=", '≠': "!=", '±': "pm", '∪': "cup", '∈': "in",
	}
)

// words3 are the three-letter words and units read as words; other runs
// of three letters are products of variables (abc is a*b*c).
var words3 = map[string]bool{
	"and": true, "the": true, "are": true, "not": true, "yes": true, "all": true, "any": true,
	"min": true, "sec": true, "hrs": true, "mph": true, "lbs": true, "kgs": true, "cms": true,
	"mms": true, "kms": true, "ft.": true, "yds": true, "gal": true, "cup": true, "day": true,
	"men": true, "cat": true, "dog": true, "toy": true, "pen": true, "box": true, "way": true,
	"one": true, "two": true, "six": true, "ten": true, "odd": true, "for": true, "but": true,
	"has": true, "had": true, "was": true, "she": true, "her": true, "his": true, "him": true,
	"you": true, "our": true, "per": true, "off": true, "sum": true, "can": true, "get": true,
	"see": true, "who": true, "why": true, "how": true, "now": true, "new": true, "old": true,
	"red": true, "big": true, "top": true, "end": true, "pet": true, "cow": true, "hen": true,
	"egg": true, "car": true, "bus": true, "van": true, "pie": true, "tea": true, "ice": true,
	"kid": true, "boy": true, "age": true, "bag": true, "job": true, "row": true, "set": true,
}

// skipped are the commands that only lay out: they are dropped.
var skipped = map[string]bool{
	",": true, ";": true, ":": true, "!": true, " ": true, "quad": true, "qquad": true,
	"displaystyle": true, "textstyle": true, "scriptstyle": true, "left": true, "right": true,
	"big": true, "Big": true, "bigg": true, "Bigg": true, "bigl": true, "bigr": true, "Bigl": true,
	"Bigr": true, "biggl": true, "biggr": true, "Biggl": true, "Biggr": true, "middle": true,
	"$": true, "limits": true, "nolimits": true, "mathrm": true, "mathbf": true, "mathit": true,
	"boldsymbol": true, "bm": true, "mathsf": true, "operatorname": true, "rm": true, "bf": true,
	"it": true, "boxed": true, "fbox": true, "hline": true, "centering": true, "enspace": true,
	"thinspace": true, "negthinspace": true, "medspace": true, "thickspace": true, "hspace": true,
	"vphantom": true, "phantom": true, "mathord": true, "mathop": true, "ensuremath": true,
}

// greek are the Greek letters read as variables.
var greek = map[string]bool{
	"alpha": true, "beta": true, "gamma": true, "delta": true, "epsilon": true, "varepsilon": true,
	"zeta": true, "eta": true, "theta": true, "vartheta": true, "iota": true, "kappa": true,
	"lambda": true, "mu": true, "nu": true, "xi": true, "rho": true, "sigma": true, "tau": true,
	"upsilon": true, "phi": true, "varphi": true, "chi": true, "psi": true, "omega": true,
	"Gamma": true, "Delta": true, "Theta": true, "Lambda": true, "Xi": true, "Sigma": true,
	"Phi": true, "Psi": true, "Omega": true,
}

// lexer splits an answer into tokens.
type lexer struct {
	s     string
	i     int
	depth int // bracket depth, for commas as thousands separators
	toks  []token
	space bool
}

// lex returns the tokens of s.
func lex(s string, toks []token) ([]token, error) {
	l := lexer{s: s, toks: toks[:0]}
	for l.i < len(l.s) {
		if err := l.next(); err != nil {
			return l.toks, err
		}
		if len(l.toks) > MaxNodes {
			return l.toks, limitErr("MaxNodes", "more than %d tokens", MaxNodes)
		}
	}
	return l.toks, nil
}

func (l *lexer) emit(kind tokKind, text string, pos int) {
	l.toks = append(l.toks, token{kind: kind, text: text, space: l.space, pos: pos})
	l.space = false
}

func (l *lexer) next() error {
	c := l.s[l.i]
	pos := l.i
	switch {
	case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '~':
		l.i++
		l.space = true
		return nil
	case c >= '0' && c <= '9' || c == '.' && l.i+1 < len(l.s) && isDigit(l.s[l.i+1]):
		l.number()
		return nil
	case c == '\\':
		return l.command()
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		l.letters()
		return nil
	case c < utf8.RuneSelf:
		l.i++
		switch c {
		case '+', '-', '*', '/', '^', '_', '!', '%', ',', ';', '&', '|', '\'':
			l.emit(tOp, l.s[pos:l.i], pos)
		case '(', '[', '{':
			l.depth++
			l.emit(tOpen, l.s[pos:l.i], pos)
		case ')', ']', '}':
			l.depth--
			l.emit(tClose, l.s[pos:l.i], pos)
		case '=':
			l.emit(tOp, "=", pos)
		case '<', '>':
			op := string(c)
			if l.i < len(l.s) && l.s[l.i] == '=' {
				l.i++
				op += "="
			}
			l.emit(tOp, op, pos)
		case '$':
			l.space = true
		case ':':
			l.emit(tOp, ":", pos)
		case '.', '?':
			l.emit(tOp, ".", pos)
		case '"', '`', '#':
			l.space = true
		default:
			return fmt.Errorf("unexpected %q at byte %d", c, pos)
		}
		return nil
	}
	r, size := utf8.DecodeRuneInString(l.s[l.i:])
	l.i += size
	if op, ok := runeOps[r]; ok {
		l.emit(tOp, op, pos)
		return nil
	}
	switch r {
	case '°':
		l.emit(tOp, "deg", pos)
		l.skipScale()
	case 'π':
		l.emit(tConst, "pi", pos)
	case '∞':
		l.emit(tConst, "inf", pos)
	case '√':
		l.emit(tFunc, "usqrt", pos) // √12: the whole number, not one digit
	case '∅':
		l.emit(tEmpty, "", pos)
	case 'ℝ':
		l.emit(tReals, "", pos)
	case '\u00a0', '\u2009', '\u202f', '\u2002', '\u2003', '\u2006', '\u2007', '\u2008', '\u200a', '\u200b':
		l.space = true
	default:
		if unicode.IsLetter(r) {
			l.emit(tWord, strings.ToLower(string(r)), pos)
			return nil
		}
		if unicode.IsSpace(r) {
			l.space = true
			return nil
		}
		return fmt.Errorf("unexpected %q at byte %d", r, pos)
	}
	return nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number reads a number: digits with thousands separators (a comma outside
// brackets, a space, a thin space, "\," or "{,}" before exactly three
// digits), a decimal part and an exponent (1.5e3, 2E-4).
func (l *lexer) number() {
	pos := l.i
	var b []byte
	group := 0 // digits since the start or the last separator
	intPart := true
	seps := false
	for l.i < len(l.s) {
		c := l.s[l.i]
		if isDigit(c) {
			b = append(b, c)
			group++
			l.i++
			continue
		}
		if intPart && (!seps && group <= 3 || seps && group == 3) && group > 0 {
			if n := l.separator(); n > 0 && l.threeDigits(l.i+n) {
				l.i += n
				group = 0
				seps = true
				continue
			}
		}
		if c == '.' && intPart && l.i+1 < len(l.s) && isDigit(l.s[l.i+1]) {
			if seps && group != 3 {
				break
			}
			b = append(b, '.')
			intPart = false
			l.i++
			group = 0
			continue
		}
		break
	}
	if seps && group != 3 && intPart {
		// "12,34" is not a grouped number: leave what followed the
		// last separator to the next token. Rare; read as written.
	}
	// An exponent: e or E, an optional sign, digits, and then no letter.
	if l.i < len(l.s) && (l.s[l.i] == 'e' || l.s[l.i] == 'E') {
		j := l.i + 1
		if j < len(l.s) && (l.s[j] == '+' || l.s[j] == '-') {
			j++
		}
		k := j
		for k < len(l.s) && isDigit(l.s[k]) {
			k++
		}
		if k > j && (k == len(l.s) || !isLetter(l.s[k])) {
			b = append(b, l.s[l.i:k]...)
			l.i = k
		}
	}
	l.emit(tNum, string(b), pos)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// separator returns the length of a thousands separator at l.i, or 0.
func (l *lexer) separator() int {
	s := l.s[l.i:]
	switch {
	case strings.HasPrefix(s, "{,}"), strings.HasPrefix(s, ",\\!"):
		return 3
	case strings.HasPrefix(s, ",") && l.depth == 0:
		return 1
	case strings.HasPrefix(s, "\\,"), strings.HasPrefix(s, "\\ "), strings.HasPrefix(s, "\\;"):
		return 2
	case strings.HasPrefix(s, " "):
		return 1
	case strings.HasPrefix(s, "\u2009"), strings.HasPrefix(s, "\u202f"), strings.HasPrefix(s, "\u00a0"):
		return len("\u2009")
	}
	return 0
}

// threeDigits reports whether exactly three digits start at i.
func (l *lexer) threeDigits(i int) bool {
	if i+3 > len(l.s) || !isDigit(l.s[i]) || !isDigit(l.s[i+1]) || !isDigit(l.s[i+2]) {
		return false
	}
	return i+3 == len(l.s) || !isDigit(l.s[i+3])
}

// letters reads a run of letters: a known function, a unit, a word of
// three letters or more, or else one variable per letter ("xy" is x*y).
func (l *lexer) letters() {
	pos := l.i
	j := l.i
	for j < len(l.s) && isLetter(l.s[j]) {
		j++
	}
	run := l.s[l.i:j]
	if f, ok := funcs[run]; ok {
		l.i = j
		l.emit(tFunc, f, pos)
		return
	}
	switch run {
	case "pi":
		l.i = j
		l.emit(tConst, "pi", pos)
		return
	case "inf", "infty", "infinity":
		l.i = j
		l.emit(tConst, "inf", pos)
		return
	}
	prevNum := len(l.toks) > 0 && l.toks[len(l.toks)-1].kind == tNum
	switch strings.ToLower(run) {
	case "option", "choice":
		// "Option C" is the choice C.
		l.i = j
		l.space = true
		return
	case "minus", "negative":
		l.i = j
		l.emit(tOp, "-", pos)
		return
	case "plus":
		l.i = j
		l.emit(tOp, "+", pos)
		return
	case "not", "never", "cannot", "isn":
		// A negated statement is not an answer: "The answer is not 5".
		l.i = j
		l.emit(tOp, "not", pos)
		return
	}
	// A unit over a unit: km/h, m/s.
	if (len(run) >= 2 && units[run] || len(run) == 1 && (run == "m" || run == "s")) && j+1 < len(l.s) && l.s[j] == '/' && isLetter(l.s[j+1]) && l.space {
		k := j + 1
		for k < len(l.s) && isLetter(l.s[k]) {
			k++
		}
		if k-j-1 <= 3 {
			l.i = k
			l.emit(tWord, strings.ToLower(l.s[pos:k]), pos)
			return
		}
	}
	if len(run) >= 4 || len(run) == 3 && words3[strings.ToLower(run)] || len(run) == 2 && (units[run] || run == "in" && prevNum) {
		l.i = j
		l.emit(tWord, strings.ToLower(run), pos)
		return
	}
	for ; l.i < j; l.i++ {
		c := l.s[l.i : l.i+1]
		if c == "e" {
			l.emit(tConst, "e", l.i)
			continue
		}
		l.emit(tSym, c, l.i)
	}
}

// command reads a backslash command.
func (l *lexer) command() error {
	pos := l.i
	l.i++
	if l.i >= len(l.s) {
		return fmt.Errorf("a lone backslash at byte %d", pos)
	}
	c := l.s[l.i]
	if !isLetter(c) {
		l.i++
		switch c {
		case '{':
			l.depth++
			l.emit(tOpen, "\\{", pos)
		case '}':
			l.depth--
			l.emit(tClose, "\\}", pos)
		case '\\':
			l.emit(tOp, "rowsep", pos)
		case '%':
			l.emit(tOp, "%", pos)
		case '$', ',', ';', ':', '!', ' ', '>', '\n', '\t':
			l.space = true
		case '|':
			l.emit(tOp, "|", pos)
		case '(', ')', '[', ']':
			// Math delimiters left inside an answer: layout.
			l.space = true
		default:
			return fmt.Errorf("unknown command \\%c at byte %d", c, pos)
		}
		return nil
	}
	j := l.i
	for j < len(l.s) && isLetter(l.s[j]) {
		j++
	}
	name := l.s[l.i:j]
	l.i = j
	prevNum := len(l.toks) > 0 && (l.toks[len(l.toks)-1].kind == tNum || l.toks[len(l.toks)-1].kind == tClose)
	if prevNum && (name == "mathrm" || name == "mathit" || name == "rm") {
		// 5\mathrm{~m}: a unit after a number.
		save := l.i
		l.skipSpace()
		if body, err := l.group(); err == nil {
			if w := strings.Trim(body, " ~\\,"); w != "" && strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && r != '/' }) < 0 {
				l.emit(tText, w, pos)
				return nil
			}
		}
		l.i = save
	}
	if skipped[name] {
		if name == "left" || name == "right" || strings.HasPrefix(name, "big") || strings.HasPrefix(name, "Big") || name == "middle" {
			// \left. and \right. are empty delimiters.
			l.skipSpace()
			if l.i < len(l.s) && l.s[l.i] == '.' {
				l.i++
			}
		}
		if name == "hspace" || name == "vphantom" || name == "phantom" {
			l.skipSpace()
			if _, err := l.group(); err != nil {
				return err
			}
		}
		l.space = true
		return nil
	}
	switch name {
	case "text", "textbf", "textit", "textrm", "textnormal", "texttt", "textsf", "mbox", "hbox", "textup", "emph":
		l.skipSpace()
		body, err := l.group()
		if err != nil {
			return err
		}
		if w := normText(body); w == "or" || w == "and" {
			l.emit(tWord, w, pos) // x = 1 \text{ or } x = 2
			return nil
		}
		l.emit(tText, body, pos)
	case "mathbb":
		l.skipSpace()
		body, err := l.group()
		if err != nil {
			return err
		}
		if strings.TrimSpace(body) == "R" {
			l.emit(tReals, "", pos)
		} else {
			l.emit(tSym, "mathbb "+strings.TrimSpace(body), pos)
		}
	case "frac", "dfrac", "tfrac", "cfrac":
		l.emit(tFunc, "frac", pos)
	case "sqrt":
		l.emit(tFunc, "sqrt", pos)
	case "binom", "dbinom", "tbinom":
		l.emit(tFunc, "binom", pos)
	case "infty", "infin":
		l.emit(tConst, "inf", pos)
	case "pi":
		l.emit(tConst, "pi", pos)
	case "circ", "degree", "degrees":
		l.emit(tOp, "deg", pos)
		l.skipScale()
	case "emptyset", "varnothing":
		l.emit(tEmpty, "", pos)
	case "lvert", "rvert", "vert", "mid":
		l.emit(tOp, "|", pos)
	case "lfloor":
		l.emit(tOpen, "floor", pos)
	case "rfloor":
		l.emit(tClose, "floor", pos)
	case "lceil":
		l.emit(tOpen, "ceil", pos)
	case "rceil":
		l.emit(tClose, "ceil", pos)
	case "langle":
		l.depth++
		l.emit(tOpen, "(", pos)
	case "rangle":
		l.depth--
		l.emit(tClose, ")", pos)
	case "lbrace":
		l.depth++
		l.emit(tOpen, "\\{", pos)
	case "rbrace":
		l.depth--
		l.emit(tClose, "\\}", pos)
	case "begin", "end":
		l.skipSpace()
		env, err := l.group()
		if err != nil {
			return err
		}
		env = strings.TrimSuffix(strings.TrimSpace(env), "*")
		if name == "begin" {
			if env == "array" {
				l.skipSpace()
				if _, err := l.group(); err != nil {
					return err
				}
			}
			l.emit(tBegin, env, pos)
		} else {
			l.emit(tEnd, env, pos)
		}
	case "dots", "ldots", "cdots", "dotsc", "dotsb", "vdots", "ddots":
		l.emit(tWord, "...", pos)
	case "land", "wedge":
		l.emit(tWord, "and", pos)
	case "lor", "vee":
		l.emit(tWord, "or", pos)
	case "quad":
		l.space = true
	default:
		if op, ok := commandOps[name]; ok {
			l.emit(tOp, op, pos)
			return nil
		}
		if f, ok := funcs[name]; ok {
			l.emit(tFunc, f, pos)
			return nil
		}
		if greek[name] {
			l.emit(tSym, name, pos)
			return nil
		}
		// An unknown command names itself: \heartsuit is a symbol.
		l.emit(tSym, "\\"+name, pos)
	}
	return nil
}

// skipScale drops the C or F of a temperature after a degree sign, and
// the brace that may close ^{\circ} first.
func (l *lexer) skipScale() {
	j := l.i
	if j < len(l.s) && l.s[j] == '}' {
		j++
	}
	for j < len(l.s) && (l.s[j] == ' ' || l.s[j] == '~') {
		j++
	}
	if strings.HasPrefix(l.s[j:], `\mathrm{C}`) || strings.HasPrefix(l.s[j:], `\text{C}`) {
		return
	}
	if j < len(l.s) && (l.s[j] == 'C' || l.s[j] == 'F') && (j+1 == len(l.s) || !isLetter(l.s[j+1])) {
		if l.i < len(l.s) && l.s[l.i] == '}' {
			return // ^{\circ}C: the parser reads the brace; C stays (rare)
		}
		l.i = j + 1
	}
}

func (l *lexer) skipSpace() {
	for l.i < len(l.s) && (l.s[l.i] == ' ' || l.s[l.i] == '\t' || l.s[l.i] == '\n') {
		l.i++
	}
}

// group reads a braced group at l.i and returns its contents, or one
// character when no brace follows (\text x).
func (l *lexer) group() (string, error) {
	if l.i >= len(l.s) {
		return "", fmt.Errorf("a command needs an argument at byte %d", l.i)
	}
	if l.s[l.i] != '{' {
		_, size := utf8.DecodeRuneInString(l.s[l.i:])
		l.i += size
		return l.s[l.i-size : l.i], nil
	}
	end, ok := matchBrace(l.s, l.i)
	if !ok {
		return "", fmt.Errorf("an unclosed { at byte %d", l.i)
	}
	body := l.s[l.i+1 : end]
	l.i = end + 1
	return body, nil
}

// matchBrace returns the index of the brace closing the one at s[open],
// skipping escaped braces; ok is false when it is not closed or the
// nesting is deeper than MaxDepth.
func matchBrace(s string, open int) (int, bool) {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
			if depth > MaxDepth {
				return 0, false
			}
		case '}':
			depth--
			if depth == 0 {
				return i, true
			}
		}
	}
	return 0, false
}
