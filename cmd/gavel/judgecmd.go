package main

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
)

// judgeCommands are the subcommands of gavel judge, in the order its help
// lists them.
func judgeCommands() []command {
	return []command{
		{"agreement", "how much the judges of a run agree with each other and with themselves", runJudgeAgreement},
	}
}

func printJudgeUsage(w io.Writer) {
	fmt.Fprint(w, "Usage: gavel judge SUBCOMMAND [flags] [args]\n\nMeasures the judge of rubric checks.\n\nSubcommands:\n")
	for _, c := range judgeCommands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nExamples:\n"+agreementExamples+"\n\nRun 'gavel judge SUBCOMMAND --help' for its flags and examples.\n")
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
	ag, err := report.BuildAgreement(local, report.AgreementConfig{Bootstrap: report.BootstrapConfig{Seed: *seed, Resamples: *resamples}})
	if errors.Is(err, report.ErrNoJudgements) {
		return &exitError{code: 1, msg: fmt.Sprintf("judge agreement: %s has %v", store.Redact(dir), err)}
	}
	if err != nil {
		return fmt.Errorf("judge agreement: %s", renamed(err.Error(), local, dir))
	}
	ag.Dir = store.Redact(dir)
	return writeOutput(*out, stdout, stderr, func(w io.Writer) error { return write(ag, w) })
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
