package mathanswer

import (
	"math"
	"math/big"
	"sort"
)

// exact returns n's value as an exact rational when it has one that
// rational arithmetic reaches: numbers, + - * /, integer powers, roots of
// perfect powers, factorials, binomials, absolute values, floors and
// ceilings. ok is false for anything else (variables, π, irrational
// roots); err is a *LimitError when the value would pass MaxBits.
func exact(n *node) (r *big.Rat, ok bool, err error) {
	if n.op == opNum {
		return n.num, true, nil
	}
	if !n.memoDone {
		n.memo, n.memoOK, n.memoErr = exactOnce(n)
		n.memoDone = true
	}
	return n.memo, n.memoOK, n.memoErr
}

func exactOnce(n *node) (r *big.Rat, ok bool, err error) {
	switch n.op {
	case opNum:
		return n.num, true, nil
	case opNeg:
		x, ok, err := exact(n.kids[0])
		if !ok || err != nil {
			return nil, ok, err
		}
		return new(big.Rat).Neg(x), true, nil
	case opAdd, opMul:
		acc := new(big.Rat)
		if n.op == opMul {
			acc.SetInt64(1)
		}
		for _, k := range n.kids {
			x, ok, err := exact(k)
			if !ok || err != nil {
				return nil, ok, err
			}
			if n.op == opAdd {
				acc.Add(acc, x)
			} else {
				acc.Mul(acc, x)
			}
			if err := checkBits(acc); err != nil {
				return nil, false, err
			}
		}
		return acc, true, nil
	case opDiv:
		a, ok, err := exact(n.kids[0])
		if !ok || err != nil {
			return nil, ok, err
		}
		b, ok, err := exact(n.kids[1])
		if !ok || err != nil || b.Sign() == 0 {
			return nil, false, err
		}
		q := new(big.Rat).Quo(a, b)
		return q, true, checkBits(q)
	case opPow:
		return exactPow(n)
	case opFunc:
		return exactFunc(n)
	}
	return nil, false, nil
}

func checkBits(r *big.Rat) error {
	if r.Num().BitLen() > MaxBits || r.Denom().BitLen() > MaxBits {
		return limitErr("MaxBits", "a number of more than %d bits", MaxBits)
	}
	return nil
}

func exactPow(n *node) (*big.Rat, bool, error) {
	b, ok, err := exact(n.kids[0])
	if !ok || err != nil {
		return nil, ok, err
	}
	e, ok, err := exact(n.kids[1])
	if !ok || err != nil {
		return nil, ok, err
	}
	if !e.IsInt() {
		// A rational exponent: exact only for a perfect power, 8^{1/3}.
		if e.Denom().BitLen() > 8 || e.Num().BitLen() > 16 || b.Sign() < 0 {
			return nil, false, nil
		}
		root, ok := rootRat(b, e.Denom().Int64())
		if !ok {
			return nil, false, nil
		}
		b, e = root, new(big.Rat).SetInt(e.Num())
	}
	if b.Sign() == 0 {
		if e.Sign() < 0 {
			return nil, false, nil
		}
		if e.Sign() == 0 {
			return big.NewRat(1, 1), true, nil
		}
		return new(big.Rat), true, nil
	}
	if b.Cmp(big.NewRat(1, 1)) == 0 {
		return b, true, nil
	}
	if b.Cmp(big.NewRat(-1, 1)) == 0 {
		if e.Num().Bit(0) == 0 {
			return big.NewRat(1, 1), true, nil
		}
		return b, true, nil
	}
	ei := e.Num()
	bits := max(b.Num().BitLen(), b.Denom().BitLen())
	if !ei.IsInt64() || (bits-1)*int(min(abs64(ei.Int64()), MaxBits+1)) > MaxBits {
		return nil, false, limitErr("MaxBits", "a power of more than %d bits", MaxBits)
	}
	k := abs64(ei.Int64())
	num := new(big.Int).Exp(b.Num(), big.NewInt(k), nil)
	den := new(big.Int).Exp(b.Denom(), big.NewInt(k), nil)
	if ei.Sign() < 0 {
		num, den = den, num
	}
	r := new(big.Rat).SetFrac(num, den)
	return r, true, checkBits(r)
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// rootRat returns the k-th root of a non-negative r when it is rational.
func rootRat(r *big.Rat, k int64) (*big.Rat, bool) {
	if r.Sign() < 0 || k < 1 {
		return nil, false
	}
	n, ok1 := rootInt(r.Num(), k)
	d, ok2 := rootInt(r.Denom(), k)
	if !ok1 || !ok2 {
		return nil, false
	}
	return new(big.Rat).SetFrac(n, d), true
}

// rootInt returns the k-th root of x when x is a perfect k-th power.
func rootInt(x *big.Int, k int64) (*big.Int, bool) {
	if k == 1 {
		return x, true
	}
	if k == 2 {
		s := new(big.Int).Sqrt(x)
		return s, new(big.Int).Mul(s, s).Cmp(x) == 0
	}
	f, _ := new(big.Float).SetInt(x).Float64()
	guess := math.Round(math.Pow(f, 1/float64(k)))
	if math.IsInf(guess, 0) || guess > 1<<53 {
		return nil, false
	}
	for _, g := range []float64{guess - 1, guess, guess + 1} {
		if g < 0 {
			continue
		}
		gi := big.NewInt(int64(g))
		if new(big.Int).Exp(gi, big.NewInt(k), nil).Cmp(x) == 0 {
			return gi, true
		}
	}
	return nil, false
}

func exactFunc(n *node) (*big.Rat, bool, error) {
	args := make([]*big.Rat, len(n.kids))
	for i, k := range n.kids {
		x, ok, err := exact(k)
		if !ok || err != nil {
			return nil, ok, err
		}
		args[i] = x
	}
	x := args[0]
	switch n.name {
	case "abs":
		return new(big.Rat).Abs(x), true, nil
	case "sqrt":
		r, ok := rootRat(x, 2)
		return r, ok, nil
	case "root":
		k := args[1]
		if !k.IsInt() || !k.Num().IsInt64() || k.Num().Int64() < 1 || k.Num().Int64() > 64 {
			return nil, false, nil
		}
		if x.Sign() < 0 && k.Num().Bit(0) == 1 {
			r, ok := rootRat(new(big.Rat).Neg(x), k.Num().Int64())
			if !ok {
				return nil, false, nil
			}
			return r.Neg(r), true, nil
		}
		r, ok := rootRat(x, k.Num().Int64())
		return r, ok, nil
	case "floor", "ceil":
		q := new(big.Int).Quo(x.Num(), x.Denom()) // toward zero
		if !x.IsInt() {
			if n.name == "floor" && x.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			}
			if n.name == "ceil" && x.Sign() > 0 {
				q.Add(q, big.NewInt(1))
			}
		}
		return new(big.Rat).SetInt(q), true, nil
	case "fact":
		if !x.IsInt() || x.Sign() < 0 {
			return nil, false, nil
		}
		if !x.Num().IsInt64() || x.Num().Int64() > MaxFactorial {
			return nil, false, limitErr("MaxFactorial", "a factorial of more than %d", MaxFactorial)
		}
		f := new(big.Int).MulRange(1, x.Num().Int64())
		return new(big.Rat).SetInt(f), true, nil
	case "binom":
		k := args[1]
		if !x.IsInt() || !k.IsInt() || x.Sign() < 0 || k.Sign() < 0 || !x.Num().IsInt64() || !k.Num().IsInt64() {
			return nil, false, nil
		}
		if x.Num().Int64() > MaxFactorial {
			return nil, false, limitErr("MaxFactorial", "a binomial coefficient of n more than %d", MaxFactorial)
		}
		b := new(big.Int).Binomial(x.Num().Int64(), k.Num().Int64())
		r := new(big.Rat).SetInt(b)
		return r, true, checkBits(r)
	}
	return nil, false, nil
}

// inexact reports whether n holds a number written with a decimal point.
func inexactNode(n *node) bool {
	if n.op == opNum && n.inexact {
		return true
	}
	for _, k := range n.kids {
		if inexactNode(k) {
			return true
		}
	}
	return false
}

// vars appends the names of n's variables, sorted and without repeats.
func vars(n *node, dst []string) []string {
	var walk func(*node)
	walk = func(n *node) {
		if n.op == opSym {
			dst = append(dst, n.name)
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	walk(n)
	sort.Strings(dst)
	out := dst[:0]
	for i, v := range dst {
		if i == 0 || v != dst[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// pointSigns are the signs of the seeded points: positive at three of
// them (where roots and logarithms have real values), negative at two
// (where x and \sqrt{x^2}, or x + 1 and |x| + 1, differ).
var pointSigns = [Points]float64{1, 1, -1, 1, -1}

// point is the value variable name takes at the t-th seeded point: a
// fixed function of the name and t, of magnitude in [0.35, 2.65], so that
// both sides of a comparison see the same values and every run the same
// bytes.
func point(name string, t int) float64 {
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	frac := math.Mod(float64(t+1)*0.6180339887498949+float64(h%1009)/1009, 1)
	return pointSigns[t] * (0.35 + 2.3*frac)
}

// numeric evaluates n as a float64, with the variables at the t-th
// seeded point (t < 0: no variables). NaN when n has no real value there.
func numeric(n *node, t int) float64 {
	switch n.op {
	case opNum:
		f, _ := n.num.Float64()
		return f
	case opSym:
		if t < 0 {
			return math.NaN()
		}
		return point(n.name, t)
	case opConst:
		switch n.name {
		case "pi":
			return math.Pi
		case "e":
			return math.E
		case "inf":
			return math.Inf(1)
		}
	case opNeg:
		return -numeric(n.kids[0], t)
	case opAdd:
		s := 0.0
		for _, k := range n.kids {
			s += numeric(k, t)
		}
		return s
	case opMul:
		s := 1.0
		for _, k := range n.kids {
			s *= numeric(k, t)
		}
		return s
	case opDiv:
		return numeric(n.kids[0], t) / numeric(n.kids[1], t)
	case opPow:
		b, e := numeric(n.kids[0], t), numeric(n.kids[1], t)
		if b < 0 && e != math.Trunc(e) {
			// A real odd root of a negative number: (-8)^(1/3) is -2,
			// (-8)^(2/3) is 4.
			r, ok, _ := exact(n.kids[1])
			if !ok || !r.Denom().IsInt64() || r.Denom().Int64()%2 == 0 {
				return math.NaN()
			}
			v := math.Pow(-b, e)
			if r.Num().Bit(0) == 1 {
				return -v
			}
			return v
		}
		return math.Pow(b, e)
	case opPct:
		return numeric(n.kids[0], t) / 100
	case opFunc:
		return numericFunc(n, t)
	}
	return math.NaN()
}

func numericFunc(n *node, t int) float64 {
	x := numeric(n.kids[0], t)
	switch n.name {
	case "sqrt":
		return math.Sqrt(x)
	case "root":
		k := numeric(n.kids[1], t)
		if x < 0 && math.Mod(k, 2) == 1 {
			return -math.Pow(-x, 1/k)
		}
		return math.Pow(x, 1/k)
	case "abs":
		return math.Abs(x)
	case "floor":
		return math.Floor(x)
	case "ceil":
		return math.Ceil(x)
	case "sin":
		return math.Sin(x)
	case "cos":
		return math.Cos(x)
	case "tan":
		return math.Tan(x)
	case "sec":
		return 1 / math.Cos(x)
	case "csc":
		return 1 / math.Sin(x)
	case "cot":
		return 1 / math.Tan(x)
	case "asin":
		return math.Asin(x)
	case "acos":
		return math.Acos(x)
	case "atan":
		return math.Atan(x)
	case "sinh":
		return math.Sinh(x)
	case "cosh":
		return math.Cosh(x)
	case "tanh":
		return math.Tanh(x)
	case "exp":
		return math.Exp(x)
	case "ln":
		return math.Log(x)
	case "log10":
		return math.Log10(x)
	case "log":
		if len(n.kids) > 1 {
			return math.Log(x) / math.Log(numeric(n.kids[1], t))
		}
		return math.Log(x)
	case "fact":
		if x < 0 || x > 170 {
			return math.NaN()
		}
		g, _ := math.Lgamma(x + 1)
		return math.Exp(g)
	case "binom":
		k := numeric(n.kids[1], t)
		a, _ := math.Lgamma(x + 1)
		b, _ := math.Lgamma(k + 1)
		c, _ := math.Lgamma(x - k + 1)
		return math.Exp(a - b - c)
	}
	return math.NaN()
}
