package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gavelhq/gavel/internal/store"
	"github.com/gavelhq/gavel/report"
)

const reportExamples = `  gavel report gavel-out/ > report.html
  gavel report --baseline baseline/ --out report.html tonight/
  gavel report --format markdown --baseline baseline/ tonight/ > report.md   # for a CI comment
  gavel report --format markdown --turns refund-a chats/   # a rollout's reward per turn`

const reportSynopsis = `gavel report [flags] DIR

Writes a page to read one run: the summary; per verifier and per check the
pass, fail, pending and error counts as bars; the most failed checks with
example rollouts and their actual and expected values; the error kinds with
example messages; and, with --baseline, the diff's flips per verifier and per
check and the changed rollouts, regressions first (as gavel diff BASE DIR).

--turns ROLLOUT_ID (repeatable) adds a section per rollout of a run that scores
turns: a row per agent turn with its reward ("not scored" when null) and the
checks credited to it. A run that scores no turns, or an id it does not hold,
exits 1.

The HTML page is self-contained: no script, nothing loaded from the network.
The run is read once, row by row, keeping counts and a few examples per check.`

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", reportSynopsis, reportExamples, stdout)
	baseline := fs.String("baseline", "", "compare with this earlier result `DIR`")
	format := fs.String("format", "html", "output format: html or markdown")
	out := fs.String("out", "", "write to `FILE` instead of standard output")
	top := fs.Int("top", 10, "show the `N` most failed checks")
	examples := fs.Int("examples", 3, "example rollouts per failed check and messages per error kind `N`")
	var turns listFlag
	fs.Var(&turns, "turns", "add a section with the turns of this `ROLLOUT_ID`: each agent turn's reward and the checks credited to it (a run that scores turns; repeatable)")
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("gavel report gavel-out/ > report.html", "report needs one result directory")
	}
	var write func(*report.RunReport, io.Writer) error
	switch strings.ToLower(*format) {
	case "html":
		write = (*report.RunReport).WriteHTML
	case "markdown", "md":
		write = (*report.RunReport).WriteMarkdown
	default:
		return usagef("gavel report --format markdown DIR", "unknown format %q (want html or markdown)", *format)
	}
	if *top < 1 || *examples < 1 {
		return usagef("gavel report --top 10 --examples 3 DIR", "--top and --examples must be 1 or more")
	}
	dirs := []string{fs.Arg(0)}
	if *baseline != "" {
		dirs = append(dirs, *baseline)
	}
	// Result directories named by URLs are read from local copies.
	local := make([]string, len(dirs))
	for i, dir := range dirs {
		l, done, err := localResults(dir)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		defer done()
		local[i] = l
		if st, err := os.Stat(filepath.Join(l, "rewards")); err != nil || !st.IsDir() {
			return usagef("gavel report gavel-out/", "%s is not a result directory (no rewards/ in it)", store.Redact(dir))
		}
	}
	cfg := report.RunConfig{TopChecks: *top, Examples: *examples, Turns: turns}
	if len(local) > 1 {
		cfg.Baseline = local[1]
	}
	rep, err := report.BuildRunReport(local[0], cfg)
	if err != nil {
		msg := err.Error()
		for i, dir := range dirs {
			msg = renamed(msg, local[i], dir)
		}
		return fmt.Errorf("report: %s", msg)
	}
	if local[0] != dirs[0] {
		rep.Dir = store.Redact(dirs[0])
	}
	if *out == "" {
		return write(rep, stdout)
	}
	if err := writeAtomic(*out, func(w io.Writer) error { return write(rep, w) }); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	fmt.Fprintf(stderr, "wrote %s\n", *out)
	return nil
}
