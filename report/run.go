package report

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/join"
	"github.com/gavelhq/gavel/stats"
	"github.com/gavelhq/gavel/verifiers"
)

// RunConfig sets a run report. The zero value shows the 10 most failed
// checks with 3 example rollouts each, 3 example messages per error kind,
// and no baseline.
type RunConfig struct {
	// Baseline is an earlier result directory to compare with, as gavel
	// diff does ("" for none).
	Baseline string
	// TopChecks is how many of the most failed checks are shown (0: 10).
	TopChecks int
	// Examples is how many example rollouts each of them, and each error
	// kind, shows (0: 3).
	Examples int
	// Turns lists rollout ids whose turns the report shows, each in a
	// section of its own (--turns): a row per agent turn with its reward
	// and the checks credited to it. The run must score turns, and have
	// every one of them.
	Turns []string
}

// RunReport is what one run's results say: the summary, the outcome counts
// per verifier and per check, the most failed checks with examples, the
// error kinds with example messages, and, against a baseline, the diff.
//
// It is built by reading the rewards and checks once, row by row: it
// holds counts, and for each check and error kind only its first few
// examples, so its size does not grow with the number of rollouts.
type RunReport struct {
	Dir     string     `json:"dir"`
	Version string     `json:"gavel_version"`
	Summary RunSummary `json:"summary"`
	// Verifiers counts the rollouts of each verifier by status, sorted by
	// id; "" holds the rollouts no verifier binds.
	Verifiers []OutcomeCounts `json:"verifiers"`
	// Checks counts each check's results by status, by verifier then
	// check index.
	Checks []CheckCounts `json:"checks"`
	// MostFailed are the checks that failed most often, most first, with
	// their first failing rollouts.
	MostFailed []FailedCheck `json:"most_failed"`
	// ErrorKinds counts the rollouts with status error by kind, most
	// first, with their first messages.
	ErrorKinds []ErrorKind `json:"error_kinds"`
	// Judges counts, for each rubric check of a run that judged checks
	// more than once (it has a judgements table), each judge model's
	// judgements, by verifier, check index, then the order the models
	// first appear in; absent otherwise.
	Judges []JudgeCounts `json:"judges,omitempty"`
	// Flags counts the flags raised and lists the first flagged
	// rollouts with their evidence (absent in a run without flags).
	Flags *FlagReport `json:"flags,omitempty"`
	// Turns shows the turns of the rollouts RunConfig.Turns asks for, in
	// that order (absent without it).
	Turns []TurnsReport `json:"turns,omitempty"`
	// Diff compares the run with the baseline (nil without one).
	Diff *Diff `json:"diff,omitempty"`
	// Agreement is the agreement of the judges, as gavel judge agreement
	// computes it with its default bootstrap (nil for a run without a
	// judgements table).
	Agreement *Agreement `json:"agreement,omitempty"`
}

// FlagReport is what a run with flags says of them: the rollouts that
// raised one, the rollouts raising each flag, and the first flagged
// rollouts (up to maxFlagged) with each raised flag's evidence.
type FlagReport struct {
	Flagged  int64            `json:"flagged"`
	Counts   []FlagCount      `json:"counts"`
	Examples []FlaggedRollout `json:"examples"`
}

// FlagCount is how many rollouts raised one flag of one verifier.
type FlagCount struct {
	Verifier string `json:"verifier"`
	Flag     string `json:"flag"`
	Raised   int64  `json:"raised"`
}

// FlaggedRollout is a flagged rollout with the evidence of its flags.
type FlaggedRollout struct {
	RolloutID string         `json:"rollout_id"`
	Verifier  string         `json:"verifier"`
	Evidence  []FlagEvidence `json:"evidence"`
}

// FlagEvidence is a raised flag's detail and actual, cut short.
type FlagEvidence struct {
	Flag   string `json:"flag"`
	Detail string `json:"detail"`
	Actual string `json:"actual,omitempty"`
}

// TurnsReport is one rollout's turns, as a run that scores turns wrote
// them: a row per agent turn with the turn's reward and the checks
// credited to it, and the rollout's checks credited to no turn.
type TurnsReport struct {
	RolloutID string   `json:"rollout_id"`
	Verifier  string   `json:"verifier"`
	Status    string   `json:"status"`
	Reward    *float64 `json:"reward"`
	// Scored is false when the rollout's turn rewards are null (its
	// verifier scores no turns, or its status is error): no turn has a
	// reward then.
	Scored bool `json:"scored"`
	// Turns has a row per agent turn: as many as the rewards' turns
	// column counts (or turn_rewards holds, or a check is credited to,
	// when more).
	Turns []TurnRow `json:"turns"`
	// Uncredited are the rollout's checks credited to no turn.
	Uncredited []TurnCheck `json:"uncredited"`

	found               bool
	checksTotal, checks int32
}

// TurnRow is one agent turn of a rollout.
type TurnRow struct {
	Turn int `json:"turn"`
	// Reward is the turn's reward; nil when the turn is not scored.
	Reward *float64    `json:"reward"`
	Checks []TurnCheck `json:"checks"`
}

// TurnCheck is a check of a rollout, its detail cut to MaxExampleText
// bytes.
type TurnCheck struct {
	Check  string `json:"check"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

// turnsOf returns the TurnsReport of the rollout id asked for, nil for
// any other.
func (rep *RunReport) turnsOf(byID map[string]int, id string) *TurnsReport {
	i, ok := byID[id]
	if !ok {
		return nil
	}
	return &rep.Turns[i]
}

// setTurns fills t from the rollout's rewards row r, the first of its id.
func (t *TurnsReport) setTurns(r *columnar.RewardRow) {
	t.found = true
	t.Verifier, t.Status, t.checksTotal = strings.Clone(r.VerifierID.S), strings.Clone(r.Status), r.ChecksTotal
	if r.RewardValid {
		reward := r.Reward
		t.Reward = &reward
	}
	t.Scored = r.TurnRewardsValid
	n := len(r.TurnRewards)
	if r.TurnsValid {
		n = max(n, int(r.Turns))
	}
	t.Turns = make([]TurnRow, n)
	for i := range t.Turns {
		t.Turns[i].Turn = i
		if i < len(r.TurnRewards) && !math.IsNaN(r.TurnRewards[i]) {
			reward := r.TurnRewards[i]
			t.Turns[i].Reward = &reward
		}
	}
}

// addCheck adds one of the rollout's check rows: its first checks_total
// rows are its own (rows of the same id that follow are another row's).
func (t *TurnsReport) addCheck(c *columnar.CheckRow) {
	if !t.found || t.checks >= t.checksTotal {
		return
	}
	t.checks++
	tc := TurnCheck{Check: strings.Clone(c.CheckID), Status: strings.Clone(c.Status), Detail: cut(c.Detail)}
	if !c.TurnValid || c.Turn < 0 {
		t.Uncredited = append(t.Uncredited, tc)
		return
	}
	for int(c.Turn) >= len(t.Turns) { // a turn the rewards do not count
		t.Turns = append(t.Turns, TurnRow{Turn: len(t.Turns)})
	}
	t.Turns[c.Turn].Checks = append(t.Turns[c.Turn].Checks, tc)
}

// maxFlagged bounds the flagged rollouts a report lists.
const maxFlagged = 20

// readFlags fills rep.Flags from the flag rows of a run with flags.
func (rep *RunReport) readFlags() error {
	if !hasFlags(rep.Dir) {
		return nil
	}
	fr := &FlagReport{Counts: []FlagCount{}, Examples: []FlaggedRollout{}}
	counts := map[[2]string]int64{}
	flagged := map[string]bool{}
	err := join.ScanFlagRows(rep.Dir, []string{"rollout_id", "verifier_id", "check_id", "status", "detail", "actual"}, func(v []value) error {
		if string(v[3].Data) != verifiers.FlagRaised {
			return nil
		}
		id, verifier, flag := string(v[0].Data), string(v[1].Data), string(v[2].Data)
		counts[[2]string{verifier, flag}]++
		if !flagged[id] {
			flagged[id] = true
			fr.Flagged++
			if len(fr.Examples) < maxFlagged {
				fr.Examples = append(fr.Examples, FlaggedRollout{RolloutID: id, Verifier: verifier})
			}
		}
		if n := len(fr.Examples); n > 0 && fr.Examples[n-1].RolloutID == id {
			e := FlagEvidence{Flag: flag, Detail: cut(string(v[4].Data))}
			if !v[5].Null() {
				e.Actual = cut(string(v[5].Data))
			}
			fr.Examples[n-1].Evidence = append(fr.Examples[n-1].Evidence, e)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for k, n := range counts {
		fr.Counts = append(fr.Counts, FlagCount{Verifier: k[0], Flag: k[1], Raised: n})
	}
	slices.SortFunc(fr.Counts, func(a, b FlagCount) int {
		return cmp.Or(cmp.Compare(b.Raised, a.Raised), cmp.Compare(a.Verifier, b.Verifier), cmp.Compare(a.Flag, b.Flag))
	})
	rep.Flags = fr
	return nil
}

// JudgeCounts counts one judge model's single judgements of one check:
// by status (pass, fail, error; pending is always 0), the samples asked
// per check, and the mean of the scores of those that succeeded.
type JudgeCounts struct {
	Verifier string `json:"verifier"`
	Check    string `json:"check"`
	Model    string `json:"judge_model"`
	OutcomeCounts
	// Samples is the number of samples of a check (the largest sample
	// number plus one).
	Samples int64 `json:"samples"`
	// MeanScore is the mean score of the successful judgements, null when
	// none succeeded.
	MeanScore *float64 `json:"mean_score"`

	index, order int64
	sum          float64
	n            int64
}

// RunSummary counts the rollouts and checks of a run.
type RunSummary struct {
	OutcomeCounts
	// PassRate is passed / (passed + failed), null when both are 0.
	PassRate *float64 `json:"pass_rate"`
	// MeanReward is the mean over the rollouts with a reward.
	MeanReward *float64 `json:"mean_reward"`
	// Checks counts check rows; ChecksPassed those with status pass.
	Checks       int64 `json:"checks"`
	ChecksPassed int64 `json:"checks_passed"`

	rewardSum float64
	rewardN   int64
}

// OutcomeCounts counts results by status: for rollouts passed, failed,
// pending and error, for checks pass, fail, pending and error.
type OutcomeCounts struct {
	Name    string `json:"name,omitempty"`
	Total   int64  `json:"total"`
	Pass    int64  `json:"pass"`
	Fail    int64  `json:"fail"`
	Pending int64  `json:"pending"`
	Error   int64  `json:"error"`
}

func (c *OutcomeCounts) add(status string) {
	c.Total++
	switch status {
	case verifiers.StatusPassed, verifiers.CheckPass:
		c.Pass++
	case verifiers.StatusFailed, verifiers.CheckFail:
		c.Fail++
	case verifiers.StatusPending: // also verifiers.CheckPending
		c.Pending++
	default:
		c.Error++
	}
}

// CheckCounts counts one check's results.
type CheckCounts struct {
	Verifier string `json:"verifier"`
	Check    string `json:"check"`
	Required bool   `json:"required"`
	OutcomeCounts
	// Unextracted counts the failures of a math check whose text gave no
	// answer (detail "no answer found ..."), apart from wrong answers.
	Unextracted int64 `json:"unextracted,omitempty"`
	index       int64 // the check's smallest check_index, for ordering
}

// FailedCheck is a check that failed, with example rollouts.
type FailedCheck struct {
	Verifier string    `json:"verifier"`
	Check    string    `json:"check"`
	Required bool      `json:"required"`
	Failed   int64     `json:"failed"`
	Total    int64     `json:"total"`
	Examples []Example `json:"examples"`
}

// Example is one rollout's failed check: its detail, actual and expected
// (JSON text; "" for null), each cut to MaxExampleText bytes.
type Example struct {
	RolloutID string `json:"rollout_id"`
	Detail    string `json:"detail"`
	Actual    string `json:"actual"`
	Expected  string `json:"expected"`
}

// ErrorKind counts the rollouts with status error of one kind.
type ErrorKind struct {
	Kind     string         `json:"kind"`
	Count    int64          `json:"count"`
	Examples []ErrorExample `json:"examples"`
}

// ErrorExample is one error rollout's message, cut to MaxExampleText
// bytes.
type ErrorExample struct {
	RolloutID string `json:"rollout_id"`
	Message   string `json:"message"`
}

// MaxExampleText is the length in bytes beyond which an example's text is
// cut (and ends with "...").
const MaxExampleText = 600

// BuildRunReport reads the result directory dir and, with cfg.Baseline,
// compares it with the baseline through Compare.
func BuildRunReport(dir string, cfg RunConfig) (*RunReport, error) {
	if cfg.TopChecks == 0 {
		cfg.TopChecks = 10
	}
	if cfg.Examples == 0 {
		cfg.Examples = 3
	}
	d, err := join.Open(dir)
	if err != nil {
		return nil, err
	}
	rep := &RunReport{Dir: dir, Version: d.Manifest.Version}
	var turns map[string]int
	if len(cfg.Turns) > 0 {
		if !d.Manifest.Config.Turns {
			return nil, fmt.Errorf("--turns %s: the run in %s does not score turns (none of its verifiers has turn checks or credits checks to turns)", cfg.Turns[0], dir)
		}
		turns = map[string]int{}
		for _, id := range cfg.Turns {
			if _, dup := turns[id]; !dup {
				turns[id] = len(rep.Turns)
				rep.Turns = append(rep.Turns, TurnsReport{RolloutID: id})
			}
		}
	}
	if err := rep.readRewards(cfg.Examples, turns); err != nil {
		return nil, err
	}
	for _, t := range rep.Turns {
		if !t.found {
			return nil, fmt.Errorf("--turns %s: no rollout %s in %s", t.RolloutID, t.RolloutID, dir)
		}
	}
	if err := rep.readChecks(cfg.TopChecks, cfg.Examples, turns); err != nil {
		return nil, err
	}
	if err := rep.readFlags(); err != nil {
		return nil, err
	}
	switch ag, err := BuildAgreement(dir, AgreementConfig{Bootstrap: stats.BootstrapConfig{Seed: 1, Resamples: 2000}}); {
	case err == nil:
		rep.Agreement = ag
	case !errors.Is(err, ErrNoJudgements):
		return nil, fmt.Errorf("judge agreement: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "judgements")); err == nil {
		if err := rep.readJudgements(); err != nil {
			return nil, err
		}
	}
	if cfg.Baseline != "" {
		d, err := Compare(cfg.Baseline, dir, DiffConfig{})
		if err != nil {
			return nil, fmt.Errorf("compare with the baseline: %w", err)
		}
		rep.Diff = d
	}
	return rep, nil
}

// readRewards counts the rollouts overall and per verifier, and the error
// kinds with their first examples; with turns (the rollouts of --turns,
// by id, in a run that scores turns), it reads their turn rewards.
func (rep *RunReport) readRewards(examples int, turns map[string]int) error {
	byVerifier := map[string]*OutcomeCounts{}
	kinds := map[string]*ErrorKind{}
	s := &rep.Summary
	cols := []string{"rollout_id", "verifier_id", "status", "reward", "error_kind", "error"}
	if turns != nil {
		cols = append(cols, "checks_total", columnar.ColumnTurnRewards, columnar.ColumnTurns)
	}
	err := scanRewards(rep.Dir, cols, columnar.Interner{}, func(r *columnar.RewardRow) error {
		if t := rep.turnsOf(turns, r.RolloutID); t != nil && !t.found {
			t.setTurns(r)
		}
		status := r.Status
		s.add(status)
		vc := byVerifier[r.VerifierID.S]
		if vc == nil {
			vc = &OutcomeCounts{Name: r.VerifierID.S}
			byVerifier[vc.Name] = vc
		}
		vc.add(status)
		if r.RewardValid {
			s.rewardSum += r.Reward
			s.rewardN++
		}
		if status != verifiers.StatusError {
			return nil
		}
		k := kinds[r.ErrorKind.S]
		if k == nil {
			k = &ErrorKind{Kind: r.ErrorKind.S}
			kinds[k.Kind] = k
		}
		k.Count++
		if len(k.Examples) < examples {
			k.Examples = append(k.Examples, ErrorExample{RolloutID: strings.Clone(r.RolloutID), Message: cut(r.Error.S)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n := s.Pass + s.Fail; n > 0 {
		r := float64(s.Pass) / float64(n)
		s.PassRate = &r
	}
	if s.rewardN > 0 {
		m := s.rewardSum / float64(s.rewardN)
		s.MeanReward = &m
	}
	for _, vc := range byVerifier {
		rep.Verifiers = append(rep.Verifiers, *vc)
	}
	slices.SortFunc(rep.Verifiers, func(a, b OutcomeCounts) int { return cmp.Compare(a.Name, b.Name) })
	for _, k := range kinds {
		rep.ErrorKinds = append(rep.ErrorKinds, *k)
	}
	slices.SortFunc(rep.ErrorKinds, func(a, b ErrorKind) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Kind, b.Kind))
	})
	return nil
}

// readChecks counts the checks and keeps each check's first failing
// rollouts; the top most failed keep theirs. With turns (see
// readRewards), it gives the rollouts of --turns their checks.
func (rep *RunReport) readChecks(top, examples int, turns map[string]int) error {
	type key struct{ verifier, check string }
	checks := map[key]*CheckCounts{}
	failed := map[key][]Example{}
	cols := []string{"rollout_id", "verifier_id", "check_id", "check_index", "required", "status", "detail", "actual", "expected"}
	if turns != nil {
		cols = append(cols, columnar.ColumnTurn)
	}
	err := scanChecks(rep.Dir, cols, columnar.Interner{}, func(r *columnar.CheckRow) error {
		if t := rep.turnsOf(turns, r.RolloutID); t != nil {
			t.addCheck(r)
		}
		k := key{r.VerifierID.S, r.CheckID}
		c := checks[k]
		index := int64(r.CheckIndex)
		if c == nil {
			c = &CheckCounts{Verifier: k.verifier, Check: k.check, index: index}
			checks[k] = c
		}
		c.index = min(c.index, index)
		c.Required = c.Required || r.Required
		status := r.Status
		c.add(status)
		if status == verifiers.CheckFail && verifiers.IsMathNoAnswer(r.Detail) {
			c.Unextracted++
		}
		rep.Summary.Checks++
		if status == verifiers.CheckPass {
			rep.Summary.ChecksPassed++
		}
		if status == verifiers.CheckFail && len(failed[k]) < examples {
			failed[k] = append(failed[k], Example{RolloutID: strings.Clone(r.RolloutID), Detail: cut(r.Detail), Actual: cut(r.Actual.S), Expected: cut(r.Expected.S)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range checks {
		rep.Checks = append(rep.Checks, *c)
	}
	slices.SortFunc(rep.Checks, func(a, b CheckCounts) int {
		return cmp.Or(cmp.Compare(a.Verifier, b.Verifier), cmp.Compare(a.index, b.index), cmp.Compare(a.Check, b.Check))
	})
	for _, c := range rep.Checks {
		if c.Fail > 0 {
			rep.MostFailed = append(rep.MostFailed, FailedCheck{Verifier: c.Verifier, Check: c.Check, Required: c.Required,
				Failed: c.Fail, Total: c.Total, Examples: failed[key{c.Verifier, c.Check}]})
		}
	}
	slices.SortStableFunc(rep.MostFailed, func(a, b FailedCheck) int { return cmp.Compare(b.Failed, a.Failed) })
	rep.MostFailed = rep.MostFailed[:min(top, len(rep.MostFailed))]
	return nil
}

// readJudgements counts the judgements table by check and judge model.
func (rep *RunReport) readJudgements() error {
	type key struct{ verifier, check, model string }
	judges := map[key]*JudgeCounts{}
	cols := []string{"verifier_id", "check_id", "check_index", "judge_model", "sample", "score", "status"}
	err := scanJudgementRows(rep.Dir, cols, columnar.Interner{}, func(r *columnar.JudgementRow) error {
		k := key{r.VerifierID.S, r.CheckID, r.JudgeModel}
		c := judges[k]
		index := int64(r.CheckIndex)
		if c == nil {
			c = &JudgeCounts{Verifier: k.verifier, Check: k.check, Model: k.model, index: index, order: int64(len(judges))}
			judges[k] = c
		}
		c.index = min(c.index, index)
		c.Samples = max(c.Samples, int64(r.Sample)+1)
		c.add(r.Status)
		if r.ScoreValid {
			c.sum += r.Score
			c.n++
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range judges {
		if c.n > 0 {
			m := c.sum / float64(c.n)
			c.MeanScore = &m
		}
		rep.Judges = append(rep.Judges, *c)
	}
	slices.SortFunc(rep.Judges, func(a, b JudgeCounts) int {
		return cmp.Or(cmp.Compare(a.Verifier, b.Verifier), cmp.Compare(a.index, b.index), cmp.Compare(a.Check, b.Check), cmp.Compare(a.order, b.order))
	})
	return nil
}

// cut copies an example's text, cut to MaxExampleText bytes at a rune
// boundary.
func cut(b string) string {
	if len(b) <= MaxExampleText {
		return strings.Clone(b)
	}
	n := MaxExampleText - 3
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n] + "..."
}
