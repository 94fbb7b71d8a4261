package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gavelhq/gavel/internal/store"
	"github.com/gavelhq/gavel/report"
)

const diffExamples = `  gavel diff baseline/ gavel-out/
  gavel diff --fail-on 1% baseline/ gavel-out/       # fail when more than 1% of rollouts regressed
  gavel diff --format markdown baseline/ gavel-out/ > comment.md
  gavel diff --json --fail-on 10 baseline/ gavel-out/
  gavel diff --against-column recorded_reward gavel-out/   # gavel's verdicts against a harness's rewards`

const diffSynopsis = `gavel diff [flags] BASE CUR
       gavel diff [flags] --against-column COL DIR

Compares two result directories rollout by rollout (by rollout_id): per verifier
and per check, flips from pass to fail and from fail to pass, other status changes
(to or from error and pending), reward changes, rollouts on one side only, whether
each change comes with a changed verifier (fingerprint in manifest.json) or a changed
input file (size or row count in manifest.json), and an exact McNemar test per
verifier on the paired pass/fail outcomes.

A regression is a rollout that passed in BASE and is failed or error in CUR.

When both runs score turns, the paired rollouts whose turn rewards changed (a
list of another length, another value, a null for a value) are counted and
listed with both lists, whatever their status did; when only one does, a line
says so.

With --against-column, one result directory's verdicts are compared with a
recorded reward kept in its rewards (a harness's recorded_reward: passed when
numerically 1 or true): the rollouts where they disagree, with the checks that
decided gavel's verdict. --fail-on then limits the disagreements.

Exit status: 0 the regressions (disagreements) do not exceed --fail-on; 1 they do (or an error);
2 usage error.`

func runDiff(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("diff", diffSynopsis, diffExamples, stdout)
	formatFlag := fs.String("format", "text", "output format: text, json or markdown (for a CI comment)")
	asJSON := fs.Bool("json", false, "print the diff as JSON (--format json)")
	asMarkdown := fs.Bool("markdown", false, "print the diff as Markdown (--format markdown)")
	failOn := fs.String("fail-on", "0", "exit 1 when the regressions exceed this `LIMIT`: a count (0: any regression) or a rate of paired rollouts (1% or 0.01)")
	examples := fs.Int("examples", 10, "list `N` changed rollouts, regressions first (0: none)")
	against := fs.String("against-column", "", "compare one result directory's verdicts with the recorded reward in this kept `COLUMN` (recorded_reward)")
	tmp := fs.String("tmp", "", "spill partitions under `DIR` when the results do not line up (default: the system temporary directory)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	progress := fs.Bool("progress", false, "force a progress bar on standard error (shown once the comparison has taken a second)")
	prof := addProfileFlags(fs)
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	if *against != "" && fs.NArg() != 1 {
		return usagef("gavel diff --against-column recorded_reward gavel-out/", "diff --against-column needs one result directory")
	}
	if *against == "" && fs.NArg() != 2 {
		return usagef("gavel diff baseline/ gavel-out/", "diff needs two result directories, BASE and CUR")
	}
	format, err := diffFormat(*formatFlag, flagSet(fs, "format"), *asJSON, *asMarkdown)
	if err != nil {
		return err
	}
	if *quiet && *progress {
		return usagef("gavel diff --help", "--quiet and --progress contradict each other")
	}
	th, err := report.ParseThreshold(*failOn)
	if err != nil {
		return usagef("gavel diff --fail-on 1% BASE CUR", "%v", err)
	}
	if *against != "" {
		return againstAndReport(fs.Arg(0), *against, th, *examples, format, stdout)
	}
	opts := compareOptions{tmp: *tmp, stderr: stderr, progress: *progress || (!*quiet && isTerminal(os.Stderr))}
	setMemoryDefaults()
	if err := prof.start(); err != nil {
		return err
	}
	err = diffAndReport(ctx, fs.Arg(0), fs.Arg(1), th, *examples, format, stdout, opts)
	if pErr := prof.stop(); pErr != nil {
		fmt.Fprintf(stderr, "gavel: %v\n", pErr)
	}
	return err
}

// diffFormat returns the output format of gavel diff: text, json or
// markdown, from --format or its shorthands --json and --markdown.
func diffFormat(format string, formatSet, asJSON, asMarkdown bool) (string, error) {
	const hint = "gavel diff --format markdown BASE CUR"
	if asJSON && asMarkdown {
		return "", usagef(hint, "--json and --markdown contradict each other")
	}
	switch strings.ToLower(format) {
	case "text", "table":
		format = "text"
	case "json":
		format = "json"
	case "markdown", "md":
		format = "markdown"
	default:
		return "", usagef(hint, "unknown format %q (want text, json or markdown)", format)
	}
	short := ""
	switch {
	case asJSON:
		short = "json"
	case asMarkdown:
		short = "markdown"
	}
	if short == "" {
		return format, nil
	}
	if formatSet && format != short {
		return "", usagef(hint, "--%s and --format %s contradict each other", short, format)
	}
	return short, nil
}

// compareOptions are how a comparison runs, not what it finds: where it
// spills, whether it shows a progress bar, where it says so.
type compareOptions struct {
	tmp      string
	progress bool
	stderr   io.Writer
}

// againstAndReport compares a result directory's verdicts with a recorded
// reward column, prints the comparison in format and returns an exitError
// with status 1 when the disagreements exceed th.
func againstAndReport(dir, column string, th report.Threshold, examples int, format string, w io.Writer) error {
	if examples == 0 {
		examples = -1 // report.DiffConfig: 0 means the default
	}
	local, done, err := localResults(dir)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	defer done()
	a, err := report.CompareColumn(local, column, report.DiffConfig{FailOn: th, Examples: examples})
	if err != nil {
		return fmt.Errorf("diff: %s", renamed(err.Error(), local, dir))
	}
	if local != dir {
		a.Dir = store.Redact(dir)
	}
	switch format {
	case "json":
		err = a.WriteJSON(w)
	case "markdown":
		err = a.WriteMarkdown(w)
	default:
		err = a.WriteText(w)
	}
	if err != nil {
		return err
	}
	if a.Failed {
		return &exitError{code: 1, msg: fmt.Sprintf("%d disagreements with %s (%.2f%% of %d compared rollouts) exceed --fail-on %s", a.Disagreements, column, 100*a.DisagreementRate, a.Compared, th)}
	}
	return nil
}

// diffAndReport compares two result directories, prints the diff in
// format and returns an exitError with status 1 when the regressions
// exceed th.
func diffAndReport(ctx context.Context, base, cur string, th report.Threshold, examples int, format string, w io.Writer, opts compareOptions) error {
	if examples == 0 {
		examples = -1 // report.DiffConfig: 0 means the default
	}
	lbase, doneBase, err := localResults(base)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	defer doneBase()
	lcur, doneCur, err := localResults(cur)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	defer doneCur()
	cfg := report.DiffConfig{FailOn: th, Examples: examples, TempDir: opts.tmp}
	var bar *lateBar
	if opts.progress {
		bar = newLateBar(opts.stderr, "comparing", "rows")
		cfg.Progress = bar
	}
	d, err := report.CompareContext(ctx, lbase, lcur, cfg)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return fmt.Errorf("diff: %s", renamed(renamed(err.Error(), lbase, base), lcur, cur))
	}
	if lbase != base || lcur != cur {
		d.Base, d.Current = store.Redact(base), store.Redact(cur)
	}
	if d.Partitions > 0 {
		tmp := opts.tmp
		if tmp == "" {
			tmp = os.TempDir()
		}
		parts := "partitions"
		if d.Partitions == 1 {
			parts = "partition"
		}
		fmt.Fprintf(opts.stderr, "gavel: the results do not line up row by row: compared in %d %s, %s spilled under %s\n", d.Partitions, parts, byteSize(d.DiskBytes), tmp)
	}
	switch format {
	case "json":
		err = d.WriteJSON(w)
	case "markdown":
		err = d.WriteMarkdown(w)
	default:
		err = d.WriteText(w)
	}
	if err != nil {
		return err
	}
	if d.Failed {
		return &exitError{code: 1, msg: fmt.Sprintf("%d regressions (%.2f%% of %d paired rollouts) exceed --fail-on %s", d.Regressions, 100*d.RegressionRate, d.Paired, th)}
	}
	return nil
}

// interleaved moves the flags of args before its positional arguments, so
// that `gavel diff BASE CUR --json` works as `gavel diff --json BASE CUR`.
// A flag's value stays with it; "--" ends the flags.
func interleaved(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if hasValue || f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 == len(args) {
			// The value is missing: end with the flag, so that parsing
			// reports that it needs one.
			return flags
		}
		i++
		flags = append(flags, args[i])
	}
	return append(append(flags, "--"), pos...)
}

// checkBaseline validates grade's --baseline and --fail-on before anything
// is written: the baseline must be a result directory other than --out
// (grading into it would replace it).
func checkBaseline(baseline, out, failOn string) (report.Threshold, error) {
	th, err := report.ParseThreshold(failOn)
	if err != nil {
		return th, usagef("gavel grade --baseline baseline/ --fail-on 1% INPUT", "%v", err)
	}
	if baseline == "" {
		return th, nil
	}
	if store.IsURL(baseline) {
		if store.Redact(baseline) == store.Redact(out) {
			return th, usagef("gavel grade --baseline baseline/ --out gavel-out INPUT", "--baseline and --out are the same directory: grading would replace the baseline")
		}
		return th, nil
	}
	if _, err := os.Stat(filepath.Join(baseline, "manifest.json")); err != nil {
		return th, usagef("gavel grade --baseline baseline/ INPUT", "--baseline %s is not a result directory (no manifest.json in it)", baseline)
	}
	b, errB := filepath.Abs(baseline)
	o, errO := filepath.Abs(out)
	if errB == nil && errO == nil && b == o {
		return th, usagef("gavel grade --baseline baseline/ --out gavel-out INPUT", "--baseline and --out are the same directory: grading would replace the baseline")
	}
	return th, nil
}

// baselineExit is grade's exit when the diff against the baseline failed:
// regressions over --fail-on exit 1 and win over status 3 (rows with status
// error), whose count the message adds.
func baselineExit(err error, errorRows int64) error {
	var ee *exitError
	if errors.As(err, &ee) && errorRows > 0 {
		return &exitError{code: ee.code, msg: fmt.Sprintf("%s; also %d rows have status error", ee.msg, errorRows)}
	}
	return err
}
