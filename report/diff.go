package report

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/join"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/stats"
	"github.com/gavelhq/gavel/verifiers"
)

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
	// TempDir is where a comparison of results that do not line up
	// spills its partitions ("": the system temporary directory).
	TempDir string
	// MemoryBudget bounds the rows held in memory at once, in bytes (0:
	// join's default).
	MemoryBudget int64
	// Progress, when set, is told of the rows compared.
	Progress join.Progress
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
	// Flags counts, per verifier and flag, the paired rollouts on which
	// the flag was raised (not raised in the base) or cleared (raised in
	// the base only), and FlagExamples lists the first such rollouts by
	// id; both absent when neither run has flags.
	Flags        []FlagDiff   `json:"flags,omitempty"`
	FlagExamples []FlagChange `json:"flag_examples,omitempty"`
	// TurnRewardsChanged counts, when both runs score turns, the paired
	// rollouts whose turn rewards differ (another length, another value,
	// null against a value; two nulls are equal), whatever their status
	// and reward did; TurnExamples lists the first such rollouts by id.
	// Both are absent unless both runs score turns. TurnsOnly names the
	// one side that scores turns ("base" or "current") when the other
	// does not: the turn rewards are then not compared.
	TurnRewardsChanged *int64       `json:"turn_rewards_changed,omitempty"`
	TurnExamples       []TurnChange `json:"turn_examples,omitempty"`
	TurnsOnly          string       `json:"turns_only,omitempty"`

	// Partitions and DiskBytes say how the comparison ran: the partitions
	// spilled (0: the results lined up) and the bytes written to disk.
	Partitions int   `json:"-"`
	DiskBytes  int64 `json:"-"`
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
	index          int
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

// FlagDiff counts one flag's changes over the paired rollouts.
type FlagDiff struct {
	Verifier string `json:"verifier"`
	Flag     string `json:"flag"`
	Raised   int64  `json:"raised"`
	Cleared  int64  `json:"cleared"`
}

// FlagChange is one paired rollout whose flags changed.
type FlagChange struct {
	RolloutID string   `json:"rollout_id"`
	Verifier  string   `json:"verifier"`
	Raised    []string `json:"raised"`
	Cleared   []string `json:"cleared"`
}

// TurnChange is one paired rollout whose turn rewards changed: the base's
// and the current list, a NaN element a turn not scored, a nil list null.
type TurnChange struct {
	RolloutID string      `json:"rollout_id"`
	Verifier  string      `json:"verifier"`
	Base      TurnRewards `json:"base"`
	Current   TurnRewards `json:"current"`
}

// TurnRewards is a rollout's turn rewards: NaN for a turn not scored
// (null in JSON), nil for a null list.
type TurnRewards []float64

// MarshalJSON writes the list as the rewards table does: null elements
// for turns not scored, null for a nil list.
func (tr TurnRewards) MarshalJSON() ([]byte, error) {
	return []byte(tr.String()), nil
}

// String writes the list as JSON: [null,1], or null.
func (tr TurnRewards) String() string {
	if tr == nil {
		return "null"
	}
	return string(columnar.AppendFloatsJSON(nil, tr))
}

// sameTurnRewards reports whether two lists of turn rewards are equal,
// NaN (not scored) equal to NaN and a nil (null) list only to another.
func sameTurnRewards(a, b []float64) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
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

// Compare compares two result directories, rollout by rollout, in bounded
// memory (see package join).
func Compare(baseDir, curDir string, cfg DiffConfig) (*Diff, error) {
	return CompareContext(context.Background(), baseDir, curDir, cfg)
}

// CompareContext is Compare with a context that stops it.
func CompareContext(ctx context.Context, baseDir, curDir string, cfg DiffConfig) (*Diff, error) {
	base, err := join.Open(baseDir)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	cur, err := join.Open(curDir)
	if err != nil {
		return nil, fmt.Errorf("current: %w", err)
	}
	df := newDiffer(base, cur, cfg)
	defer df.deltas.close()
	rewards := []string{"task_id", "verifier_id", "status", "reward", "source_file", "checks_total"}
	if base.Manifest.Config.Flags || cur.Manifest.Config.Flags {
		// A side without flags reads them as null: none raised.
		rewards = append(rewards, columnar.ColumnFlags)
		df.flags = map[[2]string]*FlagDiff{}
		df.flagStrs = columnar.Interner{}
	}
	// Turn rewards are compared when both runs score turns (a column is
	// read only where the run wrote it); when one does, the diff says so.
	switch bt, ct := base.Manifest.Config.Turns, cur.Manifest.Config.Turns; {
	case bt && ct:
		df.turnCol = len(rewards)
		rewards = append(rewards, columnar.ColumnTurnRewards)
		df.d.TurnRewardsChanged = new(int64)
		if df.turnDec, err = columnar.NewRewardDecoder([]string{columnar.ColumnTurnRewards}, nil, nil); err != nil {
			return nil, err
		}
	case bt:
		df.d.TurnsOnly = "base"
	case ct:
		df.d.TurnsOnly = "current"
	}
	jcfg := join.Config{
		Rewards:      rewards,
		Checks:       []string{"check_id", "status"},
		TempDir:      cfg.TempDir,
		MemoryBudget: cfg.MemoryBudget,
		LeftName:     "base",
		RightName:    "current",
		Progress:     cfg.Progress,
	}
	st, err := join.Join(ctx, base, cur, jcfg, df.pair)
	if err != nil {
		return nil, err
	}
	if err := df.finish(st); err != nil {
		return nil, err
	}
	return df.d, nil
}

type inputKey struct {
	size int64
	rows int64
}

// manifestInputs returns each input file's size and rows. A large Parquet
// file is split into several units, each with its rows: they are summed
// (-1 when a unit's are unknown).
func manifestInputs(m *results.Manifest) map[string]inputKey {
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

func fingerprints(m *results.Manifest) map[string]string {
	out := map[string]string{}
	for _, v := range m.Verifiers {
		out[v.ID] = v.Fingerprint
	}
	return out
}

// Columns of a joined rewards row and check row (join.Config of
// CompareContext).
const (
	rTask = iota
	rVerifier
	rStatus
	rReward
	rSource
	rChecksTotal
	rFlags // only when a run has flags
)

const (
	cID = iota
	cStatus
)

// differ accumulates a Diff pair by pair.
type differ struct {
	d             *Diff
	baseIn, curIn map[string]inputKey
	baseFP, curFP map[string]string
	byVerifier    map[string]*VerifierDiff
	verifiers     []*VerifierDiff // by index, for the deltas
	checks        map[string]map[string]*CheckDiff
	changes       []Change
	examples      int
	changed       []string
	failOn        Threshold
	// flags counts the flags' changes, by verifier and flag (nil when
	// neither run has flags); flagChanges holds the examples, and
	// baseFlags and curFlags the lists of the pair at hand.
	flags               map[[2]string]*FlagDiff
	flagChanges         []FlagChange
	baseFlags, curFlags []string
	flagDoc             jsonview.Doc
	flagStrs            columnar.Interner
	// turnCol is the index of turn_rewards in a joined rewards row and
	// turnDec decodes it (nil unless both runs score turns); turnChanges
	// holds the examples.
	turnCol     int
	turnDec     *columnar.ResultDecoder[columnar.RewardRow]
	turnRow     columnar.RewardRow
	turnChanges []TurnChange
	// deltas keeps the reward deltas of the pairs joined in partitions,
	// so that they are summed in base order as on the aligned path.
	deltas deltaRuns
}

func newDiffer(base, cur *join.Dir, cfg DiffConfig) *differ {
	df := &differ{
		d: &Diff{
			Base: base.Path, Current: cur.Path,
			BaseVersion: base.Manifest.Version, CurVersion: cur.Manifest.Version,
			FailOn: cfg.FailOn.String(),
		},
		baseIn: manifestInputs(base.Manifest), curIn: manifestInputs(cur.Manifest),
		baseFP: fingerprints(base.Manifest), curFP: fingerprints(cur.Manifest),
		byVerifier: map[string]*VerifierDiff{},
		checks:     map[string]map[string]*CheckDiff{},
		examples:   cfg.Examples,
		failOn:     cfg.FailOn,
	}
	df.deltas.dir = cfg.TempDir
	if df.examples == 0 {
		df.examples = 10
	}
	df.examples = max(0, df.examples)
	return df
}

func (df *differ) vd(id []byte) *VerifierDiff {
	v := df.byVerifier[string(id)]
	if v == nil {
		s := string(id)
		v = &VerifierDiff{Verifier: s, StatusChanges: map[string]int64{}, index: len(df.verifiers)}
		v.FingerprintChanged = df.baseFP[s] != df.curFP[s]
		df.byVerifier[s] = v
		df.verifiers = append(df.verifiers, v)
	}
	return v
}

func (df *differ) cd(verifier string, check []byte) *CheckDiff {
	byCheck := df.checks[verifier]
	if byCheck == nil {
		byCheck = map[string]*CheckDiff{}
		df.checks[verifier] = byCheck
	}
	c := byCheck[string(check)]
	if c == nil {
		c = &CheckDiff{Verifier: verifier, Check: string(check), StatusChanges: map[string]int64{}}
		byCheck[c.Check] = c
	}
	return c
}

// pair adds one joined rollout.
func (df *differ) pair(p *join.Pair) error {
	d := df.d
	if p.Right == nil {
		d.BaseOnly++
		df.vd(p.Left.Values[rVerifier].Data).BaseOnly++
		return nil
	}
	if p.Left == nil {
		d.CurOnly++
		df.vd(p.Right.Values[rVerifier].Data).CurOnly++
		return nil
	}
	b, c := p.Left.Values, p.Right.Values
	vidb := c[rVerifier].Data
	if len(vidb) == 0 {
		vidb = b[rVerifier].Data
	}
	v := df.vd(vidb)
	vid := v.Verifier
	d.Paired++
	v.Paired++
	br, bHas, err := parseReward(b[rReward])
	if err != nil {
		return fmt.Errorf("base: %w", err)
	}
	cr, cHas, err := parseReward(c[rReward])
	if err != nil {
		return fmt.Errorf("current: %w", err)
	}
	if bHas != cHas || (bHas && br != cr) {
		v.RewardChanged++
	}
	if bHas && cHas {
		if p.Partition < 0 {
			v.rewardDeltaSum += cr - br
		} else if err := df.deltas.add(p.Partition, p.Left.Ordinal, v.index, cr-br); err != nil {
			return err
		}
		v.rewardDeltaN++
	}
	if df.flags != nil {
		if err := df.pairFlags(p.Left.ID, vid, b[rFlags], c[rFlags]); err != nil {
			return err
		}
	}
	if df.turnDec != nil {
		if err := df.pairTurns(p.Left.ID, vid, b[df.turnCol], c[df.turnCol]); err != nil {
			return err
		}
	}
	bStat, cStat := b[rStatus].Data, c[rStatus].Data
	statusChanged := !bytes.Equal(bStat, cStat)
	list := statusChanged && df.examples > 0
	// Checks are compared only when one verifier judged both sides: a
	// rollout bound to another verifier has other checks.
	df.changed = df.changed[:0]
	if bytes.Equal(b[rVerifier].Data, c[rVerifier].Data) {
		bChecks, cChecks := ownChecks(p.Left.Checks, b[rChecksTotal]), ownChecks(p.Right.Checks, c[rChecksTotal])
		for _, bc := range bChecks {
			k := slices.IndexFunc(cChecks, func(x []join.Value) bool { return bytes.Equal(x[cID].Data, bc[cID].Data) })
			if k < 0 {
				df.cd(vid, bc[cID].Data).Removed++
				if list {
					df.changed = append(df.changed, string(bc[cID].Data)+": "+string(bc[cStatus].Data)+" -> (none)")
				}
				continue
			}
			cc := cChecks[k]
			if bytes.Equal(cc[cStatus].Data, bc[cStatus].Data) {
				continue
			}
			x := df.cd(vid, bc[cID].Data)
			bs, cs := string(bc[cStatus].Data), string(cc[cStatus].Data)
			switch {
			case bs == verifiers.CheckPass && cs == verifiers.CheckFail:
				x.PassToFail++
			case bs == verifiers.CheckFail && cs == verifiers.CheckPass:
				x.FailToPass++
			default:
				x.StatusChanges[bs+"->"+cs]++
			}
			if list {
				df.changed = append(df.changed, string(bc[cID].Data)+": "+bs+" -> "+cs)
			}
		}
		for _, cc := range cChecks {
			if !slices.ContainsFunc(bChecks, func(x []join.Value) bool { return bytes.Equal(x[cID].Data, cc[cID].Data) }) {
				df.cd(vid, cc[cID].Data).Added++
				if list {
					df.changed = append(df.changed, string(cc[cID].Data)+": (none) -> "+string(cc[cStatus].Data))
				}
			}
		}
	}
	if !statusChanged {
		return nil
	}
	bs, cs := string(bStat), string(cStat)
	regression := bs == verifiers.StatusPassed && (cs == verifiers.StatusFailed || cs == verifiers.StatusError)
	switch {
	case bs == verifiers.StatusPassed && cs == verifiers.StatusFailed:
		v.PassToFail++
	case bs == verifiers.StatusFailed && cs == verifiers.StatusPassed:
		v.FailToPass++
	default:
		v.StatusChanges[bs+"->"+cs]++
	}
	if regression {
		v.Regressions++
		d.Regressions++
	}
	bIn, bok := df.baseIn[string(b[rSource].Data)]
	cIn, cok := df.curIn[string(c[rSource].Data)]
	sameTask := bytes.Equal(b[rTask].Data, c[rTask].Data)
	inputChanged := !bok || !cok || bIn != cIn || !sameTask
	// A verifier changed when its fingerprint did, the verifier of either
	// side's row (a verifier in one manifest only changed), or when the
	// same task binds another verifier. Another task binding another
	// verifier is the input's doing.
	fpChanged := func(id []byte) bool { return len(id) > 0 && df.baseFP[string(id)] != df.curFP[string(id)] }
	verifierChanged := fpChanged(b[rVerifier].Data) || fpChanged(c[rVerifier].Data) ||
		(sameTask && !bytes.Equal(b[rVerifier].Data, c[rVerifier].Data))
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
	if list {
		var checks []string
		if len(df.changed) > 0 {
			checks = slices.Clone(df.changed)
		}
		df.changes = append(df.changes, Change{RolloutID: string(p.Left.ID), Task: string(c[rTask].Data), Verifier: vid,
			From: bs, To: cs, Regression: regression, Cause: cause, Checks: checks})
		if len(df.changes) >= 4*df.examples {
			// Keep memory bounded when most rollouts changed.
			sortChanges(df.changes)
			df.changes = df.changes[:df.examples]
		}
	}
	return nil
}

// ownChecks returns the check rows of a paired rollout's own row, whose
// checks_total is total: the join gives a rollout id every check row with
// that id, so when the id is held by more than one row (the first stands
// for it) the checks of the others follow its own, in part and row order.
// A total that is not a count leaves the checks as they are.
func ownChecks(checks [][]join.Value, total join.Value) [][]join.Value {
	n, err := strconv.Atoi(string(total.Data))
	if total.Null() || err != nil || n < 0 || n >= len(checks) {
		return checks
	}
	return checks[:n]
}

// finish completes the diff once every pair is in.
// pairFlags counts the flags raised and cleared between the base's flags
// cell bv and the current one's cv of the paired rollout id, bound to
// the verifier vid.
func (df *differ) pairFlags(id []byte, vid string, bv, cv join.Value) error {
	var err error
	df.baseFlags = df.baseFlags[:0]
	if !bv.Null() {
		if df.baseFlags, err = flagList(&df.flagDoc, df.flagStrs, bv, df.baseFlags); err != nil {
			return fmt.Errorf("base: %w", err)
		}
	}
	df.curFlags = df.curFlags[:0]
	if !cv.Null() {
		if df.curFlags, err = flagList(&df.flagDoc, df.flagStrs, cv, df.curFlags); err != nil {
			return fmt.Errorf("current: %w", err)
		}
	}
	var ch *FlagChange
	count := func(flag string, raised bool) {
		fd := df.flags[[2]string{vid, flag}]
		if fd == nil {
			fd = &FlagDiff{Verifier: vid, Flag: flag}
			df.flags[[2]string{vid, flag}] = fd
		}
		if ch == nil && df.examples > 0 {
			df.flagChanges = append(df.flagChanges, FlagChange{RolloutID: string(id), Verifier: vid, Raised: []string{}, Cleared: []string{}})
			ch = &df.flagChanges[len(df.flagChanges)-1]
		}
		if raised {
			fd.Raised++
			if ch != nil {
				ch.Raised = append(ch.Raised, flag)
			}
		} else {
			fd.Cleared++
			if ch != nil {
				ch.Cleared = append(ch.Cleared, flag)
			}
		}
	}
	for _, f := range df.curFlags {
		if !slices.Contains(df.baseFlags, f) {
			count(f, true)
		}
	}
	for _, f := range df.baseFlags {
		if !slices.Contains(df.curFlags, f) {
			count(f, false)
		}
	}
	if len(df.flagChanges) >= 4*df.examples && df.examples > 0 {
		sortFlagChanges(df.flagChanges)
		clear(df.flagChanges[df.examples:])
		df.flagChanges = df.flagChanges[:df.examples]
	}
	return nil
}

// pairTurns compares the turn rewards cells bv (base) and cv (current)
// of the paired rollout id, bound to the verifier vid.
func (df *differ) pairTurns(id []byte, vid string, bv, cv join.Value) error {
	if bv.Kind == cv.Kind && bytes.Equal(bv.Data, cv.Data) {
		return nil // the same cell: no list to decode
	}
	base, err := df.turnRewards(bv)
	if err != nil {
		return fmt.Errorf("base: %w", err)
	}
	cur, err := df.turnRewards(cv)
	if err != nil {
		return fmt.Errorf("current: %w", err)
	}
	if sameTurnRewards(base, cur) {
		return nil
	}
	*df.d.TurnRewardsChanged++
	if df.examples == 0 {
		return nil
	}
	df.turnChanges = append(df.turnChanges, TurnChange{RolloutID: string(id), Verifier: vid, Base: base, Current: cur})
	if len(df.turnChanges) >= 4*df.examples {
		sortTurnChanges(df.turnChanges)
		clear(df.turnChanges[df.examples:])
		df.turnChanges = df.turnChanges[:df.examples]
	}
	return nil
}

// turnRewards decodes a turn_rewards cell: nil for null.
func (df *differ) turnRewards(v join.Value) (TurnRewards, error) {
	if err := df.turnDec.Decode([]columnar.Cell{{Kind: v.Kind, Data: v.Data}}, &df.turnRow); err != nil {
		return nil, err
	}
	if !df.turnRow.TurnRewardsValid {
		return nil, nil
	}
	if df.turnRow.TurnRewards == nil {
		return TurnRewards{}, nil
	}
	return df.turnRow.TurnRewards, nil
}

func sortTurnChanges(cs []TurnChange) {
	slices.SortFunc(cs, func(a, b TurnChange) int { return strings.Compare(a.RolloutID, b.RolloutID) })
}

func sortFlagChanges(cs []FlagChange) {
	slices.SortFunc(cs, func(a, b FlagChange) int { return strings.Compare(a.RolloutID, b.RolloutID) })
}

func (df *differ) finish(st *join.Stats) error {
	d := df.d
	d.BaseRollouts, d.CurRollouts = st.LeftRows, st.RightRows
	d.DuplicateIDs = st.LeftDuplicates + st.RightDuplicates
	d.Partitions, d.DiskBytes = st.Partitions, st.DiskBytes+df.deltas.bytes
	err := df.deltas.sum(func(verifier int, delta float64) {
		df.verifiers[verifier].rewardDeltaSum += delta
	})
	if err != nil {
		return err
	}
	if d.Paired > 0 {
		d.RegressionRate = float64(d.Regressions) / float64(d.Paired)
	}
	d.Failed = df.failOn.exceeded(d.Regressions, d.Paired)
	for _, v := range df.verifiers {
		v.McNemarP = stats.McNemarExact(v.PassToFail, v.FailToPass)
		if v.rewardDeltaN > 0 {
			m := v.rewardDeltaSum / float64(v.rewardDeltaN)
			v.MeanRewardDelta = &m
		}
		d.Verifiers = append(d.Verifiers, *v)
	}
	slices.SortFunc(d.Verifiers, func(a, b VerifierDiff) int { return strings.Compare(a.Verifier, b.Verifier) })
	for _, byCheck := range df.checks {
		for _, c := range byCheck {
			d.Checks = append(d.Checks, *c)
		}
	}
	slices.SortFunc(d.Checks, func(a, b CheckDiff) int {
		if c := strings.Compare(a.Verifier, b.Verifier); c != 0 {
			return c
		}
		return strings.Compare(a.Check, b.Check)
	})
	if df.flags != nil {
		d.Flags = []FlagDiff{}
		for _, fd := range df.flags {
			d.Flags = append(d.Flags, *fd)
		}
		slices.SortFunc(d.Flags, func(a, b FlagDiff) int {
			return cmp.Or(strings.Compare(a.Verifier, b.Verifier), strings.Compare(a.Flag, b.Flag))
		})
		sortFlagChanges(df.flagChanges)
		d.FlagExamples = df.flagChanges[:min(df.examples, len(df.flagChanges))]
		if d.FlagExamples == nil {
			d.FlagExamples = []FlagChange{}
		}
	}
	if d.TurnRewardsChanged != nil {
		sortTurnChanges(df.turnChanges)
		d.TurnExamples = df.turnChanges[:min(df.examples, len(df.turnChanges))]
		if d.TurnExamples == nil {
			d.TurnExamples = []TurnChange{}
		}
	}
	sortChanges(df.changes)
	d.Examples = df.changes[:min(df.examples, len(df.changes))]
	if d.Examples == nil {
		d.Examples = []Change{}
	}
	if d.Verifiers == nil {
		d.Verifiers = []VerifierDiff{}
	}
	if d.Checks == nil {
		d.Checks = []CheckDiff{}
	}
	return nil
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
