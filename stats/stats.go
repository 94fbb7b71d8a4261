// Package stats holds the statistics gavel's reports and rankings rest
// on: Wilson intervals, the exact McNemar test, a clustered bootstrap,
// pass@k and pass^k, and the nearest-rank percentile of bootstrap draws.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Z95 is the standard normal quantile of a two-sided 95% interval.
const Z95 = 1.959963984540054

// Interval is a confidence interval [Lo, Hi].
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Wilson returns the Wilson score interval (Wilson 1927, "Probable
// inference, the law of succession, and statistical inference", JASA 22)
// for k successes in n trials at normal quantile z (Z95 for 95%):
//
//	(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n),  p = k/n.
//
// ok is false when n is 0.
func Wilson(k, n int64, z float64) (iv Interval, ok bool) {
	if n <= 0 || k < 0 || k > n {
		return Interval{}, false
	}
	// k == 0 and k == n give p exactly 0 and 1, where the interval touches
	// 0 or 1 exactly (WilsonShare).
	iv = WilsonShare(float64(k)/float64(n), float64(n), z)
	return iv, true
}

// WilsonShare is the Wilson score interval of a share p of n trials, p
// not necessarily a whole count over n (ties count half).
func WilsonShare(p, n, z float64) Interval {
	z2 := z * z
	den := 1 + z2/n
	center := (p + z2/(2*n)) / den
	h := z / den * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	iv := Interval{Lo: max(0, center-h), Hi: min(1, center+h)}
	if p == 0 {
		iv.Lo = 0
	}
	if p == 1 {
		iv.Hi = 1
	}
	return iv
}

// McNemarExact returns the two-sided p-value of the exact McNemar test on
// paired binary outcomes with b pairs discordant one way (pass to fail) and
// c the other (fail to pass). Under the null hypothesis each discordant pair
// is equally likely to go either way, so the test is the two-sided binomial
// test of min(b, c) in b+c trials with probability 1/2:
//
//	p = min(1, 2·Σ_{i=0}^{min(b,c)} C(b+c, i) / 2^(b+c)).
//
// With no discordant pair the p-value is 1. Terms are summed in log space,
// so millions of pairs are fine.
func McNemarExact(b, c int64) float64 {
	n := b + c
	if n <= 0 {
		return 1
	}
	m := min(b, c)
	lgN, _ := math.Lgamma(float64(n) + 1)
	logHalfN := float64(n) * math.Ln2
	// Sum the terms largest first (the term at i = m is the largest when
	// m <= n/2), relative to that largest term, for accuracy.
	logTerm := func(i int64) float64 {
		a, _ := math.Lgamma(float64(i) + 1)
		bb, _ := math.Lgamma(float64(n-i) + 1)
		return lgN - a - bb - logHalfN
	}
	top := logTerm(m)
	sum := 0.0
	for i := m; i >= 0; i-- {
		t := logTerm(i) - top
		if t < -745 { // the remaining terms vanish in float64
			break
		}
		sum += math.Exp(t)
	}
	p := 2 * math.Exp(top) * sum
	return min(1, p)
}

// PassAtK returns the unbiased estimator of pass@k of Chen et al. 2021
// ("Evaluating Large Language Models Trained on Code", eq. 1): the
// probability that at least one of k samples drawn without replacement
// from n samples, c of which pass, passes:
//
//	pass@k = 1 - C(n-c, k) / C(n, k).
//
// It is computed as the product 1 - Π_{i=n-c+1}^{n} (1 - k/i), the stable
// form given in that paper, without large binomials. ok is false when
// k < 1 or n < k.
func PassAtK(n, c, k int64) (float64, bool) {
	if k < 1 || n < k || c < 0 || c > n {
		return 0, false
	}
	if n-c < k {
		return 1, true
	}
	prod := 1.0
	for i := n - c + 1; i <= n; i++ {
		prod *= 1 - float64(k)/float64(i)
	}
	return 1 - prod, true
}

// PassHatK returns the unbiased estimator of pass^k of tau-bench (Yao et
// al. 2024, "τ-bench", section 5): the probability that all k of k samples
// drawn without replacement from n samples, c of which pass, pass:
//
//	pass^k = C(c, k) / C(n, k) = Π_{i=0}^{k-1} (c-i) / (n-i).
//
// ok is false when k < 1 or n < k.
func PassHatK(n, c, k int64) (float64, bool) {
	if k < 1 || n < k || c < 0 || c > n {
		return 0, false
	}
	if c < k {
		return 0, true
	}
	prod := 1.0
	for i := int64(0); i < k; i++ {
		prod *= float64(c-i) / float64(n-i)
	}
	return prod, true
}

// Cluster is the sum and count of the values of one cluster (the rewards
// of one task's rollouts).
type Cluster struct {
	Sum float64
	N   int64
}

// BootstrapConfig sets a clustered bootstrap. The zero value draws 2000
// resamples with seed 0 at 95%.
type BootstrapConfig struct {
	// Resamples is the number of bootstrap resamples (0: 2000).
	Resamples int
	// Seed seeds the PCG generator: the same seed gives the same interval.
	Seed uint64
	// Level is the confidence level (0: 0.95).
	Level float64
}

// Start returns the resamples and the level of cfg, defaults applied, and
// its generator: every bootstrap of the package draws from the same
// sequence for one seed.
func (cfg BootstrapConfig) Start() (resamples int, level float64, rng *rand.Rand) {
	resamples, level = cfg.Resamples, cfg.Level
	if resamples <= 0 {
		resamples = 2000
	}
	if level <= 0 || level >= 1 {
		level = 0.95
	}
	return resamples, level, rand.New(rand.NewPCG(cfg.Seed, 0x6761_7665_6c21)) // "gavel!"
}

// BootstrapMean returns a percentile bootstrap interval (Efron 1979) for
// the pooled mean Σ sums / Σ counts of clustered data, resampling whole
// clusters with replacement (the cluster bootstrap: rollouts of one task
// are not independent, tasks are the sampled unit). The interval's bounds
// are the nearest-rank quantiles (1-Level)/2 and (1+Level)/2 of the
// resampled means; resamples that draw no value at all are skipped. ok is
// false when there is no cluster with a value.
func BootstrapMean(clusters []Cluster, cfg BootstrapConfig) (Interval, bool) {
	var live []Cluster
	for _, c := range clusters {
		if c.N > 0 {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return Interval{}, false
	}
	b, level, rng := cfg.Start()
	means := make([]float64, 0, b)
	k := len(clusters) // resample as many clusters as there are, empty ones too
	for range b {
		var sum float64
		var n int64
		for range k {
			c := clusters[rng.IntN(k)]
			sum += c.Sum
			n += c.N
		}
		if n > 0 {
			means = append(means, sum/float64(n))
		}
	}
	if len(means) == 0 {
		return Interval{}, false
	}
	slices.Sort(means)
	alpha := (1 - level) / 2
	return Interval{Lo: NearestRank(means, alpha), Hi: NearestRank(means, 1-alpha)}, true
}

// NearestRank returns the q-quantile of sorted by the nearest-rank method:
// the smallest value with at least a share q of the values at or below it.
func NearestRank(sorted []float64, q float64) float64 {
	// The small slack keeps q·len from rounding up past an exact rank.
	i := int(math.Ceil(q*float64(len(sorted))-1e-9)) - 1
	return sorted[max(0, min(len(sorted)-1, i))]
}
