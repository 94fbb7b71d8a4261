package pairwise

import (
	"math"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/stats"
)

// TestBradleyTerryTwoGroups checks the fit against the closed form of two
// groups: the maximum-likelihood strengths satisfy p_A/p_B = W_A/W_B, with
// W the wins, ties halved, plus half of the one virtual tie.
func TestBradleyTerryTwoGroups(t *testing.T) {
	// A beats B 3 times, B beats A once, 1 tie and 1 inconsistent pair.
	var games []Game
	for range 3 {
		games = append(games, Game{Task: "t1", A: "A", B: "B", Outcome: "win"})
	}
	games = append(games, Game{Task: "t2", A: "A", B: "B", Outcome: "loss"},
		Game{Task: "t2", A: "A", B: "B", Outcome: "tie"}, Game{Task: "t3", A: "B", B: "A", Outcome: "inconsistent"})
	rk := Rank(games, RankingConfig{Resamples: 200, Seed: 7})
	// W_A = 3 + 0.5 + 0.5 + 0.5 = 4.5, W_B = 1 + 0.5 + 0.5 + 0.5 = 2.5;
	// Elo A - Elo B = 400 log10(4.5/2.5) = 102.10900; mean 1000.
	wantA := 1000 + 200*math.Log10(4.5/2.5)
	wantB := 1000 - 200*math.Log10(4.5/2.5)
	if len(rk.Groups) != 2 || rk.Groups[0].Group != "A" {
		t.Fatalf("groups = %+v, want A first", rk.Groups)
	}
	if d := math.Abs(rk.Groups[0].Elo - wantA); d > 1e-6 {
		t.Errorf("Elo(A) = %.9f, want %.9f", rk.Groups[0].Elo, wantA)
	}
	if d := math.Abs(rk.Groups[1].Elo - wantB); d > 1e-6 {
		t.Errorf("Elo(B) = %.9f, want %.9f", rk.Groups[1].Elo, wantB)
	}
	if math.Abs(wantA-1051.054501) > 1e-6 {
		t.Fatalf("hand value of Elo(A) = %.9f, want 1051.054501", wantA)
	}
	a := rk.Groups[0]
	if a.Games != 6 || a.Wins != 3 || a.Losses != 1 || a.Ties != 2 {
		t.Errorf("A's record = %d games %d-%d-%d, want 6 games 3-1-2", a.Games, a.Wins, a.Losses, a.Ties)
	}
	// Win rate (3 + 2/2)/6 = 2/3, Wilson interval by hand: n = 6, z = 1.96.
	if a.WinRate == nil || math.Abs(*a.WinRate-2.0/3) > 1e-12 {
		t.Errorf("win rate = %v, want 2/3", a.WinRate)
	}
	z := stats.Z95
	p, n := 2.0/3, 6.0
	c := (p + z*z/(2*n)) / (1 + z*z/n)
	h := z / (1 + z*z/n) * math.Sqrt(p*(1-p)/n+z*z/(4*n*n))
	if iv := a.WinRateInterval; math.Abs(iv.Lo-(c-h)) > 1e-12 || math.Abs(iv.Hi-(c+h)) > 1e-12 {
		t.Errorf("win rate interval = %+v, want [%v, %v]", *iv, c-h, c+h)
	}
	if rk.Games != 6 || rk.Inconsistent != 1 || rk.InconsistentShare == nil || *rk.InconsistentShare != 1.0/6 {
		t.Errorf("games %d, inconsistent %d, share %v, want 6, 1, 1/6", rk.Games, rk.Inconsistent, rk.InconsistentShare)
	}
	if iv := a.EloInterval; !(iv.Lo <= a.Elo && a.Elo <= iv.Hi) {
		t.Errorf("Elo interval %+v does not hold the fit %v", *iv, a.Elo)
	}
}

// TestBradleyTerryTournament fits a known four-group tournament and checks
// it against an independent fit: Newton's method on the log-likelihood in
// the log-strengths, written here, and the likelihood equations.
func TestBradleyTerryTournament(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	// wins[i][j]: i beat j; ties[i][j] (i < j).
	wins := [4][4]int{
		{0, 4, 3, 5},
		{1, 0, 2, 4},
		{2, 2, 0, 3},
		{0, 0, 1, 0}, // d never wins but against c
	}
	ties := [4][4]int{{0, 1, 0, 0}, {0, 0, 2, 0}, {0, 0, 0, 1}}
	var games []Game
	task := 0
	add := func(a, b, outcome string) {
		games = append(games, Game{Task: string(rune('A' + task%7)), A: a, B: b, Outcome: outcome})
		task++
	}
	for i := range 4 {
		for j := range 4 {
			for range wins[i][j] {
				add(names[i], names[j], "win")
			}
			for range ties[i][j] {
				add(names[i], names[j], "tie")
			}
		}
	}
	rk := Rank(games, RankingConfig{Resamples: 50})
	got := map[string]float64{}
	for _, g := range rk.Groups {
		got[g.Group] = g.Elo
	}
	// Newton: maximize Σ_ij W_ij θ_i - n_ij log(e^θ_i + e^θ_j) over θ
	// with W_ij = wins + ties/2 + 1/2 (the virtual tie).
	var w, nn [4][4]float64
	for i := range 4 {
		for j := range 4 {
			if i == j {
				continue
			}
			w[i][j] = float64(wins[i][j]) + float64(ties[i][j]+ties[j][i])/2 + 0.5
		}
	}
	for i := range 4 {
		for j := range 4 {
			nn[i][j] = w[i][j] + w[j][i]
		}
	}
	theta := make([]float64, 4)
	for range 100 {
		var g [4]float64
		var h [4][4]float64
		for i := range 4 {
			for j := range 4 {
				if i == j {
					continue
				}
				q := 1 / (1 + math.Exp(theta[j]-theta[i])) // P(i beats j)
				g[i] += w[i][j] - nn[i][j]*q
				h[i][i] -= nn[i][j] * q * (1 - q)
				h[i][j] += nn[i][j] * q * (1 - q)
			}
		}
		// Fix θ_3 = 0 and solve the 3×3 system H δ = -g by elimination.
		var m [3][4]float64
		for i := range 3 {
			for j := range 3 {
				m[i][j] = h[i][j]
			}
			m[i][3] = -g[i]
		}
		for c := range 3 {
			for r := c + 1; r < 3; r++ {
				f := m[r][c] / m[c][c]
				for k := c; k < 4; k++ {
					m[r][k] -= f * m[c][k]
				}
			}
		}
		var d [3]float64
		for r := 2; r >= 0; r-- {
			s := m[r][3]
			for k := r + 1; k < 3; k++ {
				s -= m[r][k] * d[k]
			}
			d[r] = s / m[r][r]
		}
		for i := range 3 {
			theta[i] += d[i]
		}
	}
	var mean float64
	for i := range 4 {
		mean += 400 * theta[i] / math.Ln10
	}
	mean /= 4
	for i, n := range names {
		want := 1000 + 400*theta[i]/math.Ln10 - mean
		if d := math.Abs(got[n] - want); d > 1e-6 {
			t.Errorf("Elo(%s) = %.9f, want %.9f (Newton)", n, got[n], want)
		}
	}
	// The likelihood equations hold at the fit: W_i = Σ_j n_ij p_i/(p_i+p_j).
	p := map[string]float64{}
	for _, n := range names {
		p[n] = math.Pow(10, (got[n]-1000)/400)
	}
	for i, a := range names {
		var wi, exp float64
		for j, b := range names {
			if i != j {
				wi += w[i][j]
				exp += nn[i][j] * p[a] / (p[a] + p[b])
			}
		}
		if math.Abs(wi-exp) > 1e-8 {
			t.Errorf("group %s: wins %v, expected by the fit %v", a, wi, exp)
		}
	}
	if rk.Groups[0].Group != "a" || rk.Groups[3].Group != "d" {
		t.Errorf("order = %v, want a first and d last", rk.Groups)
	}
}

func TestRankDeterministicAndPrinted(t *testing.T) {
	games := []Game{{"t1", "x", "y", "win"}, {"t2", "x", "y", "inconsistent"}, {"t3", "y", "x", "win"}, {"t4", "x", "y", "win"}}
	a, b := Rank(games, RankingConfig{Seed: 3}), Rank(games, RankingConfig{Seed: 3})
	if a.Groups[0].EloInterval.Lo != b.Groups[0].EloInterval.Lo || a.Groups[0].EloInterval.Hi != b.Groups[0].EloInterval.Hi {
		t.Errorf("the same seed gave intervals %+v and %+v", a.Groups[0].EloInterval, b.Groups[0].EloInterval)
	}
	var s strings.Builder
	if err := WriteRanking(&s, a); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.String(), "4 games on 4 tasks; 1 inconsistent (share 0.2500") {
		t.Errorf("printed ranking:\n%s", s.String())
	}
}
