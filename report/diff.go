package report

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/verifiers"
)

// side is one result directory loaded for a diff: its reward rows keyed by
// rollout id, with their checks.
type side struct {
	dir      string
	manifest *manifest
	index    map[string]int32
	rows     []sideRow
	// checks holds every row's checks, each row's contiguous (a gavel
	// result writes them so); a row's are checks[first : first+n].
	checks []checkState
	dups   int64
}

// sideRow is one rollout. Its strings but the id are interned.
type sideRow struct {
	id, task, verifier, status, source string
	reward                             float64
	first, n                           int32
	hasReward                          bool
}

// rowChecks returns the checks of r.
func (s *side) rowChecks(r *sideRow) []checkState {
	return s.checks[r.first : r.first+r.n]
}

type checkState struct {
	id, status string
}

// loadSide reads the rewards, checks and manifest of a result directory.
// A rollout id seen twice keeps its first row; the others are counted.
func loadSide(dir string) (*side, error) {
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	s := &side{dir: dir, manifest: m, index: map[string]int32{}}
	in := interner{}
	cols := []string{"rollout_id", "task_id", "verifier_id", "status", "reward", "source_file"}
	err = scanTable(dir, "rewards", cols, func(v []value) error {
		if v[0].null() {
			return errors.New("rollout_id is null")
		}
		if _, dup := s.index[string(v[0].data)]; dup {
			s.dups++
			return nil
		}
		id := string(v[0].data)
		r := sideRow{id: id, task: in.get(v[1].data), status: in.get(v[3].data), source: in.get(v[5].data)}
		if !v[2].null() {
			r.verifier = in.get(v[2].data)
		}
		r.reward, r.hasReward, err = parseReward(v[4])
		if err != nil {
			return err
		}
		s.index[id] = int32(len(s.rows))
		s.rows = append(s.rows, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = scanTable(dir, "checks", []string{"rollout_id", "check_id", "status"}, func(v []value) error {
		i, ok := s.index[string(v[0].data)]
		if !ok {
			return nil
		}
		r := &s.rows[i]
		if r.n > 0 && int(r.first+r.n) != len(s.checks) {
			// Not contiguous: move the row's checks so far to the end.
			s.checks = append(s.checks, s.rowChecks(r)...)
			r.first = int32(len(s.checks)) - r.n
		}
		if r.n == 0 {
			r.first = int32(len(s.checks))
		}
		s.checks = append(s.checks, checkState{id: in.get(v[1].data), status: in.get(v[2].data)})
		r.n++
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Threshold is the --fail-on limit: a count of regressions, or a rate of
// regressions among the rollouts present on both sides. The run fails when
// the regressions exceed it.
type Threshold struct {
	Count  int64
	Rate   float64
	IsRate bool
}

// ParseThreshold parses a --fail-on value: an integer N (fail when more
// than N rollouts regressed; 0 fails on any), or a rate written as a
// percentage ("1%") or a fraction with a decimal point ("0.01").
func ParseThreshold(s string) (Threshold, error) {
	s = strings.TrimSpace(s)
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil || f < 0 || f > 100 {
			return Threshold{}, fmt.Errorf("--fail-on %q: want a count (5) or a rate (1%% or 0.01)", s)
		}
		return Threshold{Rate: f / 100, IsRate: true}, nil
	}
	if strings.ContainsAny(s, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || f > 1 {
			return Threshold{}, fmt.Errorf("--fail-on %q: a rate is between 0 and 1 (or 0%% and 100%%)", s)
		}
		return Threshold{Rate: f, IsRate: true}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return Threshold{}, fmt.Errorf("--fail-on %q: want a count (5) or a rate (1%% or 0.01)", s)
	}
	return Threshold{Count: n}, nil
}

// String returns the threshold as it would be written on the command line.
func (t Threshold) String() string {
	if t.IsRate {
		// 12 significant digits: 0.07 is written 7%, not the
		// 7.000000000000001% its product with 100 gives.
		return strconv.FormatFloat(t.Rate*100, 'g', 12, 64) + "%"
	}
	return strconv.FormatInt(t.Count, 10)
}

// exceeded reports whether regressions among paired rollouts exceed t.
func (t Threshold) exceeded(regressions, paired int64) bool {
	if t.IsRate {
		return paired > 0 && float64(regressions)/float64(paired) > t.Rate
	}
	return regressions > t.Count
}

// DiffConfig sets a diff. The zero value fails on any regression and
// lists 10 example rollouts.
type DiffConfig struct {
	// FailOn is the regression limit.
	FailOn Threshold
	// Examples is the number of changed rollouts listed (0: 10; negative:
	// none).
	Examples int
}

// Diff is the comparison of two result directories, rollout by rollout.
//
// A regression is a rollout that passed in the base and is failed or error
// in the current results. Status changes count every other change of
// status (to or from error and pending). Flips and status changes are
// attributed to a changed verifier (its fingerprint in manifest.json
// differs), a changed input (the rollout's source file has another size or
// row count in the two manifests, or is missing from one), both, or
// neither. A rollout whose task_id changed counts as a changed input, and
// its checks are not compared when another verifier judged it.
type Diff struct {
	Base        string `json:"base"`
	Current     string `json:"current"`
	BaseVersion string `json:"base_gavel_version"`
	CurVersion  string `json:"current_gavel_version"`
	// BaseRollouts and CurRollouts count distinct rollout ids.
	BaseRollouts int64 `json:"base_rollouts"`
	CurRollouts  int64 `json:"current_rollouts"`
	Paired       int64 `json:"paired"`
	BaseOnly     int64 `json:"base_only"`
	CurOnly      int64 `json:"current_only"`
	// DuplicateIDs counts rows whose rollout id was already seen on their
	// side; they are left out.
	DuplicateIDs int64 `json:"duplicate_ids"`
	Regressions  int64 `json:"regressions"`
	// RegressionRate is Regressions / Paired (0 when nothing is paired).
	RegressionRate float64 `json:"regression_rate"`
	FailOn         string  `json:"fail_on"`
	// Failed is true when the regressions exceed FailOn.
	Failed    bool           `json:"failed"`
	Verifiers []VerifierDiff `json:"verifiers"`
	Checks    []CheckDiff    `json:"checks"`
	// Examples lists changed rollouts, regressions first, then by id.
	Examples []Change `json:"examples"`
}

// VerifierDiff is the comparison of one verifier's rollouts. A rollout is
// counted under its current verifier, or its base verifier when it has
// none now; "" is no verifier.
type VerifierDiff struct {
	Verifier    string `json:"verifier"`
	Paired      int64  `json:"paired"`
	BaseOnly    int64  `json:"base_only"`
	CurOnly     int64  `json:"current_only"`
	PassToFail  int64  `json:"pass_to_fail"`
	FailToPass  int64  `json:"fail_to_pass"`
	Regressions int64  `json:"regressions"`
	// StatusChanges counts the other changes of status, keyed
	// "from->to" (passed->error, pending->failed...).
	StatusChanges map[string]int64 `json:"status_changes"`
	// RewardChanged counts paired rollouts whose reward differs (a null
	// reward differs from any number).
	RewardChanged int64 `json:"reward_changed"`
	// MeanRewardDelta is the mean of current minus base reward over paired
	// rollouts with a reward on both sides (null when none).
	MeanRewardDelta *float64 `json:"mean_reward_delta"`
	// McNemarP is the exact McNemar p-value on the paired pass/fail
	// outcomes (rollouts passed or failed on both sides).
	McNemarP float64 `json:"mcnemar_p"`
	// FingerprintChanged says the verifier's fingerprint differs between
	// the manifests (or it is in one manifest only).
	FingerprintChanged bool `json:"fingerprint_changed"`
	// Changed rollouts (flips and status changes) by cause.
	ChangedVerifierOnly int64 `json:"changed_by_verifier"`
	ChangedInputOnly    int64 `json:"changed_by_input"`
	ChangedBoth         int64 `json:"changed_by_both"`
	ChangedUnexplained  int64 `json:"changed_unexplained"`

	rewardDeltaSum float64
	rewardDeltaN   int64
}

// CheckDiff is the comparison of one check over the paired rollouts.
type CheckDiff struct {
	Verifier      string           `json:"verifier"`
	Check         string           `json:"check"`
	PassToFail    int64            `json:"pass_to_fail"`
	FailToPass    int64            `json:"fail_to_pass"`
	StatusChanges map[string]int64 `json:"status_changes"`
	// Added and Removed count paired rollouts where the check exists only
	// in the current or only in the base results.
	Added   int64 `json:"added"`
	Removed int64 `json:"removed"`
}

// Change is one rollout whose status changed.
type Change struct {
	RolloutID  string   `json:"rollout_id"`
	Task       string   `json:"task_id"`
	Verifier   string   `json:"verifier"`
	From       string   `json:"from"`
	To         string   `json:"to"`
	Regression bool     `json:"regression"`
	Cause      string   `json:"cause"`
	Checks     []string `json:"checks_changed"`
}

// Causes of a change.
const (
	CauseVerifier    = "verifier changed"
	CauseInput       = "input changed"
	CauseBoth        = "verifier and input changed"
	CauseUnexplained = "unexplained"
)

// Compare loads two result directories and compares them.
func Compare(baseDir, curDir string, cfg DiffConfig) (*Diff, error) {
	base, err := loadSide(baseDir)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	cur, err := loadSide(curDir)
	if err != nil {
		return nil, fmt.Errorf("current: %w", err)
	}
	return compare(base, cur, cfg), nil
}

type inputKey struct {
	size int64
	rows int64
}

// manifestInputs returns each input file's size and rows. A large Parquet
// file is split into several units, each with its rows: they are summed
// (-1 when a unit's are unknown).
func manifestInputs(m *manifest) map[string]inputKey {
	out := map[string]inputKey{}
	for _, in := range m.Inputs {
		k, seen := out[in.Path]
		if !seen {
			k = inputKey{size: in.Size}
		}
		switch {
		case in.Rows == nil || k.rows < 0:
			k.rows = -1
		default:
			k.rows += *in.Rows
		}
		out[in.Path] = k
	}
	return out
}

func fingerprints(m *manifest) map[string]string {
	out := map[string]string{}
	for _, v := range m.Verifiers {
		out[v.ID] = v.Fingerprint
	}
	return out
}

func compare(base, cur *side, cfg DiffConfig) *Diff {
	d := &Diff{
		Base: base.dir, Current: cur.dir,
		BaseVersion: base.manifest.Version, CurVersion: cur.manifest.Version,
		BaseRollouts: int64(len(base.rows)), CurRollouts: int64(len(cur.rows)),
		DuplicateIDs: base.dups + cur.dups,
		FailOn:       cfg.FailOn.String(),
	}
	baseIn, curIn := manifestInputs(base.manifest), manifestInputs(cur.manifest)
	baseFP, curFP := fingerprints(base.manifest), fingerprints(cur.manifest)
	byVerifier := map[string]*VerifierDiff{}
	vd := func(id string) *VerifierDiff {
		v := byVerifier[id]
		if v == nil {
			v = &VerifierDiff{Verifier: id, StatusChanges: map[string]int64{}}
			v.FingerprintChanged = baseFP[id] != curFP[id]
			byVerifier[id] = v
		}
		return v
	}
	type checkKey struct{ verifier, check string }
	checks := map[checkKey]*CheckDiff{}
	cd := func(verifier, check string) *CheckDiff {
		k := checkKey{verifier, check}
		c := checks[k]
		if c == nil {
			c = &CheckDiff{Verifier: verifier, Check: check, StatusChanges: map[string]int64{}}
			checks[k] = c
		}
		return c
	}
	var changes []Change
	examples := cfg.Examples
	if examples == 0 {
		examples = 10
	}
	examples = max(0, examples)
	for i := range base.rows {
		b := &base.rows[i]
		j, ok := cur.index[b.id]
		if !ok {
			d.BaseOnly++
			vd(b.verifier).BaseOnly++
			continue
		}
		c := &cur.rows[j]
		vid := c.verifier
		if vid == "" {
			vid = b.verifier
		}
		v := vd(vid)
		d.Paired++
		v.Paired++
		if b.hasReward != c.hasReward || (b.hasReward && b.reward != c.reward) {
			v.RewardChanged++
		}
		if b.hasReward && c.hasReward {
			v.rewardDeltaSum += c.reward - b.reward
			v.rewardDeltaN++
		}
		// Checks are compared only when one verifier judged both sides: a
		// rollout bound to another verifier has other checks.
		var changedChecks []string
		sameVerifier := b.verifier == c.verifier
		bChecks, cChecks := base.rowChecks(b), cur.rowChecks(c)
		for _, bc := range bChecks {
			if !sameVerifier {
				break
			}
			k := slices.IndexFunc(cChecks, func(x checkState) bool { return x.id == bc.id })
			if k < 0 {
				cd(vid, bc.id).Removed++
				changedChecks = append(changedChecks, bc.id+": "+bc.status+" -> (none)")
				continue
			}
			cc := cChecks[k]
			if cc.status == bc.status {
				continue
			}
			x := cd(vid, bc.id)
			switch {
			case bc.status == verifiers.CheckPass && cc.status == verifiers.CheckFail:
				x.PassToFail++
			case bc.status == verifiers.CheckFail && cc.status == verifiers.CheckPass:
				x.FailToPass++
			default:
				x.StatusChanges[bc.status+"->"+cc.status]++
			}
			changedChecks = append(changedChecks, bc.id+": "+bc.status+" -> "+cc.status)
		}
		for _, cc := range cChecks {
			if !sameVerifier {
				break
			}
			if !slices.ContainsFunc(bChecks, func(x checkState) bool { return x.id == cc.id }) {
				cd(vid, cc.id).Added++
				changedChecks = append(changedChecks, cc.id+": (none) -> "+cc.status)
			}
		}
		if b.status == c.status {
			continue
		}
		regression := b.status == verifiers.StatusPassed && (c.status == verifiers.StatusFailed || c.status == verifiers.StatusError)
		switch {
		case b.status == verifiers.StatusPassed && c.status == verifiers.StatusFailed:
			v.PassToFail++
		case b.status == verifiers.StatusFailed && c.status == verifiers.StatusPassed:
			v.FailToPass++
		default:
			v.StatusChanges[b.status+"->"+c.status]++
		}
		if regression {
			v.Regressions++
			d.Regressions++
		}
		bIn, bok := baseIn[b.source]
		cIn, cok := curIn[c.source]
		inputChanged := !bok || !cok || bIn != cIn || b.task != c.task
		// Another task binds another verifier: that is the input's doing.
		verifierChanged := baseFP[b.verifier] != curFP[c.verifier] || (b.task == c.task && b.verifier != c.verifier)
		cause := CauseUnexplained
		switch {
		case inputChanged && verifierChanged:
			cause = CauseBoth
			v.ChangedBoth++
		case verifierChanged:
			cause = CauseVerifier
			v.ChangedVerifierOnly++
		case inputChanged:
			cause = CauseInput
			v.ChangedInputOnly++
		default:
			v.ChangedUnexplained++
		}
		if examples > 0 {
			changes = append(changes, Change{RolloutID: b.id, Task: c.task, Verifier: vid, From: b.status, To: c.status, Regression: regression, Cause: cause, Checks: changedChecks})
			if len(changes) >= 4*examples {
				// Keep memory bounded when most rollouts changed.
				sortChanges(changes)
				changes = changes[:examples]
			}
		}
	}
	for i := range cur.rows {
		c := &cur.rows[i]
		if _, ok := base.index[c.id]; !ok {
			d.CurOnly++
			vd(c.verifier).CurOnly++
		}
	}
	if d.Paired > 0 {
		d.RegressionRate = float64(d.Regressions) / float64(d.Paired)
	}
	d.Failed = cfg.FailOn.exceeded(d.Regressions, d.Paired)
	for _, v := range byVerifier {
		v.McNemarP = McNemarExact(v.PassToFail, v.FailToPass)
		if v.rewardDeltaN > 0 {
			m := v.rewardDeltaSum / float64(v.rewardDeltaN)
			v.MeanRewardDelta = &m
		}
		d.Verifiers = append(d.Verifiers, *v)
	}
	slices.SortFunc(d.Verifiers, func(a, b VerifierDiff) int { return strings.Compare(a.Verifier, b.Verifier) })
	for _, c := range checks {
		d.Checks = append(d.Checks, *c)
	}
	slices.SortFunc(d.Checks, func(a, b CheckDiff) int {
		if c := strings.Compare(a.Verifier, b.Verifier); c != 0 {
			return c
		}
		return strings.Compare(a.Check, b.Check)
	})
	sortChanges(changes)
	d.Examples = changes[:min(examples, len(changes))]
	if d.Examples == nil {
		d.Examples = []Change{}
	}
	if d.Verifiers == nil {
		d.Verifiers = []VerifierDiff{}
	}
	if d.Checks == nil {
		d.Checks = []CheckDiff{}
	}
	return d
}

// sortChanges orders changes regressions first, then by rollout id.
func sortChanges(changes []Change) {
	slices.SortFunc(changes, func(a, b Change) int {
		if a.Regression != b.Regression {
			if a.Regression {
				return -1
			}
			return 1
		}
		return strings.Compare(a.RolloutID, b.RolloutID)
	})
}
