package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/atomicfile"
	"github.com/gavelhq/gavel/internal/store"
	"github.com/gavelhq/gavel/pairwise"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/verifiers"
)

const pairwiseExamples = `  gavel judge pairwise --rubric "The answer is correct and cites the record." \
    --judge-model gpt-4o-mini --by model --out cmp rollouts.parquet
  gavel judge pairwise --spec judged.yaml --check polite --judge-model m --out cmp rollouts.jsonl
  gavel judge pairwise --rubric "..." --judge-model m --against baseline --out cmp runs/
  gavel judge pairwise --rubric "..." --judge-model m --map output=answer --by agent --format jsonl --out cmp runs.jsonl`

// pairwiseRanking is ranking.json: the ranking and what it was computed
// from.
type pairwiseRanking struct {
	By       string  `json:"by"`
	Against  *string `json:"against"`
	Model    string  `json:"judge_model"`
	Template string  `json:"template"`
	// Pairs counts the pairs; Errors those whose judgement failed and
	// Pending those left by the budget (neither is in the ranking).
	Pairs   int   `json:"pairs"`
	Errors  int   `json:"errors"`
	Pending int   `json:"pending_by_budget"`
	Input   int64 `json:"rollouts"`
	// InputErrors counts the rows that could not be compared; Unpaired
	// the rollouts with no counterpart.
	InputErrors int64 `json:"input_errors"`
	Unpaired    int64 `json:"unpaired"`
	pairwise.Ranking
}

func runJudgePairwise(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("judge pairwise", "gavel judge pairwise (--rubric TEXT | --spec FILE [--check ID]) --judge-model M [--by COL] [--against GROUP] --out DIR INPUT...\n\n"+
		"Reads rollouts as gavel grade does, groups them by the --by column, and pairs the\n"+
		"rollouts of two groups on the same task and sample index (the sample column when\n"+
		"a row has one, else the order of the group's rollouts of that task). The judge is\n"+
		"asked which output better meets the rubric, once in each order (template\n"+
		"gavel-pairwise-v1). A pair is a win or a loss when both orders agree, a tie when\n"+
		"both say tie, inconsistent (counted as a tie) when they disagree.\n\n"+
		"Writes DIR/pairs/part-00000.* and DIR/ranking.json, and prints the ranking: win\n"+
		"rates with Wilson 95% intervals, Bradley-Terry strengths on the Elo scale (one\n"+
		"virtual tie between each pair of groups) with a 95% bootstrap interval over\n"+
		"tasks, and the share of inconsistent pairs (the judge's position bias).\n\n"+
		"Exit status: 0 every pair judged; 3 some judgements failed (see the error\n"+
		"column); 2 usage or configuration error (nothing written); 1 fatal error.", pairwiseExamples, stdout)
	rubric := fs.String("rubric", "", "what a better output does (default: fully and correctly accomplishes the task instruction)")
	var specs listFlag
	fs.Var(&specs, "spec", "declarative verifier `FILE` or directory (repeatable): each rollout's rubric and query are those of the rubric check of the verifier bound to its task, instead of --rubric")
	check := fs.String("check", "", "with --spec: the `ID` of the rubric check to use (default: each verifier's first)")
	query := fs.String("query", "", "the task instruction shown to the judge (default: the task row's or the rollout's instruction, prompt, query or input field)")
	by := fs.String("by", "model", "metadata `COL`umn whose values are the compared groups")
	against := fs.String("against", "", "compare each group with this `GROUP` only (default: every pair of groups)")
	out := fs.String("out", "gavel-pairwise", "output `DIR`ectory")
	format := fs.String("format", "parquet", "format of the pairs table: parquet, arrow or jsonl")
	tasks := fs.String("tasks", "", "tasks table `FILE` (task_id, instruction, other fields)")
	mapping := fs.String("map", "", "read fields from other columns: `K=COL[.PATH],...` (output=answer), as gavel grade")
	from := fs.String("from", "", "read .json inputs as logs of this harness `FORMAT`, as gavel grade")
	var sets listFlag
	fs.Var(&sets, "set", "add constant metadata `K=V` to every row (model=gpt-4o); repeatable")
	template := fs.String("judge-template", "", "pairwise template `FILE` (Go text/template defining version, system and user) replacing gavel-pairwise-v1")
	resamples := fs.Int("resamples", 1000, "bootstrap resamples of tasks for the Elo intervals")
	seed := fs.Uint64("seed", 1, "seed of the bootstrap")
	jf := judgeFlags(fs)
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	thresholdSet := false
	fs.Visit(func(f *flag.Flag) { thresholdSet = thresholdSet || f.Name == "judge-threshold" })
	switch {
	case len(specs) > 0 && *rubric != "":
		return usagef(`gavel judge pairwise --spec judged.yaml ...`, "--rubric and --spec contradict each other: the rubric comes from one of them")
	case *check != "" && len(specs) == 0:
		return usagef(`gavel judge pairwise --spec judged.yaml --check polite ...`, "--check names a check of a --spec: give the spec")
	case thresholdSet:
		return usagef(`gavel judge pairwise --rubric "..." ...`, "--judge-threshold does not apply to pairwise comparisons (the judge prefers one output, it gives no score)")
	case len(jf.models) == 0:
		return usagef(`gavel judge pairwise --judge-model gpt-4o-mini --rubric "..." ...`, "--judge-model: no judge model given")
	case len(jf.models) > 1 || len(jf.urlFor) > 0 || jf.samples != 1:
		return usagef(`gavel judge pairwise --judge-model gpt-4o-mini --rubric "..." ...`, "pairwise comparison by several judges or samples is not built yet: give one --judge-model, no --judge-url-for or --judge-samples")
	case fs.NArg() == 0:
		return usagef(`gavel judge pairwise --rubric "..." --judge-model M rollouts.parquet`, "no input given")
	case *resamples <= 0:
		return usagef("gavel judge pairwise --resamples 1000 ...", "--resamples %d: want a positive number", *resamples)
	}
	fields, err := parseMap(*mapping)
	if err != nil {
		return err
	}
	constants, err := parseSet(sets)
	if err != nil {
		return err
	}
	var vs []*verifiers.Verifier
	if len(specs) > 0 {
		if vs, err = loadVerifiers(specs); err != nil {
			return err
		}
	}
	jc, _, maxRequests, err := jf.config()
	if err != nil {
		return err
	}
	jc.Template = *template
	cfg := pairwise.Config{
		Inputs: fs.Args(), From: *from, Fields: fields, Set: constants, TasksFile: *tasks,
		By: *by, Against: *against, Rubric: *rubric, Query: *query, Verifiers: vs, Check: *check,
		Judge: *jc, MaxRequests: maxRequests, Out: *out, Format: *format,
	}
	res, err := pairwise.Compare(ctx, cfg)
	if res != nil {
		for _, p := range res.Problems {
			fmt.Fprintf(stderr, "gavel: skipped %s\n", p)
		}
		if more := res.InputErrors - int64(len(res.Problems)); more > 0 {
			fmt.Fprintf(stderr, "gavel: skipped %d more rows\n", more)
		}
	}
	if err != nil {
		return pairwiseError(err)
	}
	var games []pairwise.Game
	rk := pairwiseRanking{By: *by, Model: jf.models[0], Input: res.Rollouts, InputErrors: res.InputErrors, Unpaired: res.Unpaired,
		Pairs: len(res.Pairs), Template: res.Template}
	if *against != "" {
		rk.Against = against
	}
	for _, p := range res.Pairs {
		switch p.Outcome {
		case pairwise.OutcomeError:
			rk.Errors++
		case pairwise.OutcomePending:
			rk.Pending++
		default:
			games = append(games, pairwise.Game{Task: p.TaskID, A: p.GroupA, B: p.GroupB, Outcome: p.Outcome})
		}
	}
	rk.Ranking = pairwise.Rank(games, pairwise.RankingConfig{Resamples: *resamples, Seed: *seed})
	if err := writeRanking(filepath.Join(*out, "ranking.json"), &rk); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "compared %d pairs of %d rollouts by %s: %d judged, %d errors, %d pending by the budget; %s, %d rollouts unpaired\n\n",
		rk.Pairs, res.Rollouts, *by, rk.Games, rk.Errors, rk.Pending, plural(res.InputErrors, "row skipped", "rows skipped"), rk.Unpaired)
	if err := pairwise.WriteRanking(stdout, rk.Ranking); err != nil {
		return err
	}
	j := res.Judge
	fmt.Fprintf(stdout, "\njudge: %s of the server, %s, %s, %s, %s, %d prompt + %d completion tokens, %s pending by the budget\n",
		plural(j.Probes, "probe", "probes"), plural(j.Requests, "request", "requests"), plural(j.CacheHits, "cache hit", "cache hits"),
		plural(j.Retries, "retry", "retries"), plural(j.Failures, "failure", "failures"),
		j.PromptTokens, j.CompletionTokens, plural(j.PendingBudget, "pair", "pairs"))
	fmt.Fprintf(stdout, "\nresults in %s\n", store.Redact(*out))
	if rk.Errors > 0 {
		return &exitError{code: 3, msg: fmt.Sprintf("%d pairs could not be judged (see the error column of the pairs table)", rk.Errors)}
	}
	return nil
}

// writeRanking writes ranking.json atomically.
func writeRanking(path string, rk *pairwiseRanking) error {
	data, err := json.MarshalIndent(rk, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	return atomicfile.Write(path, atomicfile.Options{Perm: 0o644, Durable: true}, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// pairwiseError words an error of a pairwise comparison: a ConfigError
// becomes a usage error naming the flag at fault, a failed probe says
// nothing was written.
func pairwiseError(err error) error {
	var ce *inputs.ConfigError
	if errors.As(err, &ce) {
		flag := map[string]string{"Format": "--format", "From": "--from", "Set": "--set", "TasksFile": "--tasks",
			"Against": "--against", "By": "--by", "Out": "--out"}[ce.Field]
		if flag != "" {
			return usagef("gavel judge pairwise --help", "%s: %s", flag, ce.Msg)
		}
		if ce.Field == "Judge" {
			return usagef("check --judge-url, --judge-model, --judge-template and the key in --judge-api-key-env", "%s", ce.Msg)
		}
		return usagef("gavel judge pairwise --help", "%s", ce.Msg)
	}
	var pe *pipeline.ProbeError
	if errors.As(err, &pe) {
		return usagef("check --judge-url, --judge-model and the key in --judge-api-key-env", "%v (nothing written)", pe.Err)
	}
	return err
}
