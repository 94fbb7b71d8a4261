package report

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
)

// Coverage is how a leaderboard's groups cover the cells they are expected
// to fill: each task of the expected set, Trials times (--expect,
// --trials). A leaderboard that is not complete fails unless incomplete
// ones are allowed; then it says so beside every rate.
type Coverage struct {
	// Tasks is the number of tasks expected, Trials the rollouts expected
	// of each.
	Tasks  int `json:"tasks"`
	Trials int `json:"trials"`
	// Complete is false when a group misses a cell or holds more than
	// Trials rollouts of a task.
	Complete bool `json:"complete"`
	// Gaps names the first ten missing or duplicated cells.
	Gaps []string `json:"gaps"`
}

// GroupCoverage counts one group's cells: Expected is tasks × trials;
// Graded counts those filled by a passed or failed rollout, Errored those
// filled by a rollout in error or pending; Missing the cells without a
// rollout; Duplicated the rollouts beyond Trials of a task. Unexpected
// counts the group's rollouts of tasks outside the expected set.
type GroupCoverage struct {
	Expected   int64 `json:"expected"`
	Graded     int64 `json:"graded"`
	Errored    int64 `json:"errored"`
	Missing    int64 `json:"missing"`
	Duplicated int64 `json:"duplicated"`
	Unexpected int64 `json:"unexpected"`
}

// maxGaps bounds the cells a coverage names.
const maxGaps = 10

// ReadExpected reads the task ids a leaderboard expects: a tasks table in
// any input format (its task_id column), or a text file of task ids, one a
// line (blank lines and lines starting with # skipped). It fails on a file
// that names no task and on an id given twice in a text file.
func ReadExpected(path string) ([]string, error) {
	if _, ok := columnar.Resolve(columnar.Source{Name: path}); ok {
		ids, invalid, err := inputs.TaskIDs([]string{path}, "", columnar.FieldNames{}, nil)
		if err != nil {
			return nil, fmt.Errorf("--expect %s: %w", path, err)
		}
		if invalid > 0 {
			return nil, fmt.Errorf("--expect %s: %d rows without a task id", path, invalid)
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("--expect %s: names no task", path)
		}
		return ids, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--expect: %w", err)
	}
	defer f.Close()
	var ids []string
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		id := strings.TrimSpace(sc.Text())
		if id == "" || strings.HasPrefix(id, "#") {
			continue
		}
		if prev, dup := seen[id]; dup {
			return nil, fmt.Errorf("--expect %s:%d: task %q again (first at line %d)", path, line, id, prev)
		}
		seen[id] = line
		ids = append(ids, id)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--expect %s: %w", path, err)
	}
	if len(ids) == 0 {
		return nil, errors.New("--expect " + path + ": names no task")
	}
	slices.Sort(ids)
	return ids, nil
}

// IncompleteError is the error of a leaderboard whose groups miss cells
// or hold duplicated ones, without AllowIncomplete.
type IncompleteError struct {
	Missing, Duplicated int64
	Gaps                []string
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("coverage: %d cells missing, %d rollouts beyond the trials expected (--allow-incomplete to rank anyway): %s",
		e.Missing, e.Duplicated, strings.Join(e.Gaps, "; "))
}

// cover fills the coverage of each entry of lb from its group's tasks, and
// lb.Coverage; it returns an IncompleteError when cells are missing or
// duplicated and allow is false.
func cover(lb *Leaderboard, groups []*groupAgg, expect []string, trials int, allow bool) error {
	cv := &Coverage{Tasks: len(expect), Trials: trials, Complete: true, Gaps: []string{}}
	var missing, dup int64
	for i, g := range groups {
		gc := &GroupCoverage{Expected: int64(len(expect)) * int64(trials)}
		for _, t := range expect {
			ta := g.tasks[t]
			var rows, graded int64
			if ta != nil {
				rows, graded = ta.rows, ta.graded
			}
			filled := min(rows, int64(trials))
			gc.Graded += min(graded, filled)
			gc.Errored += filled - min(graded, filled)
			gap := ""
			switch {
			case rows < int64(trials):
				gc.Missing += int64(trials) - rows
				gap = fmt.Sprintf("%s task %s: %d of %d rollouts", groupName(lb, g.key), t, rows, trials)
			case rows > int64(trials):
				gc.Duplicated += rows - int64(trials)
				gap = fmt.Sprintf("%s task %s: %d rollouts for %d trials", groupName(lb, g.key), t, rows, trials)
			}
			if gap != "" && len(cv.Gaps) < maxGaps {
				cv.Gaps = append(cv.Gaps, gap)
			}
		}
		for t, ta := range g.tasks {
			if _, ok := slices.BinarySearch(expect, t); !ok {
				gc.Unexpected += ta.rows
			}
		}
		missing += gc.Missing
		dup += gc.Duplicated
		lb.Entries[i].Coverage = gc
	}
	cv.Complete = missing == 0 && dup == 0
	lb.Coverage = cv
	if !cv.Complete && !allow {
		return &IncompleteError{Missing: missing, Duplicated: dup, Gaps: cv.Gaps}
	}
	return nil
}

// groupName names a group in a gap: its By columns and values.
func groupName(lb *Leaderboard, key []string) string {
	parts := make([]string, len(key))
	for i, v := range key {
		if v == "" {
			v = "(none)"
		}
		parts[i] = lb.By[i] + " " + v
	}
	return strings.Join(parts, ", ")
}

// unequalTrials returns a note for each group whose tasks have unequal
// numbers of rollouts, in the entries' order (a leaderboard without
// --expect).
func unequalTrials(lb *Leaderboard, groups []*groupAgg) []string {
	var notes []string
	for _, g := range groups {
		lo, hi := int64(-1), int64(0)
		for _, ta := range g.tasks {
			if lo < 0 || ta.rows < lo {
				lo = ta.rows
			}
			hi = max(hi, ta.rows)
		}
		if lo >= 0 && lo != hi {
			notes = append(notes, fmt.Sprintf("%s: its %d tasks have unequal numbers of rollouts (%d to %d); with --expect FILE --trials K the leaderboard checks every task × trial cell.", groupName(lb, g.key), len(g.tasks), lo, hi))
		}
	}
	return notes
}

// sameOutput counts a rollout's output hash h (null: its input could not
// be read) in the group's.
func (g *groupAgg) sameOutput(h value) {
	switch {
	case h.Null() || g.outMixed:
	case g.outRows == 0:
		g.outHash, g.outRows = string(h.Data), 1
	case string(h.Data) == g.outHash:
		g.outRows++
	default:
		g.outMixed = true
	}
}

// sameOutputs returns a note for each group of two tasks or more whose
// rollouts all have the same output (read from runs with flags): one
// answer given whatever the task, a pattern across rollouts that no flag
// of one rollout can see.
func sameOutputs(lb *Leaderboard, groups []*groupAgg) []string {
	var notes []string
	for _, g := range groups {
		if !g.outMixed && g.outRows > 1 && len(g.tasks) > 1 {
			notes = append(notes, fmt.Sprintf("%s: all %d rollouts with an output have the same output, over %d tasks: one answer whatever the task.", groupName(lb, g.key), g.outRows, len(g.tasks)))
		}
	}
	return notes
}
