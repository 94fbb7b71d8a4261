package pipeline

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/health"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/store"
	"github.com/gavelhq/gavel/join"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
)

// Reuse of an earlier run's results (Config.Reuse). A rollout's check rows
// and verdict are taken from the earlier run, instead of running its
// verifier, when its rollout_id and input_hash equal those of the earlier
// run's row for the same source row and its verifier's fingerprint equals
// the one the earlier manifest records. The earlier rows are read in one
// streaming pass per unit, aligned with the unit's rows (the parts of a
// unit follow its rows in order): a row that does not line up is graded.
// The units the earlier run did not grade from the same input unit (a
// re-sharded archive, renamed or split files) have their rollout ids read
// first and matched with the earlier run's rows by join.Match, the bounded
// join of result directories, whose matches come back in the units' row
// order and are then taken as an aligned part's are.
//
// Reuse must not depend on the path taken: a unit copied whole and a
// unit read row by row give the same parts. Both follow one rule, the
// rows retryRow reports: a row whose result may differ when graded again
// (a verifier that timed out or panicked, a judge call that failed or was
// never made) is graded again; every other row is reused, errors that
// repeat by construction (an input error, a verifier's own error verdict)
// and judged rows included (their verifier's fingerprint covers the
// judge's model, threshold and template, and the judge's cache would give
// the same verdict). A part's statistics count its retry rows
// (PartStats.RetryRows); a unit is copied whole only when its earlier part
// has none, else it takes the row path, which grades exactly those rows
// again.

// reuseSource is the earlier run a run reuses.
type reuseSource struct {
	dir      string
	manifest *results.Manifest
	// fingerprints are the earlier fingerprints of the verifiers whose
	// rows may be reused, by verifier id.
	reusable map[string]bool
	// noWhole: some remote verifier's rows may not be reused, so no part
	// is copied whole.
	noWhole bool
	// parts are the earlier part names by unit key (unitKey).
	parts map[string]string
	// inputs are the earlier complete units whose input was digested,
	// by unit key.
	ins map[string]*results.ManifestInput
	// setup is set, before any unit is read, when the earlier run had the
	// same gavel, verifiers (ids and tasks) and configuration as this one
	// and no tasks table (sameSetup), whatever its fingerprints.
	setup bool
	// noHash is set when the earlier run predates input_hash: nothing is
	// reused.
	noHash bool
	// path is the path forced on every unchanged unit (Config.reusePath).
	path reusePath
	// multi is set when this run writes the judgements table
	// (judging.multi): the earlier rows are read with their judgements,
	// and rows found by join.Match, which does not read them, are graded
	// again.
	multi bool
	// sameHealth is set when the earlier run computed the health flags
	// if and only if this one does: a reused row's health flags are then
	// the earlier ones, and a row taken without decoding it
	// (takeUnchanged) needs it. Otherwise they are computed again from
	// the decoded rollout (grader.take).
	sameHealth bool

	// matches are the earlier rows join.Match found for the units with no
	// earlier part of their own, and matchUnit their key unit by unit
	// index (nil: none).
	matches   *join.Matches
	matchUnit map[int]int

	reused, graded atomic.Int64
	// undecoded counts the reused rollouts taken without decoding their
	// input (grader.takeUnchanged), among reused.
	undecoded atomic.Int64
	copied    atomic.Int64 // units copied whole
}

// reusePath is the path --reuse takes for a unit whose input is
// unchanged; tests force one to compare the two.
type reusePath uint8

const (
	// reuseAuto copies the unit whole when its earlier part has no retry
	// rows (PartStats.RetryRows), and reads it row by row otherwise.
	reuseAuto reusePath = iota
	// reuseWhole copies the unit whole, retry rows or not.
	reuseWhole
	// reuseRows reads the unit row by row.
	reuseRows
)

// unitKey identifies an input unit across runs.
func unitKey(path string, first, groups int) string {
	return path + "\x00" + strconv.Itoa(first) + "\x00" + strconv.Itoa(groups)
}

// openReuse reads the earlier run in dir for the run of cfg and plan.
func openReuse(cfg Config, p *plan) (*reuseSource, error) {
	if store.IsURL(cfg.Reuse) {
		return nil, &inputs.ConfigError{Field: "Reuse", Msg: fmt.Sprintf("%s: --reuse reads a local result directory; reading one from a URL is not built yet", store.Redact(cfg.Reuse))}
	}
	if results.SameDir(cfg.Reuse, cfg.Out) {
		return nil, &inputs.ConfigError{Field: "Reuse", Msg: fmt.Sprintf("%s is the output directory; reuse the results of another run", cfg.Reuse)}
	}
	m, err := results.ReadManifest(filepath.Join(cfg.Reuse, results.ManifestFile))
	if err != nil {
		return nil, &inputs.ConfigError{Field: "Reuse", Msg: fmt.Sprintf("%s: not a result directory (%v)", cfg.Reuse, err)}
	}
	rs := &reuseSource{dir: cfg.Reuse, manifest: m, reusable: map[string]bool{}, parts: map[string]string{},
		ins: map[string]*results.ManifestInput{}, path: cfg.reusePath, multi: p.judging != nil && p.judging.multi,
		sameHealth: m.Config.Health == p.health}
	old := map[string]string{}
	for _, v := range m.Verifiers {
		old[v.ID] = v.Fingerprint
	}
	allowImpure := cfg.Remote != nil && cfg.Remote.AllowImpure
	for _, v := range cfg.Verifiers {
		// A run that scores turns writes every rollout's number of
		// turns, which an earlier run that did not has not: nothing is
		// reused between the two.
		if m.Config.Turns != p.turns {
			rs.noWhole = true
			break
		}
		if old[v.ID] == p.judging.fingerprint(v) && p.remoting.mayReuse(v, allowImpure) && !slices.Contains(m.ImpureVerifiers, v.ID) {
			rs.reusable[v.ID] = true
		}
	}
	for _, v := range cfg.Verifiers {
		if !rs.reusable[v.ID] && v.Remote != nil {
			// Parts holding rows of a remote verifier that may not be
			// reused are not copied whole either.
			rs.noWhole = true
		}
	}
	for i := range m.Inputs {
		in := &m.Inputs[i]
		if !in.Complete {
			continue
		}
		key := unitKey(in.Path, in.FirstRowGroup, in.RowGroups)
		rs.parts[key] = in.Part
		if in.Rows != nil && in.Digest != "" {
			rs.ins[key] = in
		}
	}
	rs.noHash = !rs.hasInputHash()
	return rs, nil
}

// hasInputHash reports whether the earlier run's rewards have input_hash:
// the first row of its first complete part with a verifier has one.
func (rs *reuseSource) hasInputHash() bool {
	for _, in := range rs.manifest.Inputs {
		if !in.Complete {
			continue
		}
		rr, err := columnar.OpenResult(filepath.Join(rs.dir, "rewards", in.Part), []string{"status", columnar.ColumnInputHash})
		if err != nil {
			continue
		}
		for {
			c, err := rr.Next()
			if err != nil {
				break
			}
			if string(c[0].Data) == verifiers.StatusError {
				continue
			}
			rr.Close()
			return c[1].Kind != columnar.CellNull
		}
		rr.Close()
	}
	return true // nothing to reuse either way
}

// prevRow is a rollout of the earlier run: its rewards row (ids, verdict,
// input hash and kept columns; SourceRow is the row of this run's unit it
// stands for), its check rows, a judge's columns included, and, in a run
// that writes the judgements table (judging.multi), its judgements. A row
// with NoJudgements (a matched row, a part without its judgements) or
// Unsure is not reused where that matters.
type prevRow struct {
	results.Rollout
	// noFlagRows is set when the earlier flag rows could not be read for
	// it (a row join.Match found, whose checks it reads without them), so
	// that a row of a verifier with flags is not reused.
	noFlagRows bool
	// sameInput is set when the unit's input is the earlier run's, byte
	// for byte (reuseSource.unchanged).
	sameInput bool
}

// reusable reports whether p may stand for a row of v in this run: it has
// an input hash, was graded by v, whose fingerprint is unchanged, and its
// result would be the same if graded again (retryRow).
func (p *prevRow) reusable(pl *plan, v *verifiers.Verifier) bool {
	return p.Reward.InputHashValid && p.Reward.VerifierID.S == v.ID && pl.reuse.reusable[v.ID] && !p.Unsure &&
		!(p.NoJudgements && pl.judging.judges(v)) && !(p.noFlagRows && v.Flagged) && !retryRow(&p.Reward, p.Checks, pl.judging, v)
}

// retryRow reports whether a row's result may differ when it is graded
// again with the same input and verifier v, checks being its check rows
// and js the run's judging: its verifier timed out or panicked
// (grader.verify, verifiers.Run), a judge call failed (the check's detail
// is the judge's error), when js judges v's rubric checks a check was
// left pending (by the request budget), or v is a remote verifier whose
// service was not asked (the budget) or failed: no answer, an HTTP error
// after the retries, or a reply that is not an answer (its placeholder
// check, in error or pending; remoting.finish). Any remote call added
// later whose failure is written into a row belongs here too. Every
// other row gives the same result again: an input error, no verifier, a
// verifier's own error, a check in error, a verdict.
//
// It reads only what every format writes and reads back, so a run's part
// statistics (written as the part is) and a later run's row path (reading
// the part) classify a row alike. A verifier's own check detail that
// reads like a judge's error only makes its row graded again.
func retryRow(rw *columnar.RewardRow, checks []columnar.CheckRow, js *judging, v *verifiers.Verifier) bool {
	switch rw.Status {
	case verifiers.StatusPassed:
		if !js.partial() {
			return false
		}
	case verifiers.StatusError:
		if rw.ErrorKind.S != verifiers.KindVerifier {
			return false
		}
		if vid := rw.VerifierID.S; strings.HasPrefix(rw.Error.S, timeoutPrefix(vid)) || strings.HasPrefix(rw.Error.S, panicPrefix(vid)) {
			return true
		}
	}
	for i := range checks {
		c := &checks[i]
		switch {
		case c.Status == verifiers.CheckError && strings.HasPrefix(c.Detail, judgeErrorPrefix):
			return true
		case c.Status != verifiers.CheckError && js.partial() && partialFailure(c.Detail):
			return true
		case c.Status == verifiers.CheckPending && js.judges(v):
			return true
		case v.Remote != nil && (c.Status == verifiers.CheckError || c.Status == verifiers.CheckPending) && isPlaceholder(c, v):
			return true
		}
	}
	return false
}

// partialFailure reports whether a judged check's detail says that some
// of its judgements failed and the others made its verdict
// (judging.apply with JudgePanel.Partial).
func partialFailure(detail string) bool {
	return strings.HasSuffix(detail, " failed)") && strings.Contains(detail, " judgements; ")
}

// judgeErrorPrefix begins the detail of a check whose judgement failed
// (judge.Error, judging.finish and judgeRow).
const judgeErrorPrefix = "judge: "

// timeoutPrefix begins the error of a row whose verifier vid ran past the
// timeout (grader.verify); a verifier's own error reads "verifier vid: ".
func timeoutPrefix(vid string) string { return "verifier " + vid + " timed out after " }

// panicPrefix begins the error of a row whose verifier vid panicked
// (verifiers.Run).
func panicPrefix(vid string) string { return "verifier " + vid + " panicked: " }

// rewardCols are the rewards columns read from the earlier run.
func (rs *reuseSource) rewardCols(keep []string) []string {
	return results.RolloutRewardColumns(rs.manifest.Config.Flags, rs.manifest.Config.Turns, keep)
}

// prevUnit reads the earlier run's part of one unit in step with its rows.
// A goroutine of its own reads the earlier rows ahead (readAhead), so that
// decoding them overlaps with reading the unit's input.
type prevUnit struct {
	// part reads the earlier part of the unit, with its judgements in a
	// run that writes them (multi).
	part *results.Rollouts
	// matched, when set, replaces part: the earlier rows join.Match found
	// for the unit, in its row order, read without their flag rows or
	// judgements, and decoded by rdec and cdec.
	matched   *join.UnitMatches
	rdec      *columnar.ResultDecoder[columnar.RewardRow]
	cdec      *columnar.ResultDecoder[columnar.CheckRow]
	cells     []columnar.Cell
	multi     bool // a run that writes the judgements table
	sameInput bool // see prevRow

	ahead   chan []*prevRow // filled by readAhead; closed at the end or on an error
	stop    chan struct{}   // closed by close
	stopped chan struct{}   // closed when readAhead returned
	pending []*prevRow      // received from ahead and not yet matched
	done    bool
}

// prevAhead is the number of earlier rows readAhead sends at once; it
// keeps prevAheadChunks of them ready.
const (
	prevAhead       = 256
	prevAheadChunks = 4
)

// open returns the reader of the earlier part of unit u (nil: none). cur
// is the unit's entry in this run's manifest.
func (rs *reuseSource) open(u *inputs.Unit, cur *results.ManifestInput, keep []string) *prevUnit {
	if rs == nil || rs.noHash || len(rs.reusable) == 0 {
		return nil
	}
	pu := &prevUnit{multi: rs.multi, ahead: make(chan []*prevRow, prevAheadChunks), stop: make(chan struct{}), stopped: make(chan struct{})}
	if part, ok := rs.parts[unitKey(u.Path, u.FirstRowGroup, u.RowGroups)]; ok {
		var err error
		if pu.part, err = results.OpenRollouts(rs.dir, part, rs.manifest.Config.Flags, rs.manifest.Config.Turns, keep, rs.multi); err != nil {
			return nil
		}
		pu.sameInput = rs.unchanged(u, cur) != nil
	} else {
		k, ok := rs.matchUnit[u.Index]
		if !ok {
			return nil
		}
		var err error
		if pu.matched, err = rs.matches.Unit(k); err != nil {
			return nil
		}
		strs := columnar.Interner{}
		if pu.rdec, err = columnar.NewRewardDecoder(rs.rewardCols(keep), keep, strs); err != nil {
			return nil
		}
		if pu.cdec, err = columnar.NewCheckDecoder(results.CheckRowColumns, strs); err != nil {
			return nil
		}
	}
	go pu.readAhead()
	return pu
}

// readAhead reads the earlier rows in order and sends them in chunks,
// until the part ends, a row cannot be read or close is called.
func (pu *prevUnit) readAhead() {
	defer close(pu.stopped)
	defer close(pu.ahead)
	chunk := make([]*prevRow, 0, prevAhead)
	for {
		p, err := pu.read()
		if err == nil {
			chunk = append(chunk, p)
		}
		if len(chunk) == prevAhead || err != nil && len(chunk) > 0 {
			select {
			case pu.ahead <- chunk:
			case <-pu.stop:
				return
			}
			chunk = make([]*prevRow, 0, prevAhead)
		}
		if err != nil {
			return
		}
	}
}

// close stops readAhead and closes the part.
func (pu *prevUnit) close() {
	if pu != nil {
		close(pu.stop)
		<-pu.stopped
		if pu.part != nil {
			pu.part.Close()
		}
	}
}

// next returns the next earlier row, or nil at the end.
func (pu *prevUnit) next() *prevRow {
	for len(pu.pending) == 0 {
		chunk, ok := <-pu.ahead
		if !ok {
			pu.done = true
			return nil
		}
		pu.pending = chunk
	}
	return pu.pending[0]
}

// rows returns the earlier rows of the rows of b, aligned (nil where
// there is none), reading on in step.
func (pu *prevUnit) rows(b *columnar.Batch) []*prevRow {
	if pu == nil || pu.done {
		return nil
	}
	out := make([]*prevRow, len(b.Rows))
	for i := range b.Rows {
		idx := b.Rows[i].Index
		for {
			p := pu.next()
			if p == nil {
				return out
			}
			if p.Reward.SourceRow > idx {
				break
			}
			pu.pending = pu.pending[1:]
			if p.Reward.SourceRow == idx {
				out[i] = p
				break
			}
		}
	}
	return out
}

// read reads the next earlier rollout with its check rows.
func (pu *prevUnit) read() (*prevRow, error) {
	if pu.part != nil {
		p := &prevRow{sameInput: pu.sameInput}
		if err := pu.part.Next(&p.Rollout); err != nil {
			return nil, err
		}
		return p, nil
	}
	row, r, err := pu.matched.Next()
	if err != nil {
		return nil, err
	}
	rw, err := results.DecodeReward(pu.rdec, pu.toCells(r.Values))
	if err != nil {
		return nil, err
	}
	if len(r.Checks) < int(rw.ChecksTotal) {
		return nil, errors.New("fewer check rows than checks_total")
	}
	rw.SourceRow = row // the row of this run it was found for
	p := &prevRow{Rollout: results.Rollout{Reward: rw, Checks: make([]columnar.CheckRow, rw.ChecksTotal), NoJudgements: pu.multi}, noFlagRows: true}
	for k, vals := range r.Checks[:rw.ChecksTotal] {
		if pu.cdec.Decode(pu.toCells(vals), &p.Checks[k]) != nil {
			return nil, errors.New("unreadable check row")
		}
		if p.Checks[k].CheckIndex != int32(k) {
			return nil, errors.New("checks out of step")
		}
	}
	return p, nil
}

// toCells returns a matched row's values as cells, in a buffer reused
// from row to row (read copies what it keeps).
func (pu *prevUnit) toCells(vals []join.Value) []columnar.Cell {
	pu.cells = pu.cells[:0]
	for _, v := range vals {
		pu.cells = append(pu.cells, columnar.Cell{Kind: v.Kind, Data: v.Data})
	}
	return pu.cells
}

// match reads the rollout ids of the units this process grades whose
// input the earlier run did not grade as a unit of its own, and finds
// their earlier rows with join.Match (see reuseSource). A unit that cannot
// be read is left out: grading it reports the error.
func (r *runner) match(ctx context.Context) error {
	rs := r.plan.reuse
	if rs == nil || rs.noHash || len(rs.reusable) == 0 {
		return nil
	}
	var units []*inputs.Unit
	for _, u := range r.todo() {
		if _, ok := rs.parts[unitKey(u.Path, u.FirstRowGroup, u.RowGroups)]; !ok && u.Path != inputs.Stdin {
			units = append(units, u)
		}
	}
	if len(units) == 0 {
		return nil
	}
	dir, err := join.Open(rs.dir)
	if err != nil {
		return fmt.Errorf("reuse %s: %w", rs.dir, err)
	}
	opts := columnar.Options{Fields: r.plan.fields, MaxLineBytes: r.cfg.MaxLineBytes, Columns: []string{}, StructNulls: r.cfg.StructNulls}
	keys := func(emit func(unit int, row int64, id []byte) error) error {
		for k, u := range units {
			rd, err := r.open(u, opts)
			if err != nil {
				continue
			}
			err = r.plan.eachID(u, rd, func(row int64, id []byte) error { return emit(k, row, id) })
			rd.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	cfg := join.Config{Rewards: rs.rewardCols(r.plan.keep), Checks: results.CheckRowColumns, LeftName: rs.dir}
	m, err := join.Match(ctx, dir, keys, cfg)
	if err != nil {
		return fmt.Errorf("reuse: %w", err)
	}
	rs.matches, rs.matchUnit = m, make(map[int]int, len(units))
	for k, u := range units {
		rs.matchUnit[u.Index] = k
	}
	return nil
}

// eachID calls fn with the row and the rollout id grading gives each row
// of the unit read by rd (grader.decode), until the unit ends or it
// cannot be read (the rows after are graded in full).
func (p *plan) eachID(u *inputs.Unit, rd columnar.Reader, fn func(row int64, id []byte) error) error {
	var line, initial jsonview.Doc
	var meta []byte
	for {
		b, err := rd.Next(1024)
		if err != nil {
			return nil
		}
		for i := range b.Rows {
			row := &b.Rows[i]
			var id []byte
			problem := ""
			if b.JSONLines {
				if meta, err = columnar.DecodeLineCached(row, &p.fields, p.skips, &line, &initial, meta[:0]); err != nil {
					problem = "undecodable"
					if row.Err != nil {
						if text, pr := inputs.IDText(row.ID); pr == "" && len(text) > 0 {
							id, problem = text, ""
						}
					}
				}
			}
			if problem == "" && id == nil {
				id, problem = inputs.IDText(row.ID)
				if row.ID.Kind == columnar.CellNull {
					problem = "null"
				}
			}
			if problem != "" {
				id = []byte(inputs.FallbackID(u, row))
			}
			if err := fn(row.Index, id); err != nil {
				b.Release()
				return err
			}
		}
		b.Release()
	}
}

// closeMatches removes the files of the earlier rows matched.
func (rs *reuseSource) closeMatches() {
	if rs != nil && rs.matches != nil {
		rs.matches.Close()
	}
}

// take fills rw and out with the earlier results of the row just decoded
// into rw, bound to v, when they may be reused, and reports whether they
// were.
func (g *grader) take(p *prevRow, v *verifiers.Verifier, rw *columnar.RewardRow, out *batchResults) bool {
	if p == nil || v == nil || !rw.InputHashValid || p.Reward.InputHash != rw.InputHash || p.Reward.RolloutID != rw.RolloutID ||
		!p.reusable(g.plan, v) {
		return false
	}
	p.fill(g.plan, rw, out, false)
	if g.plan.health {
		rw.Flags = health.Flags(&g.rollout, rw.Flags)
	}
	return true
}

// takeUnchanged fills rw and out with the earlier results of row without
// decoding it, when its unit's input is the earlier run's byte for byte
// (prevRow.sameInput), its rollout id and task line up with p's, and its
// verifier may be reused; it reports whether they were taken. The row's
// input hash is then the earlier one: the same bytes read with the same
// configuration, in a run without a tasks table. A row this cannot settle
// (an id or task that is not plain text, a fallback id, a JSON Lines line,
// whose ids are only known once it is parsed) goes through grade, which
// may still take p once it has hashed the row.
func (g *grader) takeUnchanged(u *inputs.Unit, b *columnar.Batch, row *columnar.Row, p *prevRow, rw *columnar.RewardRow, out *batchResults) bool {
	if p == nil || !p.sameInput || !g.plan.reuse.sameHealth || b.JSONLines || row.Err != nil || row.ID.Kind != columnar.CellString ||
		row.Task.Kind != columnar.CellString || len(p.Reward.Keep) != len(g.plan.keep) || g.plan.flags && !p.Reward.OutputHashValid ||
		string(row.ID.Data) != p.Reward.RolloutID || string(row.Task.Data) != p.Reward.TaskID {
		return false
	}
	v := g.plan.bindings.Lookup(p.Reward.TaskID)
	if v == nil || !p.reusable(g.plan, v) {
		return false
	}
	rw.RolloutID, rw.TaskID = p.Reward.RolloutID, p.Reward.TaskID
	rw.VerifierID = columnar.Str(v.ID)
	copy(rw.Keep, p.Reward.Keep)
	rw.InputHash, rw.InputHashValid = p.Reward.InputHash, true
	rw.OutputHash, rw.OutputHashValid = p.Reward.OutputHash, g.plan.flags
	p.fill(g.plan, rw, out, true)
	g.undecoded++
	return true
}

// fill copies the earlier verdict of p into rw and its check rows, bound
// to rw's ids, to out. In a run with flags (plan.flags) it copies its flag
// rows and the ids of its verifier's flags raised, and its health flags
// too when withHealth is set; in a run without, none.
func (p *prevRow) fill(pl *plan, rw *columnar.RewardRow, out *batchResults, withHealth bool) {
	rw.Status, rw.Passed, rw.PassedValid = p.Reward.Status, p.Reward.Passed, p.Reward.PassedValid
	rw.Reward, rw.RewardValid = p.Reward.Reward, p.Reward.RewardValid
	rw.ChecksTotal, rw.ChecksPassed = p.Reward.ChecksTotal, p.Reward.ChecksPassed
	rw.RequiredTotal, rw.RequiredPassed = p.Reward.RequiredTotal, p.Reward.RequiredPassed
	rw.ErrorKind, rw.Error = p.Reward.ErrorKind, p.Reward.Error
	rw.TurnRewards, rw.TurnRewardsValid = p.Reward.TurnRewards, p.Reward.TurnRewardsValid
	rw.Turns, rw.TurnsValid = p.Reward.Turns, p.Reward.TurnsValid
	rw.Flags, rw.FlagRows = rw.Flags[:0], 0
	if pl.flags {
		for _, f := range p.Reward.Flags {
			if withHealth || !strings.HasPrefix(f, verifiers.HealthPrefix) {
				rw.Flags = append(rw.Flags, f)
			}
		}
		rw.FlagRows = p.Reward.FlagRows
	}
	for _, c := range p.Checks {
		if c.Kind == columnar.KindFlag && !pl.flags {
			continue
		}
		c.RolloutID, c.TaskID, c.VerifierID = rw.RolloutID, rw.TaskID, rw.VerifierID
		out.checks = append(out.checks, c)
	}
	for _, j := range p.Judgements {
		j.RolloutID, j.TaskID, j.VerifierID = rw.RolloutID, rw.TaskID, rw.VerifierID
		out.judgements = append(out.judgements, j)
	}
}

// summary returns the counts of rs (nil when rs is nil).
func (rs *reuseSource) summary() *results.ReuseSummary {
	if rs == nil {
		return nil
	}
	s := &results.ReuseSummary{Reused: rs.reused.Load(), Graded: rs.graded.Load(), CopiedParts: rs.copied.Load(), Undecoded: rs.undecoded.Load()}
	if rs.noHash {
		s.Note = rs.dir + " predates input_hash: every rollout was graded"
	}
	return s
}

// digestBytes is how much of each end of a file inputDigest reads.
const digestBytes = 1 << 20

// inputDigest returns the modification time of the file at path, of size
// bytes, and a fast digest of its content: XXH64 of its size, its first
// and its last MiB (a Parquet file's footer among them). Both are "" when
// the file cannot be read.
func inputDigest(path string, size int64) (modTime, digest string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		return "", ""
	}
	h := xxhash.New()
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(size))
	h.Write(buf[:])
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, min(size, digestBytes))); err != nil {
		return "", ""
	}
	if size > digestBytes {
		from := max(size-digestBytes, digestBytes)
		if _, err := io.Copy(h, io.NewSectionReader(f, from, size-from)); err != nil {
			return "", ""
		}
	}
	return fi.ModTime().UTC().Format(time.RFC3339Nano), fmt.Sprintf("xxh64:%016x", h.Sum64())
}

// copyUnits copies whole the earlier parts of this process's units whose
// input file, size, modification time and digest are unchanged, when the
// earlier run had the same gavel, verifiers (ids, tasks and
// fingerprints) and configuration, and no tasks table (whose content the
// manifest does not identify), and the part holds no retry rows
// (PartStats.RetryRows). The copied units are complete.
func (r *runner) copyUnits() error {
	rs := r.plan.reuse
	if rs == nil || rs.noHash {
		return nil
	}
	rs.setup = rs.sameSetup(r.manifest)
	if !rs.setup || !rs.sameFingerprints(r.manifest) || rs.path == reuseRows || rs.noWhole {
		return nil
	}
	for i := range r.units {
		u := &r.units[i]
		cur := &r.manifest.Inputs[i]
		o := rs.unchanged(u, cur)
		if !r.cfg.Shard.Has(i) || r.stats[i] != nil || o == nil {
			continue
		}
		ps, err := rs.copyUnit(r.cfg.Out, rs.unitIndex(o), i, cur.Part)
		if err != nil {
			return err
		}
		if ps == nil {
			continue
		}
		r.stats[i] = ps
		r.manifest.Complete(i, ps.Rows)
		rs.copied.Add(1)
		rs.reused.Add(ps.Rows)
		if rp, ok := r.cfg.Progress.(ReuseProgress); ok {
			rp.Reused(int(ps.Rows))
		}
	}
	return r.writeManifest()
}

// unchanged returns the earlier unit of u, whose entry in this run's
// manifest is cur, when the earlier run had this run's setup (sameSetup)
// and read the same input: the same file, size, modification time and
// digest, and the same part. It returns nil otherwise.
func (rs *reuseSource) unchanged(u *inputs.Unit, cur *results.ManifestInput) *results.ManifestInput {
	if rs == nil || !rs.setup || cur == nil || cur.Digest == "" {
		return nil
	}
	o := rs.ins[unitKey(u.Path, u.FirstRowGroup, u.RowGroups)]
	if o == nil || o.Part != cur.Part || o.Size != cur.Size || o.ModTime != cur.ModTime || o.Digest != cur.Digest {
		return nil
	}
	return o
}

// sameSetup reports whether the earlier run is the run m describes but
// for its inputs' state and its verifiers' fingerprints: the same gavel,
// verifiers (ids and tasks) and configuration, and no tasks table (whose
// content the manifest does not identify). The shard count is not part of
// the setup: a unit's part is the same whichever process graded it, so a
// sharded run copies whole the unchanged parts of its units from a
// committed or single run, and the other way round.
func (rs *reuseSource) sameSetup(m *results.Manifest) bool {
	o := rs.manifest
	oc := o.Config
	oc.Shards = m.Config.Shards
	if o.Version != m.Version || o.Config.TasksFile != "" || len(o.Verifiers) != len(m.Verifiers) ||
		len(m.Config.Differences(&oc)) > 0 {
		return false
	}
	for i, v := range m.Verifiers {
		w := o.Verifiers[i]
		if v.ID != w.ID || !slices.Equal(v.Tasks, w.Tasks) {
			return false
		}
	}
	return true
}

// sameFingerprints reports whether the earlier run's verifiers have the
// fingerprints of those of the run m describes, in the same order.
func (rs *reuseSource) sameFingerprints(m *results.Manifest) bool {
	o := rs.manifest
	if len(o.Verifiers) != len(m.Verifiers) {
		return false
	}
	for i, v := range m.Verifiers {
		if v.Fingerprint != o.Verifiers[i].Fingerprint {
			return false
		}
	}
	return true
}

// unitIndex returns the index of the earlier unit in, the number of its
// part.
func (rs *reuseSource) unitIndex(in *results.ManifestInput) int {
	for i := range rs.manifest.Inputs {
		if &rs.manifest.Inputs[i] == in {
			return i
		}
	}
	return -1
}

// copyUnit copies the part of the earlier unit from into dir as the part
// of unit to, in the order a run completes a part: statistics, checks,
// then rewards. It returns the part's statistics, or nil when the earlier
// part is not complete or may hold rows to grade again: its statistics
// count some retry rows, or predate the count.
func (rs *reuseSource) copyUnit(dir string, from, to int, part string) (*results.PartStats, error) {
	if from != to {
		return nil, nil // the part's name is its unit's number: same units only
	}
	ps := results.PartDone(rs.dir, from, part)
	if ps == nil || rs.path != reuseWhole && (ps.RetryRows == nil || *ps.RetryRows > 0) {
		return nil, nil
	}
	files := [][2]string{{results.StatsPath(rs.dir, from), results.StatsPath(dir, to)}}
	if _, err := os.Stat(results.IDsPath(rs.dir, from)); err == nil {
		files = append(files, [2]string{results.IDsPath(rs.dir, from), results.IDsPath(dir, to)})
	}
	subs := []string{"checks", "rewards"}
	if rs.multi {
		if _, err := os.Stat(filepath.Join(rs.dir, results.JudgementsDir, part)); err != nil {
			return nil, nil // the part lacks its judgements: read row by row
		}
		subs = []string{results.JudgementsDir, "checks", "rewards"}
	}
	for _, sub := range subs {
		files = append(files, [2]string{filepath.Join(rs.dir, sub, part), filepath.Join(dir, sub, part)})
	}
	for _, f := range files {
		if err := results.CopyFile(f[0], f[1]); err != nil {
			results.RemoveUnit(dir, to)
			return nil, fmt.Errorf("reuse: %w", err)
		}
	}
	return ps, nil
}
