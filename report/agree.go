package report

import (
	"math"
	"slices"

	"github.com/gavelhq/gavel/stats"
)

// The agreement statistics of gavel judge agreement and calibrate are kept
// as sums that add up over units (a rollout's check), so that a bootstrap
// over rollouts resamples per-rollout sums instead of recomputing from the
// rows: each type has an Add that pools another's sums and a method that
// computes the statistic from them, with ok false when it is undefined.

// CohenKappa returns Cohen's κ (Cohen 1960) of two raters on a pass/fail
// verdict, from the counts of units both passed (pp), only the first passed
// (pf), only the second passed (fp) and both failed (ff):
//
//	κ = (po - pe) / (1 - pe),  po = (pp+ff)/n,  pe = a·b + (1-a)(1-b),
//
// a and b each rater's pass share. ok is false when there is no unit or
// when pe is 1 (both raters gave one same class only: κ is 0/0).
func CohenKappa(pp, pf, fp, ff float64) (float64, bool) {
	n := pp + pf + fp + ff
	if n <= 0 {
		return 0, false
	}
	po := (pp + ff) / n
	a := (pp + pf) / n
	b := (pp + fp) / n
	pe := a*b + (1-a)*(1-b)
	if pe >= 1-1e-12 {
		return 0, false
	}
	return (po - pe) / (1 - pe), true
}

// Fleiss holds the sums of Fleiss' κ (Fleiss 1971) over units rated by the
// same number of raters into categories 0 to len(Counts)-1.
type Fleiss struct {
	// Units is the number of units; SumP the sum over units of the share
	// of agreeing rater pairs, P_i = (Σ_j n_ij² - m) / (m(m-1)).
	Units, SumP float64
	// Counts[j] is the number of ratings in category j.
	Counts []float64
}

// AddUnit adds a unit given its count of ratings in each category; units
// with fewer than two ratings are skipped.
func (s *Fleiss) AddUnit(counts []int) {
	m := 0
	sq := 0
	for _, c := range counts {
		m += c
		sq += c * c
	}
	if m < 2 {
		return
	}
	if len(s.Counts) < len(counts) {
		s.Counts = append(s.Counts, make([]float64, len(counts)-len(s.Counts))...)
	}
	for j, c := range counts {
		s.Counts[j] += float64(c)
	}
	s.Units++
	s.SumP += float64(sq-m) / float64(m*(m-1))
}

// Add pools the sums of o into s.
func (s *Fleiss) Add(o *Fleiss) {
	s.Units += o.Units
	s.SumP += o.SumP
	if len(s.Counts) < len(o.Counts) {
		s.Counts = append(s.Counts, make([]float64, len(o.Counts)-len(s.Counts))...)
	}
	for j, c := range o.Counts {
		s.Counts[j] += c
	}
}

// Kappa returns Fleiss' κ = (P̄ - Pe) / (1 - Pe), P̄ the mean of P_i and Pe
// the sum of the squared category shares. ok is false without units or
// when Pe is 1 (every rating in one category).
func (s *Fleiss) Kappa() (float64, bool) {
	var total float64
	for _, c := range s.Counts {
		total += c
	}
	if s.Units <= 0 || total <= 0 {
		return 0, false
	}
	var pe float64
	for _, c := range s.Counts {
		p := c / total
		pe += p * p
	}
	if pe >= 1-1e-12 {
		return 0, false
	}
	return (s.SumP/s.Units - pe) / (1 - pe), true
}

// AlphaNominal holds the sums of Krippendorff's α (Krippendorff 2004,
// "Content Analysis", ch. 11) with the nominal metric, over units whose
// values are categories 0 to len(Counts)-1. A unit with fewer than two
// values is not pairable and adds nothing.
//
// It uses the pairwise form: with n pairable values in all,
//
//	Do = (1/n) Σ_u (1/(m_u-1)) Σ_{i≠j in u} δ(v_i, v_j)
//	De = (1/(n(n-1))) Σ_{c≠k over all n values} δ(v_c, v_k)
//	α  = 1 - Do/De,
//
// where for the nominal metric δ is 1 for different values, so the
// expected disagreement is (n² - Σ_c n_c²) / (n(n-1)).
type AlphaNominal struct {
	N, Do  float64
	Counts []float64
}

// AddUnit adds the values of one unit.
func (s *AlphaNominal) AddUnit(values []int) {
	m := len(values)
	if m < 2 {
		return
	}
	var d float64
	for i, a := range values {
		for j, b := range values {
			if i != j && a != b {
				d++
			}
		}
		if a >= len(s.Counts) {
			s.Counts = append(s.Counts, make([]float64, a+1-len(s.Counts))...)
		}
		s.Counts[a]++
	}
	s.N += float64(m)
	s.Do += d / float64(m-1)
}

// Add pools the sums of o into s.
func (s *AlphaNominal) Add(o *AlphaNominal) {
	s.N += o.N
	s.Do += o.Do
	if len(s.Counts) < len(o.Counts) {
		s.Counts = append(s.Counts, make([]float64, len(o.Counts)-len(s.Counts))...)
	}
	for j, c := range o.Counts {
		s.Counts[j] += c
	}
}

// Alpha returns α; ok is false with fewer than two pairable values or
// when every value is the same (no expected disagreement: α is 0/0).
func (s *AlphaNominal) Alpha() (float64, bool) {
	if s.N < 2 {
		return 0, false
	}
	sq := 0.0
	for _, c := range s.Counts {
		sq += c * c
	}
	de := (s.N*s.N - sq) / (s.N * (s.N - 1))
	if de <= 0 {
		return 0, false
	}
	return 1 - (s.Do/s.N)/de, true
}

// AlphaInterval holds the sums of Krippendorff's α with the interval
// metric δ(a, b) = (a-b)², in the pairwise form of AlphaNominal. The
// expected disagreement needs only the moments of the pooled values:
//
//	Σ_{c≠k} (x_c - x_k)² = 2n Σx² - 2(Σx)².
type AlphaInterval struct {
	N, Do, Sum, SumSq float64
}

// AddUnit adds the values of one unit.
func (s *AlphaInterval) AddUnit(values []float64) {
	m := len(values)
	if m < 2 {
		return
	}
	var d float64
	for i, a := range values {
		for j := i + 1; j < m; j++ {
			e := a - values[j]
			d += 2 * e * e
		}
		s.Sum += a
		s.SumSq += a * a
	}
	s.N += float64(m)
	s.Do += d / float64(m-1)
}

// Add pools the sums of o into s.
func (s *AlphaInterval) Add(o *AlphaInterval) {
	s.N += o.N
	s.Do += o.Do
	s.Sum += o.Sum
	s.SumSq += o.SumSq
}

// Alpha returns α; ok is false with fewer than two pairable values or
// when they are all equal.
func (s *AlphaInterval) Alpha() (float64, bool) {
	if s.N < 2 {
		return 0, false
	}
	de := (2*s.N*s.SumSq - 2*s.Sum*s.Sum) / (s.N * (s.N - 1))
	// The moment form cancels; a spread below rounding is no spread.
	if de <= 1e-12*max(1, s.SumSq/s.N) {
		return 0, false
	}
	return 1 - (s.Do/s.N)/de, true
}

// Ratio is a pooled mean Σ Sum / Σ N (a mean absolute difference over
// pairs, a share, a mean standard deviation).
type Ratio struct {
	Sum, N float64
}

// Add pools o into r.
func (r *Ratio) Add(o Ratio) {
	r.Sum += o.Sum
	r.N += o.N
}

// Value returns Sum/N; ok is false when N is 0.
func (r Ratio) Value() (float64, bool) {
	if r.N <= 0 {
		return 0, false
	}
	return r.Sum / r.N, true
}

// SampleSD returns the sample standard deviation of xs (n-1 in the
// denominator); ok is false with fewer than two values.
func SampleSD(xs []float64) (float64, bool) {
	if len(xs) < 2 {
		return 0, false
	}
	var mean float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / float64(len(xs)-1)), true
}

// BootstrapStats returns percentile bootstrap intervals of k statistics
// over n clusters (rollouts): each resample draws n cluster indexes with
// replacement and stat writes the k statistics computed from them into
// out, which holds NaN on entry (a statistic left NaN is undefined on
// that resample and skipped). The generator and quantiles are those of
// BootstrapMean, so the same seed gives the same intervals. An interval
// is nil when no resample gave its statistic a value.
func BootstrapStats(n int, cfg stats.BootstrapConfig, k int, stat func(idx []int, out []float64)) []*stats.Interval {
	ivs := make([]*stats.Interval, k)
	if n <= 0 {
		return ivs
	}
	b, level, rng := cfg.Start()
	idx := make([]int, n)
	out := make([]float64, k)
	vals := make([][]float64, k)
	for range b {
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		for j := range out {
			out[j] = math.NaN()
		}
		stat(idx, out)
		for j, v := range out {
			if !math.IsNaN(v) {
				vals[j] = append(vals[j], v)
			}
		}
	}
	a := (1 - level) / 2
	for j, v := range vals {
		if len(v) == 0 {
			continue
		}
		slices.Sort(v)
		ivs[j] = &stats.Interval{Lo: stats.NearestRank(v, a), Hi: stats.NearestRank(v, 1-a)}
	}
	return ivs
}

// Sweep is the threshold on scores that maximizes balanced accuracy
// against labels, with the rates it gives.
type Sweep struct {
	Threshold        float64 `json:"threshold"`
	BalancedAccuracy float64 `json:"balanced_accuracy"`
	TPR              float64 `json:"tpr"`
	TNR              float64 `json:"tnr"`
}

// ThresholdSweep tries as threshold each distinct score (a score >= the
// threshold predicts pass) and returns the one with the highest balanced
// accuracy (TPR+TNR)/2, the lowest such threshold on ties. ok is false
// unless both labels occur.
func ThresholdSweep(scores []float64, labels []bool) (Sweep, bool) {
	type pt struct {
		s   float64
		pos bool
	}
	pts := make([]pt, len(scores))
	var P, N int
	for i, s := range scores {
		pts[i] = pt{s, labels[i]}
		if labels[i] {
			P++
		} else {
			N++
		}
	}
	if P == 0 || N == 0 {
		return Sweep{}, false
	}
	slices.SortFunc(pts, func(a, b pt) int {
		switch {
		case a.s < b.s:
			return -1
		case a.s > b.s:
			return 1
		}
		return 0
	})
	// Walk the thresholds upwards: below the threshold at index i are
	// the points before i, all predicted fail.
	var best Sweep
	found := false
	fnBelow, tnBelow := 0, 0
	for i := 0; i < len(pts); {
		tpr := float64(P-fnBelow) / float64(P)
		tnr := float64(tnBelow) / float64(N)
		if ba := (tpr + tnr) / 2; !found || ba > best.BalancedAccuracy {
			best, found = Sweep{Threshold: pts[i].s, BalancedAccuracy: ba, TPR: tpr, TNR: tnr}, true
		}
		s := pts[i].s
		for ; i < len(pts) && pts[i].s == s; i++ {
			if pts[i].pos {
				fnBelow++
			} else {
				tnBelow++
			}
		}
	}
	return best, true
}
