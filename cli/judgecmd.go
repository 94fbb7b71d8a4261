package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gavelhq/gavel/internal/store"
	"github.com/gavelhq/gavel/report"
	"github.com/gavelhq/gavel/stats"
)

// judgeCommands are the subcommands of gavel judge, in the order its help
// lists them.
func judgeCommands() []command {
	return []command{
		{"agreement", "how much the judges of a run agree with each other and with themselves", runJudgeAgreement},
		{"calibrate", "a judge's verdicts against human labels; --require-tpr/--require-tnr certify it", runJudgeCalibrate},
		{"pairwise", "compare the outputs of groups (models) head to head, both orders, and rank them", runJudgePairwise},
	}
}

func printJudgeUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: gavel judge SUBCOMMAND [flags] [args]\n\nMeasures the judge of rubric checks, and compares outputs with it.\n\nSubcommands:\n")
	for _, c := range judgeCommands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nExamples:\n"+agreementExamples+"\n"+calibrateExamples+"\n  gavel judge pairwise --rubric \"The answer is correct.\" --judge-model gpt-4o-mini --out cmp rollouts.parquet\n\nRun 'gavel judge SUBCOMMAND --help' for its flags and examples.\n")
}

func runJudge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printJudgeUsage(stdout)
		if len(args) == 0 {
			return usagef("gavel judge --help", "judge: no subcommand given")
		}
		return nil
	}
	var names []string
	for _, c := range judgeCommands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
		names = append(names, c.name)
	}
	return usagef("gavel judge --help", "judge: unknown subcommand %q%s", args[0], didYouMean(args[0], names, ""))
}

const agreementSynopsis = `gavel judge agreement [flags] DIR

Reads the judgements table of a run whose rubric checks were judged more than
once (several judges, several samples) and prints, overall and per check id:

  between judges, on sample 0: Cohen's kappa (two judges) or Fleiss' kappa
  (more) on pass/fail, Krippendorff's alpha nominal on pass/fail and interval
  on scores, and the mean absolute difference of two judges' scores;
  each judge across its samples: the share of checks whose samples all agree
  and the mean standard deviation of their scores.

Each statistic has a 95% percentile bootstrap interval over rollouts (seeded:
the same --seed gives the same interval). An undefined statistic is shown
as - with the reason (one judge, one class only). Failed judgements take part
in no statistic; they are counted. DIR may be an object storage URL.`

const agreementExamples = `  gavel judge agreement gavel-out/
  gavel judge agreement --format markdown gavel-out/ > agreement.md
  gavel judge agreement --format json --resamples 5000 --seed 7 s3://bucket/runs/tonight/`

func runJudgeAgreement(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("judge agreement", agreementSynopsis, agreementExamples, stdout)
	format := fs.String("format", "table", "output format: table, json or markdown")
	out := fs.String("out", "", "write to `FILE` instead of standard output")
	seed := fs.Uint64("seed", 1, "bootstrap `SEED`")
	resamples := fs.Int("resamples", 2000, "bootstrap resamples `N`")
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("gavel judge agreement gavel-out/", "judge agreement needs one result directory")
	}
	if *resamples < 1 {
		return usagef("gavel judge agreement --resamples 2000 DIR", "--resamples must be 1 or more")
	}
	var write func(*report.Agreement, io.Writer) error
	switch strings.ToLower(*format) {
	case "table", "text":
		write = (*report.Agreement).WriteText
	case "json":
		write = (*report.Agreement).WriteJSON
	case "markdown", "md":
		write = (*report.Agreement).WriteMarkdown
	default:
		return usagef("gavel judge agreement --format markdown DIR", "unknown format %q (want table, json or markdown)", *format)
	}
	dir := fs.Arg(0)
	local, done, err := openResults("judge agreement", dir)
	if err != nil {
		return err
	}
	defer done()
	ag, err := report.BuildAgreement(local, report.AgreementConfig{Bootstrap: stats.BootstrapConfig{Seed: *seed, Resamples: *resamples}})
	if errors.Is(err, report.ErrNoJudgements) {
		return &exitError{code: 1, msg: fmt.Sprintf("judge agreement: %s has %v", store.Redact(dir), err)}
	}
	if err != nil {
		return fmt.Errorf("judge agreement: %s", renamed(err.Error(), local, dir))
	}
	ag.Dir = store.Redact(dir)
	return writeOutput(*out, stdout, stderr, func(w io.Writer) error { return write(ag, w) })
}

const calibrateSynopsis = `gavel judge calibrate [flags] DIR --labels FILE

Joins the judged rubric checks of a run with human labels and prints, overall
and per check id: n, the confusion matrix (positive is pass), accuracy, TPR and
TNR with Wilson 95% intervals, Cohen's kappa between the judge and the humans,
and the threshold on the judge's scores that maximizes balanced accuracy, with
its TPR and TNR. An undefined statistic is shown as - with the reason.

The labels file (Parquet, Arrow or JSON Lines) has a rollout id, optionally a
check id, and a label: pass/fail, true/false, or a number that passes at
--label-threshold or more. A label row without a check id labels the rollout's
one judged check. Judged checks without a label, labelled checks whose
judgement failed (status error or pending), and labels that match nothing are
counted and reported, never guessed.

By default the judge's aggregate verdict of each check (the checks table) is
calibrated; --judge M calibrates judge M's sample-0 verdicts (the judgements
table). With --require-tpr and --require-tnr the command exits 1 unless both
Wilson 95% lower bounds reach them, overall, or for every check id with
--per-check: a CI job can certify a judge before a run is trusted.`

const calibrateExamples = `  gavel judge calibrate --labels labels.jsonl gavel-out/
  gavel judge calibrate --labels human.parquet --id-columns rollout_id=id,check_id=rubric --label-column verdict gavel-out/
  gavel judge calibrate --labels labels.jsonl --require-tpr 0.8 --require-tnr 0.8 --per-check gavel-out/   # exit 1 unless certified
  gavel judge calibrate --labels labels.jsonl --judge gpt-4o-mini --format markdown gavel-out/`

func runJudgeCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("judge calibrate", calibrateSynopsis, calibrateExamples, stdout)
	labels := fs.String("labels", "", "the human labels `FILE` (Parquet, Arrow or JSON Lines; required)")
	labelColumn := fs.String("label-column", "label", "the labels' `COLUMN` holding the label")
	idColumns := fs.String("id-columns", "", "the labels' id columns, `rollout_id=COL[,check_id=COL]` (default rollout_id and, when present, check_id)")
	threshold := fs.Float64("label-threshold", 0.5, "a numeric label passes when it is >= `T`")
	judgeModel := fs.String("judge", "", "calibrate judge `MODEL`'s sample-0 verdicts (the judgements table) instead of the aggregate")
	requireTPR := fs.Float64("require-tpr", 0, "exit 1 unless the Wilson 95% lower bound of TPR is >= `X`")
	requireTNR := fs.Float64("require-tnr", 0, "exit 1 unless the Wilson 95% lower bound of TNR is >= `Y`")
	perCheck := fs.Bool("per-check", false, "apply --require-tpr and --require-tnr to every check id, not only overall")
	format := fs.String("format", "table", "output format: table, json or markdown")
	out := fs.String("out", "", "write to `FILE` instead of standard output")
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	const hint = "gavel judge calibrate --labels labels.jsonl gavel-out/"
	if fs.NArg() != 1 {
		return usagef(hint, "judge calibrate needs one result directory")
	}
	if *labels == "" {
		return usagef(hint, "judge calibrate needs --labels FILE")
	}
	if *threshold <= 0 || *threshold > 1e300 {
		return usagef(hint, "--label-threshold must be above 0")
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"require-tpr", *requireTPR}, {"require-tnr", *requireTNR}} {
		if r.v < 0 || r.v > 1 {
			return usagef("gavel judge calibrate --labels labels.jsonl --require-tpr 0.8 --require-tnr 0.8 DIR", "--%s must be between 0 and 1", r.name)
		}
	}
	if *perCheck && *requireTPR == 0 && *requireTNR == 0 {
		return usagef("gavel judge calibrate --labels labels.jsonl --require-tpr 0.8 --per-check DIR", "--per-check applies --require-tpr and --require-tnr: give one")
	}
	cfg := report.CalibrationConfig{Labels: *labels, LabelColumn: *labelColumn, LabelThreshold: *threshold,
		Judge: *judgeModel, RequireTPR: *requireTPR, RequireTNR: *requireTNR, PerCheck: *perCheck}
	for _, kv := range splitList(*idColumns) {
		name, col, ok := strings.Cut(kv, "=")
		switch {
		case !ok || col == "":
			return usagef("gavel judge calibrate --id-columns rollout_id=id,check_id=rubric ...", "--id-columns %q: want NAME=COLUMN", kv)
		case name == "rollout_id":
			cfg.RolloutColumn = col
		case name == "check_id":
			cfg.CheckColumn = col
		default:
			return usagef("gavel judge calibrate --id-columns rollout_id=id,check_id=rubric ...", "--id-columns %q: the names are rollout_id and check_id", kv)
		}
	}
	var write func(*report.Calibration, io.Writer) error
	switch strings.ToLower(*format) {
	case "table", "text":
		write = (*report.Calibration).WriteText
	case "json":
		write = (*report.Calibration).WriteJSON
	case "markdown", "md":
		write = (*report.Calibration).WriteMarkdown
	default:
		return usagef("gavel judge calibrate --format markdown ...", "unknown format %q (want table, json or markdown)", *format)
	}
	dir := fs.Arg(0)
	local, done, err := openResults("judge calibrate", dir)
	if err != nil {
		return err
	}
	defer done()
	c, err := report.BuildCalibration(local, cfg)
	if errors.Is(err, report.ErrNoJudgements) {
		return &exitError{code: 1, msg: fmt.Sprintf("judge calibrate: --judge %s: %s has %v", *judgeModel, store.Redact(dir), err)}
	}
	if err != nil {
		return fmt.Errorf("judge calibrate: %s", renamed(err.Error(), local, dir))
	}
	c.Dir = store.Redact(dir)
	if err := writeOutput(*out, stdout, stderr, func(w io.Writer) error { return write(c, w) }); err != nil {
		return err
	}
	if c.Require != nil && !c.Require.Certified {
		return &exitError{code: 1, msg: "judge calibrate: not certified: " + strings.Join(c.Require.Failures, "; ")}
	}
	return nil
}

// openResults returns a local directory holding the result directory dir
// (a copy for an object storage URL, removed by done), or an error naming
// the command when it is not a result directory.
func openResults(cmd, dir string) (local string, done func(), err error) {
	local, done, err = localResults(dir)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", cmd, err)
	}
	if st, err := os.Stat(filepath.Join(local, "rewards")); err != nil || !st.IsDir() {
		done()
		return "", nil, usagef("gavel "+cmd+" gavel-out/", "%s is not a result directory (no rewards/ in it)", store.Redact(dir))
	}
	return local, done, nil
}

// writeOutput writes with write to the file out, atomically, or to stdout
// when out is "".
func writeOutput(out string, stdout, stderr io.Writer, write func(io.Writer) error) error {
	if out == "" {
		return write(stdout)
	}
	if err := writeAtomic(out, write); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Fprintf(stderr, "wrote %s\n", out)
	return nil
}
