package report

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gavelhq/gavel/stats"
	"github.com/gavelhq/gavel/verifiers"
)

// Judgements names the table of single judgements a run writes when some
// rubric check is judged more than once (by several judges or samples).
const Judgements = "judgements"

// judgementColumns are the columns of the judgements table agreement and
// calibration read.
var judgementColumns = []string{"rollout_id", "check_index", "check_id", "judge_model", "sample", "score", "status"}

// AgreementConfig sets gavel judge agreement. The zero value draws 2000
// bootstrap resamples with seed 0.
type AgreementConfig struct {
	Bootstrap stats.BootstrapConfig
}

// Agreement says how much a run's judges agree with each other and with
// themselves, overall and per check id.
type Agreement struct {
	Dir string `json:"dir"`
	// Judges are the judge models in the order the table first names them.
	Judges []string `json:"judges"`
	// Samples is the largest number of samples of one judge on one check.
	Samples int `json:"samples"`
	// Judgements counts the table's rows; Failed those with status error,
	// which take part in no statistic.
	Judgements int64 `json:"judgements"`
	Failed     int64 `json:"failed"`
	// Kappa names the κ of the inter-judge rows: cohen for two judges,
	// fleiss for more, "" for one.
	Kappa     string         `json:"kappa"`
	Resamples int            `json:"resamples"`
	Seed      uint64         `json:"seed"`
	Overall   AgreementRow   `json:"overall"`
	Checks    []AgreementRow `json:"checks"`
	Notes     []string       `json:"notes"`
}

// agreementBuilder gathers the judgements of a table into units.
type agreementBuilder struct {
	ag        *Agreement
	order     map[string]int  // check id -> index in Checks
	rollouts  map[string]int  // rollout id -> index, in first-seen order
	judgeIdx  map[string]int  // judge model -> index in Judges
	units     []judgementUnit // in the table's order
	unitIndex map[unitKey]int
}

// AgreementRow is the agreement of the judges on one check id (Check) or
// on all (Check "").
type AgreementRow struct {
	Check string `json:"check,omitempty"`
	// Units counts the checks of a rollout on which at least two judges
	// gave a verdict (the units of the inter-judge statistics).
	Units int64 `json:"units"`
	// Kappa is Cohen's κ (two judges, units both judged) or Fleiss' κ
	// (more, units all judged) on sample 0's pass/fail.
	Kappa Estimate `json:"kappa"`
	// Agree is the share of pairs of judges giving the same pass/fail on
	// sample 0, over pairs and units (the raw agreement κ and α correct
	// for chance).
	Agree Estimate `json:"agree"`
	// AlphaNominal is Krippendorff's α on sample 0's pass/fail,
	// AlphaInterval on its scores; MeanAbsDiff the mean absolute
	// difference of two judges' sample-0 scores, over pairs of judges.
	AlphaNominal  Estimate `json:"alpha_nominal"`
	AlphaInterval Estimate `json:"alpha_interval"`
	MeanAbsDiff   Estimate `json:"mean_abs_diff"`
	// Self is each judge's consistency with itself across samples.
	Self []SelfConsistency `json:"self"`
}

// SelfConsistency is one judge's agreement with itself across samples on
// the checks it judged at least twice.
type SelfConsistency struct {
	Judge string `json:"judge"`
	// AllAgree is the share of checks whose samples all have the same
	// status; MeanSD the mean over checks of the sample standard
	// deviation (n-1) of their scores.
	AllAgree Estimate `json:"all_agree"`
	MeanSD   Estimate `json:"mean_sd"`
}

// Estimate is a statistic with its 95% bootstrap interval over rollouts.
// Value is null, with the reason, when the statistic is undefined; CI is
// null when no resample defines it.
type Estimate struct {
	Value  *float64        `json:"value"`
	CI     *stats.Interval `json:"ci"`
	N      int64           `json:"n"`
	Reason string          `json:"reason,omitempty"`
}

// unitKey names one check of one rollout.
type unitKey struct {
	rollout string
	index   int64
}

// judgementUnit holds the judgements of one check of one rollout: per
// judge, per sample, the status and score.
type judgementUnit struct {
	rollout int
	check   string
	judges  [][]judged
}

// judged is one judgement: status 1 pass, 0 fail, -1 failed or absent
// (seen false).
type judged struct {
	status int8
	seen   bool
	score  float64
	scored bool
}

// agreeSums are the sums of every agreement statistic over some units.
type agreeSums struct {
	cohen  [4]float64 // pass-pass, pass-fail, fail-pass, fail-fail
	fleiss Fleiss
	nom    AlphaNominal
	inter  AlphaInterval
	mad    Ratio
	pairs  Ratio // pairs of judges agreeing on pass/fail
	units  float64
	agree  []Ratio // per judge: share of units whose samples agree
	sd     []Ratio // per judge: mean sample standard deviation
}

func newAgreeSums(judges int) *agreeSums {
	return &agreeSums{
		fleiss: Fleiss{Counts: make([]float64, 2)},
		nom:    AlphaNominal{Counts: make([]float64, 2)},
		agree:  make([]Ratio, judges),
		sd:     make([]Ratio, judges),
	}
}

func (s *agreeSums) add(o *agreeSums) {
	for i := range s.cohen {
		s.cohen[i] += o.cohen[i]
	}
	s.fleiss.Add(&o.fleiss)
	s.nom.Add(&o.nom)
	s.inter.Add(&o.inter)
	s.mad.Add(o.mad)
	s.pairs.Add(o.pairs)
	s.units += o.units
	for j := range s.agree {
		s.agree[j].Add(o.agree[j])
		s.sd[j].Add(o.sd[j])
	}
}

// flatWidth is the length of the flat vector of the sums of a run with
// judges judges: flatten's layout.
func flatWidth(judges int) int { return 21 + 4*judges }

// flatten writes the sums into v (flatWidth long), a vector that pools by
// addition: v of a set of units is the sum of their vectors.
func (s *agreeSums) flatten(v []float64) {
	copy(v, s.cohen[:])
	v[4], v[5], v[6], v[7] = s.fleiss.Units, s.fleiss.SumP, s.fleiss.Counts[0], s.fleiss.Counts[1]
	v[8], v[9], v[10], v[11] = s.nom.N, s.nom.Do, s.nom.Counts[0], s.nom.Counts[1]
	v[12], v[13], v[14], v[15] = s.inter.N, s.inter.Do, s.inter.Sum, s.inter.SumSq
	v[16], v[17], v[18], v[19], v[20] = s.mad.Sum, s.mad.N, s.pairs.Sum, s.pairs.N, s.units
	for j := range s.agree {
		w := v[21+4*j:]
		w[0], w[1], w[2], w[3] = s.agree[j].Sum, s.agree[j].N, s.sd[j].Sum, s.sd[j].N
	}
}

// unflatten sets the sums from a vector written by flatten.
func (s *agreeSums) unflatten(v []float64) {
	copy(s.cohen[:], v[:4])
	s.fleiss.Units, s.fleiss.SumP, s.fleiss.Counts[0], s.fleiss.Counts[1] = v[4], v[5], v[6], v[7]
	s.nom.N, s.nom.Do, s.nom.Counts[0], s.nom.Counts[1] = v[8], v[9], v[10], v[11]
	s.inter = AlphaInterval{N: v[12], Do: v[13], Sum: v[14], SumSq: v[15]}
	s.mad, s.pairs, s.units = Ratio{v[16], v[17]}, Ratio{v[18], v[19]}, v[20]
	for j := range s.agree {
		w := v[21+4*j:]
		s.agree[j], s.sd[j] = Ratio{w[0], w[1]}, Ratio{w[2], w[3]}
	}
}

// addUnit adds the judgements of one unit; judges is the number of
// judges of the run.
func (s *agreeSums) addUnit(u *judgementUnit, judges int) {
	var codes []int
	var scores []float64
	var fc [2]int
	for j := range judges {
		if j >= len(u.judges) || len(u.judges[j]) == 0 {
			continue
		}
		v := u.judges[j][0]
		if v.status >= 0 {
			codes = append(codes, int(v.status))
			fc[v.status]++
		}
		if v.status >= 0 && v.scored {
			scores = append(scores, v.score)
		}
	}
	if len(codes) >= 2 {
		s.units++
	}
	if judges == 2 && len(codes) == 2 {
		s.cohen[2*(1-codes[0])+(1-codes[1])]++
	}
	if judges > 2 && len(codes) == judges {
		s.fleiss.AddUnit(fc[:])
	}
	s.nom.AddUnit(codes)
	for i := range codes {
		for k := i + 1; k < len(codes); k++ {
			same := 0.0
			if codes[i] == codes[k] {
				same = 1
			}
			s.pairs.Add(Ratio{same, 1})
		}
	}
	s.inter.AddUnit(scores)
	for i := range scores {
		for k := i + 1; k < len(scores); k++ {
			s.mad.Add(Ratio{math.Abs(scores[i] - scores[k]), 1})
		}
	}
	for j := range judges {
		if j >= len(u.judges) {
			continue
		}
		var sts []int8
		var xs []float64
		for _, v := range u.judges[j] {
			if v.status < 0 {
				continue
			}
			sts = append(sts, v.status)
			if v.scored {
				xs = append(xs, v.score)
			}
		}
		if len(sts) >= 2 {
			same := 1.0
			for _, st := range sts[1:] {
				if st != sts[0] {
					same = 0
				}
			}
			s.agree[j].Add(Ratio{same, 1})
		}
		if sd, ok := SampleSD(xs); ok {
			s.sd[j].Add(Ratio{sd, 1})
		}
	}
}

// stats writes the statistics of s into out, NaN where undefined: κ,
// α nominal, α interval, mean absolute difference, raw agreement, then
// per judge the share agreeing and the mean standard deviation.
func (s *agreeSums) stats(judges int, out []float64) {
	set := func(i int, v float64, ok bool) {
		if ok {
			out[i] = v
		} else {
			out[i] = math.NaN()
		}
	}
	switch {
	case judges == 2:
		k, ok := CohenKappa(s.cohen[0], s.cohen[1], s.cohen[2], s.cohen[3])
		set(0, k, ok)
	case judges > 2:
		k, ok := s.fleiss.Kappa()
		set(0, k, ok)
	default:
		set(0, 0, false)
	}
	a, ok := s.nom.Alpha()
	set(1, a, ok && judges > 1)
	a, ok = s.inter.Alpha()
	set(2, a, ok && judges > 1)
	m, ok := s.mad.Value()
	set(3, m, ok)
	m, ok = s.pairs.Value()
	set(4, m, ok)
	for j := range judges {
		v, ok := s.agree[j].Value()
		set(5+2*j, v, ok)
		v, ok = s.sd[j].Value()
		set(6+2*j, v, ok)
	}
}

// BuildAgreement reads the judgements table of the result directory dir
// and computes the agreement of its judges.
func BuildAgreement(dir string, cfg AgreementConfig) (*Agreement, error) {
	if st, err := os.Stat(filepath.Join(dir, Judgements)); err != nil || !st.IsDir() {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil, ErrNoJudgements
		}
		return nil, fmt.Errorf("read results: %w", err)
	}
	ag := &Agreement{Dir: dir, Resamples: cfg.Bootstrap.Resamples, Seed: cfg.Bootstrap.Seed}
	b := &agreementBuilder{ag: ag, order: map[string]int{}, rollouts: map[string]int{}, judgeIdx: map[string]int{},
		unitIndex: map[unitKey]int{}}
	if ag.Resamples <= 0 {
		ag.Resamples = 2000
	}
	err := scanJudgements(dir, func(j *judgementRow) error {
		ag.Judgements++
		ri, ok := b.rollouts[j.rollout]
		if !ok {
			ri = len(b.rollouts)
			b.rollouts[j.rollout] = ri
		}
		ji, ok := b.judgeIdx[j.judge]
		if !ok {
			ji = len(ag.Judges)
			b.judgeIdx[j.judge] = ji
			ag.Judges = append(ag.Judges, j.judge)
		}
		k := unitKey{j.rollout, j.checkIndex}
		ui, ok := b.unitIndex[k]
		if !ok {
			ui = len(b.units)
			b.unitIndex[k] = ui
			b.units = append(b.units, judgementUnit{rollout: ri, check: j.check})
		}
		u := &b.units[ui]
		for len(u.judges) <= ji {
			u.judges = append(u.judges, nil)
		}
		for int64(len(u.judges[ji])) <= j.sample {
			u.judges[ji] = append(u.judges[ji], judged{status: -1})
		}
		if u.judges[ji][j.sample].seen {
			return fmt.Errorf("rollout %s check %d (%s) judged again by %s as sample %d", j.rollout, j.checkIndex, j.check, j.judge, j.sample)
		}
		v := judged{status: -1, seen: true}
		switch j.status {
		case verifiers.CheckPass:
			v.status = 1
		case verifiers.CheckFail:
			v.status = 0
		default:
			ag.Failed++
		}
		v.score, v.scored = j.score, j.scored
		u.judges[ji][j.sample] = v
		ag.Samples = max(ag.Samples, int(j.sample)+1)
		if _, ok := b.order[j.check]; !ok {
			b.order[j.check] = len(ag.Checks)
			ag.Checks = append(ag.Checks, AgreementRow{Check: j.check})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	b.compute(cfg.Bootstrap)
	return ag, nil
}

// ErrNoJudgements is returned for a result directory without a judgements
// table.
var ErrNoJudgements = errors.New("no judgements table (a run writes one when some check is judged more than once: several judges or samples)")

// compute fills the rows of the agreement from the units.
func (b *agreementBuilder) compute(bc stats.BootstrapConfig) {
	ag := b.ag
	nj := len(ag.Judges)
	switch {
	case nj == 2:
		ag.Kappa = "cohen"
	case nj > 2:
		ag.Kappa = "fleiss"
	}
	// Per row, per rollout: the sums of the rollout's units. Rollouts
	// without a unit of a check are left out of that check's clusters.
	rows := 1 + len(ag.Checks)
	per := make([]map[int]*agreeSums, rows)
	orders := make([][]int, rows)
	for i := range per {
		per[i] = map[int]*agreeSums{}
	}
	for i := range b.units {
		u := &b.units[i]
		for _, r := range []int{0, 1 + b.order[u.check]} {
			s, ok := per[r][u.rollout]
			if !ok {
				s = newAgreeSums(nj)
				per[r][u.rollout] = s
				orders[r] = append(orders[r], u.rollout)
			}
			s.addUnit(u, nj)
		}
	}
	k := 5 + 2*nj
	width := flatWidth(nj)
	for r := range rows {
		if r == 1 && rows == 2 {
			// One check id: its clusters are the overall ones, in the
			// same order, so are its statistics.
			row := ag.Overall
			row.Check = ag.Checks[0].Check
			ag.Checks[0] = row
			break
		}
		// The bootstrap pools flat vectors: per resample one addition of
		// a few floats per rollout drawn.
		clusters := make([]float64, len(orders[r])*width)
		total := newAgreeSums(nj)
		for i, ri := range orders[r] {
			total.add(per[r][ri])
			per[r][ri].flatten(clusters[i*width : (i+1)*width])
		}
		vals := make([]float64, k)
		total.stats(nj, vals)
		acc := newAgreeSums(nj)
		pooled := make([]float64, width)
		ivs := BootstrapStats(len(orders[r]), bc, k, func(idx []int, out []float64) {
			clear(pooled)
			for _, i := range idx {
				c := clusters[i*width : (i+1)*width]
				for j, x := range c {
					pooled[j] += x
				}
			}
			acc.unflatten(pooled)
			acc.stats(nj, out)
		})
		row := &ag.Overall
		if r > 0 {
			row = &ag.Checks[r-1]
		}
		ag.fill(row, total, vals, ivs)
	}
	ag.Notes = agreementNotes(ag)
}

// fill sets the estimates of row from the pooled sums, the statistics
// and their intervals, giving the reason of each undefined one.
func (ag *Agreement) fill(row *AgreementRow, s *agreeSums, vals []float64, ivs []*stats.Interval) {
	nj := len(ag.Judges)
	est := func(i int, n float64, reason string) Estimate {
		e := Estimate{N: int64(n), CI: ivs[i]}
		if !math.IsNaN(vals[i]) {
			v := vals[i]
			e.Value = &v
			return e
		}
		e.CI = nil
		e.Reason = reason
		return e
	}
	row.Units = int64(s.units)
	interReason := func(n float64, same string) string {
		switch {
		case nj < 2:
			return "one judge"
		case n == 0:
			return "no check judged by two judges"
		}
		return same
	}
	kn := s.cohen[0] + s.cohen[1] + s.cohen[2] + s.cohen[3]
	kr := "every verdict the same class"
	if nj > 2 {
		kn = s.fleiss.Units
	}
	if kn == 0 && nj > 1 {
		kr = "no check judged by every judge"
	}
	row.Kappa = est(0, kn, interReason(s.units, kr))
	row.AlphaNominal = est(1, s.units, interReason(s.units, "every verdict the same class"))
	row.AlphaInterval = est(2, s.inter.N, interReason(s.inter.N, "every score the same"))
	row.MeanAbsDiff = est(3, s.mad.N, interReason(s.mad.N, ""))
	row.Agree = est(4, s.pairs.N, interReason(s.pairs.N, ""))
	row.Self = make([]SelfConsistency, nj)
	for j, name := range ag.Judges {
		reason := "no check judged twice by this judge"
		if ag.Samples < 2 {
			reason = "one sample per judge"
		}
		row.Self[j] = SelfConsistency{Judge: name,
			AllAgree: est(5+2*j, s.agree[j].N, reason),
			MeanSD:   est(6+2*j, s.sd[j].N, reason)}
	}
}

func agreementNotes(ag *Agreement) []string {
	notes := []string{
		"Units are the checks of a rollout; judges are compared on their sample 0 (temperature 0).",
		"agree: the share of pairs of judges giving the same pass/fail, over pairs and units.",
		"kappa: Cohen's for two judges (units both judged), Fleiss' for more (units every judge judged), on pass/fail.",
		"alpha: Krippendorff's, nominal on pass/fail and interval on scores; units with at least two judgements.",
		"mean abs diff: mean absolute difference of two judges' scores, over pairs of judges and units.",
		"self: per judge, the share of checks whose samples all have the same status, and the mean over checks of the sample standard deviation (n-1) of the scores.",
		fmt.Sprintf("Intervals: 95%% percentile bootstrap over rollouts, %d resamples, seed %d.", ag.Resamples, ag.Seed),
		"Failed judgements (status error) take part in no statistic.",
		"With skewed classes kappa can be low while agreement is high (the kappa paradox): read it beside the raw agreement.",
	}
	return notes
}

// judgementRow is one row of the judgements table.
type judgementRow struct {
	rollout, check, judge, status string
	checkIndex, sample            int64
	score                         float64
	scored                        bool
}

// scanJudgements reads the judgements table of dir, calling fn per row.
func scanJudgements(dir string, fn func(*judgementRow) error) error {
	var j judgementRow
	intern := map[string]string{}
	str := func(v value) string {
		if s, ok := intern[string(v.Data)]; ok {
			return s
		}
		s := string(v.Data)
		intern[s] = s
		return s
	}
	return scanTable(dir, Judgements, judgementColumns, func(vals []value) error {
		for i, name := range []string{"rollout_id", "check_index", "check_id", "judge_model", "sample", "status"} {
			idx := []int{0, 1, 2, 3, 4, 6}[i]
			if vals[idx].Null() {
				return fmt.Errorf("%s is null", name)
			}
		}
		j.rollout = string(vals[0].Data)
		ci, err := strconv.ParseInt(string(vals[1].Data), 10, 64)
		if err != nil {
			return fmt.Errorf("check_index %q: not a whole number", vals[1].Data)
		}
		j.checkIndex = ci
		j.check = str(vals[2])
		j.judge = str(vals[3])
		s, err := strconv.ParseInt(string(vals[4].Data), 10, 64)
		if err != nil || s < 0 || s > 1<<20 {
			return fmt.Errorf("sample %q: not a whole number from 0", vals[4].Data)
		}
		j.sample = s
		j.score, j.scored, err = parseReward(vals[5])
		if err != nil {
			return fmt.Errorf("score %q: not a number", vals[5].Data)
		}
		j.status = str(vals[6])
		return fn(&j)
	})
}
