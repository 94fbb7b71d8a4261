package jsonview

import (
	"math"
	"math/big"
)

// decimal is the exact value of a JSON number text, normalised as
//
//	±0.d1d2…dn × 10^exp
//
// with d1 and dn non-zero. The digits are not copied: they are the span
// [first, last] of the text, skipping a '.' that may lie inside.
type decimal struct {
	raw         []byte
	neg         bool
	zero        bool
	first, last int   // the significant digits in raw (inclusive)
	digits      int   // how many there are
	exp         int64 // valid unless bigExp
	// bigExp is set when the written exponent has more than 18 digits;
	// expText then holds them and expAdj what the digits add to them.
	bigExp  bool
	expNeg  bool
	expText []byte
	expAdj  int64
}

// parseDecimal normalises a number text that Parse has validated.
func parseDecimal(raw []byte) decimal {
	x := decimal{raw: raw}
	p, n := 0, len(raw)
	if raw[0] == '-' {
		x.neg = true
		p++
	}
	intStart := p
	for p < n && raw[p]-'0' < 10 {
		p++
	}
	intEnd := p
	fracStart, fracEnd := p, p
	if p < n && raw[p] == '.' {
		p++
		fracStart = p
		for p < n && raw[p]-'0' < 10 {
			p++
		}
		fracEnd = p
	}
	var e int64
	if p < n { // an exponent
		p++
		if raw[p] == '+' || raw[p] == '-' {
			x.expNeg = raw[p] == '-'
			p++
		}
		for p < n-1 && raw[p] == '0' {
			p++
		}
		if n-p > 18 {
			x.bigExp, x.expText = true, raw[p:]
		} else {
			for ; p < n; p++ {
				e = e*10 + int64(raw[p]-'0')
			}
			if x.expNeg {
				e = -e
			}
		}
	}

	// The first and last non-zero digits.
	x.first = -1
	for q := intStart; q < fracEnd; q++ {
		if q == intEnd {
			q = fracStart // a fraction has at least one digit
		}
		if raw[q] != '0' {
			x.first = q
			break
		}
	}
	if x.first < 0 {
		x.zero = true
		return x
	}
	for q := fracEnd - 1; ; q-- {
		if q == fracStart-1 && fracStart != intEnd {
			q = intEnd - 1
		}
		if raw[q] != '0' {
			x.last = q
			break
		}
	}
	x.digits = x.last - x.first + 1
	if x.first < intEnd && x.last >= fracStart && fracStart != intEnd {
		x.digits-- // the '.'
	}

	// 0.d1… × 10^exp: digits before the point raise it, zeros after lower it.
	var adj int64
	if x.first < intEnd {
		adj = int64(intEnd - x.first)
	} else {
		adj = -int64(x.first - fracStart)
	}
	if x.bigExp {
		x.expAdj = adj
	} else {
		x.exp = e + adj
	}
	return x
}

// digitAt returns the digit at position q of the text, or after it if q is
// the point, and the position that follows.
func (x *decimal) digitAt(q int) (byte, int) {
	if x.raw[q] == '.' {
		q++
	}
	return x.raw[q], q + 1
}

// cmpExp compares the exponents of two non-zero decimals.
func cmpExp(a, b *decimal) int {
	if !a.bigExp && !b.bigExp {
		switch {
		case a.exp < b.exp:
			return -1
		case a.exp > b.exp:
			return +1
		}
		return 0
	}
	return a.bigExpValue().Cmp(b.bigExpValue())
}

// bigExpValue returns the exponent as a big.Int; only for exponents written
// with more than 18 digits, which no real data has.
func (x *decimal) bigExpValue() *big.Int {
	if !x.bigExp {
		return big.NewInt(x.exp)
	}
	e, _ := new(big.Int).SetString(string(x.expText), 10)
	if x.expNeg {
		e.Neg(e)
	}
	return e.Add(e, big.NewInt(x.expAdj))
}

// cmpMagnitude compares |a| and |b|.
func cmpMagnitude(a, b *decimal) int {
	switch {
	case a.zero && b.zero:
		return 0
	case a.zero:
		return -1
	case b.zero:
		return +1
	}
	if c := cmpExp(a, b); c != 0 {
		return c
	}
	p, q := a.first, b.first
	for k := 0; k < a.digits && k < b.digits; k++ {
		var da, db byte
		da, p = a.digitAt(p)
		db, q = b.digitAt(q)
		if da != db {
			if da < db {
				return -1
			}
			return +1
		}
	}
	switch {
	case a.digits < b.digits:
		return -1
	case a.digits > b.digits:
		return +1
	}
	return 0
}

// compare compares a and b by value; -0 equals 0.
func (x decimal) compare(y decimal) int {
	xneg := x.neg && !x.zero
	yneg := y.neg && !y.zero
	switch {
	case xneg && !yneg:
		return -1
	case !xneg && yneg:
		return +1
	}
	c := cmpMagnitude(&x, &y)
	if xneg {
		return -c
	}
	return c
}

// int64 returns the value if it is an integer within the int64 range.
func (x decimal) int64() (int64, bool) {
	if x.zero {
		return 0, true
	}
	// An integer has exp >= digits; int64 has at most 19 digits.
	if x.bigExp || x.exp < int64(x.digits) || x.exp > 19 {
		return 0, false
	}
	var m uint64
	q := x.first
	for k := int64(0); k < x.exp; k++ {
		var d uint64
		if k < int64(x.digits) {
			var c byte
			c, q = x.digitAt(q)
			d = uint64(c - '0')
		}
		m = m*10 + d // at most 19 digits: no overflow
	}
	if x.neg {
		if m > 1<<63 {
			return 0, false
		}
		return -int64(m), true // -(1<<63) wraps to itself, as it should
	}
	if m > math.MaxInt64 {
		return 0, false
	}
	return int64(m), true
}

// CompareNumbers compares two number values exactly by decimal value,
// returning -1, 0 or +1; ok is false when either is not a number.
//
// No float64 is involved: 1, 1.0, 1e0 and 10e-1 are equal, -0 equals 0,
// and 9007199254740993 is greater than 9007199254740992. It does not
// allocate, except for exponents written with more than 18 digits.
func CompareNumbers(a, b Value) (c int, ok bool) {
	if a.Kind() != Number || b.Kind() != Number {
		return 0, false
	}
	return parseDecimal(a.Raw()).compare(parseDecimal(b.Raw())), true
}
