package pairwise

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/gavelhq/gavel/stats"
)

// Game is one judged comparison of two groups: Outcome is "win" or
// "loss" from A's side, "tie", or "inconsistent" (the judge's two orders
// disagreed; counted as a tie). Task is the bootstrap's unit.
type Game struct {
	Task    string
	A, B    string
	Outcome string
}

// RankingConfig sets a pairwise ranking. The zero value draws 1000
// bootstrap resamples with seed 0 at 95%.
type RankingConfig struct {
	// Resamples is the number of bootstrap resamples of tasks (0: 1000).
	Resamples int
	// Seed seeds the PCG generator: the same seed gives the same intervals.
	Seed uint64
}

// Ranking ranks the groups of a pairwise comparison.
type Ranking struct {
	// Groups are ranked by Elo score, then name.
	Groups []GroupRank `json:"groups"`
	// Games counts the judged pairs (win, loss, tie or inconsistent);
	// Inconsistent those whose two orders disagreed, and
	// InconsistentShare is their share of Games (null without games): a
	// measure of the judge's position bias.
	Games             int64    `json:"games"`
	Inconsistent      int64    `json:"inconsistent"`
	InconsistentShare *float64 `json:"inconsistent_share"`
	// Tasks counts the tasks with games, the bootstrap's unit.
	Tasks int `json:"tasks"`
	// Resamples and Seed are the bootstrap's.
	Resamples int    `json:"resamples"`
	Seed      uint64 `json:"seed"`
}

// GroupRank is one group's record and strength.
type GroupRank struct {
	Group string `json:"group"`
	// Games is the number of games the group played; Wins, Losses and
	// Ties (inconsistent pairs included) add up to it.
	Games  int64 `json:"games"`
	Wins   int64 `json:"wins"`
	Losses int64 `json:"losses"`
	Ties   int64 `json:"ties"`
	// WinRate is (Wins + Ties/2) / Games, with its Wilson 95% interval
	// (null without games).
	WinRate         *float64        `json:"win_rate"`
	WinRateInterval *stats.Interval `json:"win_rate_interval"`
	// Elo is the Bradley–Terry strength on the Elo scale (400·log10,
	// mean 1000 over the groups), EloInterval its 95% percentile bootstrap
	// interval over tasks.
	Elo         float64         `json:"elo"`
	EloInterval *stats.Interval `json:"elo_interval"`
}

// Rank computes the win rates and the Bradley–Terry strengths of the
// groups that appear in games.
//
// The Bradley–Terry model says group i beats group j with probability
// p_i / (p_i + p_j). A tie counts half a win to each side. The fit adds
// one virtual tie between every two groups (half a win each way), a weak
// prior that keeps a perfect record or a group never beaten finite and
// makes the maximum-likelihood fit unique. It is found by the MM
// iteration of Hunter (2004): p_i <- W_i / Σ_j n_ij / (p_i + p_j), where
// W_i is i's wins (ties halved, virtual ties included) and n_ij the games
// between i and j, until no log-strength moves by more than 1e-13. The
// Elo score is 400·log10(p_i), shifted so the groups' mean is 1000.
//
// The interval of each Elo score is the percentile bootstrap over tasks:
// tasks are drawn with replacement (as many as there are) with a PCG
// generator seeded by cfg.Seed, the fit is repeated on their games, and
// the nearest-rank 2.5% and 97.5% quantiles are taken.
func Rank(games []Game, cfg RankingConfig) Ranking {
	if cfg.Resamples <= 0 {
		cfg.Resamples = 1000
	}
	rk := Ranking{Resamples: cfg.Resamples, Seed: cfg.Seed}
	idx := map[string]int{}
	var names []string
	for _, g := range games {
		for _, n := range []string{g.A, g.B} {
			if _, ok := idx[n]; !ok {
				idx[n] = -1
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	for i, n := range names {
		idx[n] = i
	}
	k := len(names)
	if k == 0 {
		return rk
	}
	// Per task, the half-wins of i over j (a win 2, a tie 1).
	taskIdx := map[string]int{}
	var tasks []string
	for _, g := range games {
		if _, ok := taskIdx[g.Task]; !ok {
			taskIdx[g.Task] = len(tasks)
			tasks = append(tasks, g.Task)
		}
	}
	half := make([][]float64, len(tasks)) // task -> k*k
	recs := make([]GroupRank, k)
	for i := range recs {
		recs[i].Group = names[i]
	}
	for _, g := range games {
		a, b := idx[g.A], idx[g.B]
		m := half[taskIdx[g.Task]]
		if m == nil {
			m = make([]float64, k*k)
			half[taskIdx[g.Task]] = m
		}
		rk.Games++
		recs[a].Games++
		recs[b].Games++
		switch g.Outcome {
		case "win":
			m[a*k+b] += 2
			recs[a].Wins++
			recs[b].Losses++
		case "loss":
			m[b*k+a] += 2
			recs[b].Wins++
			recs[a].Losses++
		default: // tie, inconsistent
			if g.Outcome == "inconsistent" {
				rk.Inconsistent++
			}
			m[a*k+b]++
			m[b*k+a]++
			recs[a].Ties++
			recs[b].Ties++
		}
	}
	rk.Tasks = len(tasks)
	if rk.Games > 0 {
		s := float64(rk.Inconsistent) / float64(rk.Games)
		rk.InconsistentShare = &s
	}
	total := make([]float64, k*k)
	for _, m := range half {
		for i, x := range m {
			total[i] += x
		}
	}
	elo := EloScores(BradleyTerry(total, k))
	// Bootstrap over tasks.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6761_7665_6c21)) // "gavel!"
	draws := make([][]float64, k)
	sum := make([]float64, k*k)
	for range cfg.Resamples {
		clear(sum)
		for range len(tasks) {
			for i, x := range half[rng.IntN(len(tasks))] {
				sum[i] += x
			}
		}
		for i, e := range EloScores(BradleyTerry(sum, k)) {
			draws[i] = append(draws[i], e)
		}
	}
	for i := range recs {
		r := &recs[i]
		r.Elo = elo[i]
		slices.Sort(draws[i])
		r.EloInterval = &stats.Interval{Lo: stats.NearestRank(draws[i], 0.025), Hi: stats.NearestRank(draws[i], 0.975)}
		if r.Games > 0 {
			wr := (float64(r.Wins) + float64(r.Ties)/2) / float64(r.Games)
			iv := stats.WilsonShare(wr, float64(r.Games), stats.Z95)
			r.WinRate, r.WinRateInterval = &wr, &iv
		}
	}
	slices.SortStableFunc(recs, func(a, b GroupRank) int {
		return cmp.Or(cmp.Compare(b.Elo, a.Elo), cmp.Compare(a.Group, b.Group))
	})
	rk.Groups = recs
	return rk
}

// BradleyTerry fits Bradley–Terry strengths to the k×k matrix half (row
// major) where half[i*k+j] is twice the wins of i over j (a tie counting
// 1 each way), with one virtual tie added between every two groups, and
// returns the strengths normalized to a geometric mean of 1 (see Rank).
func BradleyTerry(half []float64, k int) []float64 {
	p := make([]float64, k)
	for i := range p {
		p[i] = 1
	}
	if k < 2 {
		return p
	}
	w := make([]float64, k)   // wins of i, virtual ties included
	n := make([]float64, k*k) // games between i and j, virtual ties included
	for i := range k {
		for j := range k {
			if i == j {
				continue
			}
			w[i] += (half[i*k+j] + 1) / 2
			n[i*k+j] = (half[i*k+j]+half[j*k+i])/2 + 1
		}
	}
	next := make([]float64, k)
	for range 100000 {
		for i := range k {
			var den float64
			for j := range k {
				if j != i {
					den += n[i*k+j] / (p[i] + p[j])
				}
			}
			next[i] = w[i] / den
		}
		// Normalize to a geometric mean of 1; the fit is scale-free.
		var meanLog float64
		for _, x := range next {
			meanLog += math.Log(x)
		}
		meanLog /= float64(k)
		moved := 0.0
		for i := range next {
			x := math.Exp(math.Log(next[i]) - meanLog)
			moved = max(moved, math.Abs(math.Log(x)-math.Log(p[i])))
			p[i] = x
		}
		if moved < 1e-13 {
			break
		}
	}
	return p
}

// EloScores returns 400·log10 of the strengths, shifted to a mean of 1000.
func EloScores(p []float64) []float64 {
	out := make([]float64, len(p))
	var mean float64
	for i, x := range p {
		out[i] = 400 * math.Log10(x)
		mean += out[i]
	}
	mean /= float64(len(p))
	for i := range out {
		out[i] += 1000 - mean
	}
	return out
}

// WriteRanking prints a ranking as a table.
func WriteRanking(w io.Writer, rk Ranking) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %7s %6s %6s %6s %8s %17s %8s %17s\n", "group", "games", "wins", "losses", "ties", "win rate", "95% interval", "elo", "95% interval")
	for _, g := range rk.Groups {
		wr, wiv := "-", "-"
		if g.WinRate != nil {
			wr = fmt.Sprintf("%.4f", *g.WinRate)
			wiv = fmt.Sprintf("[%.4f, %.4f]", g.WinRateInterval.Lo, g.WinRateInterval.Hi)
		}
		eiv := fmt.Sprintf("[%.1f, %.1f]", g.EloInterval.Lo, g.EloInterval.Hi)
		fmt.Fprintf(&b, "%-24s %7d %6d %6d %6d %8s %17s %8.1f %17s\n", g.Group, g.Games, g.Wins, g.Losses, g.Ties, wr, wiv, g.Elo, eiv)
	}
	share := "-"
	if rk.InconsistentShare != nil {
		share = fmt.Sprintf("%.4f", *rk.InconsistentShare)
	}
	games, tasks := "games", "tasks"
	if rk.Games == 1 {
		games = "game"
	}
	if rk.Tasks == 1 {
		tasks = "task"
	}
	fmt.Fprintf(&b, "\n%d %s on %d %s; %d inconsistent (share %s: the judge changed its answer when the order was swapped)\n",
		rk.Games, games, rk.Tasks, tasks, rk.Inconsistent, share)
	_, err := io.WriteString(w, b.String())
	return err
}
