// Package pairwise compares the outputs of groups of rollouts (models,
// checkpoints) two by two with a judge, both orders of each pair, writes
// the pairs table, and ranks the groups from the outcomes (Bradley-Terry
// scores with a bootstrap over tasks). It reads rollouts through
// pipeline.Scan, as a grading run reads them, and judges through package
// judge with the run's one request budget (judge/call.Budget).
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package pairwise

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/atomicfile"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/judge/call"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
)

// Config configures a pairwise comparison (Compare). Its zero
// value, with Inputs, a judge model and Out, compares the groups of the
// model column with the built-in template.
type Config struct {
	// Inputs, From, Fields, Set, TasksFile and Stdin read the rollouts as a
	// grading run does (Config).
	Inputs    []string
	From      string
	Fields    columnar.FieldNames
	Set       []inputs.Constant
	TasksFile string
	Stdin     io.Reader
	// By is the metadata column whose values are the compared groups;
	// default "model".
	By string
	// Against, when set, compares each other group with this one only;
	// otherwise every pair of groups is compared.
	Against string
	// Rubric is what a better output is; "" means "fully and correctly
	// accomplishes the task instruction".
	Rubric string
	// Verifiers, when set, replace Rubric: each rollout is graded by the
	// verifier bound to its task, and the rubric and query of its rubric
	// check (the one whose id is Check, else the first) are those of the
	// comparison. The group A rollout's are used for a pair. The check's
	// context is not shown: it is computed from each rollout's own state.
	Verifiers []*verifiers.Verifier
	Check     string
	// Query, when set, is the task instruction the judge sees; otherwise
	// the task row's or the rollout's instruction field, as for rubric
	// checks.
	Query string
	// Judge configures the judge; its Template, when set, is a pairwise
	// template file replacing gavel-pairwise-v1.
	Judge judge.Config
	// MaxRequests is the budget of requests (0: no limit), spent pair by
	// pair in the pairs' order, both orders of a pair or neither.
	MaxRequests int64
	// Out is the output directory; Format its table format (parquet or
	// jsonl; default parquet).
	Out    string
	Format string
}

// The outcomes of a pair, from the first group's side.
const (
	OutcomeWin          = "win"          // both orders prefer group A's output
	OutcomeLoss         = "loss"         // both orders prefer group B's output
	OutcomeTie          = "tie"          // both orders say tie
	OutcomeInconsistent = "inconsistent" // the orders disagree: counts as a tie
	OutcomeError        = "error"        // a judgement failed: not counted
	OutcomePending      = "pending"      // left by the request budget: not counted
)

// Pair is one comparison: the rollouts of groups A and B on one task and
// sample index, and the judge's verdict in each order. VerdictAB is the
// preference when A's output is shown first, VerdictBA when B's is, both
// in terms of the groups: "a", "b" or "tie" ("" when not judged).
type Pair struct {
	TaskID               string
	Sample               int64
	GroupA, GroupB       string
	RolloutA, RolloutB   string
	VerdictAB, VerdictBA string
	Outcome              string
	Error                string
}

// Result is what Pairwise did.
type Result struct {
	// Pairs are the comparisons, ordered by task id, sample index and
	// group pair (each as written to the pairs table).
	Pairs []Pair
	// Rollouts counts the rows read; InputErrors the rows that could not
	// be compared (unreadable, no group, no integer sample, a repeated
	// sample), with the first few messages in Problems.
	Rollouts, InputErrors int64
	Problems              []string
	// Unpaired counts the rollouts that had no counterpart in any
	// compared group.
	Unpaired int64
	// Judge counts the judge's work (it depends on the cache: it is not
	// part of the outputs).
	Judge results.JudgeSummary
	// PairsFile is the path of the pairs table written.
	PairsFile string
	// Template is the version of the pairwise template used.
	Template string
}

// maxProblems bounds the input problems a Result lists.
const maxProblems = 10

// pairRollout is what a comparison keeps of one rollout.
type pairRollout struct {
	id, task, group, output, instruction, rubric string
	sample                                       int64
}

// Compare compares the outputs of the groups of the inputs' rollouts,
// two by two, with a judge, and writes the pairs table into cfg.Out
// (pairs/part-00000 in cfg.Format).
//
// Rollouts are grouped by the value of the By column; within a group the
// rollouts of one task are told apart by their sample index: the row's
// "sample" column when it has one (an integer), else the order of the
// group's rollouts of that task in the input (0, 1, ...). A rollout of
// group A is paired with the rollout of group B on the same task and
// sample index. Each pair is judged twice, A's output shown first and
// then B's; a pair is a win (loss) for A when both orders prefer A's (B's)
// output, a tie when both say tie, and inconsistent otherwise.
//
// Judging follows the rules of rubric checks: verdicts come from the cache
// when they can; the first request the cache cannot answer is preceded by
// one probe (a failure is a *ProbeError and nothing is written); the
// budget is spent in the pairs' order, so the same pairs are judged
// whatever the concurrency; a failed judgement makes its pair an error,
// never an outcome. The outputs depend only on the inputs and the verdicts.
func Compare(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.By == "" {
		cfg.By = "model"
	}
	format, err := pairsFormat(cfg.Format)
	if err != nil {
		return nil, err
	}
	if cfg.Out == "" {
		return nil, &inputs.ConfigError{Field: "Out", Msg: "no output directory"}
	}
	tmpl := judge.DefaultPairTemplate()
	if cfg.Judge.Template != "" {
		if tmpl, err = judge.LoadTemplate(cfg.Judge.Template); err != nil {
			return nil, &inputs.ConfigError{Field: "Judge", Msg: err.Error()}
		}
	}
	rolls, res, err := readPairRollouts(cfg)
	if err != nil {
		return nil, err
	}
	pairs, err := makePairs(rolls, cfg.Against, res)
	if err != nil {
		return nil, err
	}
	jc := cfg.Judge
	jc.Template = ""
	base, err := judge.New(jc)
	if err != nil {
		return nil, &inputs.ConfigError{Field: "Judge", Msg: err.Error()}
	}
	j := base.WithTemplate(tmpl)
	res.Template = tmpl.Version()
	err = judgePairs(ctx, j, cfg, jc.Concurrency, pairs, res)
	if cerr := base.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("judge cache: %w", cerr)
	}
	s := base.Stats()
	res.Judge = results.JudgeSummary{Probes: s.Probes, Requests: s.Requests, CacheHits: s.CacheHits, Retries: s.Retries,
		Failures: s.Failures, PromptTokens: s.PromptTokens, CompletionTokens: s.CompletionTokens, PendingBudget: res.Judge.PendingBudget}
	if err != nil {
		return res, err
	}
	res.Pairs = make([]Pair, len(pairs))
	for i, p := range pairs {
		res.Pairs[i] = p.Pair
	}
	if res.PairsFile, err = writePairs(cfg.Out, format, res.Pairs); err != nil {
		return res, err
	}
	return res, nil
}

// pairsFormat checks the format of a pairs table: parquet (default),
// arrow or jsonl.
func pairsFormat(f string) (string, error) {
	switch f {
	case "":
		return "parquet", nil
	case "parquet", "arrow", "jsonl":
		return f, nil
	}
	return "", &inputs.ConfigError{Field: "Format", Msg: fmt.Sprintf("%q: want parquet, arrow or jsonl", f)}
}

// readPairRollouts reads the rollouts of the inputs as a grading run does
// (pipeline.Scan) and keeps what a comparison needs, in input order.
func readPairRollouts(cfg Config) ([]pairRollout, *Result, error) {
	res := &Result{}
	problem := func(where, msg string) {
		res.InputErrors++
		if len(res.Problems) < maxProblems {
			res.Problems = append(res.Problems, where+": "+msg)
		}
	}
	var checks verifiers.Checks
	var rolls []pairRollout
	scan := pipeline.ScanConfig{Inputs: cfg.Inputs, From: cfg.From, Fields: cfg.Fields, Set: cfg.Set, TasksFile: cfg.TasksFile,
		Stdin: cfg.Stdin, Verifiers: cfg.Verifiers}
	err := pipeline.Scan(scan, func(where string, v *verifiers.Verifier, ro *verifiers.Rollout, msg string) error {
		res.Rollouts++
		if msg != "" {
			problem(where, msg)
			return nil
		}
		rb := &verifiers.Rubric{Text: cfg.Rubric, Query: cfg.Query}
		if len(cfg.Verifiers) > 0 {
			if rb, msg = rubricOf(v, ro, &checks, cfg.Check); msg != "" {
				problem(where, msg)
				return nil
			}
			if cfg.Query != "" {
				rb.Query = cfg.Query
			}
		}
		group, msg := groupValue(ro.Meta.Get(cfg.By))
		if msg != "" {
			problem(where, cfg.By+": "+msg)
			return nil
		}
		sample := int64(-1)
		if x := ro.Meta.Get("sample"); x.Kind() != jsonview.Missing && x.Kind() != jsonview.Null {
			if sample, msg = sampleValue(x); msg != "" {
				problem(where, "sample: "+msg)
				return nil
			}
		}
		// The output points into the batch, whose buffers are reused:
		// copy it.
		rolls = append(rolls, pairRollout{id: ro.ID, task: ro.TaskID, group: group, output: strings.Clone(ro.Output),
			instruction: rb.Instruction(ro), rubric: rb.Text, sample: sample})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return rolls, res, nil
}

// rubricOf grades a rollout with its verifier v and returns the rubric of
// its rubric check whose id is check ("": the first), or why there is
// none.
func rubricOf(v *verifiers.Verifier, r *verifiers.Rollout, c *verifiers.Checks, check string) (*verifiers.Rubric, string) {
	if v == nil {
		return nil, "no verifier binds task " + r.TaskID
	}
	c.Reset()
	verifiers.Run(v, r, c)
	for _, ch := range c.List() {
		switch {
		case ch.Rubric != nil && (check == "" || ch.ID == check):
			rb := *ch.Rubric
			return &rb, ""
		case ch.ID == check && ch.Status == verifiers.Error:
			return nil, fmt.Sprintf("verifier %s check %s: %s", v.ID, check, ch.Detail)
		}
	}
	if check != "" {
		return nil, fmt.Sprintf("verifier %s gave no rubric check %s", v.ID, check)
	}
	return nil, fmt.Sprintf("verifier %s gave no rubric check", v.ID)
}

// groupValue returns a group's name: a string as is, a number or boolean
// as its JSON text.
func groupValue(x jsonview.Value) (string, string) {
	switch x.Kind() {
	case jsonview.Missing, jsonview.Null:
		return "", "missing or null"
	case jsonview.String:
		s, _ := x.Str()
		if len(s) == 0 {
			return "", "empty"
		}
		return string(s), ""
	case jsonview.Number, jsonview.True, jsonview.False:
		return string(x.Raw()), ""
	}
	return "", "not a string or number"
}

// sampleValue returns a sample index: a non-negative integer, as a number
// or a string.
func sampleValue(x jsonview.Value) (int64, string) {
	text := string(x.Raw())
	if x.Kind() == jsonview.String {
		s, _ := x.Str()
		text = string(s)
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Sprintf("%.40q is not a non-negative integer", text)
	}
	return n, ""
}

// pairJob is a pair, its rollouts and its two judgements.
type pairJob struct {
	Pair
	a, b   *pairRollout
	ab, ba *pairCall
}

// pairCall is one judgement, shared by the pairs whose requests have its
// key. A call to send keeps its pair and order, not its request: the
// request is rendered again when it is sent, so the rendered prompts
// waiting for the server take no memory.
type pairCall struct {
	p    *pairJob
	swap bool // b's output shown first
	v    judge.Verdict
	err  error
}

// prompt returns the comparison of the pair's outputs in the order asked:
// a's first, or b's when swap. The rubric and instruction are a's.
func (p *pairJob) prompt(swap bool) judge.PairPrompt {
	first, second := p.a.output, p.b.output
	if swap {
		first, second = second, first
	}
	return judge.PairPrompt{Rubric: p.a.rubric, Instruction: p.a.instruction, First: first, Second: second}
}

// makePairs pairs the rollouts of different groups on the same task and
// sample index, ordered by task, sample and group pair.
func makePairs(rolls []pairRollout, against string, res *Result) ([]*pairJob, error) {
	type cell struct{ task, group string }
	bySample := map[cell]map[int64]int{} // index in rolls
	next := map[cell]int64{}
	var groups []string
	seenGroup := map[string]bool{}
	for i := range rolls {
		r := &rolls[i]
		c := cell{r.task, r.group}
		if r.sample < 0 {
			r.sample = next[c]
		}
		next[c]++
		m := bySample[c]
		if m == nil {
			m = map[int64]int{}
			bySample[c] = m
		}
		if first, dup := m[r.sample]; dup {
			res.InputErrors++
			if len(res.Problems) < maxProblems {
				res.Problems = append(res.Problems, fmt.Sprintf("%s: sample %d of task %s in group %s repeats rollout %s", r.id, r.sample, r.task, r.group, rolls[first].id))
			}
			continue
		}
		m[r.sample] = i
		if !seenGroup[r.group] {
			seenGroup[r.group] = true
			groups = append(groups, r.group)
		}
	}
	slices.Sort(groups)
	var gpairs [][2]string
	switch {
	case against != "":
		if !seenGroup[against] {
			return nil, &inputs.ConfigError{Field: "Against", Msg: fmt.Sprintf("%s: no rollout is in this group (groups: %v)", against, groups)}
		}
		for _, g := range groups {
			if g != against {
				gpairs = append(gpairs, [2]string{g, against})
			}
		}
	default:
		for i := range groups {
			for j := i + 1; j < len(groups); j++ {
				gpairs = append(gpairs, [2]string{groups[i], groups[j]})
			}
		}
	}
	if len(gpairs) == 0 {
		msg := fmt.Sprintf("want two groups or more to compare, found %d %v", len(groups), groups)
		if res.InputErrors > 0 {
			msg += fmt.Sprintf("; %d rows skipped, the first: %s", res.InputErrors, res.Problems[0])
		}
		return nil, &inputs.ConfigError{Field: "By", Msg: msg}
	}
	// Every (task, sample) present, sorted.
	type slot struct {
		task   string
		sample int64
	}
	var slots []slot
	seenSlot := map[slot]bool{}
	for i := range rolls {
		s := slot{rolls[i].task, rolls[i].sample}
		if !seenSlot[s] {
			seenSlot[s] = true
			slots = append(slots, s)
		}
	}
	slices.SortFunc(slots, func(a, b slot) int {
		return cmp.Or(cmp.Compare(a.task, b.task), cmp.Compare(a.sample, b.sample))
	})
	paired := make([]bool, len(rolls))
	var pairs []*pairJob
	for _, s := range slots {
		for _, gp := range gpairs {
			ia, okA := bySample[cell{s.task, gp[0]}][s.sample]
			ib, okB := bySample[cell{s.task, gp[1]}][s.sample]
			if !okA || !okB {
				continue
			}
			paired[ia], paired[ib] = true, true
			pairs = append(pairs, &pairJob{Pair: Pair{TaskID: s.task, Sample: s.sample, GroupA: gp[0], GroupB: gp[1],
				RolloutA: rolls[ia].id, RolloutB: rolls[ib].id}, a: &rolls[ia], b: &rolls[ib]})
		}
	}
	for _, c := range bySample {
		for _, i := range c {
			if !paired[i] {
				res.Unpaired++
			}
		}
	}
	if len(pairs) == 0 {
		return nil, &inputs.ConfigError{Field: "Inputs", Msg: fmt.Sprintf("no pair to compare: no task has rollouts of two compared groups with the same sample index (groups: %v)", groups)}
	}
	return pairs, nil
}

// judgePairs judges both orders of every pair and sets the pairs'
// verdicts and outcomes. Requests are planned in the pairs' order (cache,
// shared keys, budget), then the server is probed once and the rest asked
// by at most concurrency goroutines (judge.Ask bounds the requests in
// flight too); the outcomes depend only on the verdicts.
func judgePairs(ctx context.Context, j *judge.Judge, cfg Config, concurrency int, pairs []*pairJob, res *Result) error {
	budget := call.NewBudget(cfg.MaxRequests)
	calls := map[judge.Key]*pairCall{}
	var send []*pairCall
	for _, p := range pairs {
		var keys [2]judge.Key
		var got [2]*pairCall
		need := 0
		for o := range 2 {
			r, err := j.PairRequest(p.prompt(o == 1))
			if err != nil {
				return &inputs.ConfigError{Field: "Judge", Msg: err.Error()}
			}
			k := r.Key()
			keys[o] = k
			if c := calls[k]; c != nil {
				got[o] = c
				continue
			}
			if v, ok := j.Cached(r); ok {
				got[o] = &pairCall{v: v}
				calls[k] = got[o]
				continue
			}
			if o == 1 && keys[0] == k {
				continue // both orders show the same text: one request
			}
			need++
		}
		if !budget.Take(need) {
			// All of a pair's judgements or none; once one pair is left,
			// no later pair spends: the budget goes in order.
			p.Outcome = OutcomePending
			continue
		}
		for o := range 2 {
			if got[o] != nil {
				continue
			}
			if c := calls[keys[o]]; c != nil {
				got[o] = c
				continue
			}
			got[o] = &pairCall{p: p, swap: o == 1}
			calls[keys[o]] = got[o]
			send = append(send, got[o])
		}
		p.ab, p.ba = got[0], got[1]
	}
	res.Judge.PendingBudget = budget.Pending()
	if len(send) > 0 {
		if err := j.Probe(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &pipeline.ProbeError{Err: err}
		}
	}
	if concurrency <= 0 {
		concurrency = judge.DefaultConcurrency
	}
	work := make(chan *pairCall)
	var wg sync.WaitGroup
	for range min(concurrency, len(send)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				r, err := j.PairRequest(c.p.prompt(c.swap))
				if err != nil {
					c.err = err
					continue
				}
				c.v, c.err = j.Ask(ctx, r)
			}
		}()
	}
feed:
	for _, c := range send {
		select {
		case work <- c:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, p := range pairs {
		if p.Outcome == OutcomePending {
			continue
		}
		var errs []string
		for o, c := range [2]*pairCall{p.ab, p.ba} {
			if c.err != nil {
				var je *judge.Error
				if !errors.As(c.err, &je) {
					return c.err
				}
				errs = append(errs, [2]string{"a first: ", "b first: "}[o]+je.Error())
				continue
			}
			v := groupVerdict(c.v.Better, o == 1)
			if o == 0 {
				p.VerdictAB = v
			} else {
				p.VerdictBA = v
			}
		}
		switch {
		case len(errs) > 0:
			p.Outcome = OutcomeError
			p.Error = errs[0]
			if len(errs) == 2 {
				p.Error += "; " + errs[1]
			}
		case p.VerdictAB != p.VerdictBA:
			p.Outcome = OutcomeInconsistent
		case p.VerdictAB == "a":
			p.Outcome = OutcomeWin
		case p.VerdictAB == "b":
			p.Outcome = OutcomeLoss
		default:
			p.Outcome = OutcomeTie
		}
	}
	return nil
}

// groupVerdict turns a preference for the output shown first or second
// into one for group a or b; swapped is true when b's output was first.
func groupVerdict(better string, swapped bool) string {
	switch {
	case better == judge.BetterTie:
		return "tie"
	case (better == judge.BetterFirst) != swapped:
		return "a"
	}
	return "b"
}

// Columns are the columns of the pairs table, in order.
var Columns = []columnar.DatasetColumn{
	{Name: "task_id", Type: columnar.DatasetString, Dictionary: true},
	{Name: "sample", Type: columnar.DatasetInt64},
	{Name: "group_a", Type: columnar.DatasetString, Dictionary: true},
	{Name: "group_b", Type: columnar.DatasetString, Dictionary: true},
	{Name: "rollout_id_a", Type: columnar.DatasetString},
	{Name: "rollout_id_b", Type: columnar.DatasetString},
	{Name: "verdict_ab", Type: columnar.DatasetString, Dictionary: true},
	{Name: "verdict_ba", Type: columnar.DatasetString, Dictionary: true},
	{Name: "outcome", Type: columnar.DatasetString, Dictionary: true},
	{Name: "error", Type: columnar.DatasetString},
}

// writePairs writes the pairs table as out/pairs/part-00000 in format f,
// atomically, and returns its path.
func writePairs(out, f string, pairs []Pair) (string, error) {
	dir := filepath.Join(out, "pairs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	path := filepath.Join(dir, "part-00000."+f)
	str := func(s string) columnar.DatasetValue {
		if s == "" {
			return columnar.DatasetValue{Kind: columnar.DatasetNull}
		}
		return columnar.DatasetValue{Kind: columnar.DatasetText, Bytes: []byte(s)}
	}
	rows := make([][]columnar.DatasetValue, len(pairs))
	for i, p := range pairs {
		rows[i] = []columnar.DatasetValue{str(p.TaskID), {Kind: columnar.DatasetInt, Int: p.Sample},
			str(p.GroupA), str(p.GroupB), str(p.RolloutA), str(p.RolloutB),
			str(p.VerdictAB), str(p.VerdictBA), str(p.Outcome), str(p.Error)}
	}
	err := atomicfile.Write(path, atomicfile.Options{Perm: 0o644, Durable: true}, func(w io.Writer) error {
		if f == "arrow" {
			return columnar.WriteArrowTable(w, Columns, rows)
		}
		dw, err := columnar.NewDatasetWriter(w, columnar.DatasetFormat(f), Columns, columnar.DatasetOptions{})
		if err != nil {
			return err
		}
		for _, row := range rows {
			if err := dw.Write(row); err != nil {
				return err
			}
		}
		return dw.Close()
	})
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}
