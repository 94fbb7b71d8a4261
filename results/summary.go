package results

import (
	"sort"
	"strings"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/verifiers"
)

// Counts are the outcome counts of a set of rollouts, with the error kinds,
// the pass rate and the mean reward.
type Counts struct {
	verifiers.Counts
	// ErrorKinds counts the error rows by kind.
	ErrorKinds map[string]int64 `json:"error_kinds"`
	// PassRate is passed / (passed + failed): pending and error rows are
	// never in the denominator. Null when no row passed or failed.
	PassRate *float64 `json:"pass_rate"`
	// MeanReward is the mean over rows that have a reward (null when none).
	MeanReward *float64 `json:"mean_reward"`

	rewardSum float64
	rewardN   int64
}

func (c *Counts) add(r *columnar.RewardRow) {
	c.Counts.Add(r.Status)
	if r.Status == verifiers.StatusError {
		if c.ErrorKinds == nil {
			c.ErrorKinds = map[string]int64{}
		}
		c.ErrorKinds[r.ErrorKind.S]++
	}
	if r.RewardValid {
		c.rewardSum += r.Reward
		c.rewardN++
	}
}

func (c *Counts) finish() {
	if c.ErrorKinds == nil {
		c.ErrorKinds = map[string]int64{}
	}
	if rate, ok := c.Rate(); ok {
		c.PassRate = &rate
	}
	if c.rewardN > 0 {
		mean := c.rewardSum / float64(c.rewardN)
		c.MeanReward = &mean
	}
}

// Summary is summary.json: counts overall, per verifier and per task, the
// rate of the run and the files skipped. Everything but the timing fields
// depends only on the inputs and verifiers.
type Summary struct {
	Counts
	// Verifiers counts per verifier id; rows no verifier binds are
	// counted under "" nowhere: they appear only in the totals and tasks.
	Verifiers map[string]*Counts `json:"verifiers"`
	// Tasks counts per task id.
	Tasks map[string]*Counts `json:"tasks"`
	// Checks is the number of check rows written.
	Checks int64 `json:"checks"`
	// Unextracted counts, per "VERIFIER/CHECK", the math checks that
	// failed because the text gave no answer (their detail starts with
	// verifiers.MathNoAnswer), apart from wrong answers; absent when none.
	Unextracted map[string]int64 `json:"unextracted,omitempty"`
	// Flags counts, per "VERIFIER/FLAG", the flag rows by status, and per
	// health flag (health/...) the rollouts raising it (absent in a run
	// without flags); Flagged counts the rollouts with at least one flag
	// raised.
	Flags   map[string]*FlagCounts `json:"flags,omitempty"`
	Flagged int64                  `json:"flagged,omitempty"`
	// FilesSkipped lists the unsupported files found in input directories.
	FilesSkipped []string `json:"files_skipped"`
	// Warnings says what in the inputs is likely a mistake (a file of
	// chats read as rows); absent when nothing is.
	Warnings []string `json:"warnings,omitempty"`
	// DuplicateIDs counts the rows whose rollout_id an earlier row already
	// had; DuplicateIDList names up to 100 such ids, sorted.
	DuplicateIDs    int64    `json:"duplicate_ids"`
	DuplicateIDList []string `json:"duplicate_id_list"`
	// FailedInputs lists the input units that could not be read to the
	// end (a corrupt or truncated file); their parts are absent.
	FailedInputs []FailedInput `json:"failed_inputs"`
	// Judge counts the run's judging (absent when nothing was judged);
	// like the timing fields it may vary between runs with identical parts.
	Judge *JudgeSummary `json:"judge,omitempty"`
	// Remote counts the requests to remote verifiers (absent when none is
	// bound); like Judge it may vary between runs with identical parts.
	Remote *RemoteSummary `json:"remote,omitempty"`
	// ImpureVerifiers lists the remote verifiers asked although not
	// declared stateless (--allow-impure).
	ImpureVerifiers []string `json:"impure_verifiers,omitempty"`
	// Reuse counts what a run with --reuse took from the earlier run
	// (absent without it); it varies between runs with identical parts.
	Reuse *ReuseSummary `json:"reuse,omitempty"`
	// ElapsedSeconds and RowsPerSecond time the run; with Judge they are
	// the only fields that vary between identical runs.
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	RowsPerSecond  float64 `json:"rows_per_second"`
}

func NewSummary(skipped []string) *Summary {
	if skipped == nil {
		skipped = []string{}
	}
	sort.Strings(skipped)
	return &Summary{Verifiers: map[string]*Counts{}, Tasks: map[string]*Counts{}, FilesSkipped: skipped,
		DuplicateIDList: []string{}, FailedInputs: []FailedInput{}}
}

func (s *Summary) Add(r *columnar.RewardRow) {
	s.Counts.add(r)
	if len(r.Flags) > 0 {
		s.Flagged++
		for _, f := range r.Flags {
			if strings.HasPrefix(f, verifiers.HealthPrefix) { // no rows: counted here
				s.addFlag(f, verifiers.FlagRaised, 1)
			}
		}
	}
	if r.VerifierID.Valid {
		c := s.Verifiers[r.VerifierID.S]
		if c == nil {
			c = &Counts{}
			s.Verifiers[r.VerifierID.S] = c
		}
		c.add(r)
	}
	c := s.Tasks[r.TaskID]
	if c == nil {
		c = &Counts{}
		s.Tasks[r.TaskID] = c
	}
	c.add(r)
}

// addChecks counts the check rows crs.
func (s *Summary) AddChecks(crs []columnar.CheckRow) {
	s.Checks += int64(len(crs))
	for i := range crs {
		c := &crs[i]
		if c.Kind == columnar.KindFlag {
			s.addFlag(c.VerifierID.S+"/"+c.CheckID, c.Status, 1)
			continue
		}
		if c.Status == verifiers.CheckFail && verifiers.IsMathNoAnswer(c.Detail) {
			if s.Unextracted == nil {
				s.Unextracted = map[string]int64{}
			}
			s.Unextracted[c.VerifierID.S+"/"+c.CheckID]++
		}
	}
}

// FlagCounts count the rows of one flag by status.
type FlagCounts struct {
	Raised int64 `json:"raised"`
	Clear  int64 `json:"clear"`
	Error  int64 `json:"error"`
}

// addFlag counts n rows of the flag key with status.
func (s *Summary) addFlag(key, status string, n int64) {
	if s.Flags == nil {
		s.Flags = map[string]*FlagCounts{}
	}
	c := s.Flags[key]
	if c == nil {
		c = &FlagCounts{}
		s.Flags[key] = c
	}
	switch status {
	case verifiers.FlagRaised:
		c.Raised += n
	case verifiers.FlagClear:
		c.Clear += n
	default:
		c.Error += n
	}
}

func (s *Summary) finish() {
	s.Counts.finish()
	for _, c := range s.Verifiers {
		c.finish()
	}
	for _, c := range s.Tasks {
		c.finish()
	}
}

// FailedInput is an input unit that could not be graded to the end.
type FailedInput struct {
	Path  string `json:"path"`
	Part  string `json:"part"`
	Error string `json:"error"`
}

// JudgeSummary counts a run's judging: probes of the server, requests
// sent (retries included),
// verdicts found in the cache, retries, failed judgements, tokens, and
// rubric checks left pending by the request budget. It depends on the
// cache and the server as well as on the inputs: like the timing fields,
// it may differ between runs whose parts are identical.
type JudgeSummary struct {
	// Probes counts the probes of the judge's server (one before the
	// first request the cache cannot answer); Requests does not.
	Probes           int64 `json:"probes"`
	Requests         int64 `json:"requests"`
	CacheHits        int64 `json:"cache_hits"`
	Retries          int64 `json:"retries"`
	Failures         int64 `json:"failures"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	PendingBudget    int64 `json:"pending_by_budget"`
}

// RemoteSummary counts a run's requests to remote verifiers, as
// JudgeSummary counts the judge's; like it, it depends on the cache and
// the services, not only on the inputs.
type RemoteSummary struct {
	Probes        int64 `json:"probes"`
	Requests      int64 `json:"requests"`
	CacheHits     int64 `json:"cache_hits"`
	Retries       int64 `json:"retries"`
	Failures      int64 `json:"failures"`
	PendingBudget int64 `json:"pending_by_budget"`
	// Repeats is --verify-repeats (absent when each rollout is asked
	// once), and Flaky counts per remote verifier the rollouts whose
	// answers disagreed.
	Repeats int              `json:"repeats,omitempty"`
	Flaky   map[string]int64 `json:"flaky,omitempty"`
}

// ReuseSummary counts what a run with --reuse took from the earlier
// run.
type ReuseSummary struct {
	// Reused counts the rollouts whose results were taken from the
	// earlier run, those of units copied whole included; Graded the
	// others.
	Reused int64 `json:"reused"`
	Graded int64 `json:"graded"`
	// CopiedParts counts the parts copied whole.
	CopiedParts int64 `json:"copied_parts"`
	// Note says why nothing could be reused, when nothing could.
	Note string `json:"note,omitempty"`

	// Undecoded counts the reused rollouts taken without decoding (not
	// written: it tells tests which path a row took).
	Undecoded int64 `json:"-"`
}
