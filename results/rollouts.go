package results

import (
	"errors"
	"io"
	"path/filepath"
	"slices"

	"github.com/gavelhq/gavel/columnar"
)

// Rollouts reads one part of a result directory rollout by rollout: each
// rewards row with its rows of the checks table (its checks, then its
// flags) and, when asked, its rows of the judgements table. The tables
// are read in step, by the rows' numbering: a rollout's check rows follow
// the previous rollout's, numbered from 0, its flag rows continue the
// numbering, and its judgements follow the previous rollout's in the
// order of its checks.
type Rollouts struct {
	rewards, checks *columnar.ResultReader
	// judgements is nil when not asked for, or when the part has none.
	judgements *columnar.ResultReader
	noJudge    bool // judgements asked for and missing
	rdec       *columnar.ResultDecoder[columnar.RewardRow]
	cdec       *columnar.ResultDecoder[columnar.CheckRow]
	jdec       *columnar.ResultDecoder[columnar.JudgementRow]
	// held is the check row read after a rollout's rows, the next
	// rollout's first; heldReward the rewards row read ahead of its turn;
	// jnext the judgements row read ahead (nil: none).
	held       *columnar.CheckRow
	heldReward *columnar.RewardRow
	jnext      *columnar.JudgementRow
	unsure     bool // the next rollout is unsure (Rollout.Unsure)
}

// Rollout is a rollout read by Rollouts.
type Rollout struct {
	// Reward is its rewards row; Reward.FlagRows counts its flag rows.
	Reward columnar.RewardRow
	// Checks are its check rows, its flag rows last.
	Checks []columnar.CheckRow
	// Judgements are its judgements rows, when asked for; NoJudgements is
	// set when they were asked for and the part has none.
	Judgements   []columnar.JudgementRow
	NoJudgements bool
	// Unsure is set when its flag rows may be the next rollout's: it has
	// no checks, and the next rollout has its id. The two are then unsure.
	Unsure bool
}

// CheckRowColumns are the columns of the checks table a reader of an
// earlier run's check rows decodes (--reuse: the rows join.Match finds,
// which it reads without their flag rows); RolloutCheckColumns, those
// Rollouts reads, add what tells a rollout's flag rows (a part written
// without flags reads as checks only).
var (
	CheckRowColumns = []string{"check_index", "check_id", "label", "required", "status", "detail",
		"actual", "expected", "score", "suggestion", "issues", columnar.ColumnTurn}
	RolloutCheckColumns = append(slices.Clip(CheckRowColumns), "rollout_id", columnar.ColumnKind)
)

// RolloutRewardColumns are the columns of the rewards table Rollouts
// reads: every fixed column, flags and output_hash in a run with flags,
// turn_rewards and turns in a run that scores turns, then the kept
// columns keep.
func RolloutRewardColumns(flags, turns bool, keep []string) []string {
	cols := columnar.RewardColumns()
	if flags {
		cols = append(cols, columnar.ColumnFlags, columnar.ColumnOutputHash)
	}
	if turns {
		cols = append(cols, columnar.ColumnTurnRewards, columnar.ColumnTurns)
	}
	return append(cols, keep...)
}

// OpenRollouts opens part of the result directory dir, written by a run
// with flags or not and that scores turns or not, keeping the columns
// keep, and its judgements when judgements is set.
func OpenRollouts(dir, part string, flags, turns bool, keep []string, judgements bool) (*Rollouts, error) {
	cols := RolloutRewardColumns(flags, turns, keep)
	r := &Rollouts{}
	strs := columnar.Interner{}
	var err error
	if r.rdec, err = columnar.NewRewardDecoder(cols, keep, strs); err != nil {
		return nil, err
	}
	if r.cdec, err = columnar.NewCheckDecoder(RolloutCheckColumns, strs); err != nil {
		return nil, err
	}
	if r.jdec, err = columnar.NewJudgementDecoder(columnar.JudgementColumns(), strs); err != nil {
		return nil, err
	}
	if r.rewards, err = columnar.OpenResult(filepath.Join(dir, "rewards", part), cols); err != nil {
		return nil, err
	}
	if r.checks, err = columnar.OpenResult(filepath.Join(dir, "checks", part), slices.Clip(RolloutCheckColumns)); err != nil {
		r.rewards.Close()
		return nil, err
	}
	if judgements {
		r.judgements, _ = columnar.OpenResult(filepath.Join(dir, JudgementsDir, part), columnar.JudgementColumns())
		r.noJudge = r.judgements == nil
	}
	return r, nil
}

// Close releases the part.
func (r *Rollouts) Close() {
	r.rewards.Close()
	r.checks.Close()
	if r.judgements != nil {
		r.judgements.Close()
	}
}

// Next reads the next rollout into ro, which the caller owns (its rows
// stay valid after the next call); io.EOF after the last.
func (r *Rollouts) Next(ro *Rollout) error {
	rw, err := r.nextReward()
	if err != nil {
		return err
	}
	*ro = Rollout{Reward: rw, Unsure: r.unsure, NoJudgements: r.noJudge}
	r.unsure = false
	ro.Checks = make([]columnar.CheckRow, 0, rw.ChecksTotal)
	for k := range rw.ChecksTotal {
		cr, err := r.nextCheck()
		if errors.Is(err, io.EOF) {
			return errors.New("fewer check rows than checks_total")
		}
		if err != nil {
			return err
		}
		if cr.CheckIndex != k || cr.Kind == columnar.KindFlag {
			return errors.New("checks out of step")
		}
		ro.Checks = append(ro.Checks, cr)
	}
	if err := r.flagRows(ro); err != nil {
		return err
	}
	if r.judgements != nil {
		if err := r.readJudgements(ro); err != nil {
			return err
		}
	}
	return nil
}

// flagRows appends to ro's checks the flag rows that follow them: the
// rows of kind flag that carry its rollout id and continue its
// numbering. The first other row is held for the next rollout. When ro
// has no checks and the next rollout has its id, the flag rows read may
// be the next rollout's: both are then unsure.
func (r *Rollouts) flagRows(ro *Rollout) error {
	for {
		cr, err := r.nextCheck()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if cr.Kind != columnar.KindFlag || cr.RolloutID != ro.Reward.RolloutID || int(cr.CheckIndex) != len(ro.Checks) {
			r.held = &cr
			break
		}
		ro.Checks = append(ro.Checks, cr)
		ro.Reward.FlagRows++
	}
	if ro.Reward.ChecksTotal == 0 && ro.Reward.FlagRows > 0 {
		next, err := r.nextReward()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		r.heldReward = &next
		if next.RolloutID == ro.Reward.RolloutID {
			ro.Unsure, r.unsure = true, true
		}
	}
	return nil
}

// nextReward returns the next rewards row.
func (r *Rollouts) nextReward() (columnar.RewardRow, error) {
	if rw := r.heldReward; rw != nil {
		r.heldReward = nil
		return *rw, nil
	}
	c, err := r.rewards.Next()
	if err != nil {
		return columnar.RewardRow{}, err
	}
	return DecodeReward(r.rdec, c)
}

// nextCheck returns the next check row.
func (r *Rollouts) nextCheck() (columnar.CheckRow, error) {
	if cr := r.held; cr != nil {
		r.held = nil
		return *cr, nil
	}
	var cr columnar.CheckRow
	c, err := r.checks.Next()
	if err != nil {
		return cr, err
	}
	if r.cdec.Decode(c, &cr) != nil {
		return cr, errors.New("unreadable check row")
	}
	return cr, nil
}

// readJudgements reads the judgements of ro, whose check rows are read:
// the rows that follow, while they carry its rollout id and one of its
// check indexes, in the table's order (check index, then judge, then
// sample). A row that goes back to an earlier check index, or starts the
// current check's judgements again (its first judge's sample 0), belongs
// to the next rollout, whose id may be the same. A judgements row naming
// a check ro does not have is an error: the parts are out of step.
func (r *Rollouts) readJudgements(ro *Rollout) error {
	last := int32(-1)
	var first *columnar.JudgementRow
	for {
		if r.jnext == nil {
			c, err := r.judgements.Next()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			var jr columnar.JudgementRow
			if r.jdec.Decode(c, &jr) != nil {
				return errors.New("unreadable judgements row")
			}
			r.jnext = &jr
		}
		jr := r.jnext
		if jr.RolloutID != ro.Reward.RolloutID || jr.CheckIndex < last ||
			jr.CheckIndex == last && jr.JudgeModel == first.JudgeModel && jr.Sample == first.Sample {
			return nil
		}
		if int(jr.CheckIndex) >= len(ro.Checks) || ro.Checks[jr.CheckIndex].CheckID != jr.CheckID {
			return errors.New("judgements out of step with checks")
		}
		if jr.CheckIndex > last {
			last, first = jr.CheckIndex, jr
		}
		ro.Judgements = append(ro.Judgements, *jr)
		r.jnext = nil
	}
}
