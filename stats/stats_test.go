package stats

import (
	"math"
	"slices"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// Wilson intervals published in Newcombe (1998), "Two-sided confidence
// intervals for the single proportion: comparison of seven methods",
// Statistics in Medicine 17, Table I, method 3 (score interval without
// continuity correction), to four decimals.
func TestWilson(t *testing.T) {
	tests := []struct {
		name   string
		k, n   int64
		lo, hi float64
	}{
		{"81 of 263", 81, 263, 0.2553, 0.3662},
		{"15 of 148", 15, 148, 0.0624, 0.1605},
		{"0 of 20", 0, 20, 0, 0.1611},
		{"1 of 29", 1, 29, 0.0061, 0.1718},
		// By hand: n=1, k=1, z²=3.8415: center (1+1.9207)/4.8415=0.6033,
		// half 1.96/4.8415·sqrt(0+0.9604)=0.3967, so [0.2065, 1].
		{"1 of 1", 1, 1, 0.2065, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Wilson(tt.k, tt.n, Z95)
			if !ok || !near(got.Lo, tt.lo, 5e-5) || !near(got.Hi, tt.hi, 5e-5) {
				t.Errorf("Wilson(%d, %d) = %+v, %v, want [%.4f, %.4f]", tt.k, tt.n, got, ok, tt.lo, tt.hi)
			}
		})
	}
	if _, ok := Wilson(0, 0, Z95); ok {
		t.Error("Wilson(0, 0) ok, want not ok")
	}
}

// McNemar exact p-values computed by hand from the binomial distribution
// with p = 1/2 on the discordant pairs.
func TestMcNemarExact(t *testing.T) {
	tests := []struct {
		name string
		b, c int64
		want float64
	}{
		{"no discordant pair", 0, 0, 1},
		{"0 and 5", 0, 5, 2.0 / 32},                  // 2·(1/2)^5
		{"5 and 0", 5, 0, 2.0 / 32},                  // symmetric
		{"1 and 9", 1, 9, 2 * 11.0 / 1024},           // 2·(1+10)/2^10
		{"2 and 8", 2, 8, 2 * (1 + 10 + 45) / 1024.}, // 2·56/1024
		{"3 and 3", 3, 3, 1},                         // 2·42/64 capped at 1
		{"1 and 1", 1, 1, 1},
		{"0 and 1", 0, 1, 1},
		// 2·(1+20+190+1140)/2^20 = 0.0025768
		{"3 and 17", 3, 17, 2 * 1351 / 1048576.},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := McNemarExact(tt.b, tt.c); !near(got, tt.want, 1e-12) {
				t.Errorf("McNemarExact(%d, %d) = %.12g, want %.12g", tt.b, tt.c, got, tt.want)
			}
		})
	}
	// Large counts: the p-value of an even split is 1, of a lopsided
	// split underflows to 0, and neither is NaN.
	if got := McNemarExact(500000, 500000); !near(got, 1, 1e-9) {
		t.Errorf("McNemarExact(500000, 500000) = %g, want 1", got)
	}
	if got := McNemarExact(0, 2000); got != 0 || math.IsNaN(got) {
		t.Errorf("McNemarExact(0, 2000) = %g, want 0", got)
	}
}

// binom is C(n, k) by the textbook recurrence, for small n.
func binom(n, k int64) float64 {
	if k < 0 || k > n {
		return 0
	}
	r := 1.0
	for i := int64(1); i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// pass@k and pass^k against their published definitions, evaluated with
// plain binomials (Chen et al. 2021: 1 - C(n-c,k)/C(n,k); tau-bench:
// C(c,k)/C(n,k)), and against values computed by hand.
func TestPassAtKAndPassHatK(t *testing.T) {
	tests := []struct {
		name         string
		n, c, k      int64
		atK, hatK    float64
		checkDefOnly bool
	}{
		{"k=1 is the pass rate", 10, 3, 1, 0.3, 0.3, false},
		{"n=10 c=3 k=2", 10, 3, 2, 24.0 / 45, 3.0 / 45, false}, // 1-21/45, 3/45
		{"n=5 c=5 k=3", 5, 5, 3, 1, 1, false},
		{"n=5 c=0 k=3", 5, 0, 3, 0, 0, false},
		{"n=4 c=2 k=4", 4, 2, 4, 1, 0, false},
		{"n=8 c=6 k=3", 8, 6, 3, 1, 20.0 / 56, false}, // n-c=2 < 3; C(6,3)/C(8,3)
		{"n=20 c=7 k=5", 20, 7, 5, 0, 0, true},
		{"n=50 c=25 k=10", 50, 25, 10, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			atK, ok1 := PassAtK(tt.n, tt.c, tt.k)
			hatK, ok2 := PassHatK(tt.n, tt.c, tt.k)
			if !ok1 || !ok2 {
				t.Fatalf("not ok for n=%d c=%d k=%d", tt.n, tt.c, tt.k)
			}
			defAt := 1 - binom(tt.n-tt.c, tt.k)/binom(tt.n, tt.k)
			defHat := binom(tt.c, tt.k) / binom(tt.n, tt.k)
			if !near(atK, defAt, 1e-12) {
				t.Errorf("PassAtK(%d, %d, %d) = %.15g, definition gives %.15g", tt.n, tt.c, tt.k, atK, defAt)
			}
			if !near(hatK, defHat, 1e-12) {
				t.Errorf("PassHatK(%d, %d, %d) = %.15g, definition gives %.15g", tt.n, tt.c, tt.k, hatK, defHat)
			}
			if tt.checkDefOnly {
				return
			}
			if !near(atK, tt.atK, 1e-12) || !near(hatK, tt.hatK, 1e-12) {
				t.Errorf("n=%d c=%d k=%d: pass@k %.15g pass^k %.15g, want %.15g and %.15g", tt.n, tt.c, tt.k, atK, hatK, tt.atK, tt.hatK)
			}
		})
	}
	if _, ok := PassAtK(3, 1, 4); ok {
		t.Error("PassAtK(n=3, k=4) ok, want not ok")
	}
	if _, ok := PassHatK(3, 1, 0); ok {
		t.Error("PassHatK(k=0) ok, want not ok")
	}
	// Stable for large n where C(n, k) overflows float64.
	if got, ok := PassAtK(100000, 50000, 100); !ok || !near(got, 1, 1e-12) {
		t.Errorf("PassAtK(100000, 50000, 100) = %g, want 1", got)
	}
	if got, ok := PassHatK(100000, 100000, 100); !ok || got != 1 {
		t.Errorf("PassHatK(100000, 100000, 100) = %g, want 1", got)
	}
}

// exactBootstrap enumerates every one of the k^k cluster resamples (the
// bootstrap distribution by its definition) and returns the nearest-rank
// quantiles of the pooled mean, and the largest distance of a cumulative
// probability from either cut (to know the cuts are not on a tie).
func exactBootstrap(clusters []Cluster, level float64) (Interval, float64) {
	k := len(clusters)
	type pt struct{ mean, p float64 }
	var pts []pt
	idx := make([]int, k)
	total := math.Pow(float64(k), float64(k))
	for {
		var sum float64
		var n int64
		for _, i := range idx {
			sum += clusters[i].Sum
			n += clusters[i].N
		}
		pts = append(pts, pt{sum / float64(n), 1 / total})
		j := 0
		for j < k {
			idx[j]++
			if idx[j] < k {
				break
			}
			idx[j] = 0
			j++
		}
		if j == k {
			break
		}
	}
	slices.SortFunc(pts, func(a, b pt) int {
		switch {
		case a.mean < b.mean:
			return -1
		case a.mean > b.mean:
			return 1
		}
		return 0
	})
	alpha := (1 - level) / 2
	var iv Interval
	cum, loSet, hiSet := 0.0, false, false
	minGap := 1.0
	for i, p := range pts {
		cum += p.p
		if i+1 < len(pts) && pts[i+1].mean-p.mean < 1e-12 {
			continue // a tie: the cumulative probability steps after it
		}
		minGap = min(minGap, math.Abs(cum-alpha), math.Abs(cum-(1-alpha)))
		if !loSet && cum >= alpha {
			iv.Lo, loSet = p.mean, true
		}
		if !hiSet && cum >= 1-alpha {
			iv.Hi, hiSet = p.mean, true
		}
	}
	return iv, minGap
}

func TestBootstrapMean(t *testing.T) {
	tests := []struct {
		name     string
		clusters []Cluster
	}{
		{"four tasks of unequal size", []Cluster{{0, 3}, {3, 3}, {1, 2}, {4, 5}}},
		{"three tasks", []Cluster{{0, 3}, {3, 3}, {1, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, gap := exactBootstrap(tt.clusters, 0.95)
			if gap < 0.003 {
				t.Fatalf("test data puts a quantile cut on a tie (gap %g)", gap)
			}
			got, ok := BootstrapMean(tt.clusters, BootstrapConfig{Resamples: 20000, Seed: 7})
			if !ok || !near(got.Lo, want.Lo, 1e-12) || !near(got.Hi, want.Hi, 1e-12) {
				t.Errorf("BootstrapMean = %+v, exact bootstrap distribution gives %+v", got, want)
			}
			again, _ := BootstrapMean(tt.clusters, BootstrapConfig{Resamples: 20000, Seed: 7})
			if again != got {
				t.Errorf("same seed: %+v then %+v", got, again)
			}
		})
	}
	// Every cluster with the same mean: the interval is that mean.
	got, ok := BootstrapMean([]Cluster{{1, 2}, {2.5, 5}, {0.5, 1}}, BootstrapConfig{Seed: 1})
	if !ok || !near(got.Lo, 0.5, 1e-12) || !near(got.Hi, 0.5, 1e-12) {
		t.Errorf("BootstrapMean(equal means) = %+v, %v, want [0.5, 0.5]", got, ok)
	}
	if _, ok := BootstrapMean(nil, BootstrapConfig{}); ok {
		t.Error("BootstrapMean(nil) ok, want not ok")
	}
}
