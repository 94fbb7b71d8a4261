package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/join"
	"github.com/gavelhq/gavel/stats"
	"github.com/gavelhq/gavel/verifiers"
)

// CalibrationConfig sets gavel judge calibrate. The zero value reads the
// labels' rollout_id, check_id (when present) and label columns, turns a
// numeric label into pass at 0.5 or more, and calibrates the checks
// table's aggregate verdicts.
type CalibrationConfig struct {
	// Labels is the labels file (Parquet, Arrow or JSON Lines).
	Labels string
	// LabelColumn, RolloutColumn and CheckColumn name the labels' columns
	// ("": label, rollout_id, check_id). A label row whose check column is
	// null or absent labels the rollout's one judged check.
	LabelColumn, RolloutColumn, CheckColumn string
	// LabelThreshold turns a numeric label into pass when it is at least
	// the threshold (0: 0.5).
	LabelThreshold float64
	// Judge, when set, calibrates that judge model's sample-0 verdicts
	// from the judgements table instead of the checks' aggregate.
	Judge string
	// RequireTPR and RequireTNR, when positive, are the bars the Wilson
	// 95% lower bounds of TPR and TNR must reach, overall or, with
	// PerCheck, for every check id.
	RequireTPR, RequireTNR float64
	PerCheck               bool
}

// Calibration compares a judge's verdicts with human labels, overall and
// per check id. Positive is pass: TPR is the share of the checks humans
// passed that the judge passed, TNR of those humans failed that the judge
// failed.
type Calibration struct {
	Dir    string `json:"dir"`
	Labels string `json:"labels"`
	// Judge is the judge model calibrated, "" for the checks' aggregate
	// verdict.
	Judge   string           `json:"judge,omitempty"`
	Overall CalibrationRow   `json:"overall"`
	Checks  []CalibrationRow `json:"checks"`
	// UnmatchedLabels counts label rows that match no judged check of the
	// run.
	UnmatchedLabels int64 `json:"unmatched_labels"`
	// Require is the certification asked for (nil without one).
	Require *Requirement `json:"require,omitempty"`
	Notes   []string     `json:"notes"`
}

// CalibrationRow is the calibration of one check id (Check) or of all
// (Check "").
type CalibrationRow struct {
	Check string `json:"check,omitempty"`
	// N counts the checks with both a label and a pass/fail verdict.
	N int64 `json:"n"`
	// Unlabeled counts judged checks without a label; NoVerdict labelled
	// checks whose judgement failed or was not made (status error or
	// pending). Neither is in any statistic.
	Unlabeled int64 `json:"unlabeled"`
	NoVerdict int64 `json:"no_verdict"`
	// The confusion matrix: TP humans and judge pass, FN humans pass and
	// judge fails, FP humans fail and judge passes, TN both fail.
	TP int64 `json:"tp"`
	FN int64 `json:"fn"`
	FP int64 `json:"fp"`
	TN int64 `json:"tn"`
	// Accuracy, TPR and TNR are shares with Wilson 95% intervals.
	Accuracy Rate `json:"accuracy"`
	TPR      Rate `json:"tpr"`
	TNR      Rate `json:"tnr"`
	// Kappa is Cohen's κ between the judge and the humans.
	Kappa Estimate `json:"kappa"`
	// Sweep is the threshold on the judge's scores that maximizes
	// balanced accuracy (null with SweepReason when undefined).
	Sweep       *Sweep `json:"sweep"`
	SweepReason string `json:"sweep_reason,omitempty"`

	scores []float64
	labels []bool
}

// Rate is k of n with its Wilson 95% interval; Value is null, with the
// reason, when n is 0.
type Rate struct {
	K      int64           `json:"k"`
	N      int64           `json:"n"`
	Value  *float64        `json:"value"`
	CI     *stats.Interval `json:"ci"`
	Reason string          `json:"reason,omitempty"`
}

// Requirement is a certification: the Wilson lower bounds of TPR and TNR
// must reach bars, overall or for every check id.
type Requirement struct {
	TPR       float64  `json:"tpr"`
	TNR       float64  `json:"tnr"`
	PerCheck  bool     `json:"per_check"`
	Certified bool     `json:"certified"`
	Failures  []string `json:"failures"`
}

func wilsonRate(k, n int64, reason string) Rate {
	r := Rate{K: k, N: n}
	iv, ok := stats.Wilson(k, n, stats.Z95)
	if !ok {
		r.Reason = reason
		return r
	}
	v := float64(k) / float64(n)
	r.Value, r.CI = &v, &iv
	return r
}

// labelKey names what a label row labels: a rollout's check, or with
// check "" the rollout's one judged check.
type labelKey struct{ rollout, check string }

type label struct {
	pass    bool
	row     int64
	matched int
}

// BuildCalibration joins the judged checks of the result directory dir
// with the labels of cfg.Labels and computes the calibration.
func BuildCalibration(dir string, cfg CalibrationConfig) (*Calibration, error) {
	labels, err := readLabels(cfg)
	if err != nil {
		return nil, err
	}
	c := &Calibration{Dir: dir, Labels: cfg.Labels, Judge: cfg.Judge}
	order := map[string]int{}
	row := func(check string) *CalibrationRow {
		i, ok := order[check]
		if !ok {
			i = len(c.Checks)
			order[check] = i
			c.Checks = append(c.Checks, CalibrationRow{Check: check})
		}
		return &c.Checks[i]
	}
	// verdict adds one judged check.
	verdict := func(rollout, check, status string, score float64, scored bool) {
		l, ok := labels[labelKey{rollout, check}]
		if !ok {
			l, ok = labels[labelKey{rollout, ""}]
		}
		rows := []*CalibrationRow{&c.Overall, row(check)}
		if !ok {
			for _, r := range rows {
				r.Unlabeled++
			}
			return
		}
		l.matched++
		for _, r := range rows {
			r.add(l.pass, status, score, scored)
		}
	}
	if cfg.Judge != "" {
		err = calibrateJudge(dir, cfg.Judge, verdict)
	} else {
		err = calibrateChecks(dir, verdict)
	}
	if err != nil {
		return nil, err
	}
	var keys []labelKey
	for k, l := range labels {
		switch {
		case l.matched == 0:
			c.UnmatchedLabels++
		case l.matched > 1 && k.check == "":
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		first := keys[0]
		for _, k := range keys[1:] {
			if labels[k].row < labels[first].row {
				first = k
			}
		}
		return nil, fmt.Errorf("read %s row %d: rollout %s has %d judged checks: the labels need a check id column (%s)",
			cfg.Labels, labels[first].row, first.rollout, labels[first].matched, checkColumn(cfg))
	}
	c.Overall.finish()
	for i := range c.Checks {
		c.Checks[i].finish()
	}
	if cfg.RequireTPR > 0 || cfg.RequireTNR > 0 {
		c.Require = certify(c, cfg)
	}
	c.Notes = calibrationNotes(cfg)
	return c, nil
}

// add counts one labelled check.
func (r *CalibrationRow) add(human bool, status string, score float64, scored bool) {
	var judge bool
	switch status {
	case verifiers.CheckPass:
		judge = true
	case verifiers.CheckFail:
	default:
		r.NoVerdict++
		return
	}
	r.N++
	switch {
	case human && judge:
		r.TP++
	case human:
		r.FN++
	case judge:
		r.FP++
	default:
		r.TN++
	}
	if scored {
		r.scores = append(r.scores, score)
		r.labels = append(r.labels, human)
	}
}

// finish computes the statistics of the counts.
func (r *CalibrationRow) finish() {
	r.Accuracy = wilsonRate(r.TP+r.TN, r.N, "no labelled verdict")
	r.TPR = wilsonRate(r.TP, r.TP+r.FN, "no check humans passed")
	r.TNR = wilsonRate(r.TN, r.TN+r.FP, "no check humans failed")
	r.Kappa = Estimate{N: r.N}
	if k, ok := CohenKappa(float64(r.TP), float64(r.FP), float64(r.FN), float64(r.TN)); ok {
		r.Kappa.Value = &k
	} else if r.N == 0 {
		r.Kappa.Reason = "no labelled verdict"
	} else {
		r.Kappa.Reason = "judge and humans gave one same class only"
	}
	if s, ok := ThresholdSweep(r.scores, r.labels); ok {
		r.Sweep = &s
	} else if len(r.scores) == 0 {
		r.SweepReason = "no labelled score"
	} else {
		r.SweepReason = "the scored checks have labels of one class only"
	}
	r.scores, r.labels = nil, nil
}

// certify checks the requirement of cfg against c.
func certify(c *Calibration, cfg CalibrationConfig) *Requirement {
	req := &Requirement{TPR: cfg.RequireTPR, TNR: cfg.RequireTNR, PerCheck: cfg.PerCheck}
	rows := []*CalibrationRow{&c.Overall}
	if cfg.PerCheck {
		rows = rows[:0]
		for i := range c.Checks {
			rows = append(rows, &c.Checks[i])
		}
	}
	for _, r := range rows {
		name := "overall"
		if r.Check != "" || cfg.PerCheck {
			name = "check " + r.Check
		}
		for _, b := range []struct {
			what string
			bar  float64
			rate Rate
		}{{"TPR", cfg.RequireTPR, r.TPR}, {"TNR", cfg.RequireTNR, r.TNR}} {
			switch {
			case b.bar <= 0:
			case b.rate.CI == nil:
				req.Failures = append(req.Failures, fmt.Sprintf("%s: %s undefined (%s)", name, b.what, b.rate.Reason))
			case b.rate.CI.Lo < b.bar:
				req.Failures = append(req.Failures, fmt.Sprintf("%s: %s lower bound %.4f < %g (%d of %d)", name, b.what, b.rate.CI.Lo, b.bar, b.rate.K, b.rate.N))
			}
		}
	}
	if len(rows) == 0 {
		req.Failures = append(req.Failures, "no check to certify")
	}
	req.Certified = len(req.Failures) == 0
	return req
}

func calibrationNotes(cfg CalibrationConfig) []string {
	what := "the judge's aggregate verdict per check (the checks table)"
	if cfg.Judge != "" {
		what = "the sample-0 verdicts of judge " + cfg.Judge + " (the judgements table)"
	}
	return []string{
		"Calibrates " + what + " against the human labels; positive is pass.",
		"TPR: share of the checks humans passed that the judge passed; TNR: of those humans failed, the share the judge failed.",
		"Intervals: Wilson 95%. kappa: Cohen's, judge against humans.",
		"sweep: the threshold on the judge's scores (pass at >= threshold) with the highest balanced accuracy (TPR+TNR)/2, the lowest on ties.",
		"Judged checks without a label (unlabeled) and labelled checks without a verdict (status error or pending) are counted, in no statistic.",
		"Few labels give wide intervals; with skewed classes kappa can be low while accuracy is high (the kappa paradox).",
	}
}

func checkColumn(cfg CalibrationConfig) string {
	if cfg.CheckColumn != "" {
		return cfg.CheckColumn
	}
	return "check_id"
}

// readLabels reads the labels file of cfg into a map.
func readLabels(cfg CalibrationConfig) (map[labelKey]*label, error) {
	idCol, checkCol, labelCol := cfg.RolloutColumn, checkColumn(cfg), cfg.LabelColumn
	if idCol == "" {
		idCol = columnar.FieldID
	}
	if labelCol == "" {
		labelCol = "label"
	}
	threshold := cfg.LabelThreshold
	if threshold == 0 {
		threshold = 0.5
	}
	if _, ok := columnar.Resolve(columnar.Source{Name: cfg.Labels}); !ok {
		return nil, fmt.Errorf("read %s: not a Parquet, Arrow or JSON Lines file (by its extension)", cfg.Labels)
	}
	r, err := columnar.OpenResult(cfg.Labels, []string{idCol, checkCol, labelCol})
	if err != nil {
		return nil, fmt.Errorf("read labels: %w", err)
	}
	defer r.Close()
	labels := map[labelKey]*label{}
	seen := map[string]bool{} // the columns some row has a value of
	for row := int64(0); ; row++ {
		cells, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		where := func(format string, args ...any) error {
			return fmt.Errorf("read %s row %d: %s", cfg.Labels, row, fmt.Sprintf(format, args...))
		}
		for i, col := range []string{idCol, checkCol, labelCol} {
			if cells[i].Kind != columnar.CellNull {
				seen[col] = true
			}
		}
		if cells[0].Kind == columnar.CellNull {
			return nil, where("%s is null", idCol)
		}
		if cells[2].Kind == columnar.CellNull {
			continue // no label
		}
		pass, err := parseLabel(cells[2], threshold)
		if err != nil {
			return nil, where("%s: %v", labelCol, err)
		}
		k := labelKey{rollout: string(cells[0].Data)}
		if cells[1].Kind != columnar.CellNull {
			k.check = string(cells[1].Data)
		}
		if l, ok := labels[k]; ok {
			return nil, where("rollout %s check %q labelled again (first at row %d)", k.rollout, k.check, l.row)
		}
		labels[k] = &label{pass: pass, row: row}
	}
	for _, col := range []string{idCol, labelCol} {
		if !seen[col] {
			return nil, fmt.Errorf("read %s: no value in column %s", cfg.Labels, col)
		}
	}
	return labels, nil
}

// parseLabel reads a label: pass/fail, true/false (any case), a boolean,
// or a number that passes at threshold or more.
func parseLabel(c columnar.Cell, threshold float64) (bool, error) {
	switch c.Kind {
	case columnar.CellBool:
		return string(c.Data) == "true", nil
	case columnar.CellNumber:
		f, err := strconv.ParseFloat(string(c.Data), 64)
		if err != nil || math.IsNaN(f) {
			return false, fmt.Errorf("%q is not a number", c.Data)
		}
		return f >= threshold, nil
	case columnar.CellString:
		switch strings.ToLower(strings.TrimSpace(string(c.Data))) {
		case "pass", "true":
			return true, nil
		case "fail", "false":
			return false, nil
		}
		return false, fmt.Errorf("%q: want pass, fail, true, false or a number", c.Data)
	}
	return false, fmt.Errorf("%s: want pass, fail, true, false or a number", c.Data)
}

// calibrateChecks calls verdict for each judged check of the checks
// table: a check whose id has a score in some row (a rubric check).
func calibrateChecks(dir string, verdict func(rollout, check, status string, score float64, scored bool)) error {
	cols := []string{"rollout_id", "check_id", "status", "score"}
	judged := map[string]bool{}
	strs := columnar.Interner{}
	err := scanChecks(dir, cols, strs, func(r *columnar.CheckRow) error {
		if r.ScoreValid {
			judged[r.CheckID] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(judged) == 0 {
		return fmt.Errorf("read %s: %w", filepath.Join(dir, join.Checks), errNothingJudged)
	}
	return scanChecks(dir, cols, strs, func(r *columnar.CheckRow) error {
		if !judged[r.CheckID] {
			return nil
		}
		verdict(strings.Clone(r.RolloutID), r.CheckID, r.Status, r.Score, r.ScoreValid)
		return nil
	})
}

// errNothingJudged says that a run has no judged check to calibrate.
var errNothingJudged = errors.New("no check has a judge's score: no rubric check was judged")

// calibrateJudge calls verdict for each sample-0 judgement of judge in
// the judgements table, and with status pending for each check of a
// rubric judge judged that the request budget left pending: such a check
// has no judgement rows, and is counted as no verdict, as without --judge.
func calibrateJudge(dir, judge string, verdict func(rollout, check, status string, score float64, scored bool)) error {
	if st, err := os.Stat(filepath.Join(dir, Judgements)); err != nil || !st.IsDir() {
		return ErrNoJudgements
	}
	var judges []string
	found := false
	checks := map[string]bool{} // the check ids judge judged
	err := scanJudgements(dir, func(j *judgementRow) error {
		if j.judge != judge {
			if len(judges) < 20 && !slices.Contains(judges, j.judge) {
				judges = append(judges, j.judge)
			}
			return nil
		}
		found = true
		checks[j.check] = true
		if j.sample == 0 {
			verdict(j.rollout, j.check, j.status, j.score, j.scored)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("judge %q judged nothing in %s (its judges: %s)", judge, filepath.Join(dir, Judgements), strings.Join(judges, ", "))
	}
	return scanChecks(dir, []string{"rollout_id", "check_id", "status"}, columnar.Interner{}, func(r *columnar.CheckRow) error {
		if r.Status == verifiers.CheckPending && checks[r.CheckID] {
			verdict(strings.Clone(r.RolloutID), r.CheckID, verifiers.CheckPending, 0, false)
		}
		return nil
	})
}
