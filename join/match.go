package join

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/gavelhq/gavel/internal/kmerge"
)

// Matches holds the rows of a result directory that Match found for the
// rows of a new run, in a file under Config.TempDir sorted by the new
// run's unit and row. The units may be read in any order, and by several
// goroutines at once; read in increasing order, the file is read from
// start to end. Close removes the file.
type Matches struct {
	// Stats says how the match went.
	Stats MatchStats

	tmp   string // the directory of every file of the match
	f     *os.File
	path  string
	spans []unitSpan // by increasing unit, only units with matches
	// nRew and nCheck are the values of a rewards row and of a check row,
	// the id left out.
	nRew, nCheck int
}

// MatchStats says how a Match went.
type MatchStats struct {
	// Rows counts the distinct rollout ids of the result directory.
	Rows int64
	// Duplicates counts the rows of the result directory left out because
	// their id was seen before.
	Duplicates int64
	// Keys counts the rows of the new run, and Matched those that found a
	// row of the result directory.
	Keys, Matched int64
	// Partitions is the number of partitions spilled.
	Partitions int
	// DiskBytes is the size of the files written: the partitions, the
	// sorted runs of matches and the merged matches.
	DiskBytes int64
}

// unitSpan is where the matches of one unit lie in the matches file.
type unitSpan struct {
	unit     int
	off, end int64
}

// Match finds, for the rows of a new run, the rows of the result directory
// dir with the same rollout_id, in memory bounded by Config.MemoryBudget
// whatever the number of rows on either side: the reuse of an earlier
// run's results when its units do not line up with the new run's.
//
// keys hands the new run's rows to emit: each row's unit (0 and up), its
// row in the unit and its rollout_id, units in increasing order and rows
// in increasing order within a unit. id is read during the call only. An
// error of keys, or of emit (keys out of order, ctx done), ends the match
// and is returned.
//
// A row of dir is its rewards row's columns Config.Rewards with the
// columns Config.Checks of each of its check rows, as Join reads them. A
// rollout id seen twice in dir keeps its first row; a new run's id seen
// several times matches each of its rows with that same row. Errors of
// dir are prefixed with Config.LeftName when it is set; Config.RightName
// is not used. Config.Progress is told of dir's rewards rows read, and
// again of those matched in partitions.
//
// How: dir's rows, then the keys, are spilled into partitions by a hash of
// rollout_id, as Join spills them; each partition of dir is loaded in
// memory in turn and its keys, read from disk in their order, are looked
// up, which writes the partition's matches as a run sorted by unit and
// row. The runs are merged into one file with the place of each unit.
// Nothing is held per key; the disk used is about dir's rewards and
// checks once, the keys and twice the matches. The caller closes the
// Matches returned, which removes every file.
func Match(ctx context.Context, dir *Dir, keys func(emit func(unit int, row int64, id []byte) error) error, cfg Config) (*Matches, error) {
	if cfg.TempDir == "" {
		cfg.TempDir = osTempDir()
	}
	if cfg.MemoryBudget <= 0 {
		cfg.MemoryBudget = 16 << 20
	}
	tmp, err := os.MkdirTemp(cfg.TempDir, "gavel-match-")
	if err != nil {
		return nil, fmt.Errorf("match: %w", err)
	}
	m := &Matches{tmp: tmp, nRew: len(cfg.Rewards), nCheck: len(cfg.Checks)}
	if err := m.match(ctx, dir, keys, cfg); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

func (m *Matches) match(ctx context.Context, dir *Dir, keys func(emit func(int, int64, []byte) error) error, cfg Config) error {
	rows := estimateRows(dir)
	n := partitionCount(rows, cfg.MemoryBudget)
	m.Stats.Partitions = n
	seed := maphash.MakeSeed()
	j := &joiner{cfg: cfg, stats: &Stats{}}
	j.setTotal(2 * rows)

	// Spill dir's rows, then the keys, to the partition of their id.
	s, err := j.openSide(dir, cfg.LeftName)
	if err != nil {
		return err
	}
	dsp, err := newSpill(m.tmp, "d", n, seed)
	if err != nil {
		s.close()
		return err
	}
	defer dsp.close()
	err = j.spillSide(ctx, dsp, s, tagLeftReward)
	s.close()
	if err != nil {
		return err
	}
	if err := dsp.finish(); err != nil {
		return err
	}
	m.Stats.DiskBytes += dsp.bytes
	ksp, err := newSpill(m.tmp, "k", n, seed)
	if err != nil {
		return err
	}
	defer ksp.close()
	if err := m.spillKeys(ctx, ksp, keys); err != nil {
		return err
	}
	if err := ksp.finish(); err != nil {
		return err
	}
	m.Stats.DiskBytes += ksp.bytes

	// Match partition by partition, each partition's matches a sorted run.
	// With one partition, the run is the result.
	runs, err := createMatchFile(filepath.Join(m.tmp, "runs"), n == 1)
	if err != nil {
		return err
	}
	defer func() {
		if runs.f != m.f {
			runs.f.Close()
		}
	}()
	starts := make([]int64, 0, n)
	var p partition
	for i := range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.load(dsp.path(i), m.nRew, m.nCheck); err != nil {
			return fmt.Errorf("match: %w", err)
		}
		os.Remove(dsp.path(i))
		d := &p.sides[0]
		m.Stats.Rows += int64(len(d.rows))
		m.Stats.Duplicates += d.dups
		j.progress(int64(len(d.rows)) + d.dups)
		starts = append(starts, runs.size)
		if err := m.matchPartition(ctx, &p, ksp.path(i), runs); err != nil {
			return err
		}
		os.Remove(ksp.path(i))
	}
	if err := runs.flush(); err != nil {
		return err
	}
	m.Stats.DiskBytes += runs.size
	j.flushProgress()
	if n == 1 {
		m.f, m.path, m.spans = runs.f, runs.path, runs.spans
		return nil
	}
	return m.merge(ctx, runs, starts)
}

// spillKeys spills the keys into sp, each a record of its unit, row and
// id length (uvarints) and id.
func (m *Matches) spillKeys(ctx context.Context, sp *spill, keys func(emit func(int, int64, []byte) error) error) error {
	lastUnit, lastRow := -1, int64(-1)
	var b []byte
	var emitErr error
	emit := func(unit int, row int64, id []byte) error {
		if emitErr != nil {
			return emitErr
		}
		switch {
		case unit < 0 || row < 0:
			emitErr = fmt.Errorf("match: key %q of unit %d row %d: negative", id, unit, row)
		case unit < lastUnit || unit == lastUnit && row <= lastRow:
			emitErr = fmt.Errorf("match: key %q of unit %d row %d after unit %d row %d: keys are in increasing order", id, unit, row, lastUnit, lastRow)
		case m.Stats.Keys%1024 == 0:
			emitErr = ctx.Err()
		}
		if emitErr != nil {
			return emitErr
		}
		lastUnit, lastRow = unit, row
		m.Stats.Keys++
		b = binary.AppendUvarint(b[:0], uint64(unit))
		b = binary.AppendUvarint(b, uint64(row))
		b = binary.AppendUvarint(b, uint64(len(id)))
		b = append(b, id...)
		emitErr = sp.writeRecord(id, b)
		return emitErr
	}
	if err := keys(emit); err != nil {
		return err
	}
	return emitErr // an error keys did not return
}

// matchPartition looks up in p the keys of the partition file keysPath,
// in their order, and writes the matches to out.
func (m *Matches) matchPartition(ctx context.Context, p *partition, keysPath string, out *matchFile) error {
	f, err := os.Open(keysPath)
	if err != nil {
		return fmt.Errorf("match: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	bad := func(err error) error {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("match: read %s: %w", keysPath, err)
	}
	d := &p.sides[0]
	var id, body []byte
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		unit, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return bad(err)
		}
		row, err := binary.ReadUvarint(r)
		if err != nil {
			return bad(err)
		}
		l, err := binary.ReadUvarint(r)
		if err != nil {
			return bad(err)
		}
		if l > 1<<30 {
			return bad(errors.New("bad record"))
		}
		id = slices.Grow(id[:0], int(l))[:l]
		if _, err := io.ReadFull(r, id); err != nil {
			return bad(err)
		}
		k, ok := d.index[string(id)]
		if !ok {
			continue
		}
		body = binary.AppendUvarint(body[:0], unit)
		body = binary.AppendUvarint(body, row)
		body = p.appendMatch(body, d, k)
		if err := out.write(int(unit), body); err != nil {
			return err
		}
		m.Stats.Matched++
	}
}

// appendMatch appends row i of side s of p to a match record: its
// ordinal, its number of checks, its id (length and bytes), its values and
// each check's values, copied as the partition holds them.
func (p *partition) appendMatch(b []byte, s *partSide, i int32) []byte {
	pr := &s.rows[i]
	b = binary.AppendUvarint(b, uint64(pr.ordinal))
	b = binary.AppendUvarint(b, uint64(pr.n))
	b = binary.AppendUvarint(b, uint64(len(pr.id)))
	b = append(b, pr.id...)
	// load checked every record: skipValues cannot fail.
	end, _ := skipValues(p.data, pr.off, p.nRew-1)
	b = append(b, p.data[pr.off:end]...)
	for _, c := range s.checks[pr.first : pr.first+pr.n] {
		end, _ := skipValues(p.data, c.off, p.nCheck-1)
		b = append(b, p.data[c.off:end]...)
	}
	return b
}

// merge merges the sorted runs of runs, starting at starts, into the
// matches file.
func (m *Matches) merge(ctx context.Context, runs *matchFile, starts []int64) error {
	out, err := createMatchFile(filepath.Join(m.tmp, "matches"), true)
	if err != nil {
		return err
	}
	var cursors []*matchReader
	for i, start := range starts {
		end := runs.size
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		if end > start {
			cursors = append(cursors, newMatchReader(runs.f, runs.path, start, end, 4<<10))
		}
	}
	n := 0
	err = kmerge.Merge(cursors, (*matchReader).next,
		func(a, b *matchReader) bool { return a.unit < b.unit || a.unit == b.unit && a.row < b.row },
		func(c *matchReader) error {
			if n++; n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			return out.write(c.unit, c.body)
		})
	if err == nil {
		err = out.flush()
	}
	if err != nil {
		out.f.Close()
		return err
	}
	m.Stats.DiskBytes += out.size
	m.f, m.path, m.spans = out.f, out.path, out.spans
	runs.f.Close()
	os.Remove(runs.path)
	return nil
}

// Unit returns the matches of unit u of the new run (none when u had no
// rows or none matched). The file's errors come from UnitMatches.Next.
func (m *Matches) Unit(u int) (*UnitMatches, error) {
	if m.f == nil {
		return nil, errors.New("match: unit read after close")
	}
	um := &UnitMatches{unit: u, nRew: m.nRew, nCheck: m.nCheck}
	i, ok := slices.BinarySearchFunc(m.spans, u, func(s unitSpan, u int) int { return cmp.Compare(s.unit, u) })
	if ok {
		s := m.spans[i]
		um.r = newMatchReader(m.f, m.path, s.off, s.end, 64<<10)
	}
	return um, nil
}

// Close removes the files of the match. It may be called more than once.
func (m *Matches) Close() error {
	var err error
	if m.f != nil {
		err = m.f.Close()
		m.f = nil
	}
	if m.tmp != "" {
		if e := os.RemoveAll(m.tmp); e != nil && err == nil {
			err = fmt.Errorf("match: %w", e)
		}
		m.tmp = ""
	}
	return err
}

// UnitMatches reads the matches of one unit of the new run.
type UnitMatches struct {
	unit         int
	r            *matchReader // nil: no match
	nRew, nCheck int
	row          Row
	vals         []Value
	checks       [][]Value
	cbuf         []Value
}

// Next returns the next row of the unit that has a match, in increasing
// row order, with its row of the result directory: Row.Ordinal is its
// place there, Row.Values and Row.Checks the columns of Config.Rewards and
// Config.Checks. The Row and its slices are valid until the next call of
// Next. It returns io.EOF after the unit's last match.
func (u *UnitMatches) Next() (row int64, r *Row, err error) {
	if u.r == nil {
		return 0, nil, io.EOF
	}
	ok, err := u.r.next()
	if err != nil {
		return 0, nil, err
	}
	if !ok {
		return 0, nil, io.EOF
	}
	if u.r.unit != u.unit {
		return 0, nil, u.r.errorf(fmt.Errorf("record of unit %d among those of unit %d", u.r.unit, u.unit))
	}
	b, off := u.r.body, u.r.rest
	var head [3]uint64 // ordinal, checks, id length
	for i := range head {
		v, k := binary.Uvarint(b[off:])
		if k <= 0 {
			return 0, nil, u.r.errorf(errors.New("bad record"))
		}
		head[i], off = v, off+k
	}
	ordinal, nChecks, idLen := head[0], head[1], head[2]
	if idLen > uint64(len(b)-off) || nChecks > uint64(len(b)) {
		return 0, nil, u.r.errorf(errors.New("bad record"))
	}
	id := b[off : off+int(idLen) : off+int(idLen)]
	off += int(idLen)
	if end, err := skipValues(b, off, u.nRew+int(nChecks)*u.nCheck); err != nil || end != len(b) {
		return 0, nil, u.r.errorf(errors.New("bad record"))
	}
	u.vals = u.vals[:0]
	for range u.nRew {
		var v Value
		v, off = valueAt(b, off)
		u.vals = append(u.vals, v)
	}
	u.cbuf, u.checks = u.cbuf[:0], u.checks[:0]
	for range int(nChecks) * u.nCheck {
		var v Value
		v, off = valueAt(b, off)
		u.cbuf = append(u.cbuf, v)
	}
	for k := range int(nChecks) {
		u.checks = append(u.checks, u.cbuf[k*u.nCheck:(k+1)*u.nCheck:(k+1)*u.nCheck])
	}
	u.row = Row{ID: id, Ordinal: int64(ordinal), Values: u.vals, Checks: u.checks}
	return u.r.row, &u.row, nil
}

// matchFile is a file of match records being written. A record is its
// body's length (uvarint) and its body: the new run's unit and row, then
// what partition.appendMatch appends.
type matchFile struct {
	path string
	f    *os.File
	w    *bufio.Writer
	size int64
	// index, when set, has write record where each unit's records lie in
	// spans: the records come sorted.
	index bool
	spans []unitSpan
	hdr   []byte
}

func createMatchFile(path string, index bool) (*matchFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("match: %w", err)
	}
	return &matchFile{path: path, f: f, w: bufio.NewWriterSize(f, 64<<10), index: index}, nil
}

// write appends the record body, of unit unit.
func (mf *matchFile) write(unit int, body []byte) error {
	if mf.index {
		if k := len(mf.spans); k == 0 || mf.spans[k-1].unit != unit {
			if k > 0 {
				mf.spans[k-1].end = mf.size
			}
			mf.spans = append(mf.spans, unitSpan{unit: unit, off: mf.size})
		}
	}
	mf.hdr = binary.AppendUvarint(mf.hdr[:0], uint64(len(body)))
	if _, err := mf.w.Write(mf.hdr); err != nil {
		return fmt.Errorf("match: write %s: %w", mf.path, err)
	}
	if _, err := mf.w.Write(body); err != nil {
		return fmt.Errorf("match: write %s: %w", mf.path, err)
	}
	mf.size += int64(len(mf.hdr) + len(body))
	return nil
}

// flush writes what is buffered; the file stays open, to be read.
func (mf *matchFile) flush() error {
	if err := mf.w.Flush(); err != nil {
		return fmt.Errorf("match: write %s: %w", mf.path, err)
	}
	if k := len(mf.spans); k > 0 {
		mf.spans[k-1].end = mf.size
	}
	return nil
}

// matchReader reads the match records of a section of a file: a sorted
// run being merged, or a unit's matches.
type matchReader struct {
	r    *bufio.Reader
	path string
	body []byte
	unit int
	row  int64
	rest int // the offset in body after unit and row
}

func newMatchReader(f *os.File, path string, off, end int64, bufSize int) *matchReader {
	size := int(min(int64(bufSize), max(end-off, 16)))
	return &matchReader{r: bufio.NewReaderSize(io.NewSectionReader(f, off, end-off), size), path: path}
}

func (c *matchReader) errorf(err error) error {
	return fmt.Errorf("match: read %s: %w", c.path, err)
}

// next reads the next record; false at the end of the section.
func (c *matchReader) next() (bool, error) {
	l, err := binary.ReadUvarint(c.r)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, c.errorf(err)
	}
	if l > 1<<31 {
		return false, c.errorf(errors.New("bad record"))
	}
	c.body = slices.Grow(c.body[:0], int(l))[:l]
	if _, err := io.ReadFull(c.r, c.body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return false, c.errorf(err)
	}
	unit, k := binary.Uvarint(c.body)
	if k <= 0 {
		return false, c.errorf(errors.New("bad record"))
	}
	row, k2 := binary.Uvarint(c.body[k:])
	if k2 <= 0 {
		return false, c.errorf(errors.New("bad record"))
	}
	c.unit, c.row, c.rest = int(unit), int64(row), k+k2
	return true, nil
}
