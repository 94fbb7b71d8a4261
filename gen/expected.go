package gen

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/gavelhq/gavel/verifiers"
)

// Statuses and error kinds of the expected verdicts, those of package
// verifiers.
const (
	// StatusPassed is a rollout whose required checks all pass.
	StatusPassed = verifiers.StatusPassed
	// StatusFailed is a rollout with a failed required check.
	StatusFailed = verifiers.StatusFailed
	// StatusError is a rollout that could not be graded.
	StatusError = verifiers.StatusError

	// KindInput is the error kind of a row whose input is invalid.
	KindInput = verifiers.KindInput
	// KindNoVerifier is the error kind of a row whose task no verifier
	// binds.
	KindNoVerifier = verifiers.KindNoVerifier
	// KindVerifier is the error kind of a row with a check that ended in
	// error (TASK-003 in a world without a closed-won stage).
	KindVerifier = verifiers.KindVerifier
)

// Counts are the expected verdicts of a group of rollouts.
type Counts struct {
	Rollouts int64 `json:"rollouts"`
	Passed   int64 `json:"passed"`
	Failed   int64 `json:"failed"`
	Error    int64 `json:"error"`
	// ChecksTotal and ChecksPassed sum the checks_total and checks_passed
	// columns of the rewards rows: the number of check rows, and of those
	// with status pass. Rows with an input error or no verifier have none;
	// a TASK-003 rollout whose first check ends in error has all three.
	ChecksTotal  int64 `json:"checks_total"`
	ChecksPassed int64 `json:"checks_passed"`
	// MeanReward is the mean reward over the rollouts that have one
	// (passed or failed), null when none has.
	MeanReward *float64 `json:"mean_reward"`

	// rewardSixths sums reward × 6: every CRM reward is k/2 or k/3.
	rewardSixths int64
}

func (c *Counts) add(v *verdict) {
	c.Rollouts++
	switch v.status {
	case StatusPassed:
		c.Passed++
	case StatusFailed:
		c.Failed++
	default:
		c.Error++
	}
	c.ChecksTotal += int64(v.checksTotal)
	c.ChecksPassed += int64(v.checksPassed)
	if v.hasReward {
		c.rewardSixths += int64(v.checksPassed) * 6 / int64(v.checksTotal)
	}
}

func (c *Counts) finish() {
	if n := c.Passed + c.Failed; n > 0 {
		m := float64(c.rewardSixths) / 6 / float64(n)
		c.MeanReward = &m
	}
}

// VerifierCounts are the expected verdicts of the rollouts attributed to
// one verifier (the verifier_id column), or to none (VerifierID null: an
// unknown task, or no task id at all).
type VerifierCounts struct {
	VerifierID *string `json:"verifier_id"`
	Counts
}

// TaskCounts are the expected verdicts of the rollouts of one task id
// (TaskID null: rows whose task id is missing or unreadable).
type TaskCounts struct {
	TaskID     *string `json:"task_id"`
	VerifierID *string `json:"verifier_id"`
	Counts
}

// BehaviourCounts are the expected verdicts of the well-formed rollouts of
// one task with one behaviour, or with one variant of it.
type BehaviourCounts struct {
	TaskID    string `json:"task_id"`
	Behaviour string `json:"behaviour"`
	Variant   string `json:"variant,omitempty"`
	Counts
}

// ErrorKinds counts the rollouts expected to have status error, by kind.
type ErrorKinds struct {
	Input      int64 `json:"input"`
	NoVerifier int64 `json:"no_verifier"`
	Verifier   int64 `json:"verifier"`
}

// Expected is what grading the generated dataset must report, known by
// construction. It is written as JSON next to the dataset.
type Expected struct {
	// Dataset is the dataset path, TasksTable the tasks table path (tasks
	// mode only); empty when written to writers.
	Dataset    string `json:"dataset"`
	TasksTable string `json:"tasks_table,omitempty"`
	// Format, Seed, BadShare, TasksMode and WorldsPerTask (0 with unique
	// worlds) repeat the configuration.
	Format        string  `json:"format"`
	Seed          uint64  `json:"seed"`
	BadShare      float64 `json:"bad_share"`
	TasksMode     bool    `json:"tasks_mode"`
	WorldsPerTask int     `json:"worlds_per_task"`
	// UniqueWorlds and TaskIDs repeat the configuration too: a new world
	// per rollout, and the tasks drawn when not all of them.
	UniqueWorlds bool     `json:"unique_worlds,omitempty"`
	TaskIDs      []string `json:"task_ids,omitempty"`
	// Totals counts every row.
	Totals Counts `json:"totals"`
	// ErrorsByKind splits Totals.Error by error kind.
	ErrorsByKind ErrorKinds `json:"errors_by_kind"`
	// BadRows counts the rows replaced by bad rows, by bad-row kind.
	BadRows map[string]int64 `json:"bad_rows"`
	// Verifiers has one entry per CRM verifier, in id order, then one with
	// a null id when some rows have no verifier.
	Verifiers []VerifierCounts `json:"verifiers"`
	// Tasks has one entry per task id: the CRM tasks in id order, then
	// TASK-999 and null when some rows have them.
	Tasks []TaskCounts `json:"tasks"`
	// Behaviours and Variants split the well-formed rollouts of each task.
	Behaviours []BehaviourCounts `json:"behaviours"`
	Variants   []BehaviourCounts `json:"variants"`
}

// verdict is the expected result of one row.
type verdict struct {
	status       string
	kind         string // error kind when status is error
	checksTotal  int
	checksPassed int
	hasReward    bool
}

// reward returns the expected reward as the grader computes it.
func (v *verdict) reward() float64 {
	return float64(v.checksPassed) / float64(v.checksTotal)
}

// score applies the verdict rules to the checks a construction is known
// to produce (error when a check is in error, else failed when a required
// check failed, else passed; the reward is the fraction of checks passed);
// required[i] says whether check i is required.
func score(checks []checkStatus, required []bool) verdict {
	v := verdict{checksTotal: len(checks)}
	anyErr, anyFail := false, false
	for i, c := range checks {
		switch c {
		case cPass:
			v.checksPassed++
		case cFail:
			anyFail = anyFail || required[i]
		case cError:
			anyErr = true
		}
	}
	switch {
	case anyErr:
		v.status, v.kind = StatusError, KindVerifier
	case anyFail:
		v.status, v.hasReward = StatusFailed, true
	default:
		v.status, v.hasReward = StatusPassed, true
	}
	return v
}

// tally accumulates an Expected row by row.
type tally struct {
	e          *Expected
	byVerifier map[string]*VerifierCounts
	noVerifier VerifierCounts
	byTask     map[string]*TaskCounts
	noTask     TaskCounts
	byBeh      map[[2]string]*BehaviourCounts
	byVariant  map[[3]string]*BehaviourCounts
}

func newTally(e *Expected) *tally {
	t := &tally{
		e:          e,
		byVerifier: map[string]*VerifierCounts{},
		byTask:     map[string]*TaskCounts{},
		byBeh:      map[[2]string]*BehaviourCounts{},
		byVariant:  map[[3]string]*BehaviourCounts{},
	}
	e.BadRows = map[string]int64{}
	for _, task := range crmTasks {
		id, vid := task.id, task.verifier
		t.byVerifier[vid] = &VerifierCounts{VerifierID: &vid}
		t.byTask[id] = &TaskCounts{TaskID: &id, VerifierID: &vid}
	}
	return t
}

// add counts one row. task is "" when the row has no readable task id;
// behaviour and variant are empty for bad rows.
func (t *tally) add(task string, v *verdict, behaviour, variant, bad string) {
	t.e.Totals.add(v)
	switch v.kind {
	case KindInput:
		t.e.ErrorsByKind.Input++
	case KindNoVerifier:
		t.e.ErrorsByKind.NoVerifier++
	case KindVerifier:
		t.e.ErrorsByKind.Verifier++
	}
	if bad != "" {
		t.e.BadRows[bad]++
	}
	vid := verifierOf(task)
	if vid == "" {
		t.noVerifier.add(v)
	} else {
		t.byVerifier[vid].add(v)
	}
	switch tc := t.byTask[task]; {
	case task == "":
		t.noTask.add(v)
	case tc == nil:
		id := task
		tc = &TaskCounts{TaskID: &id}
		t.byTask[task] = tc
		tc.add(v)
	default:
		tc.add(v)
	}
	if behaviour == "" {
		return
	}
	bk := [2]string{task, behaviour}
	bc := t.byBeh[bk]
	if bc == nil {
		bc = &BehaviourCounts{TaskID: task, Behaviour: behaviour}
		t.byBeh[bk] = bc
	}
	bc.add(v)
	vk := [3]string{task, behaviour, variant}
	vc := t.byVariant[vk]
	if vc == nil {
		vc = &BehaviourCounts{TaskID: task, Behaviour: behaviour, Variant: variant}
		t.byVariant[vk] = vc
	}
	vc.add(v)
}

// finish lays the groups out in a fixed order.
func (t *tally) finish() {
	e := t.e
	e.Totals.finish()
	for _, task := range crmTasks {
		vc := t.byVerifier[task.verifier]
		vc.finish()
		e.Verifiers = append(e.Verifiers, *vc)
	}
	if t.noVerifier.Rollouts > 0 {
		t.noVerifier.finish()
		e.Verifiers = append(e.Verifiers, t.noVerifier)
	}
	for _, task := range crmTasks {
		tc := t.byTask[task.id]
		tc.finish()
		e.Tasks = append(e.Tasks, *tc)
	}
	if tc := t.byTask[unknownTask]; tc != nil {
		tc.finish()
		e.Tasks = append(e.Tasks, *tc)
	}
	if t.noTask.Rollouts > 0 {
		t.noTask.finish()
		e.Tasks = append(e.Tasks, t.noTask)
	}
	for _, task := range crmTasks {
		for _, beh := range Behaviours {
			if bc := t.byBeh[[2]string{task.id, beh.String()}]; bc != nil {
				bc.finish()
				e.Behaviours = append(e.Behaviours, *bc)
			}
		}
	}
	var variants []*BehaviourCounts
	for _, vc := range t.byVariant {
		vc.finish()
		variants = append(variants, vc)
	}
	rank := func(vc *BehaviourCounts) string {
		return fmt.Sprintf("%s/%d/%s", vc.TaskID, behaviourRank(vc.Behaviour), vc.Variant)
	}
	sortBy(variants, rank)
	for _, vc := range variants {
		e.Variants = append(e.Variants, *vc)
	}
}

func behaviourRank(name string) int {
	for i, b := range Behaviours {
		if b.String() == name {
			return i
		}
	}
	return len(Behaviours)
}

// WriteTable prints the expected counts for people: one line per verifier
// (rollouts, passed, failed, error, mean reward), the errors by kind and
// the bad rows by kind.
func (e *Expected) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "verifier\ttask\trollouts\tpassed\tfailed\terror\tmean reward\t")
	line := func(verifier, task string, c *Counts) {
		mean := "-"
		if c.MeanReward != nil {
			mean = strconv.FormatFloat(*c.MeanReward, 'f', 4, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t\n", verifier, task, c.Rollouts, c.Passed, c.Failed, c.Error, mean)
	}
	for i := range e.Verifiers {
		vc := &e.Verifiers[i]
		id, task := "(none)", ""
		if vc.VerifierID != nil {
			id, task = *vc.VerifierID, taskOf(*vc.VerifierID)
		}
		line(id, task, &vc.Counts)
	}
	line("total", "", &e.Totals)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nerrors by kind\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  input\t%d\t\n  no_verifier\t%d\t\n  verifier\t%d\t\n", e.ErrorsByKind.Input, e.ErrorsByKind.NoVerifier, e.ErrorsByKind.Verifier)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(e.BadRows) > 0 {
		fmt.Fprintf(w, "\nbad rows by kind\n")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, k := range BadKinds {
			if n, ok := e.BadRows[k]; ok {
				fmt.Fprintf(tw, "  %s\t%d\t\n", k, n)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
