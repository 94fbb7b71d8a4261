package mathanswer

import (
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// DefaultPrecision is the number of decimal places numbers are compared
// to when either side was written with a decimal point or is irrational.
const DefaultPrecision = 6

// MaxPrecision is the largest precision accepted.
const MaxPrecision = 15

// comparer compares a gold answer with an answer and keeps the first limit
// either side ran into.
type comparer struct {
	prec            int
	goldErr, ansErr error
}

// equal reports whether answer a equals gold g.
func (c *comparer) equal(g, a *node) bool {
	if g.op == opRel || a.op == opRel {
		return c.relation(g, a)
	}
	switch g.op {
	case opList, opSet:
		if a.op == opList || a.op == opSet {
			return c.unordered(g.kids, a.kids)
		}
		if a.op == opUnion {
			return c.equal(a, g) // a list of inequalities against a union
		}
		return false
	case opEmpty:
		return a.op == opEmpty
	case opReals:
		return a.op == opReals || a.op == opTuple && len(a.kids) == 2 && a.open == '(' && a.clos == ')' &&
			isInf(a.kids[0], -1) && isInf(a.kids[1], 1)
	case opTuple:
		switch a.op {
		case opTuple:
			return g.open == a.open && g.clos == a.clos && c.ordered(g.kids, a.kids)
		case opMatrix:
			return (a.rows == 1 || a.cols == 1) && c.ordered(g.kids, a.kids)
		case opReals:
			return c.equal(a, g)
		}
		return false
	case opMatrix:
		switch a.op {
		case opMatrix:
			return g.rows == a.rows && g.cols == a.cols && c.ordered(g.kids, a.kids)
		case opTuple:
			return (g.rows == 1 || g.cols == 1) && c.ordered(g.kids, a.kids)
		}
		return false
	case opUnion:
		if a.op == opList {
			if u := unionOf(a); u != nil {
				return c.unordered(g.kids, u.kids)
			}
		}
		return a.op == opUnion && c.unordered(g.kids, a.kids)
	}
	if a.op == opUnion && g.op == opList {
		if u := unionOf(g); u != nil {
			return c.unordered(u.kids, a.kids)
		}
	}
	switch a.op {
	case opList, opSet, opEmpty, opReals, opTuple, opMatrix, opUnion:
		return false
	}
	if g.hasText() || a.hasText() {
		return textOf(g) == textOf(a)
	}
	if isLetter1(g) && isLetter1(a) {
		// Choice letters: (B) and b are B.
		return strings.EqualFold(g.name, a.name) // e, read as Euler's number, is a choice too
	}
	if isLetter1(g) && a.op == opMul && len(a.kids) == 2 && isLetter1(a.kids[0]) && isUpper(a.kids[0].name) && isUpper(g.name) {
		// A choice and its value: \textbf{(E)}\ 42.
		return g.name == a.kids[0].name
	}
	if a.op == opMul && len(a.kids) == 2 && isLetter1(a.kids[0]) && isUpper(a.kids[0].name) && !hasSym(g) && c.scalar(g, a.kids[1]) {
		// The value of a choice: \textbf{(C)}\ 12 against 12.
		return true
	}
	if g.op == opMul && len(g.kids) == 2 && isLetter1(g.kids[0]) && isUpper(g.kids[0].name) {
		// A gold choice with its value: its letter, or its value.
		if isLetter1(a) {
			return strings.EqualFold(g.kids[0].name, a.name)
		}
		if !hasSym(a) {
			return c.scalar(g.kids[1], a)
		}
	}
	return c.scalar(g, a)
}

// textOf is the text words are compared by: lowercased, without spaces,
// brackets and final punctuation.
func textOf(n *node) string {
	s := n.name
	if n.op != opText {
		s = n.String()
	}
	s = strings.ToLower(s)
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '(', ')', '.', ',', ':', '"', '\'', '*':
			return -1
		}
		return r
	}, s)
}

func isLetter1(n *node) bool {
	return n.op == opSym && len(n.name) == 1 || n.op == opConst && n.name == "e"
}

func isUpper(s string) bool { return s >= "A" && s <= "Z" }

func isInf(n *node, sign int) bool {
	if sign < 0 {
		return n.op == opNeg && isInf(n.kids[0], 1)
	}
	return n.op == opConst && n.name == "inf"
}

// ordered compares elements in order.
func (c *comparer) ordered(gs, as []*node) bool {
	if len(gs) != len(as) {
		return false
	}
	for i := range gs {
		if !c.equal(gs[i], as[i]) {
			return false
		}
	}
	return true
}

// maxGreedy is the largest list compared pair by pair in any order;
// longer lists are compared after sorting both by value.
const maxGreedy = 64

// unordered compares elements in any order, each answer element matching
// one gold element. Lists of numbers, and of tuples of numbers, are sorted
// by value and compared in order (n log n, however long); other lists of
// up to maxGreedy elements are matched greedily; longer ones are equal
// only when equal in the order written.
func (c *comparer) unordered(gs, as []*node) bool {
	if len(gs) != len(as) {
		return false
	}
	if c.ordered(gs, as) {
		return true
	}
	if gk, ok := sortKeys(gs); ok {
		if ak, ok := sortKeys(as); ok {
			gsorted, asorted := sortByKeys(gs, gk), sortByKeys(as, ak)
			if c.ordered(gsorted, asorted) {
				return true
			}
		}
	}
	if len(gs) > maxGreedy {
		return false
	}
	var buf [maxGreedy]bool
	used := buf[:len(as)]
outer:
	for _, g := range gs {
		for j, a := range as {
			if !used[j] && c.equal(g, a) {
				used[j] = true
				continue outer
			}
		}
		return false
	}
	return true
}

// sortKeys returns each element's key to sort by: its value (variables at
// the first seeded point), or the values of a tuple's elements; ok is
// false when some element has none.
func sortKeys(ns []*node) ([][]float64, bool) {
	keys := make([][]float64, len(ns))
	for i, n := range ns {
		var k []float64
		elems := []*node{n}
		if n.op == opTuple {
			elems = n.kids
		}
		for _, e := range elems {
			switch e.op {
			case opText, opRel, opPct, opSet, opList, opTuple, opUnion, opMatrix, opEmpty, opReals:
				return nil, false
			}
			x := numeric(e, 0)
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, false
			}
			k = append(k, x)
		}
		keys[i] = k
	}
	return keys, true
}

// sortByKeys returns ns sorted by keys, ties in their order.
func sortByKeys(ns []*node, keys [][]float64) []*node {
	idx := make([]int, len(ns))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return slices.Compare(keys[a], keys[b]) })
	out := make([]*node, len(ns))
	for i, j := range idx {
		out[i] = ns[j]
	}
	return out
}

// flip turns a relation written with > or >= around.
func flip(r *node) (string, []*node) {
	ops := strings.Fields(r.name)
	greater := true
	for _, o := range ops {
		if o != ">" && o != ">=" {
			greater = false
		}
	}
	if !greater {
		return r.name, r.kids
	}
	kids := make([]*node, len(r.kids))
	for i, k := range r.kids {
		kids[len(kids)-1-i] = k
	}
	flipped := make([]string, len(ops))
	for i, o := range ops {
		flipped[len(ops)-1-i] = strings.Replace(o, ">", "<", 1)
	}
	return strings.Join(flipped, " "), kids
}

// relation compares when either side is a relation.
func (c *comparer) relation(g, a *node) bool {
	// 4\pi \approx 12.57: either side is the answer.
	if a.op == opRel && strings.Contains(a.name, "~") {
		for _, k := range a.kids {
			if c.equal(g, k) {
				return true
			}
		}
		return false
	}
	if g.op == opRel && strings.Contains(g.name, "~") {
		for _, k := range g.kids {
			if c.equal(k, a) {
				return true
			}
		}
		return false
	}
	if g.op == opRel && a.op == opRel {
		// -2 \le x \le 7 and x \in [-2, 7]: the same interval.
		if gi, ai := intervalOf(g), intervalOf(a); gi != nil && ai != nil {
			if c.equal(gi, ai) {
				return true
			}
		}
		gn, gk := flip(g)
		an, ak := flip(a)
		if gn != an {
			return false
		}
		if c.ordered(gk, ak) {
			return true
		}
		if (gn == "=" || gn == "!=") && len(gk) == 2 {
			return c.equal(gk[0], ak[1]) && c.equal(gk[1], ak[0])
		}
		return false
	}
	if g.op == opRel {
		if v := relValue(g, a); v != nil {
			return c.equal(v, a)
		}
		return false
	}
	if v := relValue(a, g); v != nil {
		return c.equal(g, v)
	}
	return false
}

// intervalOf is the interval of a one-variable inequality or of x ∈ S,
// nil for other relations.
func intervalOf(r *node) *node {
	name, kids := flip(r)
	if name == "in" && len(kids) == 2 && kids[0].op == opSym {
		return kids[1]
	}
	if strings.Contains(name, "=") && !strings.Contains(name, "<=") {
		return nil
	}
	return relValue(r, &node{op: opTuple})
}

// unionOf is the union of the intervals of a list of inequalities in one
// variable (x < -2 or x > 4), nil when an element is not one.
func unionOf(l *node) *node {
	u := &node{op: opUnion}
	for _, k := range l.kids {
		if k.op != opRel {
			return nil
		}
		iv := intervalOf(k)
		if iv == nil {
			return nil
		}
		u.kids = append(u.kids, iv)
	}
	return u
}

// relValue is what relation r says, to compare with other, which is not
// a relation: the value of x = 3, the set of x ∈ S, and the interval of an
// inequality in one variable (x < 2 is (-∞, 2)). nil when it says none.
func relValue(r, other *node) *node {
	name, kids := flip(r)
	switch {
	case name == "=" || strings.Trim(name, "= ") == "":
		// x = 3, (x, y) = (2, 3), 3 = x; and a computation that ends in
		// its value, 200 - 50 = 150. An equation to solve, 2x + 1 = 3,
		// states no value.
		if isName(kids[0]) {
			return kids[len(kids)-1]
		}
		if isName(kids[len(kids)-1]) {
			return kids[0]
		}
		for _, k := range kids {
			if hasSym(k) {
				return nil
			}
		}
		return kids[len(kids)-1]
	case name == "in" && len(kids) == 2 && kids[0].op == opSym:
		return kids[1]
	}
	switch other.op {
	case opTuple, opUnion, opReals:
	default:
		return nil
	}
	inf := &node{op: opConst, name: "inf"}
	negInf := &node{op: opNeg, kids: []*node{inf}}
	bracket := func(op string, open bool) byte {
		if op == "<=" {
			if open {
				return '['
			}
			return ']'
		}
		if open {
			return '('
		}
		return ')'
	}
	ops := strings.Fields(name)
	switch {
	case len(kids) == 2 && kids[0].op == opSym && (ops[0] == "<" || ops[0] == "<="):
		return &node{op: opTuple, open: '(', clos: bracket(ops[0], false), kids: []*node{negInf, kids[1]}}
	case len(kids) == 2 && kids[1].op == opSym && (ops[0] == "<" || ops[0] == "<="):
		return &node{op: opTuple, open: bracket(ops[0], true), clos: ')', kids: []*node{kids[0], inf}}
	case len(kids) == 3 && kids[1].op == opSym && len(ops) == 2 && ops[0][0] == '<' && ops[1][0] == '<':
		return &node{op: opTuple, open: bracket(ops[0], true), clos: bracket(ops[1], false), kids: []*node{kids[0], kids[2]}}
	}
	return nil
}

// isName reports whether n is a variable or a tuple of them.
func isName(n *node) bool {
	if n.op == opSym {
		return true
	}
	if n.op != opTuple {
		return false
	}
	for _, k := range n.kids {
		if k.op != opSym {
			return false
		}
	}
	return true
}

// scalar compares two expressions: exactly when both are rationals,
// to c.prec decimal places when either holds a decimal, numerically
// otherwise, and at seeded points when they have variables.
func (c *comparer) scalar(g, a *node) bool {
	switch {
	case a.op == opPct && g.op == opPct:
		return c.scalar(g.kids[0], a.kids[0])
	case a.op == opPct:
		// 50% is 50, and 0.5.
		return c.scalar(g, a.kids[0]) || c.scalar(g, &node{op: opDiv, kids: []*node{a.kids[0], small(100)}})
	case g.op == opPct:
		return c.scalar(g.kids[0], a) || c.scalar(&node{op: opDiv, kids: []*node{g.kids[0], small(100)}}, a)
	}
	ge, gok, err := exact(g)
	if err != nil {
		c.goldErr = err
		return false
	}
	ae, aok, err := exact(a)
	if err != nil {
		c.ansErr = err
		return false
	}
	loose := inexactNode(g) || inexactNode(a)
	if gok && aok {
		if ge.Cmp(ae) == 0 {
			return true
		}
		if !loose {
			return false
		}
		if belowOne(ge) && belowOne(ae) {
			x, _ := ge.Float64()
			y, _ := ae.Float64()
			return sameSignificant(x, y, c.prec)
		}
		return roundRat(ge, c.prec).Cmp(roundRat(ae, c.prec)) == 0
	}
	var buf [8]string
	names := vars(a, vars(g, buf[:0]))
	if len(names) == 0 {
		x, y := numeric(g, -1), numeric(a, -1)
		if math.IsNaN(x) && math.IsNaN(y) {
			// No real value on either side (\sqrt{-1}): as written.
			return g.String() == a.String()
		}
		if math.IsInf(x, 0) || math.IsInf(y, 0) {
			// Infinity is infinity as written, never a number too large
			// for a float (10^{400}, e^{1000}) nor 1/0; those equal only
			// themselves as written.
			return isInf(g, 1) && isInf(a, 1) || isInf(g, -1) && isInf(a, -1) || g.String() == a.String()
		}
		return c.close(x, y, loose)
	}
	// A point where either side has no real value (\sqrt{x} at x < 0) is
	// outside the domain of one of them: it says nothing.
	tol := 1e-12
	if loose {
		tol = 2 * math.Pow(10, -float64(c.prec)) // about prec significant digits
	}
	valid := 0
	for t := 0; t < Points; t++ {
		x, y := numeric(g, t), numeric(a, t)
		if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
			continue
		}
		if d := math.Abs(x - y); d > tol*math.Max(math.Abs(x), math.Abs(y)) && !closeRel(x, y) {
			return false
		}
		valid++
	}
	if valid >= 2 {
		return true
	}
	return g.String() == a.String()
}

// close compares two finite numbers: to c.prec places when loose (a
// decimal on a side; below 1 in magnitude, to c.prec significant digits,
// so that 4.0e-7 and 2.5e-7 differ); else within a relative 1e-12.
func (c *comparer) close(x, y float64, loose bool) bool {
	if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return false
	}
	if closeRel(x, y) {
		return true
	}
	if !loose {
		return false
	}
	if math.Abs(x) < 1 && math.Abs(y) < 1 {
		return sameSignificant(x, y, c.prec)
	}
	scale := math.Pow(10, float64(c.prec))
	if math.Abs(x)*scale > 1<<52 || math.Abs(y)*scale > 1<<52 {
		return false
	}
	return math.Round(x*scale) == math.Round(y*scale)
}

// closeRel reports whether x and y agree to a relative 1e-12, or are both
// within 1e-15 of 0 (sin π): floating-point noise, not rounding.
func closeRel(x, y float64) bool {
	d := math.Abs(x - y)
	return d <= 1e-15 && math.Abs(x) <= 1e-15 && math.Abs(y) <= 1e-15 || d <= 1e-12*math.Max(math.Abs(x), math.Abs(y))
}

// belowOne reports whether |r| < 1.
func belowOne(r *big.Rat) bool {
	return new(big.Int).Abs(r.Num()).Cmp(r.Denom()) < 0
}

// sameSignificant reports whether x and y agree to prec significant
// digits (both rounded to them, halves to even as strconv rounds).
func sameSignificant(x, y float64, prec int) bool {
	if x == 0 || y == 0 {
		return x == y
	}
	p := max(prec, 1)
	return strconv.FormatFloat(x, 'e', p-1, 64) == strconv.FormatFloat(y, 'e', p-1, 64)
}

// roundRat rounds r to prec decimal places, halves away from zero, and
// returns r·10^prec rounded.
func roundRat(r *big.Rat, prec int) *big.Int {
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(prec)), nil)
	num := new(big.Int).Mul(new(big.Int).Abs(r.Num()), scale)
	num.Mul(num, big.NewInt(2))
	num.Add(num, r.Denom())
	den := new(big.Int).Mul(r.Denom(), big.NewInt(2))
	q := num.Quo(num, den)
	if r.Sign() < 0 {
		q.Neg(q)
	}
	return q
}
