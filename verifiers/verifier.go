// Package verifiers is the verifier model: the Rollout a verifier reads,
// the Checks it adds, the verdict and reward rules that score them, and
// the helpers verifiers share (numbers, world changes, math answers). A
// verifier is a pure function of one rollout: the same rollout always
// produces the same checks.
//
// This package is public API (with cli, verifiers/verifiertest and
// columnar/jsonview): it follows semantic versioning, and every change to
// its exported names is in the CHANGELOG. To write a verifier, read this
// file and verifiers/crm (the reference environment), then run
// `gavel verifier init` for a module of your own, or `gavel verifier add`
// inside one.
package verifiers

import (
	"fmt"
	"io/fs"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// Rollout is what a verifier sees of one recorded attempt. Every value
// points into buffers owned by the grading worker and is valid only during
// the call to Grade: a verifier must not keep any of it.
type Rollout struct {
	// ID is the rollout id (or "<path>#<row>" when the input has none).
	ID string
	// TaskID is the task the rollout attempted.
	TaskID string
	// Final is the world after the attempt. A missing state is the zero
	// Value, in which every lookup finds nothing.
	Final jsonview.Value
	// Initial is the world before the attempt: the row's own, else the
	// task's from the tasks table, else missing.
	Initial jsonview.Value
	// Output is the agent's final answer ("" when absent).
	Output string
	// Log is the interaction log, an array of events (missing when absent).
	Log jsonview.Value
	// Task is the rollout's row of the tasks table, as an object (missing
	// when no tasks table names the task).
	Task jsonview.Value
	// Meta is the row's fields as an object; it may also hold the standard
	// fields.
	Meta jsonview.Value
	// Turns are the agent's turns in order, an array of objects with
	// index, text, tool_calls, tool_results and message_index (see
	// docs/turns.md): read from the conversation of a harness's log or of
	// a row's messages. Missing when the rollout has no conversation, and
	// in runs where no verifier reads turns (Verifier.Turns).
	Turns jsonview.Value
}

// Status is the outcome of one check.
type Status uint8

// Check statuses, as the checks' status column writes them (CheckPass,
// CheckFail, CheckPending, CheckError).
const (
	Pass Status = iota
	Fail
	Pending
	Error
)

// String returns the status as written in outputs.
func (s Status) String() string {
	switch s {
	case Pass:
		return CheckPass
	case Fail:
		return CheckFail
	case Pending:
		return CheckPending
	case Error:
		return CheckError
	}
	return "unknown"
}

// Check is one labelled judgement.
type Check struct {
	// ID identifies the check within its verifier; Go checks use the label.
	ID       string
	Label    string
	Required bool
	Status   Status
	// Detail is the human-readable evidence, carrying the numbers.
	Detail string
	// Actual and Expected are JSON texts; empty means null.
	Actual, Expected string
	// Score is a judge's score of a judged rubric check, valid when Scored;
	// reward formulas can read it. The judge sets it, never a verifier.
	Score  float64
	Scored bool
	// Rubric, set on a pending check to be judged by a language model,
	// says what the judge is asked; nil for other checks. Its strings must
	// not point into the rollout: they outlive the call to Grade.
	Rubric *Rubric
	// Flag marks a flag (Checks.Flag): a mark that travels with the
	// rollout and never moves its status, passed or reward. A flag's
	// Status is Pass when it is raised, Fail when it is clear and Error
	// when its condition could not be evaluated; it is written as raised,
	// clear or error (StatusText). Flags follow the checks (Run moves
	// them after them) and count in none of the verdict's counts.
	Flag bool
	// Turn is the index of the agent turn (Rollout.Turns) the check is
	// credited to, valid when OnTurn: a turn check's own turn (one added
	// by GradeTurn), or the turn a trajectory check is about
	// (Checks.Credit). A turn's reward is its verifier's TurnReward over
	// the checks credited to it.
	Turn   int
	OnTurn bool
}

// HealthPrefix begins the ids of the health flags gavel computes for every
// rollout (health/empty-output, ...): no verifier's flag may take it.
const HealthPrefix = "health/"

// Flag statuses as written in the checks' status column of a flag row.
const (
	FlagRaised = "raised"
	FlagClear  = "clear"
)

// StatusText returns the check's status as written in the checks' status
// column: a check's Status, or a flag's raised, clear or error.
func (c *Check) StatusText() string {
	if c.Flag {
		switch c.Status {
		case Pass:
			return FlagRaised
		case Fail:
			return FlagClear
		}
	}
	return c.Status.String()
}

// Raised reports whether the check is a raised flag.
func (c *Check) Raised() bool { return c.Flag && c.Status == Pass }

// Rubric is what a judge is asked about one rubric check.
type Rubric struct {
	// Text states what a good output is.
	Text string
	// Query is the task instruction shown to the judge; "" means the task
	// row's or the rollout's instruction, prompt, query or input field.
	Query string
	// Context holds named values shown to the judge, in order.
	Context []RubricContext
	// Model, Threshold and Template, when set, replace the verifier's and
	// the run's judge settings for this check: the judge model, the score
	// needed to pass (score >= threshold) and the path of a template file.
	Model     string
	Threshold float64
	Template  string
}

// instructionFields are the fields of the task row, then of the rollout's
// metadata, read as the task instruction when a rubric has no query.
var instructionFields = []string{"instruction", "prompt", "query", "input"}

// Instruction returns the task instruction the judge sees of rollout r
// (copied out of it): the rubric's Query, else the first of the task
// row's, then the rollout's metadata's instruction, prompt, query or
// input field (a string as it is, other JSON as its text).
func (rb *Rubric) Instruction(r *Rollout) string {
	if rb.Query != "" {
		return rb.Query
	}
	for _, src := range []jsonview.Value{r.Task, r.Meta} {
		for _, f := range instructionFields {
			x := src.Get(f)
			switch x.Kind() {
			case jsonview.Missing, jsonview.Null:
				continue
			case jsonview.String:
				s, _ := x.Str()
				return string(s)
			}
			return string(x.Raw())
		}
	}
	return ""
}

// RubricContext is one named value shown to the judge (JSON text or plain
// text).
type RubricContext struct {
	Name, Value string
}

// RubricOption sets an optional part of a rubric check.
type RubricOption func(*Rubric)

// WithQuery sets the task instruction the judge sees.
func WithQuery(q string) RubricOption { return func(r *Rubric) { r.Query = q } }

// WithContext adds a named value the judge sees.
func WithContext(name, value string) RubricOption {
	return func(r *Rubric) { r.Context = append(r.Context, RubricContext{Name: name, Value: value}) }
}

// WithJudge sets the judge model and pass threshold of one check ("" and 0
// keep the verifier's or the run's).
func WithJudge(model string, threshold float64) RubricOption {
	return func(r *Rubric) { r.Model, r.Threshold = model, threshold }
}

// Checks collects the checks of one rollout in the order the verifier adds
// them. The grading worker reuses one Checks for many rollouts.
type Checks struct {
	list []Check
	// turn is 1 + the index of the turn GradeTurn is grading, to which
	// Add credits its checks (0: none).
	turn int
	// turnChecks are the indexes in list of the turn checks (AddTurn, or
	// Add inside GradeTurn), in order: they stay on their own turns
	// whatever the verifier's Credit.
	turnChecks []int
}

// Require adds a required check that passes when ok.
func (c *Checks) Require(label string, ok bool, detail string) {
	c.Add(Check{ID: label, Label: label, Required: true, Status: passFail(ok), Detail: detail})
}

// Optional adds an optional check that passes when ok: it moves the reward
// but cannot fail the rollout.
func (c *Checks) Optional(label string, ok bool, detail string) {
	c.Add(Check{ID: label, Label: label, Status: passFail(ok), Detail: detail})
}

// Fault adds a check that could not be judged (status error), for example
// because the state lacks what the task presupposes. It makes the rollout's
// status error.
func (c *Checks) Fault(label string, required bool, detail string) {
	c.Add(Check{ID: label, Label: label, Required: required, Status: Error, Detail: detail})
}

// Rubric adds a required check judged by a language model against rubric.
// It is pending until the run's judge answers (a verifier that calls Rubric
// sets Judged). The options' strings, like rubric, must not point into the
// rollout.
func (c *Checks) Rubric(label, rubric string, opts ...RubricOption) {
	r := &Rubric{Text: rubric}
	for _, o := range opts {
		o(r)
	}
	c.Add(Check{ID: label, Label: label, Required: true, Status: Pending, Detail: rubric, Rubric: r})
}

// Flag adds a flag: a mark, raised when raised, that travels with the
// rollout (the rewards' flags column lists the raised ones) and never
// moves its status, passed or reward. id names it in the flags column;
// detail is its evidence. Only a verifier that sets Flagged may add
// flags.
func (c *Checks) Flag(id, label string, raised bool, detail string) {
	c.Add(Check{ID: id, Label: label, Status: passFail(raised), Detail: detail, Flag: true})
}

// FlagFault adds a flag whose condition could not be evaluated (status
// error): it is counted, never raised, and never errs the rollout.
func (c *Checks) FlagFault(id, label, detail string) {
	c.Add(Check{ID: id, Label: label, Status: Error, Detail: detail, Flag: true})
}

// Add appends a check as given. A check without an ID takes its label.
// Inside GradeTurn the check is credited to the turn being graded.
func (c *Checks) Add(ch Check) {
	if ch.ID == "" {
		ch.ID = ch.Label
	}
	if c.turn > 0 {
		ch.Turn, ch.OnTurn = c.turn-1, true
		c.turnChecks = append(c.turnChecks, len(c.list))
	}
	c.list = append(c.list, ch)
}

// AddTurn adds a turn check of the agent turn with index turn, as Add
// does: it is credited to that turn whatever the verifier's Credit. A
// verifier that grades its turns itself, inside Grade, adds their checks
// so; GradeTurn's checks are added so by Add.
func (c *Checks) AddTurn(turn int, ch Check) {
	if ch.ID == "" {
		ch.ID = ch.Label
	}
	ch.Turn, ch.OnTurn = turn, true
	c.turnChecks = append(c.turnChecks, len(c.list))
	c.list = append(c.list, ch)
}

// Credit credits the check added last to the agent turn with index turn
// (Rollout.Turns): its row's turn column names the turn, and the turn's
// reward counts it, as the verifier's Credit says. It does nothing when
// no check has been added.
func (c *Checks) Credit(turn int) {
	if n := len(c.list); n > 0 {
		c.list[n-1].Turn, c.list[n-1].OnTurn = turn, true
	}
}

// List returns the checks added since the last Reset. The slice is reused.
func (c *Checks) List() []Check { return c.list }

// Reset empties the collection, keeping its storage.
func (c *Checks) Reset() {
	clear(c.list)
	c.list = c.list[:0]
	c.turn = 0
	c.turnChecks = c.turnChecks[:0]
}

func passFail(ok bool) Status {
	if ok {
		return Pass
	}
	return Fail
}

// Verifier grades the rollouts of the tasks it binds.
type Verifier struct {
	// ID is unique among all loaded verifiers.
	ID string
	// Name says in a few words what success means.
	Name string
	// Tasks are the task patterns the verifier binds: task ids, prefixes
	// ending in "*" ("airline/*"), or AllTasks (see Bindings).
	Tasks []string
	// Grade adds the rollout's checks to c. A returned error (or a panic)
	// makes the rollout's status error, kind verifier.
	Grade func(r *Rollout, c *Checks) error
	// Version is the version of a Go verifier's code: raise it whenever
	// a change to Grade (or to what Grade calls) may change a check. Go
	// verifiers start at 1, and verifiertest.Versions fails when their
	// code changes and their Version does not.
	Version int
	// Source says where the verifier is defined ("verifiers/crm/crm.go:42",
	// a spec file and line). cli.Main fills it in for a Go verifier that
	// leaves it empty: the file of its Grade function, relative to the
	// main module, and the line.
	Source string
	// Fixtures holds the verifier's self-test fixtures: rollouts under
	// ID/pass, ID/fail and ID/error (package verifiers/verifiertest says
	// how they are written), usually an embed.FS of the package's
	// testdata/fixtures. `gavel verifier test` and verifiertest.Fixtures
	// run them. nil: none.
	Fixtures fs.FS
	// Definition is the canonical text of a declarative verifier, which
	// changes whenever its behaviour may change. Go verifiers leave it
	// empty: their Version stands for their code.
	Definition string
	// Flagged says that the verifier may add flags (Checks.Flag). A run
	// writes the checks' kind column and the rewards' flags column only
	// when some verifier is flagged (or health flags are on), so that a
	// run without flags writes the tables it always wrote; a flag added
	// by a verifier that is not flagged is an error of the verifier.
	Flagged bool
	// Judged says that the verifier may add rubric checks for a judge
	// (Checks.Rubric). A run starts a judge only when a bound verifier is
	// judged.
	Judged bool
	// Judge holds the verifier's judge settings, which replace the run's
	// (a Model here turns judging on for this verifier); a rubric's own
	// settings replace these.
	Judge JudgeSettings
	// Reward is how the reward is computed from the checks; the zero value
	// is fraction (checks passed / all checks). It never changes the status.
	Reward Formula
	// Remote, when set, makes this a remote verifier: its checks are the
	// answer of a service gavel asks over HTTP (package remote), and Grade
	// only fails, loudly, where no remote caller is configured.
	Remote *RemoteSettings
	// Turns says that the verifier reads the agent's turns
	// (Rollout.Turns) and gives each a reward. A run reads turns, and
	// writes the rewards' turn_rewards and turns and the checks' turn
	// columns, only when some verifier sets Turns, so that other runs
	// write the tables they always wrote.
	Turns bool
	// GradeTurn, when set (with Turns), grades each agent turn after
	// Grade, in order: the checks it adds are credited to the turn
	// (Check.Turn). An error or a panic makes the rollout's status error,
	// as Grade's does.
	GradeTurn func(r *Rollout, turn jsonview.Value, c *Checks) error
	// TurnReward is how a turn's reward is computed from the checks
	// credited to it; the zero value is fraction. A turn no check is
	// credited to is not scored (null), never 0.
	TurnReward Formula
	// Credit says which trajectory checks (those Grade adds) count in
	// turns' rewards: CreditAttributed (""; those credited to a turn with
	// Checks.Credit), CreditLast (every one, on the last turn) or
	// CreditNone (none: turns are scored by their own checks only).
	Credit string
}

// The ways trajectory checks are credited to turns (Verifier.Credit).
const (
	CreditAttributed = "attributed"
	CreditLast       = "last"
	CreditNone       = "none"
)

// RemoteSettings are a remote verifier's settings (a spec's remote:).
type RemoteSettings struct {
	// URL is where the service answers: for the gavel protocol the URL
	// each request is POSTed to, for nemo-gym the resources server's root
	// (POST /verify, GET /reverify_mode under it).
	URL string
	// Protocol is "gavel" or "nemo-gym".
	Protocol string
	// Version is the service's declared version: part of the verifier's
	// fingerprint and of every cache key, so a new version is asked again.
	Version string
	// Timeout bounds each request (0: the default).
	Timeout time.Duration
	// Concurrency is the most requests in flight to the service (0: the
	// default).
	Concurrency int
	// Batch is the number of rollouts per request (gavel protocol; 0 or 1:
	// one rollout, sent as an object).
	Batch int
	// TokenEnv names the environment variable whose value is sent as
	// Authorization: Bearer; never the secret itself.
	TokenEnv string
	// Pure declares that the service's answer is a function of the
	// request (gavel protocol; nemo-gym asks GET /reverify_mode).
	Pure bool
	// Threshold is the reward a single-reward answer needs to pass
	// (0: 1.0).
	Threshold float64
	// RewardSet says that the verifier has its own reward formula;
	// without one, a single-reward answer's reward is the rollout's.
	RewardSet bool
	// Flags declares that the service may answer flags beside its checks
	// (gavel protocol); the verifier is then Flagged. An answer with flags
	// from a service that does not declare them is an error of its rollout.
	Flags bool
}

// JudgeSettings are a verifier's judge settings; zero values keep the
// run's.
type JudgeSettings struct {
	// Model is the judge model (the first of Models when a list names
	// several).
	Model string
	// Models, when a verifier names more than one judge model, lists them
	// in order; each judges every rubric check of the verifier.
	Models []string
	// Threshold is the score a rubric check needs to pass.
	Threshold float64
	// Template is the path of a prompt template file.
	Template string
}

// Run grades r with v and returns the verdict; c, reset first, holds the
// checks. An error returned by v.Grade, or a panic in it, which Run
// recovers, gives a verdict with status error (kind verifier) and leaves c
// empty. Grading runs and `gavel verifier test` both call verifiers
// through Run, so a verifier behaves the same in both.
//
// The flags a verifier adds are moved after its checks, each list in the
// order added; a flag from a verifier that is not Flagged is an error.
func Run(v *Verifier, r *Rollout, c *Checks) Verdict {
	c.Reset()
	if err := call(v, r, c); err != nil {
		c.Reset()
		return ScoreWith(v.Reward, nil, err)
	}
	if err := c.turns(v, r); err != nil {
		c.Reset()
		return ScoreWith(v.Reward, nil, err)
	}
	if err := c.orderFlags(v); err != nil {
		c.Reset()
		return ScoreWith(v.Reward, nil, err)
	}
	return ScoreWith(v.Reward, c.List(), nil)
}

// orderFlags moves the flags after the checks, keeping each list's order.
// It allocates nothing when the flags already follow the checks.
func (c *Checks) orderFlags(v *Verifier) error {
	first, mixed := -1, false
	for i := range c.list {
		switch {
		case c.list[i].Flag && !v.Flagged:
			return fmt.Errorf("verifier %s: flag %q added, but the verifier does not declare flags (set Flagged)", v.ID, c.list[i].ID)
		case c.list[i].Flag && strings.HasPrefix(c.list[i].ID, HealthPrefix):
			return fmt.Errorf("verifier %s: flag %q: ids starting %s are gavel's health flags", v.ID, c.list[i].ID, HealthPrefix)
		case c.list[i].Flag && first < 0:
			first = i
		case !c.list[i].Flag && first >= 0:
			mixed = true
		}
	}
	if !mixed {
		return nil
	}
	// A check after a flag: a stable partition.
	var flags []Check
	n := first
	for i := first; i < len(c.list); i++ {
		if c.list[i].Flag {
			flags = append(flags, c.list[i])
			continue
		}
		c.list[n] = c.list[i]
		n++
	}
	copy(c.list[n:], flags)
	return nil
}

// turns credits the trajectory checks as v.Credit says and runs
// v.GradeTurn on each turn of r. A check credited to a turn r does not
// have is an error of the verifier.
func (c *Checks) turns(v *Verifier, r *Rollout) error {
	n := 0
	if v.Turns {
		n = r.Turns.Len()
	}
	own := c.turnChecks // the turn checks' indexes, ascending
	for i := range c.list {
		ch := &c.list[i]
		turnCheck := len(own) > 0 && own[0] == i
		if turnCheck {
			own = own[1:]
		}
		switch {
		case !ch.OnTurn && (!v.Turns || v.Credit != CreditLast):
			// Nothing to credit or move.
		case !v.Turns || ch.Flag:
			ch.Turn, ch.OnTurn = 0, false
		case turnCheck:
			if ch.Turn < 0 || ch.Turn >= n {
				return fmt.Errorf("verifier %s: turn check %q is of turn %d, but the rollout has %d agent turns", v.ID, ch.ID, ch.Turn, n)
			}
		case v.Credit == CreditNone:
			ch.Turn, ch.OnTurn = 0, false
		case v.Credit == CreditLast:
			ch.Turn, ch.OnTurn = n-1, n > 0
		case ch.OnTurn && (ch.Turn < 0 || ch.Turn >= n):
			return fmt.Errorf("verifier %s: check %q is credited to turn %d, but the rollout has %d agent turns", v.ID, ch.ID, ch.Turn, n)
		}
	}
	if !v.Turns || v.GradeTurn == nil {
		return nil
	}
	i := 0
	for t := r.Turns.First(); t.Exists(); t = t.Next() {
		c.turn = i + 1
		err := callTurn(v, r, t, c)
		c.turn = 0
		if err != nil {
			return err
		}
		i++
	}
	return nil
}

// callTurn calls v.GradeTurn, turning a panic into an error that carries
// the stack.
func callTurn(v *Verifier, r *Rollout, turn jsonview.Value, c *Checks) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("verifier %s panicked grading a turn: %v\n%s", v.ID, p, debug.Stack())
		}
	}()
	if err := v.GradeTurn(r, turn, c); err != nil {
		return fmt.Errorf("verifier %s: turn %d: %w", v.ID, c.turn-1, err)
	}
	return nil
}

// SplitFlags returns the checks and the flags of a list in which the
// flags follow the checks (as Run leaves them).
func SplitFlags(list []Check) (checks, flags []Check) {
	for i := range list {
		if list[i].Flag {
			return list[:i], list[i:]
		}
	}
	return list, nil
}

// call calls v.Grade, turning a panic into an error that carries the
// stack.
func call(v *Verifier, r *Rollout, c *Checks) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("verifier %s panicked: %v\n%s", v.ID, p, debug.Stack())
		}
	}()
	if err := v.Grade(r, c); err != nil {
		return fmt.Errorf("verifier %s: %w", v.ID, err)
	}
	return nil
}
