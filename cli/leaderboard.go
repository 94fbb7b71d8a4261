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
  gavel leaderboard --reward-column recorded_reward gavel-out/   # the harness's own rewards
  gavel leaderboard --flags --exclude-flagged=git-history gavel-out/
  gavel leaderboard --expect tasks.jsonl --trials 5 gavel-out/      # fails on a missing cell
  gavel leaderboard --turn-rewards chats/                           # runs that score turns`

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
number or false, and counts as error without one.

Where the runs have flags (marks of a verifier, such as reward hacking, that
never move a reward), every group shows flagged, the rollouts that raised one,
and its share; --flags adds a column per flag. --exclude-flagged leaves out the
rollouts that raised any flag, --exclude-flagged=ID,... those that raised one of
these, before anything is counted: the conventions say how many.

--expect FILE --trials K fails closed: every group must hold K rollouts of each
task of FILE (a tasks table in any input format, or task ids one a line). Each
group's expected, graded, errored, missing and duplicated cells are counted; a
missing or duplicated cell exits 1, naming the first ten, unless
--allow-incomplete, which ranks anyway with every rate marked incomplete.
Without --expect, groups whose tasks have unequal numbers of rollouts get a note.

--turn-rewards adds the mean turn reward of each group: the mean over the scored
turns (the non-null elements of turn_rewards) of its rollouts, - when none (JSON:
mean_turn_reward, null). Every directory must come from a run that scores turns;
one that does not exits 1.`

func runLeaderboard(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("leaderboard", leaderboardSynopsis, leaderboardExamples, stdout)
	by := fs.String("by", "", "group by these `COLUMNS`, comma-separated (default: model, or one group when no rollout has a model)")
	ks := fs.String("k", "1,5", "sample counts `K,...` of pass@k and pass^k")
	format := fs.String("format", "table", "output format: table, csv, json, markdown or html")
	out := fs.String("out", "", "write to `FILE` instead of standard output")
	seed := fs.Uint64("seed", 1, "bootstrap `SEED`")
	resamples := fs.Int("resamples", 2000, "bootstrap resamples `N`")
	rewardColumn := fs.String("reward-column", "", "read each row's outcome and reward from this kept `COLUMN` (recorded_reward) instead of gavel's verdict")
	flagCounts := fs.Bool("flags", false, "add a column per flag: the rollouts of the group that raised it")
	expect := fs.String("expect", "", "check that each group holds --trials rollouts of every task of `FILE` (a tasks table, or task ids one a line); exit 1 naming the first missing or duplicated cells")
	trials := fs.Int("trials", 1, "rollouts expected of each task with --expect: `K`")
	allowIncomplete := fs.Bool("allow-incomplete", false, "with --expect, rank groups that miss cells anyway, every rate marked incomplete")
	turnRewards := fs.Bool("turn-rewards", false, "add the mean turn reward of each group: the mean over the scored turns of its rollouts (runs that score turns)")
	var exclude excludeFlagged
	fs.Var(&exclude, "exclude-flagged", "leave out the rollouts that raised a flag: any flag, or with =`ID,...` one of these")
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
	var expected []string
	if *expect != "" {
		if *trials < 1 {
			return usagef("gavel leaderboard --expect tasks.txt --trials 3 DIR", "--trials must be 1 or more")
		}
		var err error
		if expected, err = report.ReadExpected(*expect); err != nil {
			return fmt.Errorf("leaderboard: %w", err)
		}
	} else if flagSet(fs, "trials") || *allowIncomplete {
		return usagef("gavel leaderboard --expect tasks.txt --trials 3 DIR", "--trials and --allow-incomplete go with --expect FILE")
	}
	setMemoryDefaults()
	lb, err := report.BuildLeaderboard(dirs, report.LeaderboardConfig{By: byList, K: kList, Seed: *seed, Resamples: *resamples, RewardColumn: *rewardColumn,
		FlagCounts: *flagCounts, ExcludeFlagged: exclude.ids, ExcludeAllFlagged: exclude.all,
		Expect: expected, Trials: *trials, AllowIncomplete: *allowIncomplete, TurnRewards: *turnRewards})
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

// excludeFlagged is the value of --exclude-flagged: alone, every flag;
// with =ID,..., those flags.
type excludeFlagged struct {
	all bool
	ids []string
}

func (e *excludeFlagged) String() string {
	if e == nil || e.all {
		return ""
	}
	return strings.Join(e.ids, ",")
}

func (e *excludeFlagged) Set(s string) error {
	if s == "true" {
		e.all, e.ids = true, nil
		return nil
	}
	ids := splitList(s)
	if len(ids) == 0 || s == "false" {
		return fmt.Errorf("want flag ids, --exclude-flagged=ID,..., or none for every flag")
	}
	e.all, e.ids = false, ids
	return nil
}

// IsBoolFlag lets --exclude-flagged stand alone; ids follow an "=".
func (e *excludeFlagged) IsBoolFlag() bool { return true }
