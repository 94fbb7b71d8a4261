// Command mathpairs writes distinct math answer pairs for timing gavel's
// math check against Math-Verify: a gold answer as datasets store it and
// a model's output, half of them short answers, half 1 to 2 KB of
// reasoning around the answer, a third of the answers wrong. Every pair
// holds numbers drawn for it alone, so no two pairs repeat and a cache of
// verdicts gains nothing; the same flags write the same bytes.
//
// Usage:
//
//	mathpairs -n 200000 -rows rows.jsonl -pairs pairs.jsonl [-every 100]
//
// writes the rollouts gavel grades (rollout_id, task_id "math", output,
// gold) to rows.jsonl and every -every-th pair as {"gold", "answer",
// "equal"} to pairs.jsonl, the sample Math-Verify checks.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
)

func main() {
	n := flag.Int("n", 200000, "number of pairs `N`")
	every := flag.Int("every", 100, "write every `K`-th pair to -pairs")
	seed := flag.Uint64("seed", 1, "random `SEED`")
	rowsOut := flag.String("rows", "", "rollouts `FILE` for gavel")
	pairsOut := flag.String("pairs", "", "pairs `FILE` for Math-Verify")
	flag.Parse()
	if *rowsOut == "" || *pairsOut == "" || *n < 1 || *every < 1 {
		fmt.Fprintln(os.Stderr, "usage: mathpairs -n N -rows FILE -pairs FILE [-every K] [-seed S]")
		os.Exit(2)
	}
	if err := run(*n, *every, *seed, *rowsOut, *pairsOut); err != nil {
		fmt.Fprintln(os.Stderr, "mathpairs:", err)
		os.Exit(1)
	}
}

func run(n, every int, seed uint64, rowsOut, pairsOut string) error {
	rf, err := os.Create(rowsOut)
	if err != nil {
		return err
	}
	defer rf.Close()
	pf, err := os.Create(pairsOut)
	if err != nil {
		return err
	}
	defer pf.Close()
	rw, pw := bufio.NewWriter(rf), bufio.NewWriter(pf)
	g := gen{r: rand.New(rand.NewPCG(seed, 7))}
	for i := range n {
		gold, answer, equal := g.pair()
		out := g.output(answer, i%2 == 1)
		row, _ := json.Marshal(map[string]any{"rollout_id": "m" + strconv.Itoa(i), "task_id": "math", "output": out, "gold": gold})
		rw.Write(row)
		rw.WriteByte('\n')
		if i%every == 0 {
			p, _ := json.Marshal(map[string]any{"gold": gold, "answer": out, "equal": equal})
			pw.Write(p)
			pw.WriteByte('\n')
		}
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	return pw.Flush()
}

type gen struct{ r *rand.Rand }

func (g gen) in(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

// pair returns a gold answer, an answer and whether they are equal.
func (g gen) pair() (gold, answer string, equal bool) {
	equal = g.r.IntN(3) != 0
	off := func(x int) int {
		if equal {
			return x
		}
		return x + g.in(1, 9)
	}
	switch g.r.IntN(8) {
	case 0: // an integer with thousands separators
		x := g.in(1000, 99999999)
		return strconv.Itoa(x), grouped(off(x)), equal
	case 1: // a fraction
		p, q := g.in(1, 97), g.in(2, 98)
		return fmt.Sprintf(`\frac{%d}{%d}`, p, q), fmt.Sprintf(`\dfrac{%d}{%d}`, off(p)*3, q*3), equal
	case 2: // a decimal against a fraction
		p := g.in(1, 999)
		return fmt.Sprintf(`\frac{%d}{8}`, p), strconv.FormatFloat(float64(off(p))/8, 'f', -1, 64), equal
	case 3: // a radical
		a, b := g.in(2, 30), []int{2, 3, 5, 6, 7, 10, 11}[g.r.IntN(7)]
		return fmt.Sprintf(`%d\sqrt{%d}`, a, b), fmt.Sprintf(`\sqrt{%d}`, off(a)*a*b), equal
	case 4: // a factored polynomial
		a, b := g.in(1, 40), g.in(1, 40)
		return fmt.Sprintf(`x^2+%dx+%d`, a+b, a*b), fmt.Sprintf(`(x+%d)(x+%d)`, off(a), b), equal
	case 5: // a set in another order
		a, b, c := g.in(-50, 50), g.in(51, 99), g.in(100, 999)
		return fmt.Sprintf(`\{%d, %d, %d\}`, a, b, c), fmt.Sprintf(`\{%d, %d, %d\}`, c, off(a), b), equal
	case 6: // an interval
		a, b := g.in(-99, 0), g.in(1, 99)
		return fmt.Sprintf(`[%d, %d)`, a, b), fmt.Sprintf(`\left[%d, %d\right)`, a, off(b)), equal
	default: // a multiple of pi
		k, m := g.in(1, 40), g.in(2, 12)
		return fmt.Sprintf(`\frac{%d\pi}{%d}`, k, m), fmt.Sprintf(`\frac{%d\pi}{%d}`, off(k)*2, m*2), equal
	}
}

// grouped writes x with commas between groups of three digits.
func grouped(x int) string {
	s := strconv.Itoa(x)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

var fillers = []string{
	"First we write down what the problem gives us: the quantities %d and %d, and the relation between them.",
	"Substituting $n = %d$ into the expression gives $%d$, which we keep for later.",
	"We check the arithmetic once more: %d plus %d is what we expect from the previous step.",
	"Note that $%d \\cdot %d$ appears in both terms, so it factors out cleanly.",
	"This step is easy to get wrong, so let us verify it with the values %d and %d.",
	"Simplifying the fraction $\\frac{%d}{%d}$ does not change the final count.",
	"The condition holds for every case we tried, from %d up to %d.",
}

// output writes a model's output around answer: short, or 1 to 2 KB of
// reasoning ending with the answer boxed or after a closing phrase.
func (g gen) output(answer string, long bool) string {
	if !long {
		switch g.r.IntN(3) {
		case 0:
			return `\boxed{` + answer + `}`
		case 1:
			return "$" + answer + "$"
		default:
			return "The answer is $" + answer + "$."
		}
	}
	var b strings.Builder
	target := g.in(1000, 2000)
	for b.Len() < target {
		fmt.Fprintf(&b, fillers[g.r.IntN(len(fillers))], g.in(2, 999), g.in(2, 999))
		b.WriteString(" ")
		if g.r.IntN(4) == 0 {
			b.WriteString("\n\n")
		}
	}
	if g.r.IntN(2) == 0 {
		b.WriteString("\n\nTherefore the final answer is $\\boxed{" + answer + "}$.")
	} else {
		b.WriteString("\n\nThe answer is $" + answer + "$.")
	}
	return b.String()
}
