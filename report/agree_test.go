package report

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gavelhq/gavel/stats"
)

// cohenRef is Cohen's κ from two raters' labels, by the confusion matrix
// over any categories: po the diagonal share, pe Σ_k row_k·col_k / n².
func cohenRef(a, b []int) float64 {
	k := 0
	for i := range a {
		k = max(k, a[i]+1, b[i]+1)
	}
	m := make([][]float64, k)
	for i := range m {
		m[i] = make([]float64, k)
	}
	for i := range a {
		m[a[i]][b[i]]++
	}
	n := float64(len(a))
	var po, pe float64
	for i := range k {
		po += m[i][i] / n
		var row, col float64
		for j := range k {
			row += m[i][j]
			col += m[j][i]
		}
		pe += row * col / (n * n)
	}
	return (po - pe) / (1 - pe)
}

func TestCohenKappa(t *testing.T) {
	// The example of Cohen's kappa on Wikipedia: 50 proposals, both say
	// yes to 20, only A to 5, only B to 10, both no to 15. po = 35/50 =
	// 0.7, A says yes to 0.5 and B to 0.6, pe = 0.5·0.6 + 0.5·0.4 = 0.5,
	// κ = (0.7-0.5)/(1-0.5) = 0.4.
	got, ok := CohenKappa(20, 5, 10, 15)
	if !ok || !near(got, 0.4, 1e-12) {
		t.Errorf("CohenKappa(20, 5, 10, 15) = %v, %v, want 0.4", got, ok)
	}
	if _, ok := CohenKappa(7, 0, 0, 0); ok {
		t.Error("CohenKappa with one class only is defined, want undefined")
	}
	if _, ok := CohenKappa(0, 0, 0, 0); ok {
		t.Error("CohenKappa of nothing is defined, want undefined")
	}
	// Against the confusion-matrix form on random labels.
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		n := 5 + rng.IntN(40)
		a, b := make([]int, n), make([]int, n)
		var c [2][2]float64
		for i := range n {
			a[i], b[i] = rng.IntN(2), rng.IntN(2)
			c[1-a[i]][1-b[i]]++ // index 0 is pass (1)
		}
		got, ok := CohenKappa(c[0][0], c[0][1], c[1][0], c[1][1])
		want := cohenRef(a, b)
		if math.IsNaN(want) {
			continue
		}
		if !ok || !near(got, want, 1e-12) {
			t.Fatalf("trial %d: CohenKappa = %v, %v, want %v", trial, got, ok, want)
		}
	}
}

// fleissRef is Fleiss' κ from a raters × units matrix of categories, by
// counting agreeing rater pairs per unit.
func fleissRef(r [][]int, k int) float64 {
	units := len(r[0])
	m := len(r)
	var pbar float64
	share := make([]float64, k)
	for u := range units {
		agree := 0
		for i := range m {
			share[r[i][u]]++
			for j := range m {
				if i != j && r[i][u] == r[j][u] {
					agree++
				}
			}
		}
		pbar += float64(agree) / float64(m*(m-1))
	}
	pbar /= float64(units)
	var pe float64
	for _, s := range share {
		p := s / float64(units*m)
		pe += p * p
	}
	return (pbar - pe) / (1 - pe)
}

func TestFleissKappa(t *testing.T) {
	// The worked example of Fleiss' kappa on Wikipedia: 14 raters, 10
	// subjects, 5 categories; P̄ = 0.378, Pe = 0.213, κ = 0.210.
	table := [][]int{
		{0, 0, 0, 0, 14}, {0, 2, 6, 4, 2}, {0, 0, 3, 5, 6}, {0, 3, 9, 2, 0}, {2, 2, 8, 1, 1},
		{7, 7, 0, 0, 0}, {3, 2, 6, 3, 0}, {2, 5, 3, 2, 2}, {6, 5, 2, 1, 0}, {0, 2, 2, 3, 7},
	}
	var s Fleiss
	for _, row := range table {
		s.AddUnit(row)
	}
	got, ok := s.Kappa()
	if !ok || !near(got, 0.210, 5e-4) {
		t.Errorf("Fleiss κ of the Wikipedia example = %v, %v, want 0.210", got, ok)
	}
	// Against pair counting on random ratings, pooled from two halves.
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 30 {
		m, units, k := 2+rng.IntN(4), 4+rng.IntN(20), 2+rng.IntN(2)
		r := make([][]int, m)
		for i := range r {
			r[i] = make([]int, units)
			for u := range r[i] {
				r[i][u] = rng.IntN(k)
			}
		}
		var a, b Fleiss
		for u := range units {
			counts := make([]int, k)
			for i := range m {
				counts[r[i][u]]++
			}
			if u%2 == 0 {
				a.AddUnit(counts)
			} else {
				b.AddUnit(counts)
			}
		}
		a.Add(&b)
		want := fleissRef(r, k)
		got, ok := a.Kappa()
		if math.IsNaN(want) {
			continue
		}
		if !ok || !near(got, want, 1e-12) {
			t.Fatalf("trial %d: Fleiss κ = %v, %v, want %v", trial, got, ok, want)
		}
	}
}

// alphaRef is Krippendorff's α by its coincidence-matrix definition
// (Krippendorff 2011, "Computing Krippendorff's alpha-reliability"):
// o_ck = Σ_u (pairs (c, k) in u) / (m_u - 1), n_c = Σ_k o_ck,
// α = 1 - (n-1) Σ o_ck δ_ck / Σ n_c n_k δ_ck. units hold the values of
// each unit (NaN: missing).
func alphaRef(units [][]float64, delta func(a, b float64) float64) float64 {
	var vals []float64
	idx := map[float64]int{}
	for _, u := range units {
		for _, v := range u {
			if _, ok := idx[v]; !ok && !math.IsNaN(v) {
				idx[v] = len(vals)
				vals = append(vals, v)
			}
		}
	}
	k := len(vals)
	o := make([][]float64, k)
	for i := range o {
		o[i] = make([]float64, k)
	}
	for _, u := range units {
		var present []float64
		for _, v := range u {
			if !math.IsNaN(v) {
				present = append(present, v)
			}
		}
		m := len(present)
		if m < 2 {
			continue
		}
		for i := range present {
			for j := range present {
				if i != j {
					o[idx[present[i]]][idx[present[j]]] += 1 / float64(m-1)
				}
			}
		}
	}
	nc := make([]float64, k)
	var n float64
	for c := range k {
		for kk := range k {
			nc[c] += o[c][kk]
		}
		n += nc[c]
	}
	var do, de float64
	for c := range k {
		for kk := range k {
			d := delta(vals[c], vals[kk])
			do += o[c][kk] * d
			de += nc[c] * nc[kk] * d
		}
	}
	return 1 - (n-1)*do/de
}

func nominalDelta(a, b float64) float64 {
	if a == b {
		return 0
	}
	return 1
}

func intervalDelta(a, b float64) float64 { return (a - b) * (a - b) }

func TestKrippendorffAlpha(t *testing.T) {
	// The reliability data of Krippendorff (2011), "Computing
	// Krippendorff's alpha-reliability", section C: 4 observers, 12
	// units, missing values as NaN. Published: nominal α = 0.743,
	// interval α = 0.849.
	x := math.NaN()
	obs := [][]float64{
		{1, 2, 3, 3, 2, 1, 4, 1, 2, x, x, x},
		{1, 2, 3, 3, 2, 2, 4, 1, 2, 5, x, 3},
		{x, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, x},
		{1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, x},
	}
	units := make([][]float64, 12)
	for u := range units {
		for _, o := range obs {
			units[u] = append(units[u], o[u])
		}
	}
	nom, inter := alphas(units)
	if !near(nom, 0.743, 5e-4) || !near(inter, 0.849, 5e-4) {
		t.Errorf("α of Krippendorff's example: nominal %v interval %v, want 0.743 and 0.849", nom, inter)
	}
	if want := alphaRef(units, nominalDelta); !near(nom, want, 1e-12) {
		t.Errorf("nominal α = %v, coincidence matrix %v", nom, want)
	}
	if want := alphaRef(units, intervalDelta); !near(inter, want, 1e-12) {
		t.Errorf("interval α = %v, coincidence matrix %v", inter, want)
	}
	// Random data with missing values: pass/fail and scores.
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 40 {
		units := make([][]float64, 3+rng.IntN(30))
		raters := 2 + rng.IntN(3)
		for u := range units {
			for range raters {
				v := float64(rng.IntN(2))
				if trial%2 == 1 {
					v = float64(rng.IntN(11)) / 10
				}
				if rng.IntN(6) == 0 {
					v = x
				}
				units[u] = append(units[u], v)
			}
		}
		nom, inter := alphas(units)
		wn, wi := alphaRef(units, nominalDelta), alphaRef(units, intervalDelta)
		if !math.IsNaN(wn) && !near(nom, wn, 1e-9) {
			t.Fatalf("trial %d: nominal α = %v, coincidence matrix %v", trial, nom, wn)
		}
		if !math.IsNaN(wi) && !near(inter, wi, 1e-9) {
			t.Fatalf("trial %d: interval α = %v, coincidence matrix %v", trial, inter, wi)
		}
	}
	var one AlphaNominal
	one.AddUnit([]int{1, 1})
	one.AddUnit([]int{1, 1, 1})
	if _, ok := one.Alpha(); ok {
		t.Error("nominal α of one value only is defined, want undefined")
	}
}

// alphas computes both α of units through the sums, each unit added to
// one of two sums that are then pooled; values must be small whole
// numbers or tenths for the nominal codes.
func alphas(units [][]float64) (nominal, interval float64) {
	var n1, n2 AlphaNominal
	var i1, i2 AlphaInterval
	for u, vals := range units {
		var codes []int
		var xs []float64
		for _, v := range vals {
			if !math.IsNaN(v) {
				codes = append(codes, int(math.Round(v*10)))
				xs = append(xs, v)
			}
		}
		if u%2 == 0 {
			n1.AddUnit(codes)
			i1.AddUnit(xs)
		} else {
			n2.AddUnit(codes)
			i2.AddUnit(xs)
		}
	}
	n1.Add(&n2)
	i1.Add(&i2)
	nominal, ok1 := n1.Alpha()
	interval, ok2 := i1.Alpha()
	if !ok1 {
		nominal = math.NaN()
	}
	if !ok2 {
		interval = math.NaN()
	}
	return nominal, interval
}

func TestSampleSD(t *testing.T) {
	// 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squares 32, 32/7.
	got, ok := SampleSD([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	if !ok || !near(got, math.Sqrt(32.0/7), 1e-12) {
		t.Errorf("SampleSD = %v, want sqrt(32/7)", got)
	}
	if _, ok := SampleSD([]float64{1}); ok {
		t.Error("SampleSD of one value is defined")
	}
}

func TestThresholdSweep(t *testing.T) {
	// Scores and labels (p: human pass):
	//   0.1 f, 0.2 f, 0.4 p, 0.4 f, 0.6 p, 0.7 f, 0.9 p, 0.9 p
	// P = 4, N = 4. By threshold (predict pass at >= t), TPR, TNR, BA:
	//   0.1: 4/4 0/4 .5     0.2: 4/4 1/4 .625   0.4: 4/4 2/4 .75
	//   0.6: 3/4 3/4 .75    0.7: 2/4 3/4 .625   0.9: 2/4 4/4 .75
	// The best BA is 0.75, first at 0.4 (TPR 1, TNR 0.5).
	scores := []float64{0.9, 0.1, 0.4, 0.6, 0.2, 0.4, 0.9, 0.7}
	labels := []bool{true, false, true, true, false, false, true, false}
	got, ok := ThresholdSweep(scores, labels)
	want := Sweep{Threshold: 0.4, BalancedAccuracy: 0.75, TPR: 1, TNR: 0.5}
	if !ok || got != want {
		t.Errorf("ThresholdSweep = %+v, %v, want %+v", got, ok, want)
	}
	if _, ok := ThresholdSweep([]float64{1, 2}, []bool{true, true}); ok {
		t.Error("ThresholdSweep with one class is defined")
	}
}

func TestBootstrapStat(t *testing.T) {
	// The mean of clusters, as BootstrapMean computes it: same seed,
	// same generator, same interval.
	clusters := []stats.Cluster{{Sum: 3, N: 2}, {Sum: 0, N: 1}, {Sum: 5, N: 3}, {Sum: 1, N: 4}, {Sum: 2, N: 2}, {Sum: 4, N: 2}}
	cfg := stats.BootstrapConfig{Resamples: 500, Seed: 9}
	want, _ := stats.BootstrapMean(clusters, cfg)
	got := BootstrapStats(len(clusters), cfg, 2, func(idx []int, out []float64) {
		var r Ratio
		for _, i := range idx {
			r.Add(Ratio{clusters[i].Sum, float64(clusters[i].N)})
		}
		out[0], _ = r.Value()
		// The second statistic is defined on no resample.
	})
	if got[0] == nil || *got[0] != want || got[1] != nil {
		t.Errorf("BootstrapStats = %+v, want BootstrapMean's %+v and nil", got, want)
	}
}

// near reports whether a and b differ by at most tol.
func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
