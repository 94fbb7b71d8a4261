package mathanswer

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// adversarial are inputs built to run into the limits: towers, huge
// factorials and binomials, deep nesting, long answers and texts.
func adversarial() [][2]string {
	long := strings.Repeat("1+", MaxAnswerBytes) + "1"
	return [][2]string{
		{`\boxed{2^{2^{2^{2^{2^{2}}}}}}`, "5"},
		{`\boxed{10^{10^{10}}}`, `10^{10^{10}}`},
		{`\boxed{9^{9^{9^{9}}}}`, "9"},
		{`\boxed{(10^{5000})!}`, "1"},
		{`\boxed{1000!}`, `1000!`},
		{`\boxed{100000!}`, "1"},
		{`\boxed{\binom{100000}{50000}}`, "1"},
		{`\boxed{\binom{1000}{500}}`, `\binom{1000}{500}`},
		{`\boxed{\binom{16000}{8000}}`, `\binom{16000}{8000}`},
		{`\boxed{0.5^{100000}}`, "0"},
		{`\boxed{x^{10^{10}}}`, `x^{10^{10}}`},
		{`\boxed{` + strings.Repeat("{", 5000) + "1" + strings.Repeat("}", 5000) + "}", "1"},
		{strings.Repeat(`\boxed{`, 100000), "1"},
		{strings.Repeat(`\(`, 100000) + "5", "5"},
		{strings.Repeat("$", 100001) + "5", "5"},
		{strings.Repeat("(", 3000) + "1" + strings.Repeat(")", 3000), "1"},
		{strings.Repeat("-", 3000) + "1", "1"},
		{`\boxed{` + long + `}`, "1"},
		{long, long[:len(long)-2]},
		{strings.Repeat("The answer is 7. ", 60000), "7"},
		{strings.Repeat("a ", 500000) + "42", "42"},
		{`\boxed{\{` + strings.TrimSuffix(strings.Repeat("1, ", 400), ", ") + `\}}`, `\{` + strings.TrimSuffix(strings.Repeat("2, ", 400), ", ") + `\}`},
		{`\boxed{` + setOf(500, false) + `}`, setOf(500, true)},
		{`\boxed{\sqrt[64]{2}^{64}}`, "2"},
		{`\boxed{\frac{1}{0}}`, `\frac{1}{0}`},
		{`\boxed{\sqrt{-1}}`, `\sqrt{-1}`},
		{`\boxed{\log_{1} 5}`, `\log_{1} 5`},
	}
}

// setOf writes the set {1, ..., n}, reversed when rev.
func setOf(n int, rev bool) string {
	var b strings.Builder
	b.WriteString(`\{`)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		k := i + 1
		if rev {
			k = n - i
		}
		b.WriteString(strconv.Itoa(k))
	}
	b.WriteString(`\}`)
	return b.String()
}

// FuzzCompare checks that every comparison ends, within a bound far above
// what any takes, gives the same verdict twice, and that a gold equals
// itself.
func FuzzCompare(f *testing.F) {
	for _, p := range readCorpus(f) {
		f.Add(p.Answer, p.Gold)
	}
	for _, p := range adversarial() {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, text, gold string) {
		start := time.Now()
		v1, err1 := Compare(text, gold, -1)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Compare(%.100q, %.100q) took %v", text, gold, d)
		}
		v2, err2 := Compare(text, gold, -1)
		if v1 != v2 || (err1 == nil) != (err2 == nil) {
			t.Fatalf("Compare(%.100q, %.100q) = %+v, %v then %+v, %v", text, gold, v1, err1, v2, err2)
		}
		if err1 != nil {
			return
		}
		g, err := parseGold(gold)
		if err != nil {
			t.Fatalf("parseGold(%.100q): %v after Compare succeeded", gold, err)
		}
		c := comparer{prec: DefaultPrecision}
		if !c.equal(g, g) && c.goldErr == nil {
			t.Errorf("gold %.100q (%s) is not equal to itself", gold, g)
		}
		if v1.Found && v1.Answer == "" {
			t.Errorf("Compare(%.100q): found an empty answer", text)
		}
	})
}

// BenchmarkSlowest times every comparison of the corpus, the fuzz corpus
// (with $MATH_FUZZ_CACHE, the fuzzer's cached inputs too) and the
// adversarial inputs, each the fastest of three runs, and reports
// the slowest (max-ms) and what it was. Run it on an idle machine: it
// measures wall time, which is CPU time only when nothing else runs.
func BenchmarkSlowest(b *testing.B) {
	var inputs [][2]string
	for _, p := range readCorpus(b) {
		inputs = append(inputs, [2]string{p.Answer, p.Gold})
	}
	inputs = append(inputs, adversarial()...)
	fuzzed, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzCompare", "*"))
	if dir := os.Getenv("MATH_FUZZ_CACHE"); dir != "" {
		// The inputs the fuzzer kept in the build cache (make bench-math
		// names the directory).
		cached, _ := filepath.Glob(filepath.Join(dir, "*"))
		fuzzed = append(fuzzed, cached...)
	}
	for _, path := range fuzzed {
		if in, ok := readFuzzFile(path); ok {
			inputs = append(inputs, in)
		}
	}
	for b.Loop() {
		var worst time.Duration
		var which [2]string
		for _, in := range inputs {
			best := time.Duration(1 << 62)
			for range 3 {
				start := time.Now()
				_, _ = Compare(in[0], in[1], -1)
				best = min(best, time.Since(start))
			}
			if best > worst {
				worst, which = best, in
			}
		}
		b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
		b.ReportMetric(float64(len(inputs)), "inputs")
		b.Logf("slowest of %d inputs: %v for answer %.80q (%d bytes), gold %.80q", len(inputs), worst, which[0], len(which[0]), which[1])
	}
}

// readFuzzFile reads the two strings of a file of the fuzz corpus.
func readFuzzFile(path string) ([2]string, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return [2]string{}, false
	}
	var out [2]string
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "string(") || n == 2 {
			continue
		}
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(line, "string("), ")"))
		if err != nil {
			return [2]string{}, false
		}
		out[n] = s
		n++
	}
	return out, n == 2
}
