package mathanswer

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// parser is a recursive-descent parser over the tokens of one answer.
type parser struct {
	toks  []token
	i     int
	depth int
	nodes int
}

// parse parses an answer. The error of an answer past a limit is a
// *LimitError.
func parse(s string) (*node, error) {
	n, _, _, err := parseWords(s)
	return n, err
}

// isConnective reports whether a word joins the elements of a list.
func isConnective(w string) bool { return w == "or" || w == "and" }

// parseWords parses an answer and counts its words outside \text{},
// units included, and of those the prose: the words that are not
// connectives (or, and).
func parseWords(s string) (n *node, words, prose int, err error) {
	if len(s) > MaxAnswerBytes {
		return nil, 0, 0, limitErr("MaxAnswerBytes", "an answer of %d bytes", len(s))
	}
	var buf [32]token
	toks, err := lex(s, buf[:0])
	if err != nil {
		return nil, 0, 0, err
	}
	for _, t := range toks {
		if t.kind == tWord {
			words++
			if !isConnective(t.text) {
				prose++
			}
		}
	}
	p := parser{toks: toks}
	if n, err = p.top(); err != nil {
		return nil, words, prose, err
	}
	return normalize(n), words, prose, nil
}

func (p *parser) peek() token {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return token{kind: tEOF}
}

func (p *parser) is(kind tokKind, text string) bool {
	t := p.peek()
	return t.kind == kind && t.text == text
}

func (p *parser) errorf(format string, args ...any) error {
	t := p.peek()
	if t.kind == tEOF {
		return fmt.Errorf(format+" at the end", args...)
	}
	return fmt.Errorf(format+" at byte %d", append(args, t.pos)...)
}

func (p *parser) mk(n *node) (*node, error) {
	p.nodes++
	if p.nodes > MaxNodes {
		return nil, limitErr("MaxNodes", "more than %d numbers, names and operators", MaxNodes)
	}
	return n, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return limitErr("MaxDepth", "nested deeper than %d", MaxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// top parses a whole answer.
func (p *parser) top() (*node, error) {
	// Leading connectives and punctuation: ": 5", "= 5", "is 5".
	for p.is(tOp, ":") || p.is(tOp, "=") || p.is(tWord, "is") || p.is(tOp, ".") {
		p.i++
	}
	n, err := p.seq(nil)
	if err != nil {
		return nil, err
	}
	// Trailing punctuation: "5." or "5;".
	for p.is(tOp, ".") || p.is(tOp, ";") || p.is(tOp, ",") || p.is(tOp, ":") {
		p.i++
	}
	// A choice closed by a bracket: "B)".
	if n != nil && n.op == opSym && p.is(tClose, ")") && p.i == len(p.toks)-1 {
		p.i++
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errorf("unexpected %q", t.text)
	}
	if n == nil {
		return nil, fmt.Errorf("an empty answer")
	}
	return n, nil
}

// isSep reports whether the next token separates the elements of a list.
func (p *parser) isSep() bool {
	t := p.peek()
	switch t.kind {
	case tOp:
		return t.text == "," || t.text == ";"
	case tWord:
		return t.text == "or" || t.text == "and"
	}
	return false
}

// atStop reports whether the next token ends an element: a separator, a
// closing bracket, the end, or a stop of the caller's.
func (p *parser) atStop(stop func(token) bool) bool {
	t := p.peek()
	if t.kind == tEOF || t.kind == tClose || t.kind == tEnd || p.isSep() {
		return true
	}
	if t.kind == tOp && (t.text == "&" || t.text == "rowsep" || t.text == ".") {
		return true
	}
	return stop != nil && stop(t)
}

// seq parses elements separated by commas, semicolons, "or" and "and"; a
// list of one element is the element.
func (p *parser) seq(stop func(token) bool) (*node, error) {
	var elems []*node
	for {
		if p.atStop(stop) && !p.isSep() {
			break
		}
		if p.isSep() {
			p.i++
			continue
		}
		e, err := p.union(stop)
		if err != nil {
			return nil, err
		}
		elems = append(elems, e)
		if !p.isSep() {
			break
		}
	}
	switch len(elems) {
	case 0:
		return nil, nil
	case 1:
		return elems[0], nil
	}
	return p.mk(&node{op: opList, kids: elems})
}

// union parses relations joined by \cup.
func (p *parser) union(stop func(token) bool) (*node, error) {
	first, err := p.rel(stop)
	if err != nil {
		return nil, err
	}
	if !p.is(tOp, "cup") {
		return first, nil
	}
	u := &node{op: opUnion, kids: []*node{first}}
	for p.is(tOp, "cup") {
		p.i++
		k, err := p.rel(stop)
		if err != nil {
			return nil, err
		}
		u.kids = append(u.kids, k)
	}
	return p.mk(u)
}

var relOps = map[string]bool{"=": true, "<": true, "<=": true, ">": true, ">=": true, "!=": true, "in": true, "~": true}

// rel parses sums joined by relations; "a > b" is kept as written and
// turned around when compared. a:b (a ratio, a time) is read here too.
func (p *parser) rel(stop func(token) bool) (*node, error) {
	if p.is(tOp, "not") {
		return nil, p.errorf("a negation")
	}
	first, err := p.sum(stop)
	if err != nil {
		return nil, err
	}
	if p.is(tOp, ":") && first.op != opText && p.i+1 < len(p.toks) && startsFactor(p.toks[p.i+1]) {
		r := &node{op: opRatio, kids: []*node{first}}
		for p.is(tOp, ":") && p.i+1 < len(p.toks) && startsFactor(p.toks[p.i+1]) {
			p.i++
			k, err := p.sum(stop)
			if err != nil {
				return nil, err
			}
			r.kids = append(r.kids, k)
		}
		return p.mk(r)
	}
	t := p.peek()
	if t.kind != tOp || !relOps[t.text] {
		return first, nil
	}
	r := &node{op: opRel, kids: []*node{first}}
	var ops []string
	for {
		t := p.peek()
		if t.kind != tOp || !relOps[t.text] {
			break
		}
		p.i++
		ops = append(ops, t.text)
		var k *node
		if t.text == "in" {
			k, err = p.union(stop)
		} else {
			k, err = p.sum(stop)
		}
		if err != nil {
			return nil, err
		}
		r.kids = append(r.kids, k)
	}
	r.name = strings.Join(ops, " ")
	return p.mk(r)
}

// sum parses terms joined by +, - and ±; a ± b is the list a + b, a - b.
func (p *parser) sum(stop func(token) bool) (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	var terms []*node
	pm := -1 // the index of the term after ±
	for {
		neg, plusMinus := false, false
		if len(terms) > 0 || p.is(tOp, "-") || p.is(tOp, "+") || p.is(tOp, "pm") {
			switch {
			case p.is(tOp, "+"):
			case p.is(tOp, "-"):
				neg = true
			case p.is(tOp, "pm"):
				plusMinus = true
			default:
				if len(terms) > 0 {
					goto done
				}
			}
			p.i++
		}
		{
			t, err := p.term(stop)
			if err != nil {
				return nil, err
			}
			if neg {
				if t, err = p.mk(&node{op: opNeg, kids: []*node{t}}); err != nil {
					return nil, err
				}
			}
			if plusMinus {
				if pm >= 0 {
					return nil, p.errorf("more than one ±")
				}
				pm = len(terms)
			}
			terms = append(terms, t)
		}
	}
done:
	one := func(ts []*node) *node {
		if len(ts) == 1 {
			return ts[0]
		}
		return &node{op: opAdd, kids: ts}
	}
	if pm < 0 {
		return p.mk(one(terms))
	}
	plus := append([]*node(nil), terms...)
	minus := append([]*node(nil), terms...)
	minus[pm] = &node{op: opNeg, kids: []*node{terms[pm]}}
	return p.mk(&node{op: opList, kids: []*node{one(plus), one(minus)}})
}

// startsFactor reports whether t can start a factor multiplied without a
// sign (2x, 2\sqrt{2}, (x+1)(x+2)).
func startsFactor(t token) bool {
	switch t.kind {
	case tNum, tSym, tConst, tFunc, tText, tBegin:
		return true
	case tWord:
		return t.text != "or" && t.text != "and" && t.text != "is"
	case tOpen:
		return t.text == "(" || t.text == "{" || t.text == "floor" || t.text == "ceil"
	}
	return false
}

// term parses factors joined by *, / or nothing.
func (p *parser) term(stop func(token) bool) (*node, error) {
	acc, err := p.unary(stop)
	if err != nil {
		return nil, err
	}
	var factors []*node
	for {
		t := p.peek()
		if stop != nil && stop(t) {
			break
		}
		switch {
		case t.kind == tOp && t.text == "*":
			p.i++
			f, err := p.unary(stop)
			if err != nil {
				return nil, err
			}
			factors = append(factors, acc)
			acc = f
		case t.kind == tOp && t.text == "/":
			p.i++
			f, err := p.unary(stop)
			if err != nil {
				return nil, err
			}
			if acc, err = p.mk(&node{op: opDiv, kids: []*node{acc, f}}); err != nil {
				return nil, err
			}
		case startsFactor(t):
			f, err := p.power(stop)
			if err != nil {
				return nil, err
			}
			factors = append(factors, acc)
			acc = f
		default:
			goto done
		}
	}
done:
	if len(factors) == 0 {
		return acc, nil
	}
	return p.mk(&node{op: opMul, kids: append(factors, acc)})
}

// unary parses a signed power.
func (p *parser) unary(stop func(token) bool) (*node, error) {
	return p.signed(stop, p.unary, p.power)
}

// signed parses an operand after any number of signs: again (a sign
// follows a sign) or operand (what follows the signs).
func (p *parser) signed(stop func(token) bool, again, operand func(func(token) bool) (*node, error)) (*node, error) {
	if !p.is(tOp, "-") && !p.is(tOp, "+") {
		return operand(stop)
	}
	neg := p.peek().text == "-"
	p.i++
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	x, err := again(stop)
	if err != nil || !neg {
		return x, err
	}
	return p.mk(&node{op: opNeg, kids: []*node{x}})
}

// power parses a postfix expression and its exponent: a^b^c is a^(b^c),
// and ^\circ is a degree sign, dropped.
func (p *parser) power(stop func(token) bool) (*node, error) {
	base, err := p.postfix(stop)
	if err != nil {
		return nil, err
	}
	for p.is(tOp, "^") {
		p.i++
		if p.is(tOp, "deg") {
			p.i++
			continue
		}
		if p.is(tOpen, "{") && p.i+2 < len(p.toks) && p.toks[p.i+1].kind == tOp && p.toks[p.i+1].text == "deg" && p.toks[p.i+2].kind == tClose {
			p.i += 3
			continue
		}
		if err := p.enter(); err != nil {
			return nil, err
		}
		exp, err := p.exponent(stop)
		p.leave()
		if err != nil {
			return nil, err
		}
		// a^b^c: the exponent takes the next ^.
		if p.is(tOp, "^") {
			p.i++
			if err := p.enter(); err != nil {
				return nil, err
			}
			e2, err := p.exponent(stop)
			p.leave()
			if err != nil {
				return nil, err
			}
			exp = &node{op: opPow, kids: []*node{exp, e2}}
		}
		if base, err = p.mk(&node{op: opPow, kids: []*node{base, exp}}); err != nil {
			return nil, err
		}
		base, err = p.postfixOps(base)
		if err != nil {
			return nil, err
		}
	}
	return base, nil
}

// exponent parses what follows ^: a group, or one signed atom.
func (p *parser) exponent(stop func(token) bool) (*node, error) {
	return p.signed(stop, p.exponent, p.postfix)
}

// postfix parses a primary and its postfix operators.
func (p *parser) postfix(stop func(token) bool) (*node, error) {
	n, err := p.primary(stop)
	if err != nil {
		return nil, err
	}
	return p.postfixOps(n)
}

func (p *parser) postfixOps(n *node) (*node, error) {
	var err error
	for {
		t := p.peek()
		if t.kind != tOp {
			return n, nil
		}
		switch t.text {
		case "!":
			p.i++
			n, err = p.mk(&node{op: opFunc, name: "fact", kids: []*node{n}})
		case "%":
			p.i++
			n, err = p.mk(&node{op: opPct, kids: []*node{n}})
		case "deg":
			p.i++
		case "'":
			p.i++
			if n.op != opSym {
				return nil, p.errorf("a prime after %s", n)
			}
			n = &node{op: opSym, name: n.name + "'"}
		case "_":
			p.i++
			sub, err := p.subscript()
			if err != nil {
				return nil, err
			}
			switch {
			case n.op == opSym:
				n = &node{op: opSym, name: n.name + "_" + sub}
			case n.op == opNum && n.num.IsInt() && !n.inexact:
				// A number in another base, 204_5: compared as written.
				n = &node{op: opSym, name: n.num.String() + "_" + sub}
			default:
				return nil, p.errorf("a subscript after %s", n)
			}
		default:
			return n, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// subscript reads a subscript's text: a group or one token.
func (p *parser) subscript() (string, error) {
	t := p.peek()
	if t.kind == tOpen && t.text == "{" {
		var b strings.Builder
		p.i++
		depth := 1
		for {
			t := p.peek()
			if t.kind == tEOF {
				return "", p.errorf("an unclosed subscript")
			}
			p.i++
			if t.kind == tOpen {
				depth++
			}
			if t.kind == tClose {
				depth--
				if depth == 0 {
					return b.String(), nil
				}
			}
			b.WriteString(t.text)
		}
	}
	switch t.kind {
	case tNum, tSym, tConst, tWord:
		p.i++
		return t.text, nil
	}
	return "", p.errorf("a subscript")
}

// arg parses a command's argument: a braced group, or one token (\frac12
// takes the digits one by one).
func (p *parser) arg() (*node, error) {
	t := p.peek()
	if t.kind == tOpen && t.text == "{" {
		p.i++
		if err := p.enter(); err != nil {
			return nil, err
		}
		n, err := p.seq(nil)
		p.leave()
		if err != nil {
			return nil, err
		}
		if !p.is(tClose, "}") {
			return nil, p.errorf("a missing }")
		}
		p.i++
		if n == nil {
			return nil, p.errorf("an empty argument")
		}
		return n, nil
	}
	if t.kind == tNum && len(t.text) > 1 && isDigit(t.text[0]) {
		// \frac12: one digit is the argument; the rest is the next token.
		p.toks[p.i].text = t.text[1:]
		p.toks[p.i].pos++
		return p.number(t.text[:1])
	}
	return p.postfix(nil)
}

// isIntFrac reports whether n is a fraction of two integer literals.
func isIntFrac(n *node) bool {
	if n.op != opDiv {
		return false
	}
	a, b := n.kids[0], n.kids[1]
	return a.op == opNum && b.op == opNum && a.num.IsInt() && b.num.IsInt() && !a.inexact && !b.inexact && b.num.Sign() != 0
}

// number makes the node of a number token's text.
func (p *parser) number(text string) (*node, error) {
	// Bound the size before big.Rat builds it: 1e999999 is past MaxBits.
	digits, exp := len(text), 0
	if i := strings.IndexAny(text, "eE"); i >= 0 {
		digits = i
		e, err := strconv.Atoi(strings.TrimPrefix(text[i+1:], "+"))
		if err != nil || e > MaxBits/3 || e < -MaxBits/3 {
			return nil, limitErr("MaxBits", "a number of more than %d bits", MaxBits)
		}
		exp = e
	}
	if digits+max(exp, -exp) > MaxBits*3/10 {
		return nil, limitErr("MaxBits", "a number of more than %d bits", MaxBits)
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return nil, p.errorf("a number %q", text)
	}
	if r.Num().BitLen() > MaxBits || r.Denom().BitLen() > MaxBits {
		return nil, limitErr("MaxBits", "a number of more than %d bits", MaxBits)
	}
	return p.mk(&node{op: opNum, num: r, inexact: strings.ContainsAny(text, ".")})
}

// primary parses a number, name, function, bracketed list, set, text or
// matrix.
func (p *parser) primary(stop func(token) bool) (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.peek()
	switch t.kind {
	case tNum:
		p.i++
		n, err := p.number(t.text)
		if err != nil {
			return nil, err
		}
		// A mixed number: 3\frac{1}{2} is 3 + 1/2, and so is 3 1/2 in
		// plain text. The fraction is parsed once: when it is not of
		// integers, it is the next factor as it stands.
		if n.num.IsInt() && !n.inexact && n.num.Sign() >= 0 && p.is(tFunc, "frac") {
			p.i++
			f, err := p.function(token{kind: tFunc, text: "frac"})
			if err != nil {
				return nil, err
			}
			if isIntFrac(f) {
				return p.mk(&node{op: opAdd, kids: []*node{n, f}})
			}
			return p.mk(&node{op: opMul, kids: []*node{n, f}})
		}
		if n.num.IsInt() && !n.inexact && n.num.Sign() >= 0 && p.i+2 < len(p.toks) {
			a, slash, b := p.toks[p.i], p.toks[p.i+1], p.toks[p.i+2]
			if a.kind == tNum && a.space && !strings.ContainsAny(a.text, ".eE") && slash.kind == tOp && slash.text == "/" && !slash.space &&
				b.kind == tNum && !b.space && !strings.ContainsAny(b.text, ".eE") && (p.i+3 == len(p.toks) || p.toks[p.i+3].kind != tOp || p.toks[p.i+3].text != "^") {
				p.i += 3
				num, err := p.number(a.text)
				if err != nil {
					return nil, err
				}
				den, err := p.number(b.text)
				if err != nil {
					return nil, err
				}
				if den.num.Sign() != 0 {
					return p.mk(&node{op: opAdd, kids: []*node{n, {op: opDiv, kids: []*node{num, den}}}})
				}
				p.i -= 3
			}
		}
		return n, nil
	case tSym:
		p.i++
		return p.mk(&node{op: opSym, name: t.text})
	case tConst:
		p.i++
		return p.mk(&node{op: opConst, name: t.text})
	case tEmpty:
		p.i++
		return p.mk(&node{op: opEmpty})
	case tReals:
		p.i++
		return p.mk(&node{op: opReals})
	case tWord:
		p.i++
		return p.mk(&node{op: opText, name: t.text})
	case tText:
		p.i++
		return p.text(t)
	case tFunc:
		p.i++
		return p.function(t)
	case tBegin:
		p.i++
		return p.env(t.text)
	case tOp:
		if t.text == "|" {
			p.i++
			x, err := p.sum(func(t token) bool { return t.kind == tOp && t.text == "|" })
			if err != nil {
				return nil, err
			}
			if !p.is(tOp, "|") {
				return nil, p.errorf("a missing closing |")
			}
			p.i++
			return p.mk(&node{op: opFunc, name: "abs", kids: []*node{x}})
		}
	case tOpen:
		p.i++
		return p.bracket(t)
	}
	if t.kind == tEOF {
		return nil, p.errorf("a missing operand")
	}
	return nil, p.errorf("unexpected %q", t.text)
}

// text parses \text{...}: its contents as an answer when they are one
// (\text{(B)}, \text{5}), else as words.
func (p *parser) text(t token) (*node, error) {
	body := strings.TrimSpace(t.text)
	if body == "" {
		return p.mk(&node{op: opText, name: ""})
	}
	afterNumber := p.i >= 2 && (p.toks[p.i-2].kind == tNum || p.toks[p.i-2].kind == tClose)
	if p.depth < MaxDepth {
		var buf [8]token
		toks, err := lex(body, buf[:0])
		if err == nil {
			sub := parser{toks: toks, depth: p.depth, nodes: p.nodes}
			n, err := sub.top()
			// Math in words: \text{5}, \text{(B)}; not words read as
			// variables (\text{Yes} is not Y*e*s), nor a unit (152\text{ m}).
			if err == nil && n != nil && !n.hasText() && (n.op == opSym && len(n.name) == 1 && !afterNumber || !hasSym(n) || choices(n)) {
				p.nodes = sub.nodes
				return n, nil
			}
			if IsLimit(err) {
				return nil, err
			}
		}
	}
	return p.mk(&node{op: opText, name: normText(body)})
}

// choices reports whether n is a list of single letters: \text{A, C}.
func choices(n *node) bool {
	if n.op != opList && n.op != opSet {
		return false
	}
	for _, k := range n.kids {
		if k.op != opSym || len(k.name) != 1 {
			return false
		}
	}
	return true
}

// hasSym reports whether n has a variable.
func hasSym(n *node) bool {
	if n.op == opSym {
		return true
	}
	for _, k := range n.kids {
		if hasSym(k) {
			return true
		}
	}
	return false
}

// normText lowercases words and collapses their spaces.
func normText(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// function parses a function's arguments.
func (p *parser) function(t token) (*node, error) {
	switch t.text {
	case "frac", "binom":
		a, err := p.arg()
		if err != nil {
			return nil, err
		}
		b, err := p.arg()
		if err != nil {
			return nil, err
		}
		if t.text == "binom" {
			return p.mk(&node{op: opFunc, name: "binom", kids: []*node{a, b}})
		}
		return p.mk(&node{op: opDiv, kids: []*node{a, b}})
	case "usqrt":
		x, err := p.postfix(nil)
		if err != nil {
			return nil, err
		}
		return p.mk(&node{op: opFunc, name: "sqrt", kids: []*node{x}})
	case "sqrt":
		if p.is(tOpen, "[") {
			p.i++
			idx, err := p.seq(nil)
			if err != nil {
				return nil, err
			}
			if !p.is(tClose, "]") || idx == nil {
				return nil, p.errorf("a root's index")
			}
			p.i++
			x, err := p.arg()
			if err != nil {
				return nil, err
			}
			return p.mk(&node{op: opFunc, name: "root", kids: []*node{x, idx}})
		}
		x, err := p.arg()
		if err != nil {
			return nil, err
		}
		return p.mk(&node{op: opFunc, name: "sqrt", kids: []*node{x}})
	}
	// sin^2 x, \log_2 8, \sin(x), \sin x.
	var pow, base *node
	for {
		if p.is(tOp, "^") && pow == nil {
			p.i++
			e, err := p.exponent(nil)
			if err != nil {
				return nil, err
			}
			pow = e
			continue
		}
		if p.is(tOp, "_") && base == nil && (t.text == "log") {
			p.i++
			b, err := p.exponent(nil)
			if err != nil {
				return nil, err
			}
			base = b
			continue
		}
		break
	}
	x, err := p.power(nil)
	if err != nil {
		return nil, err
	}
	f := &node{op: opFunc, name: t.text, kids: []*node{x}}
	if base != nil {
		f.kids = append(f.kids, base)
	}
	if pow != nil {
		f = &node{op: opPow, kids: []*node{f, pow}}
	}
	return p.mk(f)
}

// bracket parses what an opening bracket starts: a group, a tuple or
// interval, a set, a floor or ceiling.
func (p *parser) bracket(open token) (*node, error) {
	switch open.text {
	case "floor", "ceil":
		x, err := p.seq(nil)
		if err != nil {
			return nil, err
		}
		if !p.is(tClose, open.text) || x == nil {
			return nil, p.errorf("a missing closing %s", open.text)
		}
		p.i++
		return p.mk(&node{op: opFunc, name: open.text, kids: []*node{x}})
	case "\\{":
		x, err := p.seq(nil)
		if err != nil {
			return nil, err
		}
		if !p.is(tClose, "\\}") {
			if p.peek().kind == tEOF {
				return nil, p.errorf("a missing \\}")
			}
			return nil, p.errorf("unexpected %q in a set", p.peek().text)
		}
		p.i++
		var elems []*node
		switch {
		case x == nil:
			return p.mk(&node{op: opEmpty})
		case x.op == opList:
			elems = x.kids
		default:
			elems = []*node{x}
		}
		return p.mk(&node{op: opSet, kids: elems})
	case "{":
		x, err := p.seq(nil)
		if err != nil {
			return nil, err
		}
		if !p.is(tClose, "}") {
			return nil, p.errorf("a missing }")
		}
		p.i++
		if x == nil {
			return p.mk(&node{op: opText, name: ""})
		}
		if x.op == opList {
			x.op = opSet // {1, 2} outside LaTeX is a set
		}
		return x, nil
	}
	// ( or [: elements separated by commas, closed by ) or ].
	var elems []*node
	commas := 0
	for {
		t := p.peek()
		if t.kind == tClose && (t.text == ")" || t.text == "]") {
			break
		}
		if t.kind == tEOF {
			return nil, p.errorf("a missing closing bracket")
		}
		if p.is(tOp, ",") || p.is(tOp, ";") {
			commas++
			p.i++
			continue
		}
		e, err := p.union(nil)
		if err != nil {
			return nil, err
		}
		elems = append(elems, e)
		if t := p.peek(); !(t.kind == tClose || p.is(tOp, ",") || p.is(tOp, ";")) {
			return nil, p.errorf("unexpected %q", t.text)
		}
	}
	closeTok := p.peek()
	p.i++
	if len(elems) == 0 {
		return nil, p.errorf("empty brackets")
	}
	if len(elems) == 1 && commas == 0 {
		return elems[0], nil
	}
	return p.mk(&node{op: opTuple, open: open.text[0], clos: closeTok.text[0], kids: elems})
}

// env parses \begin{ENV} ... \end{ENV}: a matrix, or for other
// environments (cases, aligned) the list of their cells.
func (p *parser) env(name string) (*node, error) {
	stop := func(t token) bool { return t.kind == tOp && (t.text == "&" || t.text == "rowsep") }
	var rows [][]*node
	var row []*node
	for {
		t := p.peek()
		if t.kind == tEOF {
			return nil, p.errorf("a missing \\end{%s}", name)
		}
		if t.kind == tEnd {
			p.i++
			if t.text != name {
				return nil, p.errorf("\\begin{%s} ended by \\end{%s}", name, t.text)
			}
			break
		}
		switch {
		case p.is(tOp, "&"):
			p.i++
			continue
		case p.is(tOp, "rowsep"):
			p.i++
			if len(row) > 0 {
				rows = append(rows, row)
			}
			row = nil
			continue
		}
		e, err := p.seq(stop)
		if err != nil {
			return nil, err
		}
		if e == nil {
			return nil, p.errorf("unexpected %q in \\begin{%s}", p.peek().text, name)
		}
		row = append(row, e)
	}
	if len(row) > 0 {
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, p.errorf("an empty \\begin{%s}", name)
	}
	switch name {
	case "pmatrix", "bmatrix", "Bmatrix", "matrix", "smallmatrix", "array", "vmatrix", "Vmatrix":
		cols := len(rows[0])
		m := &node{op: opMatrix, rows: len(rows), cols: cols}
		for _, r := range rows {
			if len(r) != cols {
				return nil, fmt.Errorf("a matrix with rows of %d and %d entries", cols, len(r))
			}
			m.kids = append(m.kids, r...)
		}
		if name == "vmatrix" || name == "Vmatrix" {
			return p.mk(&node{op: opFunc, name: "det", kids: []*node{m}})
		}
		return p.mk(m)
	}
	var cells []*node
	for _, r := range rows {
		cells = append(cells, r...)
	}
	if len(cells) == 1 {
		return cells[0], nil
	}
	return p.mk(&node{op: opList, kids: cells})
}

// normalize drops units and words beside a number (5 cm, 12 \text{
// apples}), reads "50 percent" as 50%, joins words, and flattens
// products and sums.
func normalize(n *node) *node {
	for i, k := range n.kids {
		n.kids[i] = normalize(k)
	}
	switch n.op {
	case opMul:
		var kept []*node
		var words []string
		for _, k := range n.kids {
			if k.op == opText {
				words = append(words, k.name)
				continue
			}
			if k.op == opMul {
				kept = append(kept, k.kids...)
				continue
			}
			kept = append(kept, k)
		}
		if len(kept) == 0 {
			return &node{op: opText, name: strings.TrimSpace(strings.Join(words, " "))}
		}
		var x *node
		if len(kept) == 1 {
			x = kept[0]
		} else {
			x = &node{op: opMul, kids: kept}
		}
		for _, w := range words {
			if w == "percent" || w == "%" {
				return &node{op: opPct, kids: []*node{x}}
			}
		}
		return x
	case opAdd:
		var flat []*node
		for _, k := range n.kids {
			if k.op == opAdd {
				flat = append(flat, k.kids...)
				continue
			}
			flat = append(flat, k)
		}
		n.kids = flat
	case opPow:
		if n.kids[0].op == opText {
			return n.kids[0] // cm^2 is a unit
		}
	case opNeg:
		if k := n.kids[0]; k.op == opNum {
			return &node{op: opNum, num: new(big.Rat).Neg(k.num), inexact: k.inexact}
		}
	case opTuple, opSet, opList:
		// Words beside the elements of a list ("1, 2 and 3") are dropped
		// by the rules above; a list of only words stays words.
	}
	return n
}
