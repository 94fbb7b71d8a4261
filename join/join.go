// Package join pairs the rollouts of two result directories by rollout_id
// in bounded memory: each rollout's rewards row with its checks, the
// left's with the right's. gavel diff and grade --baseline rest on Join;
// Match, the same join of a result directory with the rollout ids of a new
// run, finds the rows that grade --reuse may take from an earlier run
// whose units do not line up with the new run's.
//
// Join takes two paths to the same pairs:
//
//   - The aligned path. When both manifests name the same input units
//     (path, size, row groups, rows, part) and both summaries count no
//     duplicate rollout id, the results were written in the same order:
//     both sides are read in one streaming pass, row by row, checking that
//     the ids line up and that each rollout's checks_total check rows
//     follow, under its id, in the checks. Nothing is held but the current
//     row.
//   - The partitioned path. Otherwise, and from the first row that does not
//     line up, the rows left on both sides are spilled into partitions by a
//     hash of rollout_id, files under Config.TempDir sized so that one
//     partition's rows fit in Config.MemoryBudget, and the partitions are
//     joined one at a time in memory.
//
// Match takes the partitioned path only, the new run's ids spilled to the
// same partitions as the directory's rows.
//
// A rollout id seen twice on one side keeps its first row (in part order,
// then row order); the others are counted as duplicates. A rollout's checks
// are every check row with its id, in the same order.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package join

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Progress receives the progress of a join in rows: the rewards rows of
// both sides read, and again those joined in partitions (for Match, see
// there). It is called from the goroutine that called Join or Match.
type Progress interface {
	SetTotal(total int64)
	Add(n int)
}

// Config sets a join. The zero value reads no column but rollout_id, does
// not read the checks, and spills partitions of about 16 MiB under the
// system temporary directory.
type Config struct {
	// Rewards names the rewards columns read into Row.Values.
	Rewards []string
	// Checks names the checks columns read into each of Row.Checks; nil
	// reads no checks.
	Checks []string
	// TempDir is where partitions are spilled ("": os.TempDir()).
	TempDir string
	// MemoryBudget is the bytes of rows one partition may hold in memory
	// (0: 16 MiB). A smaller budget spills into more partitions.
	MemoryBudget int64
	// LeftName and RightName prefix the errors of each side ("": left,
	// right).
	LeftName, RightName string
	// Progress, when set, is told of the rows read and joined.
	Progress Progress
}

// Row is one rollout of one side. Its slices are valid only during the
// call it is handed to.
type Row struct {
	ID []byte
	// Ordinal is the rewards row's place on its side (0 for the first row
	// of the first part), duplicates counted.
	Ordinal int64
	// Values are the columns of Config.Rewards, aligned.
	Values []Value
	// Checks are the rollout's check rows, each the columns of
	// Config.Checks, aligned.
	Checks [][]Value
}

// Pair is a rollout of the left side, the right side, or both.
type Pair struct {
	// Left and Right are nil when the rollout is on the other side only.
	Left, Right *Row
	// Partition is the partition the pair was joined in, -1 on the
	// aligned path.
	Partition int
}

// Stats says how a join went.
type Stats struct {
	// LeftRows and RightRows count distinct rollout ids.
	LeftRows, RightRows int64
	// LeftDuplicates and RightDuplicates count the rows left out because
	// their id was seen before on their side.
	LeftDuplicates, RightDuplicates int64
	// Aligned counts the pairs joined on the aligned path.
	Aligned int64
	// Partitions is the number of partitions spilled (0: none).
	Partitions int
	// DiskBytes is the size of the partitions spilled.
	DiskBytes int64
}

// Join pairs the rollouts of left and right and calls fn for each pair, in
// this order: on the aligned path, in left order (and right order, the
// same); on the partitioned path, partition by partition, and within a
// partition the left's rollouts in left order, each with its right one
// when there is one, then the rollouts of the right only, in right order.
// Pair.Partition tells the two apart and Row.Ordinal gives the left order
// back to a caller that needs it. An error of fn stops the join and is
// returned as is.
func Join(ctx context.Context, left, right *Dir, cfg Config, fn func(*Pair) error) (*Stats, error) {
	if cfg.TempDir == "" {
		cfg.TempDir = osTempDir()
	}
	if cfg.MemoryBudget <= 0 {
		cfg.MemoryBudget = 16 << 20
	}
	if cfg.LeftName == "" {
		cfg.LeftName = "left"
	}
	if cfg.RightName == "" {
		cfg.RightName = "right"
	}
	j := &joiner{cfg: cfg, fn: fn, stats: &Stats{}}
	var err error
	if j.sides[0], err = j.openSide(left, cfg.LeftName); err != nil {
		return nil, err
	}
	defer j.sides[0].close()
	if j.sides[1], err = j.openSide(right, cfg.RightName); err != nil {
		return nil, err
	}
	defer j.sides[1].close()
	rows := estimateRows(left) + estimateRows(right)
	if aligned(left, right) {
		j.setTotal(rows)
		done, err := j.aligned(ctx)
		if err != nil || done {
			return j.stats, err
		}
		j.setTotal(rows + rows - 2*j.stats.Aligned)
	} else {
		j.setTotal(2 * rows)
	}
	return j.stats, j.partitioned(ctx, rows-2*j.stats.Aligned)
}

// estimateRows returns the rows of the result directory d as its manifest
// counts them, or when it does not, an estimate from the size of its parts
// that errs on the high side.
func estimateRows(d *Dir) int64 {
	if n := d.Manifest.Rows(); n >= 0 {
		return n
	}
	var size int64
	for _, table := range []string{Rewards, Checks} {
		parts, _ := Parts(d.Path, table)
		for _, p := range parts {
			if fi, err := os.Stat(p); err == nil {
				size += fi.Size()
			}
		}
	}
	return size / 16
}

// aligned reports whether left and right can be read in step: the same
// complete input units with their rows known, and no duplicate id on
// either side according to the summaries.
func aligned(left, right *Dir) bool {
	a, b := left.Manifest.Inputs, right.Manifest.Inputs
	if len(a) != len(b) || left.duplicates != 0 || right.duplicates != 0 {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Path != y.Path || x.Size != y.Size || x.FirstRowGroup != y.FirstRowGroup || x.RowGroups != y.RowGroups ||
			x.Part != y.Part || !x.Complete || !y.Complete || x.Rows == nil || y.Rows == nil || *x.Rows != *y.Rows {
			return false
		}
	}
	return true
}

// Columns read before the caller's.
const (
	colID = iota
	colChecksTotal
	rewardsFixed
)

type joiner struct {
	cfg   Config
	fn    func(*Pair) error
	stats *Stats
	sides [2]*side

	total, reported int64
}

// side is one result directory being read.
type side struct {
	name     string
	rewards  *tableReader
	checks   *tableReader // nil when no checks are read
	ordinal  int64        // of the next rewards row
	row      Row
	pending  [][]Value // checks read for the current row (aligned path)
	arena    []byte
	valsBack []Value
	// spillVals is the record being spilled (pending points into
	// valsBack).
	spillVals []Value
}

func (j *joiner) openSide(d *Dir, name string) (*side, error) {
	s := &side{name: name}
	parts, err := Parts(d.Path, Rewards)
	if err != nil {
		return nil, s.errorf(err)
	}
	cols := append([]string{"rollout_id", "checks_total"}, j.cfg.Rewards...)
	s.rewards = newTableReader(parts, cols)
	if j.cfg.Checks != nil {
		parts, err := Parts(d.Path, Checks)
		if err != nil {
			return nil, s.errorf(err)
		}
		s.checks = newChecksReader(parts, append([]string{"rollout_id"}, j.cfg.Checks...))
	}
	return s, nil
}

func (s *side) close() {
	s.rewards.close()
	if s.checks != nil {
		s.checks.close()
	}
}

// errorf wraps err with the side's name, when it has one.
func (s *side) errorf(err error) error {
	if s.name == "" {
		return err
	}
	return fmt.Errorf("%s: %w", s.name, err)
}

// nextReward reads the next rewards row: its values, or io.EOF.
func (s *side) nextReward() ([]Value, error) {
	v, err := s.rewards.next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, s.errorf(err)
	}
	if v[colID].Null() {
		return nil, s.errorf(s.rewards.rowError(errors.New("rollout_id is null")))
	}
	return v, nil
}

func (j *joiner) setTotal(n int64) {
	j.total = n
	if j.cfg.Progress != nil && n >= 0 {
		j.cfg.Progress.SetTotal(n)
	}
}

// progress reports n more rows, in steps.
func (j *joiner) progress(n int64) {
	if j.cfg.Progress == nil {
		return
	}
	j.reported += n
	if j.reported >= 1<<14 {
		j.cfg.Progress.Add(int(j.reported))
		j.reported = 0
	}
}

// aligned joins the rows that line up from the start; done is false when
// a row does not line up, and the rows from it on are left to the
// partitioned path, the readers stopped before them.
func (j *joiner) aligned(ctx context.Context) (done bool, err error) {
	l, r := j.sides[0], j.sides[1]
	pair := Pair{Left: &l.row, Right: &r.row, Partition: -1}
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		lv, lerr := l.nextReward()
		if lerr != nil && !errors.Is(lerr, io.EOF) {
			return false, lerr
		}
		rv, rerr := r.nextReward()
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return false, rerr
		}
		switch {
		case lerr != nil && rerr != nil:
			j.flushProgress()
			return true, nil
		case lerr != nil:
			r.rewards.unread()
			return false, nil
		case rerr != nil:
			l.rewards.unread()
			return false, nil
		}
		if !bytes.Equal(lv[colID].Data, rv[colID].Data) {
			l.rewards.unread()
			r.rewards.unread()
			return false, nil
		}
		if !l.readChecks(lv) || !r.readChecks(rv) {
			l.rewards.unread()
			r.rewards.unread()
			return false, nil
		}
		l.fill(lv)
		r.fill(rv)
		if err := j.fn(&pair); err != nil {
			return false, err
		}
		l.pending, r.pending = l.pending[:0], r.pending[:0]
		j.stats.Aligned++
		j.stats.LeftRows++
		j.stats.RightRows++
		j.progress(2)
	}
}

// fill sets s.row to the rewards row v with the checks read for it.
func (s *side) fill(v []Value) {
	s.row = Row{ID: v[colID].Data, Ordinal: s.ordinal, Values: v[rewardsFixed:], Checks: s.pending}
	s.ordinal++
}

// readChecks reads the checks of the rewards row v on the aligned path:
// the next checks_total check rows, which must carry its id. They are
// copied into s.pending. It returns false when they are not there; the
// check rows of another id are left unread, and those read stay in
// s.pending, to be spilled.
func (s *side) readChecks(v []Value) bool {
	s.pending = s.pending[:0]
	s.arena = s.arena[:0]
	s.valsBack = s.valsBack[:0]
	if s.checks == nil {
		return true
	}
	n, err := strconv.Atoi(string(v[colChecksTotal].Data))
	if v[colChecksTotal].Null() || err != nil || n < 0 {
		return false
	}
	// Copy into the arena first and slice afterwards: the arena may move.
	type span struct{ off, n int }
	var spans [8]span
	var where []span = spans[:0]
	for range n {
		cv, err := s.checks.next()
		if err != nil {
			break // an error reads again on the partitioned path
		}
		if !bytes.Equal(cv[0].Data, v[colID].Data) || cv[0].Null() {
			s.checks.unread()
			break
		}
		start := len(s.valsBack)
		for _, x := range cv[1:] {
			s.valsBack = append(s.valsBack, Value{Kind: x.Kind})
			where = append(where, span{len(s.arena), len(x.Data)})
			s.arena = append(s.arena, x.Data...)
		}
		s.pending = append(s.pending, s.valsBack[start:len(s.valsBack):len(s.valsBack)])
	}
	for i := range s.valsBack {
		sp := where[i]
		s.valsBack[i].Data = s.arena[sp.off : sp.off+sp.n : sp.off+sp.n]
	}
	// valsBack may have moved too: slice the rows again.
	w := s.checks.width() - 1
	for i := range s.pending {
		s.pending[i] = s.valsBack[i*w : (i+1)*w : (i+1)*w]
	}
	return len(s.pending) == n
}
