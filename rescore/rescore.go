// Package rescore computes the rewards of a graded run again from its
// check rows, with other reward formulas, without running any verifier
// (gavel rescore): it reads the run's parts through the column
// definitions of package columnar and writes a result directory of its
// own (package results).
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package rescore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
)

// Config configures Rescore.
type Config struct {
	// Dir is a graded run's output directory.
	Dir string
	// Out is the directory the rescored run is written to; not Dir.
	Out string
	// Rewards maps verifier ids of Dir to the reward formulas that replace
	// theirs; the other verifiers keep the formulas Dir was graded with.
	Rewards map[string]verifiers.Formula
	// Workers is the number of parts rescored at once (0: GOMAXPROCS).
	Workers int
	// Changes is how many of the rollouts whose reward changed the result
	// lists, the first in input order (0: none; all are counted).
	Changes int
}

// RewardChange is a rollout whose reward a rescore changed.
type RewardChange struct {
	RolloutID  string
	VerifierID string
	// Old and New are the rewards before and after, nil when null.
	Old, New *float64
	// OldStatus and NewStatus differ only when the new formula failed
	// (the rollout is then an error).
	OldStatus, NewStatus string
}

// Result is the outcome of a rescore: the pipeline.Result a grade run
// gives, and the rollouts whose reward changed.
type Result struct {
	pipeline.Result
	// RewardsChanged counts the rollouts whose reward changed (a null
	// reward differs from any number).
	RewardsChanged int64
	// RewardChanges lists the first Config.Changes of them, in
	// input order.
	RewardChanges []RewardChange
}

// partChanges are the reward changes of one part.
type partChanges struct {
	n    int64
	list []RewardChange
}

// Run computes the rewards of a graded run again from its check rows,
// with other reward formulas, without running any verifier: the checks
// parts (and the rollout id hashes) are copied byte for byte, the rewards
// parts are written again with the verdict columns recomputed from the
// check statuses (docs/verifiers.md, "Reward formulas and gavel rescore")
// and each verifier's formula, and the manifest, part statistics and
// summary are those a grade run with these formulas would write. Rows
// without check rows (input errors, rollouts no verifier binds, verifiers
// that failed) are copied as they are. The manifest records the formulas in
// its config; a verifier whose formula changed gets a new fingerprint,
// derived from its old one and the formula.
//
// The configuration (unknown verifier ids, weights naming checks the
// verifier's rows do not have) is checked before anything is written; the
// error is then a ConfigError. Each part is read streaming, its rewards and
// checks side by side: a rollout's check rows follow the previous
// rollout's in the checks part (the writer appends them in input order,
// ChecksTotal rows per rollout), which Rescore verifies row by row.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	start := time.Now()
	m, err := results.ReadManifest(filepath.Join(cfg.Dir, results.ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, &inputs.ConfigError{Field: "Dir", Msg: cfg.Dir + " holds no manifest.json: not the output directory of a finished run"}
	}
	if err != nil {
		return nil, err
	}
	if m.Config.Format == "" {
		return nil, &inputs.ConfigError{Field: "Dir", Msg: cfg.Dir + ": " + results.ErrNoConfig.Error()}
	}
	if results.SameDir(cfg.Dir, cfg.Out) {
		return nil, &inputs.ConfigError{Field: "Out", Msg: "--out must differ from the directory rescored: its checks parts are read while the new ones are written"}
	}
	formulas, err := rescoreFormulas(cfg, m)
	if err != nil {
		return nil, err
	}
	var old results.Summary
	if data, err := os.ReadFile(filepath.Join(cfg.Dir, results.SummaryFile)); err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	} else if err := json.Unmarshal(data, &old); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(cfg.Dir, results.SummaryFile), err)
	}

	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	if err := results.RemoveIfExists(filepath.Join(cfg.Out, results.SuccessFile)); err != nil {
		return nil, err
	}
	if err := results.ClearOut(cfg.Out); err != nil {
		return nil, err
	}

	// The new manifest: Dir's, with the formulas and the fingerprints of
	// the verifiers whose formula changed.
	nm := *m
	nm.Verifiers = slices.Clone(m.Verifiers)
	for i := range nm.Verifiers {
		v := &nm.Verifiers[i]
		if f, ok := cfg.Rewards[v.ID]; ok && !f.Equal(m.Config.Rewards[v.ID]) {
			sum := sha256.Sum256([]byte(v.Fingerprint + "\x00reward " + f.String()))
			v.Fingerprint = "sha256:" + hex.EncodeToString(sum[:])
		}
	}
	nm.Config.Rewards = nil
	for id, f := range formulas {
		if !f.IsFraction() {
			if nm.Config.Rewards == nil {
				nm.Config.Rewards = map[string]verifiers.Formula{}
			}
			nm.Config.Rewards[id] = f
		}
	}

	// The parts, a few at once.
	var units []int
	complete := true
	for i, in := range m.Inputs {
		if in.Complete {
			units = append(units, i)
		} else {
			complete = false
		}
	}
	stats := make([]*results.PartStats, len(m.Inputs))
	changes := make([]partChanges, len(m.Inputs))
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errs := make([]error, len(m.Inputs))
	var wg sync.WaitGroup
	for range min(workers, max(len(units), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				stats[i], errs[i] = rescorePart(ctx, cfg, m, i, formulas, &changes[i])
				if errs[i] != nil {
					cancel()
				}
			}
		}()
	}
feed:
	for _, i := range units {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	var parts []*results.PartStats
	for _, ps := range stats {
		if ps != nil {
			parts = append(parts, ps)
		}
	}
	s := results.MergeStats(parts, old.FilesSkipped)
	s.Judge = old.Judge
	s.FailedInputs = append(s.FailedInputs, old.FailedInputs...)
	if complete && len(old.FailedInputs) == 0 {
		if s.DuplicateIDs, s.DuplicateIDList, err = results.FindDuplicates(cfg.Out, m.Config.Format, parts, nil); err != nil {
			return nil, err
		}
	}
	elapsed := time.Since(start)
	s.ElapsedSeconds = elapsed.Seconds()
	if elapsed > 0 {
		s.RowsPerSecond = float64(s.Rollouts) / elapsed.Seconds()
	}
	if err := results.WriteJSON(filepath.Join(cfg.Out, results.ManifestFile), &nm, true); err != nil {
		return nil, err
	}
	if err := results.WriteJSON(filepath.Join(cfg.Out, results.SummaryFile), s, true); err != nil {
		return nil, err
	}
	ok := complete && len(old.FailedInputs) == 0
	if ok {
		if err := results.WriteSuccess(cfg.Out); err != nil {
			return nil, err
		}
	}
	res := &Result{Result: pipeline.Result{Summary: s, ErrorRows: s.Error, Complete: ok}}
	for _, c := range changes {
		res.RewardsChanged += c.n
		res.RewardChanges = append(res.RewardChanges, c.list[:min(len(c.list), cfg.Changes-len(res.RewardChanges))]...)
	}
	return res, nil
}

// rescoreFormulas checks cfg.Rewards against the run m describes and
// returns the formula of each of its verifiers.
func rescoreFormulas(cfg Config, m *results.Manifest) (map[string]verifiers.Formula, error) {
	formulas := map[string]verifiers.Formula{}
	var ids []string
	for _, v := range m.Verifiers {
		formulas[v.ID] = m.Config.Rewards[v.ID]
		ids = append(ids, v.ID)
	}
	weighted := map[string]map[string]bool{} // verifier -> the check ids of its rows
	for _, id := range slices.Sorted(maps.Keys(cfg.Rewards)) {
		if _, ok := formulas[id]; !ok {
			return nil, &inputs.ConfigError{Field: "Rewards", Msg: fmt.Sprintf("unknown verifier %q: %s was graded with %s", id, cfg.Dir, strings.Join(ids, ", "))}
		}
		f := cfg.Rewards[id]
		formulas[id] = f
		if len(f.WeightedChecks()) > 0 {
			weighted[id] = map[string]bool{}
		}
	}
	if len(weighted) == 0 {
		return formulas, nil
	}
	// The check ids of the weighted verifiers, from their check rows.
	for _, in := range m.Inputs {
		if !in.Complete {
			continue
		}
		if err := eachCheckID(filepath.Join(cfg.Dir, "checks", in.Part), weighted); err != nil {
			return nil, err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(weighted)) {
		seen := weighted[id]
		for _, c := range cfg.Rewards[id].WeightedChecks() {
			if !seen[c] {
				known := slices.Sorted(maps.Keys(seen))
				if len(known) == 0 {
					known = []string{"none"}
				}
				return nil, &inputs.ConfigError{Field: "Rewards", Msg: fmt.Sprintf("the reward of %s weighs unknown check %q (its checks in %s: %s)", id, c, cfg.Dir, strings.Join(known, ", "))}
			}
		}
	}
	return formulas, nil
}

// eachCheckID adds the check ids of the rows of the checks part at path to
// ids, for the verifiers ids has.
func eachCheckID(path string, ids map[string]map[string]bool) error {
	rr, err := columnar.OpenResult(path, []string{"verifier_id", "check_id"})
	if err != nil {
		return err
	}
	defer rr.Close()
	for {
		c, err := rr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if set := ids[string(c[0].Data)]; set != nil && !set[string(c[1].Data)] {
			set[string(c[1].Data)] = true
		}
	}
}

// rescoreCheckCols are the checks columns a rescore reads: what every
// formula needs, then check_id (weighted and expr), then what only
// expressions read. Its rewards are read whole (columnar.RewardColumns and
// the kept columns), as --reuse reads them.
var rescoreCheckCols = []string{"check_index", "required", "status", "check_id", "label", "detail", "score"}

// checkCols returns the columns of the checks parts that the formulas need
// (a prefix of rescoreCheckCols).
func checkCols(formulas map[string]verifiers.Formula) []string {
	n := 3
	for _, f := range formulas {
		switch f.Kind() {
		case verifiers.FormulaWeighted:
			n = max(n, 4)
		case verifiers.FormulaExpr:
			n = 7
		}
	}
	return rescoreCheckCols[:n]
}

// rescoreBatch is the number of reward rows written at once.
const rescoreBatch = 1024

// rescorePart rescores the part of unit i of the run m describes and
// returns its statistics; the rollouts whose reward changed go to changes.
func rescorePart(ctx context.Context, cfg Config, m *results.Manifest, i int, formulas map[string]verifiers.Formula, changes *partChanges) (*results.PartStats, error) {
	in := &m.Inputs[i]
	format := m.Config.Format
	// The judgements part (when the run wrote one), then the checks part:
	// a rewards part in place implies the others (columnar.Part).
	if err := results.CopyFile(filepath.Join(cfg.Dir, results.JudgementsDir, in.Part), filepath.Join(cfg.Out, results.JudgementsDir, in.Part)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := results.CopyFile(filepath.Join(cfg.Dir, "checks", in.Part), filepath.Join(cfg.Out, "checks", in.Part)); err != nil {
		return nil, err
	}
	if err := results.CopyFile(results.IDsPath(cfg.Dir, i), results.IDsPath(cfg.Out, i)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}

	// A part none of whose verifiers' formulas changed is copied whole:
	// rescoring it would write the same bytes.
	if old, err := results.ReadStats(cfg.Dir, i); err == nil && old.Rows == derefRows(in.Rows) &&
		!slices.ContainsFunc(slices.Sorted(maps.Keys(old.Verifiers)), func(id string) bool { return !formulas[id].Equal(m.Config.Rewards[id]) }) {
		if err := results.CopyFile(results.StatsPath(cfg.Dir, i), results.StatsPath(cfg.Out, i)); err != nil {
			return nil, err
		}
		if err := results.CopyFile(filepath.Join(cfg.Dir, "rewards", in.Part), filepath.Join(cfg.Out, "rewards", in.Part)); err != nil {
			os.Remove(results.StatsPath(cfg.Out, i))
			return nil, err
		}
		return old, nil
	}

	keep := m.Config.Keep
	rewardCols := results.RolloutRewardColumns(m.Config.Flags, m.Config.Turns, keep)
	rr, err := columnar.OpenResult(filepath.Join(cfg.Dir, "rewards", in.Part), rewardCols)
	if err != nil {
		return nil, err
	}
	defer rr.Close()
	checkCols := checkCols(formulas)
	if m.Config.Flags {
		// Flag rows follow each rollout's checks: read their kind to
		// step over them.
		checkCols = append(slices.Clip(checkCols), columnar.ColumnKind)
	}
	cr, err := columnar.OpenResult(filepath.Join(cfg.Dir, "checks", in.Part), checkCols)
	if err != nil {
		return nil, err
	}
	defer cr.Close()
	strs := columnar.Interner{}
	rdec, err := columnar.NewRewardDecoder(rewardCols, keep, strs)
	if err != nil {
		return nil, err
	}
	cdec, err := columnar.NewCheckDecoder(checkCols, strs)
	if err != nil {
		return nil, err
	}
	part, err := columnar.CreatePart(cfg.Out, i, columnar.PartOptions{Format: format, Keep: keep, Flags: m.Config.Flags, Turns: m.Config.Turns, RewardsOnly: true})
	if err != nil {
		return nil, err
	}
	defer part.Abort()

	sum := results.NewSummary(nil)
	rows := make([]columnar.RewardRow, 0, rescoreBatch)
	var crs []columnar.CheckRow
	var buf []verifiers.Check
	var n int64
	flush := func() error {
		if err := part.WriteRewards(rows); err != nil {
			return err
		}
		clear(rows)
		rows = rows[:0]
		return ctx.Err()
	}
	for {
		cells, err := rr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		rw, err := results.DecodeReward(rdec, cells)
		if err != nil {
			return nil, fmt.Errorf("read %s row %d: %w", filepath.Join(cfg.Dir, "rewards", in.Part), n, err)
		}
		var checkErr bool
		var flagRows int
		crs, flagRows, checkErr, err = readChecks(cr, cdec, &rw, crs[:0])
		if err != nil {
			return nil, fmt.Errorf("read %s, the checks of rollout %q (row %d of its rewards): %w", filepath.Join(cfg.Dir, "checks", in.Part), rw.RolloutID, n, err)
		}
		// A check in error makes the rollout an error whatever the
		// formula: its row stays as it is.
		if len(crs) > 0 && !checkErr {
			old, oldValid, oldStatus := rw.Reward, rw.RewardValid, rw.Status
			buf = results.Score(&rw, crs, formulas[rw.VerifierID.S], buf)
			if rw.Status == verifiers.StatusError {
				// A formula that failed: an error has no turn rewards
				// either (the turn formulas are the run's, unchanged).
				rw.TurnRewards, rw.TurnRewardsValid = nil, false
			}
			if oldValid != rw.RewardValid || oldValid && old != rw.Reward {
				changes.n++
				if len(changes.list) < cfg.Changes {
					c := RewardChange{RolloutID: rw.RolloutID, VerifierID: rw.VerifierID.S, OldStatus: oldStatus, NewStatus: rw.Status}
					if oldValid {
						c.Old = &old
					}
					if rw.RewardValid {
						r := rw.Reward
						c.New = &r
					}
					changes.list = append(changes.list, c)
				}
			}
		}
		sum.Add(&rw)
		sum.Checks += int64(len(crs) + flagRows)
		rows = append(rows, rw)
		n++
		if len(rows) == rescoreBatch {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	flagRows, err := skipFlagRows(cr, cdec)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(cfg.Dir, "checks", in.Part), err)
	}
	sum.Checks += int64(flagRows)
	if err := flush(); err != nil {
		return nil, err
	}
	if in.Rows != nil && *in.Rows != n {
		return nil, fmt.Errorf("read %s: %d rows, the manifest says %d", filepath.Join(cfg.Dir, "rewards", in.Part), n, *in.Rows)
	}
	ps := results.NewPartStats(i, in.Path, n, sum)
	// Rescoring keeps every row's errors and pending checks, and so its
	// retry rows (retryRow); statistics that predate the count keep none.
	// It keeps every check row, and so the unextracted counts.
	if old, err := results.ReadStats(cfg.Dir, i); err == nil {
		ps.RetryRows = old.RetryRows
		ps.Unextracted = old.Unextracted
		ps.Flags = old.Flags
	}
	if err := results.WriteStats(cfg.Out, ps); err != nil {
		return nil, err
	}
	if err := part.Close(); err != nil {
		os.Remove(results.StatsPath(cfg.Out, i))
		return nil, err
	}
	return ps, nil
}

// derefRows returns *rows, or -1 when rows is nil.
func derefRows(rows *int64) int64 {
	if rows == nil {
		return -1
	}
	return *rows
}

// readChecks appends the check rows of rw, ChecksTotal of them, read from
// cr and decoded by dec, to crs, and reports whether one of them is in
// error. The rows must be numbered from 0: a rollout's check rows follow
// the previous rollout's, which the writer guarantees (it appends them in
// input order, after its reward's counts are known) and which the
// numbering and the total count of rows (checked by the caller) verify.
// In a run with flags, the previous rollout's flag rows come first: they
// are stepped over and counted in flagRows.
func readChecks(cr *columnar.ResultReader, dec *columnar.ResultDecoder[columnar.CheckRow], rw *columnar.RewardRow, crs []columnar.CheckRow) (_ []columnar.CheckRow, flagRows int, checkErr bool, _ error) {
	for k := 0; k < int(rw.ChecksTotal); {
		c, err := cr.Next()
		if errors.Is(err, io.EOF) {
			return nil, 0, false, fmt.Errorf("the checks part ends before check %d of %d", k, rw.ChecksTotal)
		}
		if err != nil {
			return nil, 0, false, err
		}
		var row columnar.CheckRow
		if err := dec.Decode(c, &row); err != nil {
			return nil, 0, false, err
		}
		if row.Kind == columnar.KindFlag {
			if k > 0 {
				return nil, 0, false, fmt.Errorf("a flag row (%s) among the checks of rollout %q", row.CheckID, rw.RolloutID)
			}
			flagRows++
			continue
		}
		if int(row.CheckIndex) != k {
			return nil, 0, false, fmt.Errorf("check_index %d where %d was expected: check rows out of order", row.CheckIndex, k)
		}
		checkErr = checkErr || row.Status == verifiers.CheckError
		crs = append(crs, row)
		k++
	}
	return crs, flagRows, checkErr, nil
}

// skipFlagRows reads the flag rows left at the end of a checks part (the
// last rollout's), returning how many; it leaves a row of another kind
// unread only by failing on it.
func skipFlagRows(cr *columnar.ResultReader, dec *columnar.ResultDecoder[columnar.CheckRow]) (int, error) {
	n := 0
	for {
		c, err := cr.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		var row columnar.CheckRow
		if err := dec.Decode(c, &row); err != nil {
			return n, err
		}
		if row.Kind != columnar.KindFlag {
			return n, errors.New("check rows left after the last rollout's")
		}
		n++
	}
}
