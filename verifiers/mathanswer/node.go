// Package mathanswer finds the final answer in what a model wrote and
// compares it with a gold answer as a reader would: numbers as exact
// rationals (decimals within a precision), radicals and constants
// numerically, expressions with variables at seeded points, and sets,
// tuples, intervals, relations, matrices, choice letters and words by
// their structure. Every step is bounded (see Limits): no input makes it
// hang or grow without bound.
//
// It is not public API: verifiers exports what a verifier author uses
// (verifiers.MathAnswer, verifiers.MathEqual, verifiers.MathCompare).
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package mathanswer

import (
	"math/big"
	"strconv"
	"strings"
)

// op is a node's operation.
type op uint8

const (
	opNum    op = iota // num, inexact when written with a decimal point
	opSym              // name: a variable
	opConst            // name: "pi", "e", "inf"
	opText             // name: words, lowercased
	opAdd              // kids: terms
	opMul              // kids: factors
	opDiv              // kids: numerator, denominator
	opPow              // kids: base, exponent
	opNeg              // kids: operand
	opFunc             // name, kids: arguments
	opPct              // kids: the number before %
	opSet              // kids: elements
	opTuple            // kids: elements; open, close: the brackets
	opList             // kids: elements of a bare list (1, 2 or 1 and 2)
	opUnion            // kids: intervals or sets
	opRel              // name: "=", "<", "<=", "!=", "in"; kids: sides
	opMatrix           // rows, cols; kids: elements row by row
	opEmpty            // the empty set
	opReals            // the real numbers
	opRatio            // kids: the terms of a:b (a ratio, a time of day)
)

// node is one node of a parsed answer.
type node struct {
	op         op
	inexact    bool // opNum: written with a decimal point or as a float
	open, clos byte // opTuple: '(' or '[', ')' or ']'
	rows, cols int  // opMatrix
	name       string
	num        *big.Rat
	kids       []*node

	// The memo of exact: computed once per node, however many
	// comparisons read it (a set's elements are compared pairwise).
	memoDone, memoOK bool
	memo             *big.Rat
	memoErr          error
}

// isNumber reports whether n is a plain number.
func (n *node) isNumber() bool { return n.op == opNum }

// hasText reports whether n holds words anywhere.
func (n *node) hasText() bool {
	if n.op == opText {
		return true
	}
	for _, k := range n.kids {
		if k.hasText() {
			return true
		}
	}
	return false
}

// String writes n as normalized text: the form actual and expected show.
func (n *node) String() string {
	var b strings.Builder
	n.write(&b, 0)
	return b.String()
}

// precedence levels for printing.
const (
	precSum = 1
	precMul = 2
	precNeg = 3
	precPow = 4
)

func (n *node) write(b *strings.Builder, outer int) {
	paren := func(p int, f func()) {
		if p < outer {
			b.WriteByte('(')
			f()
			b.WriteByte(')')
			return
		}
		f()
	}
	switch n.op {
	case opAdd, opMul, opDiv, opNeg, opPow, opFunc:
		// An expression of numbers alone is written as its value:
		// \frac{6}{8} as 3/4, 3\frac12 as 7/2.
		if r, ok, err := exact(n); ok && err == nil {
			v := &node{op: opNum, num: r, inexact: inexactNode(n)}
			if r.Sign() < 0 && outer > precSum {
				b.WriteByte('(')
				writeNum(b, v)
				b.WriteByte(')')
				return
			}
			writeNum(b, v)
			return
		}
	}
	switch n.op {
	case opNum:
		writeNum(b, n)
	case opSym, opText:
		b.WriteString(n.name)
	case opConst:
		switch n.name {
		case "inf":
			b.WriteString("∞")
		case "pi":
			b.WriteString("π")
		default:
			b.WriteString(n.name)
		}
	case opEmpty:
		b.WriteString("∅")
	case opReals:
		b.WriteString("ℝ")
	case opAdd:
		paren(precSum, func() {
			for i, k := range n.kids {
				if i > 0 {
					if k.op == opNeg {
						b.WriteString(" - ")
						k.kids[0].write(b, precMul)
						continue
					}
					b.WriteString(" + ")
				}
				k.write(b, precSum)
			}
		})
	case opMul:
		paren(precMul, func() {
			for i, k := range n.kids {
				if i > 0 {
					b.WriteByte('*')
				}
				k.write(b, precMul+1)
			}
		})
	case opDiv:
		paren(precMul, func() {
			n.kids[0].write(b, precMul)
			b.WriteByte('/')
			n.kids[1].write(b, precMul+1)
		})
	case opNeg:
		paren(precNeg, func() {
			b.WriteByte('-')
			n.kids[0].write(b, precNeg+1)
		})
	case opPow:
		paren(precPow, func() {
			n.kids[0].write(b, precPow+1)
			b.WriteByte('^')
			n.kids[1].write(b, precPow+1)
		})
	case opFunc:
		if n.name == "fact" {
			n.kids[0].write(b, precPow+1)
			b.WriteByte('!')
			return
		}
		b.WriteString(n.name)
		b.WriteByte('(')
		writeList(b, n.kids)
		b.WriteByte(')')
	case opPct:
		n.kids[0].write(b, precPow+1)
		b.WriteByte('%')
	case opSet:
		b.WriteByte('{')
		writeList(b, n.kids)
		b.WriteByte('}')
	case opTuple:
		b.WriteByte(n.open)
		writeList(b, n.kids)
		b.WriteByte(n.clos)
	case opList:
		writeList(b, n.kids)
	case opUnion:
		for i, k := range n.kids {
			if i > 0 {
				b.WriteString(" ∪ ")
			}
			k.write(b, 0)
		}
	case opRel:
		ops := strings.Fields(n.name)
		for i, k := range n.kids {
			if i > 0 {
				b.WriteByte(' ')
				b.WriteString(relText(ops[min(i-1, len(ops)-1)]))
				b.WriteByte(' ')
			}
			k.write(b, precSum)
		}
	case opRatio:
		for i, k := range n.kids {
			if i > 0 {
				b.WriteByte(':')
			}
			k.write(b, precSum)
		}
	case opMatrix:
		b.WriteByte('[')
		for r := 0; r < n.rows; r++ {
			if r > 0 {
				b.WriteString("; ")
			}
			writeList(b, n.kids[r*n.cols:(r+1)*n.cols])
		}
		b.WriteByte(']')
	}
}

func writeList(b *strings.Builder, kids []*node) {
	for i, k := range kids {
		if i > 0 {
			b.WriteString(", ")
		}
		k.write(b, 0)
	}
}

// relText is how a relation is printed.
func relText(r string) string {
	switch r {
	case "<=":
		return "≤"
	case "!=":
		return "≠"
	case "in":
		return "∈"
	case "~":
		return "≈"
	}
	return r
}

// writeNum writes a number: an integer as digits, a number written with a
// decimal point as a decimal, any other rational as p/q.
func writeNum(b *strings.Builder, n *node) {
	r := n.num
	if r.IsInt() {
		b.WriteString(r.Num().String())
		return
	}
	if n.inexact {
		if s, ok := finiteDecimal(r); ok {
			b.WriteString(s)
			return
		}
	}
	b.WriteString(r.Num().String())
	b.WriteByte('/')
	b.WriteString(r.Denom().String())
}

// finiteDecimal returns r as a decimal when its denominator has no prime
// factor other than 2 and 5 and it has at most 30 places.
func finiteDecimal(r *big.Rat) (string, bool) {
	for places := 1; places <= 30; places++ {
		s := r.FloatString(places)
		back, ok := new(big.Rat).SetString(s)
		if ok && back.Cmp(r) == 0 {
			s = strings.TrimRight(s, "0")
			return strings.TrimSuffix(s, "."), true
		}
	}
	return "", false
}

// small returns the node of a small integer.
func small(i int64) *node { return &node{op: opNum, num: big.NewRat(i, 1)} }

// itoa is strconv.Itoa, for details.
func itoa(i int) string { return strconv.Itoa(i) }
