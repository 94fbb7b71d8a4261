package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/stats"
	"github.com/gavelhq/gavel/verifiers"
)

// LeaderboardConfig sets a leaderboard. The zero value groups by model
// (all rows one group when no rollout has one), estimates pass@1 and
// pass@5, and draws 2000 bootstrap resamples with seed 0.
type LeaderboardConfig struct {
	// By names the grouping columns: "task" (task_id), "verifier"
	// (verifier_id), or any column of the rewards, such as a kept metadata
	// column (model, run_id). Empty: model, or, when no rollout has a
	// model, all rows as one group, which the conventions say.
	By []string
	// K lists the sample counts of pass@k and pass^k (nil: 1 and 5).
	K []int
	// Resamples is the number of bootstrap resamples (0: 2000).
	Resamples int
	// Seed seeds the bootstrap; the same seed gives the same intervals.
	Seed uint64
	// RewardColumn, when set, names a rewards column (a kept metadata
	// column, such as a harness's recorded_reward) read in place of
	// gavel's verdict: see Recorded.
	RewardColumn string
	// FlagCounts adds, per group, the count of rollouts raising each flag
	// (--flags).
	FlagCounts bool
	// ExcludeFlagged leaves out the rollouts raising any of these flags
	// before anything is counted; ExcludeAllFlagged, those raising any
	// flag (--exclude-flagged with or without ids).
	ExcludeFlagged    []string
	ExcludeAllFlagged bool
	// Expect lists the task ids each group is expected to hold Trials
	// rollouts of (--expect, --trials; sorted); nil: no expectation, and
	// groups whose tasks have unequal numbers of rollouts get a note.
	// A group that misses a cell or holds more than Trials rollouts of a
	// task fails the leaderboard (an IncompleteError) unless
	// AllowIncomplete.
	Expect          []string
	Trials          int
	AllowIncomplete bool
	// TurnRewards adds, per group, the mean turn reward: the mean over
	// the scored turns of its rollouts (--turn-rewards). Every result
	// directory must score turns.
	TurnRewards bool
}

// Leaderboard is one row per group of rollouts, best pass rate first.
type Leaderboard struct {
	Dirs      []string `json:"dirs"`
	By        []string `json:"by"`
	K         []int    `json:"k"`
	Seed      uint64   `json:"seed"`
	Resamples int      `json:"resamples"`
	// RewardColumn is the column the statistics are computed from in
	// place of gavel's verdict ("" when none).
	RewardColumn string `json:"reward_column,omitempty"`
	// OneGroup is true when By was left empty and no rollout has a model:
	// all rows are then one group, whose model is null.
	OneGroup bool `json:"one_group,omitempty"`
	// HasFlags is set when some result directory has flags: the entries
	// then count the flagged rollouts. Flags lists the flags raised, in
	// id order, with FlagCounts.
	HasFlags bool     `json:"-"`
	Flags    []string `json:"flags,omitempty"`
	// ExcludedFlagged counts the rollouts left out because they raised a
	// flag of ExcludeFlags (every flag when it is empty); absent without
	// --exclude-flagged.
	ExcludedFlagged *int64   `json:"excluded_flagged,omitempty"`
	ExcludeFlags    []string `json:"exclude_flags,omitempty"`
	// Coverage is the groups' coverage of the cells expected (absent
	// without --expect).
	Coverage *Coverage `json:"coverage,omitempty"`
	// TurnRewards is set with LeaderboardConfig.TurnRewards: the entries
	// then have a mean turn reward.
	TurnRewards bool     `json:"-"`
	Entries     []Entry  `json:"entries"`
	Conventions []string `json:"conventions"`
}

// Entry is the statistics of one group.
type Entry struct {
	Rank int `json:"rank"`
	// Group holds the values of the By columns ("" for null).
	Group []string `json:"group"`
	verifiers.Counts
	// PassRate is passed / (passed + failed), with its 95% Wilson
	// interval; null when no rollout passed or failed.
	PassRate   *float64        `json:"pass_rate"`
	PassRateCI *stats.Interval `json:"pass_rate_ci"`
	// MeanReward is the mean over rollouts with a reward, with a 95%
	// bootstrap interval over tasks (null with fewer than two tasks).
	MeanReward   *float64        `json:"mean_reward"`
	MeanRewardCI *stats.Interval `json:"mean_reward_ci"`
	// Tasks is the number of distinct tasks in the group.
	Tasks int      `json:"tasks"`
	AtK   []KStats `json:"at_k"`
	// Flagged counts the rollouts raising at least one flag, and
	// FlaggedShare is their share of the rollouts; absent when no result
	// directory has flags. FlagCounts counts the rollouts raising each
	// flag (--flags).
	Flagged      *int64           `json:"flagged,omitempty"`
	FlaggedShare *float64         `json:"flagged_share,omitempty"`
	FlagCounts   map[string]int64 `json:"flag_counts,omitempty"`
	// Coverage counts the group's cells (absent without --expect).
	Coverage *GroupCoverage `json:"coverage,omitempty"`
	// MeanTurnReward is the mean over the scored turns (the non-null
	// elements of turn_rewards) of the group's rollouts; nil when none.
	// JSON has it as mean_turn_reward (null when none) only with
	// LeaderboardConfig.TurnRewards.
	MeanTurnReward *float64 `json:"-"`

	agg         *groupAgg
	turnRewards bool
}

// MarshalJSON writes the entry with mean_turn_reward when the
// leaderboard reads turn rewards.
func (e Entry) MarshalJSON() ([]byte, error) {
	type plain Entry
	if !e.turnRewards {
		return json.Marshal(plain(e))
	}
	return json.Marshal(struct {
		plain
		MeanTurnReward *float64 `json:"mean_turn_reward"`
	}{plain(e), e.MeanTurnReward})
}

// KStats is pass@k and pass^k for one k, averaged over the tasks with at
// least k graded samples.
type KStats struct {
	K        int      `json:"k"`
	PassAtK  *float64 `json:"pass_at_k"`
	PassHatK *float64 `json:"pass_hat_k"`
	// Tasks is the number of tasks with at least k graded samples.
	Tasks int `json:"tasks"`
}

type taskAgg struct {
	rows           int64
	passed, graded int64
	rewardSum      float64
	rewardN        int64
}

type groupAgg struct {
	key     []string
	e       Entry
	tasks   map[string]*taskAgg
	order   []string
	flagged int64
	flags   map[string]int64
	// outHash is the output hash of the group's rollouts while they all
	// have the same (outMixed: they do not), over outRows of them.
	outHash  string
	outRows  int64
	outMixed bool
	// turnSum and turnN sum the scored turns' rewards (TurnRewards).
	turnSum float64
	turnN   int64
}

// column maps a --by name to the rewards column that holds it.
func column(name string) string {
	switch name {
	case "task":
		return "task_id"
	case "verifier":
		return "verifier_id"
	}
	return name
}

// BuildLeaderboard reads the rewards of every result directory in dirs
// and computes the leaderboard.
func BuildLeaderboard(dirs []string, cfg LeaderboardConfig) (*Leaderboard, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no result directory given")
	}
	by := cfg.By
	byDefault := len(by) == 0
	if byDefault {
		by = []string{"model"}
	}
	ks := cfg.K
	if ks == nil {
		ks = []int{1, 5}
	}
	for _, k := range ks {
		if k < 1 {
			return nil, fmt.Errorf("k %d: want 1 or more", k)
		}
	}
	if cfg.Resamples <= 0 {
		cfg.Resamples = 2000
	}
	cols := []string{"task_id", "status", "reward"}
	if cfg.RewardColumn != "" {
		cols[1], cols[2] = cfg.RewardColumn, cfg.RewardColumn
	}
	recordedFound := false
	for _, b := range by {
		cols = append(cols, column(b))
	}
	groups := map[string]*groupAgg{}
	in := columnar.Interner{}
	var keyBuf []byte
	found := make([]bool, len(by))
	withFlags := make([]bool, len(dirs))
	anyFlags := false
	for i, dir := range dirs {
		withFlags[i] = hasFlags(dir)
		anyFlags = anyFlags || withFlags[i]
	}
	var turnDec *columnar.ResultDecoder[columnar.RewardRow]
	var turnRow columnar.RewardRow
	if cfg.TurnRewards {
		for _, dir := range dirs {
			if !scoresTurns(dir) {
				return nil, fmt.Errorf("--turn-rewards: the run in %s does not score turns (none of its verifiers has turn checks or credits checks to turns)", dir)
			}
		}
		var err error
		if turnDec, err = columnar.NewRewardDecoder([]string{columnar.ColumnTurnRewards}, nil, nil); err != nil {
			return nil, err
		}
	}
	exclude := cfg.ExcludeAllFlagged || len(cfg.ExcludeFlagged) > 0
	if exclude && !anyFlags {
		return nil, errors.New("--exclude-flagged: no result directory has flags (its run had no verifier with flags)")
	}
	var excluded int64
	var doc jsonview.Doc
	var raised []string
	allFlags := map[string]bool{}
	for di, dir := range dirs {
		dcols := cols
		if withFlags[di] {
			dcols = append(slices.Clip(cols), columnar.ColumnFlags, columnar.ColumnOutputHash)
		}
		turnAt := len(dcols)
		if cfg.TurnRewards {
			// Read only where the run wrote it: every directory scores
			// turns (checked above).
			dcols = append(slices.Clip(dcols), columnar.ColumnTurnRewards)
		}
		err := scanTable(dir, "rewards", dcols, func(v []value) error {
			raised = raised[:0]
			if withFlags[di] {
				var err error
				if raised, err = flagList(&doc, in, v[len(cols)], raised); err != nil {
					return err
				}
				if exclude && slices.ContainsFunc(raised, func(f string) bool {
					return cfg.ExcludeAllFlagged || slices.Contains(cfg.ExcludeFlagged, f)
				}) {
					excluded++
					return nil
				}
			}
			keyBuf = keyBuf[:0]
			for i := range by {
				if !v[3+i].Null() {
					found[i] = true
				}
				keyBuf = append(keyBuf, v[3+i].Data...)
				keyBuf = append(keyBuf, 0)
			}
			g := groups[string(keyBuf)]
			if g == nil {
				g = &groupAgg{tasks: map[string]*taskAgg{}}
				for i := range by {
					g.key = append(g.key, string(v[3+i].Data))
				}
				groups[string(keyBuf)] = g
			}
			if cfg.RewardColumn != "" {
				v[1], v[2] = recordedRow(v[1])
				recordedFound = recordedFound || string(v[1].Data) != verifiers.StatusError
			}
			task := in.Get(v[0].Data)
			ta := g.tasks[task]
			if ta == nil {
				ta = &taskAgg{}
				g.tasks[task] = ta
				g.order = append(g.order, task)
			}
			ta.rows++
			if !g.e.Add(string(v[1].Data)) {
				return fmt.Errorf("unknown status %q", v[1].Data)
			}
			if withFlags[di] {
				g.sameOutput(v[len(cols)+1])
			}
			if turnDec != nil {
				if err := turnDec.Decode([]columnar.Cell{{Kind: v[turnAt].Kind, Data: v[turnAt].Data}}, &turnRow); err != nil {
					return err
				}
				for _, r := range turnRow.TurnRewards {
					if !math.IsNaN(r) {
						g.turnSum += r
						g.turnN++
					}
				}
			}
			if len(raised) > 0 {
				g.flagged++
				if cfg.FlagCounts {
					if g.flags == nil {
						g.flags = map[string]int64{}
					}
					for _, f := range raised {
						allFlags[f] = true
						g.flags[f]++
					}
				}
			}
			switch string(v[1].Data) {
			case verifiers.StatusPassed:
				ta.passed++
				ta.graded++
			case verifiers.StatusFailed:
				ta.graded++
			}
			r, ok, err := parseReward(v[2])
			if err != nil {
				return err
			}
			if ok {
				ta.rewardSum += r
				ta.rewardN++
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	// Without --by, rows without a model are one group: a single
	// model's run needs no grouping. (With every model null, the rows
	// already fell into one group.)
	oneGroup := byDefault && !found[0] && len(groups) > 0
	for i, b := range by {
		if !found[i] && len(groups) > 0 && !oneGroup {
			return nil, fmt.Errorf("--by %s: no rollout has a value in column %s (%s)", b, column(b), AddColumnHint)
		}
	}
	if cfg.RewardColumn != "" && !recordedFound && len(groups) > 0 {
		return nil, fmt.Errorf("--reward-column %s: no rollout has a number or boolean in column %s (kept columns: see --keep of gavel grade)", cfg.RewardColumn, cfg.RewardColumn)
	}
	lb := &Leaderboard{Dirs: dirs, By: by, K: ks, Seed: cfg.Seed, Resamples: cfg.Resamples, RewardColumn: cfg.RewardColumn, HasFlags: anyFlags,
		TurnRewards: cfg.TurnRewards}
	if exclude {
		lb.ExcludedFlagged = &excluded
		lb.ExcludeFlags = cfg.ExcludeFlagged
	}
	if cfg.FlagCounts && anyFlags {
		lb.Flags = slices.Sorted(maps.Keys(allFlags))
		if lb.Flags == nil {
			lb.Flags = []string{}
		}
	}
	for _, g := range groups {
		e := g.e
		e.agg = g
		e.Group = g.key
		e.Tasks = len(g.tasks)
		e.turnRewards = cfg.TurnRewards
		if g.turnN > 0 {
			m := g.turnSum / float64(g.turnN)
			e.MeanTurnReward = &m
		}
		if anyFlags {
			n := g.flagged
			share := 0.0
			if e.Rollouts > 0 {
				share = float64(n) / float64(e.Rollouts)
			}
			e.Flagged, e.FlaggedShare = &n, &share
			if cfg.FlagCounts {
				e.FlagCounts = map[string]int64{}
				for _, f := range lb.Flags {
					e.FlagCounts[f] = g.flags[f]
				}
			}
		}
		if rate, ok := e.Rate(); ok {
			e.PassRate = &rate
			iv, _ := stats.Wilson(e.Passed, e.Passed+e.Failed, stats.Z95)
			e.PassRateCI = &iv
		}
		slices.Sort(g.order) // cluster order must not depend on row order
		clusters := make([]stats.Cluster, 0, len(g.order))
		var sum float64
		var n int64
		for _, t := range g.order {
			ta := g.tasks[t]
			sum += ta.rewardSum
			n += ta.rewardN
			if ta.rewardN > 0 {
				clusters = append(clusters, stats.Cluster{Sum: ta.rewardSum, N: ta.rewardN})
			}
		}
		if n > 0 {
			mean := sum / float64(n)
			e.MeanReward = &mean
			if len(clusters) >= 2 {
				if iv, ok := stats.BootstrapMean(clusters, stats.BootstrapConfig{Resamples: cfg.Resamples, Seed: cfg.Seed}); ok {
					e.MeanRewardCI = &iv
				}
			}
		}
		for _, k := range ks {
			st := KStats{K: k}
			var at, hat float64
			for _, t := range g.order {
				ta := g.tasks[t]
				a, ok := stats.PassAtK(ta.graded, ta.passed, int64(k))
				if !ok {
					continue
				}
				h, _ := stats.PassHatK(ta.graded, ta.passed, int64(k))
				at += a
				hat += h
				st.Tasks++
			}
			if st.Tasks > 0 {
				at /= float64(st.Tasks)
				hat /= float64(st.Tasks)
				st.PassAtK, st.PassHatK = &at, &hat
			}
			e.AtK = append(e.AtK, st)
		}
		lb.Entries = append(lb.Entries, e)
	}
	slices.SortFunc(lb.Entries, func(a, b Entry) int {
		ra, rb := -1.0, -1.0
		if a.PassRate != nil {
			ra = *a.PassRate
		}
		if b.PassRate != nil {
			rb = *b.PassRate
		}
		if c := cmp.Compare(rb, ra); c != 0 {
			return c
		}
		return slices.Compare(a.Group, b.Group)
	})
	for i := range lb.Entries {
		lb.Entries[i].Rank = i + 1
	}
	if lb.Entries == nil {
		lb.Entries = []Entry{}
	}
	ordered := make([]*groupAgg, len(lb.Entries))
	for i := range lb.Entries {
		ordered[i] = lb.Entries[i].agg
	}
	var notes []string
	if cfg.Expect != nil {
		if cfg.Trials < 1 {
			return nil, fmt.Errorf("--trials %d: want 1 or more", cfg.Trials)
		}
		if err := cover(lb, ordered, cfg.Expect, cfg.Trials, cfg.AllowIncomplete); err != nil {
			return nil, err
		}
	} else {
		notes = unequalTrials(lb, ordered)
	}
	notes = append(notes, sameOutputs(lb, ordered)...)
	lb.Conventions = conventions(lb)
	lb.Conventions = append(lb.Conventions, notes...)
	if oneGroup {
		lb.OneGroup = true
		lb.Conventions = append([]string{OneGroupNote}, lb.Conventions...)
	}
	return lb, nil
}

// AddColumnHint says how results get a column to group by.
const AddColumnHint = "name the model at grade time with gavel grade --set model=NAME, or keep a column of the input with --keep COLUMN"

// OneGroupNote is the convention of a leaderboard that grouped all rows
// as one because no rollout has a model.
const OneGroupNote = "no rollout has a model column, so all rows are one group, shown as model (none); " + AddColumnHint + ", or group by another column with --by."

func conventions(lb *Leaderboard) []string {
	ks := make([]string, len(lb.K))
	for i, k := range lb.K {
		ks[i] = fmt.Sprint(k)
	}
	var recorded []string
	if lb.RewardColumn != "" {
		recorded = []string{fmt.Sprintf("outcomes are read from column %s, not gavel's verdict: a row passed when its value is numerically 1 or boolean true (1, 1.0, true), failed for any other number or false, and is counted as error without one; the reward is the value (true 1, false 0).", lb.RewardColumn)}
	}
	if lb.TurnRewards {
		recorded = append(recorded, "mean turn reward is the mean over the scored turns (the non-null elements of turn_rewards) of the group's rollouts, each scored turn weighing the same; a rollout whose turn rewards are null (its verifier scores no turns, or its status is error) adds none; - when the group has no scored turn.")
	}
	if lb.HasFlags {
		recorded = append(recorded, "flagged counts the rollouts that raised at least one flag (a mark of the verifier, such as reward hacking; it never moves a reward), flagged share their share of the group's rollouts.")
	}
	if cv := lb.Coverage; cv != nil {
		state := "every group holds every cell once"
		if !cv.Complete {
			state = "INCOMPLETE: some cells are missing or duplicated (" + strings.Join(cv.Gaps, "; ") + "), and every rate is marked incomplete"
		}
		recorded = append(recorded, fmt.Sprintf("coverage: %d tasks × %d trials expected per group; %s.", cv.Tasks, cv.Trials, state))
	}
	if lb.ExcludedFlagged != nil {
		which := "any flag"
		if len(lb.ExcludeFlags) > 0 {
			which = "a flag of " + strings.Join(lb.ExcludeFlags, ", ")
		}
		recorded = append(recorded, fmt.Sprintf("%d rollouts that raised %s are left out (--exclude-flagged): every count, rate, interval and pass@k is computed without them.", *lb.ExcludedFlagged, which))
	}
	return append(recorded, []string{
		"rollouts counts every row; passed, failed, pending and error are shown apart. Pending and error rows are never in a denominator.",
		"pass rate = passed / (passed + failed), with a 95% Wilson score interval (Wilson 1927).",
		fmt.Sprintf("mean reward is over rows with a reward (passed and failed); its 95%% interval is a percentile bootstrap over tasks (clustered: whole tasks are resampled with replacement), %d resamples, PCG seed %d; no interval when a group holds fewer than two tasks.", lb.Resamples, lb.Seed),
		fmt.Sprintf("pass@k (k = %s): the unbiased estimator 1 - C(n-c,k)/C(n,k) of Chen et al. 2021 per task, n the task's passed or failed samples in the group and c those passed, averaged over tasks with n >= k.", strings.Join(ks, ", ")),
		"pass^k: the probability that all k of k samples pass, estimated without bias as C(c,k)/C(n,k) per task (as in tau-bench), averaged over the same tasks.",
	}...)
}

// Recorded returns the outcome of a recorded reward, a cell's text in
// whatever form a column keeps it: passed when it is numerically 1 or
// boolean true (1, 1.0, true), failed for any other number or false; ok
// is false for anything else (null, text, JSON). reward is the value,
// true 1 and false 0.
func Recorded(text []byte) (passed bool, reward float64, ok bool) {
	s := strings.TrimSpace(string(text))
	switch strings.ToLower(s) {
	case "true":
		return true, 1, true
	case "false":
		return false, 0, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return false, 0, false
	}
	return f == 1, f, true
}

// recordedRow returns the status and reward of a row read from a recorded
// reward's cell.
func recordedRow(v value) (status, reward value) {
	if v.Null() {
		return value{Kind: columnar.CellString, Data: []byte(verifiers.StatusError)}, value{}
	}
	passed, r, ok := Recorded(v.Data)
	switch {
	case !ok:
		return value{Kind: columnar.CellString, Data: []byte(verifiers.StatusError)}, value{}
	case passed:
		status = value{Kind: columnar.CellString, Data: []byte(verifiers.StatusPassed)}
	default:
		status = value{Kind: columnar.CellString, Data: []byte(verifiers.StatusFailed)}
	}
	return status, value{Kind: columnar.CellNumber, Data: strconv.AppendFloat(nil, r, 'g', -1, 64)}
}

// flagList appends to dst the flag ids of a rewards row's flags cell, a
// list of strings, interned by strs (a row allocates nothing once its
// flags have been seen).
func flagList(doc *jsonview.Doc, strs columnar.Interner, v value, dst []string) ([]string, error) {
	if v.Null() {
		return dst, errors.New("flags is null")
	}
	if string(v.Data) == "[]" {
		return dst, nil
	}
	arr, err := doc.Parse(v.Data)
	if err != nil || arr.Kind() != jsonview.Array {
		return dst, fmt.Errorf("flags %q: not a list of strings", v.Data)
	}
	for e := arr.First(); e.Exists(); e = e.Next() {
		s, ok := e.Str()
		if !ok {
			return dst, fmt.Errorf("flags %q: not a list of strings", v.Data)
		}
		dst = append(dst, strs.Get(s))
	}
	return dst, nil
}
