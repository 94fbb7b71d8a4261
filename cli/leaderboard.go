package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/internal/store"
	"github.com/gavelhq/gavel/report"
)

const leaderboardExamples = `  gavel leaderboard gavel-out/
  gavel leaderboard --by model,task run-a/ run-b/
  gavel leaderboard --k 1,5,10 --format csv gavel-out/ > leaderboard.csv
  gavel leaderboard --format html --out leaderboard.html gavel-out/
  gavel leaderboard --reward-column recorded_reward gavel-out/   # the harness's own rewards`

const leaderboardSynopsis = `gavel leaderboard [flags] DIR...

Reads the rewards of one or more result directories and prints one row per group
(--by): rollouts; passed, failed, pending and error apart; the pass rate
passed/(passed+failed) with a 95% Wilson interval; the mean reward with a 95%
bootstrap interval over tasks (seeded: the same --seed gives the same interval);
pass@k (Chen et al. 2021) and pass^k (tau-bench) over repeated samples of each
task. Pending and error rows are never in a denominator. Every format states
these conventions except CSV, whose column names carry them.

--by takes task (task_id), verifier (verifier_id) or any rewards column, such
as the metadata columns kept by gavel grade --keep (model, run_id, ...) or set
by gavel grade --set model=NAME. Without --by, rows are grouped by model, or,
when no rollout has a model, form one group (a note on standard error says so).

--reward-column computes the same statistics from a kept column, such as the
recorded_reward of a harness's log, instead of gavel's verdict: a row passes when
the value is numerically 1 or boolean true (1, 1.0, true), fails for any other
number or false, and counts as error without one.`

func runLeaderboard(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("leaderboard", leaderboardSynopsis, leaderboardExamples, stdout)
	by := fs.String("by", "", "group by these `COLUMNS`, comma-separated (default: model, or one group when no rollout has a model)")
	ks := fs.String("k", "1,5", "sample counts `K,...` of pass@k and pass^k")
	format := fs.String("format", "table", "output format: table, csv, json, markdown or html")
	out := fs.String("out", "", "write to `FILE` instead of standard output")
	seed := fs.Uint64("seed", 1, "bootstrap `SEED`")
	resamples := fs.Int("resamples", 2000, "bootstrap resamples `N`")
	rewardColumn := fs.String("reward-column", "", "read each row's outcome and reward from this kept `COLUMN` (recorded_reward) instead of gavel's verdict")
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("gavel leaderboard gavel-out/", "leaderboard needs at least one result directory")
	}
	var kList []int
	for _, s := range splitList(*ks) {
		k, err := strconv.Atoi(s)
		if err != nil || k < 1 {
			return usagef("gavel leaderboard --k 1,5 DIR", "--k %q: want whole numbers of 1 or more", s)
		}
		kList = append(kList, k)
	}
	byList := splitList(*by)
	if len(byList) == 0 && flagSet(fs, "by") {
		return usagef("gavel leaderboard --by model DIR", "--by needs at least one column (to add a model column, grade with gavel grade --set model=NAME)")
	}
	if *resamples < 1 {
		return usagef("gavel leaderboard --resamples 2000 DIR", "--resamples must be 1 or more")
	}
	var write func(*report.Leaderboard, io.Writer) error
	switch strings.ToLower(*format) {
	case "table", "text":
		write = (*report.Leaderboard).WriteText
	case "csv":
		write = (*report.Leaderboard).WriteCSV
	case "json":
		write = (*report.Leaderboard).WriteJSON
	case "markdown", "md":
		write = (*report.Leaderboard).WriteMarkdown
	case "html":
		write = (*report.Leaderboard).WriteHTML
	default:
		return usagef("gavel leaderboard --format html --out leaderboard.html DIR", "unknown format %q (want table, csv, json, markdown or html)", *format)
	}
	dirs := make([]string, fs.NArg())
	for i, dir := range fs.Args() {
		local, done, err := localResults(dir)
		if err != nil {
			return fmt.Errorf("leaderboard: %w", err)
		}
		defer done()
		dirs[i] = local
		if st, err := os.Stat(filepath.Join(local, "rewards")); err != nil || !st.IsDir() {
			return usagef("gavel leaderboard gavel-out/", "%s is not a result directory (no rewards/ in it)", dir)
		}
	}
	setMemoryDefaults()
	lb, err := report.BuildLeaderboard(dirs, report.LeaderboardConfig{By: byList, K: kList, Seed: *seed, Resamples: *resamples, RewardColumn: *rewardColumn})
	if err != nil {
		msg := err.Error()
		for i, dir := range fs.Args() {
			msg = renamed(msg, dirs[i], dir)
		}
		return fmt.Errorf("leaderboard: %s", msg)
	}
	for i, dir := range fs.Args() {
		if dirs[i] != dir {
			lb.Dirs[i] = store.Redact(dir)
		}
	}
	if lb.OneGroup {
		fmt.Fprintf(stderr, "gavel: leaderboard: %s\n", report.OneGroupNote)
	}
	if *out == "" {
		return write(lb, stdout)
	}
	if err := writeAtomic(*out, func(w io.Writer) error { return write(lb, w) }); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	fmt.Fprintf(stderr, "wrote %s\n", *out)
	return nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
