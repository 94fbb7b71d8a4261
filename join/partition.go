package join

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"unsafe"

	"github.com/gavelhq/gavel/columnar"
)

func osTempDir() string { return os.TempDir() }

// Record tags of a partition file: which side, which table.
const (
	tagLeftReward byte = iota
	tagLeftCheck
	tagRightReward
	tagRightCheck
)

// bytesPerRow is the estimate of a rollout's bytes in memory (its rewards
// values, a few checks, the index) that sizes the partitions.
const bytesPerRow = 512

// maxPartitions bounds the partition files open at once while spilling
// (each with a 16 KiB buffer).
const maxPartitions = 1024

// partitionCount returns the number of partitions that spreads about rows
// rows (-1 when unknown) so that one partition's fit in budget bytes.
func partitionCount(rows, budget int64) int {
	n := int64(1)
	if rows > 0 {
		n = (rows*bytesPerRow + budget - 1) / budget
	}
	return int(max(1, min(n, maxPartitions)))
}

// partitioned spills the rows left on both sides (about rows of them, -1
// when unknown) into partitions and joins them one at a time.
//
// A partition file holds records (spill.write): a tag byte (side and
// table), for a rewards row its ordinal (uvarint), then each value: its
// kind byte and, unless null, its length (uvarint) and bytes. Each side's
// rewards rows are written before its check rows, each in the order read,
// so a partition keeps the order of each side.
func (j *joiner) partitioned(ctx context.Context, rows int64) error {
	n := partitionCount(rows, j.cfg.MemoryBudget)
	dir, err := os.MkdirTemp(j.cfg.TempDir, "gavel-join-")
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	defer os.RemoveAll(dir)
	sp, err := newSpill(dir, "p", n, maphash.MakeSeed())
	if err != nil {
		return err
	}
	defer sp.close()
	for i, s := range j.sides {
		if err := j.spillSide(ctx, sp, s, byte(2*i)); err != nil {
			return err
		}
	}
	if err := sp.finish(); err != nil {
		return err
	}
	j.stats.Partitions = n
	j.stats.DiskBytes = sp.bytes
	var p partition
	for i := range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.load(sp.path(i), len(j.cfg.Rewards), len(j.cfg.Checks)); err != nil {
			return fmt.Errorf("join: %w", err)
		}
		os.Remove(sp.path(i))
		if err := j.joinPartition(&p, i); err != nil {
			return err
		}
	}
	j.flushProgress()
	return nil
}

func (j *joiner) flushProgress() {
	if j.cfg.Progress != nil && j.reported > 0 {
		j.cfg.Progress.Add(int(j.reported))
		j.reported = 0
	}
}

// spill is the partition files being written: records sent to a file by
// a hash of their rollout id. Two spills made with the same seed and
// number of files send an id to the same partition.
type spill struct {
	dir, prefix string
	files       []*os.File
	w           []*bufio.Writer
	seed        maphash.Seed
	buf         []byte
	bytes       int64
}

// newSpill creates n partition files in dir, named prefix and the
// partition's number.
func newSpill(dir, prefix string, n int, seed maphash.Seed) (*spill, error) {
	sp := &spill{dir: dir, prefix: prefix, files: make([]*os.File, n), w: make([]*bufio.Writer, n), seed: seed}
	for i := range sp.files {
		f, err := os.Create(sp.path(i))
		if err != nil {
			sp.close()
			return nil, fmt.Errorf("join: %w", err)
		}
		sp.files[i] = f
		sp.w[i] = bufio.NewWriterSize(f, 16<<10)
	}
	return sp, nil
}

// path is the file of partition i.
func (sp *spill) path(i int) string {
	return filepath.Join(sp.dir, fmt.Sprintf("%s%05d", sp.prefix, i))
}

// finish flushes and closes the partition files.
func (sp *spill) finish() error {
	for i, w := range sp.w {
		if err := w.Flush(); err != nil {
			return fmt.Errorf("join: write partition: %w", err)
		}
		if err := sp.files[i].Close(); err != nil {
			return fmt.Errorf("join: write partition: %w", err)
		}
		sp.files[i] = nil
	}
	return nil
}

func (sp *spill) close() {
	for _, f := range sp.files {
		if f != nil {
			f.Close()
		}
	}
}

// write appends one row record to the partition of id.
func (sp *spill) write(id []byte, tag byte, ordinal int64, vals []Value) error {
	b := append(sp.buf[:0], tag)
	if tag == tagLeftReward || tag == tagRightReward {
		b = binary.AppendUvarint(b, uint64(ordinal))
	}
	b = appendValues(b, vals)
	sp.buf = b
	return sp.writeRecord(id, b)
}

// writeRecord appends the record b to the partition of id.
func (sp *spill) writeRecord(id, b []byte) error {
	p := maphash.Bytes(sp.seed, id) % uint64(len(sp.w))
	sp.bytes += int64(len(b))
	if _, err := sp.w[p].Write(b); err != nil {
		return fmt.Errorf("join: write partition: %w", err)
	}
	return nil
}

// appendValues appends the encoding of vals to b: each value's kind byte
// and, unless null, its length (uvarint) and bytes.
func appendValues(b []byte, vals []Value) []byte {
	for _, v := range vals {
		b = append(b, byte(v.Kind))
		if !v.Null() {
			b = binary.AppendUvarint(b, uint64(len(v.Data)))
			b = append(b, v.Data...)
		}
	}
	return b
}

// spillSide writes the rows left on side s: its rewards rows, then the
// checks read ahead for a row that did not line up, then the check rows
// left.
func (j *joiner) spillSide(ctx context.Context, sp *spill, s *side, tag byte) error {
	var firstID []byte
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		v, err := s.nextReward()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		// The rewards values but the ones the caller asked for are left
		// out, and checks_total with them.
		vals := append(s.spillVals[:0], v[colID])
		vals = append(vals, v[rewardsFixed:]...)
		s.spillVals = vals
		if err := sp.write(v[colID].Data, tag, s.ordinal, vals); err != nil {
			return err
		}
		if n == 0 && len(s.pending) > 0 {
			firstID = slices.Clone(v[colID].Data)
		}
		s.ordinal++
		j.progress(1)
	}
	if s.checks == nil {
		return nil
	}
	// The checks read ahead belong to the row that did not line up, the
	// first spilled; they lack its id.
	for _, c := range s.pending {
		vals := append(s.valsBack[:0:0], Value{Kind: columnar.CellString, Data: firstID})
		vals = append(vals, c...)
		if err := sp.write(firstID, tag+1, 0, vals); err != nil {
			return err
		}
	}
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		v, err := s.checks.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return s.errorf(err)
		}
		if err := sp.write(v[0].Data, tag+1, 0, v); err != nil {
			return err
		}
	}
}

// partition is one partition file loaded in memory: both sides' rows
// indexed by id, with their checks. Ids and values point into data.
type partition struct {
	data   []byte
	nRew   int // values in a rewards record, the id first
	nCheck int // values in a check record, the id first
	sides  [2]partSide
	vals   []Value
	checks [][]Value
	cbuf   []Value
}

type partSide struct {
	rows    []partRow
	index   map[string]int32
	matched []bool
	// checks holds the offsets of the check records, grouped by row in
	// the order read: a row's are checks[first : first+n].
	checks []checkRef
	dups   int64
}

type partRow struct {
	ordinal  int64
	id       []byte
	off      int // of the values after the id
	first, n int32
}

type checkRef struct {
	row int32
	off int // of the values after the id
}

// load reads the partition file at path.
func (p *partition) load(path string, nRew, nCheck int) error {
	// Let go of the previous partition (the index keys point into its
	// data) before reading the next.
	p.data = nil
	for i := range p.sides {
		s := &p.sides[i]
		s.rows, s.checks, s.dups = s.rows[:0], s.checks[:0], 0
		s.matched = s.matched[:0]
		s.index = map[string]int32{}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	p.data, p.nRew, p.nCheck = data, nRew+1, nCheck+1
	// Rewards first, then checks: a check finds its row by id.
	for pass := range 2 {
		for off := 0; off < len(data); {
			tag := data[off]
			off++
			s := &p.sides[tag>>1]
			isCheck := tag&1 == 1
			var ordinal uint64
			if !isCheck {
				var k int
				ordinal, k = binary.Uvarint(data[off:])
				if k <= 0 {
					return fmt.Errorf("partition %s: bad record at %d", path, off)
				}
				off += k
			}
			idOff := off
			nv := p.nRew
			if isCheck {
				nv = p.nCheck
			}
			end, err := skipValues(data, off, nv)
			if err != nil {
				return fmt.Errorf("partition %s: %w", path, err)
			}
			id, after := valueAt(data, idOff)
			off = end
			switch {
			case pass == 0 && !isCheck:
				key := unsafe.String(unsafe.SliceData(id.Data), len(id.Data))
				if _, dup := s.index[key]; dup {
					s.dups++
					continue
				}
				s.index[key] = int32(len(s.rows))
				s.rows = append(s.rows, partRow{ordinal: int64(ordinal), id: id.Data, off: after})
			case pass == 1 && isCheck:
				key := unsafe.String(unsafe.SliceData(id.Data), len(id.Data))
				if r, ok := s.index[key]; ok {
					s.checks = append(s.checks, checkRef{row: r, off: after})
				}
			}
		}
	}
	for i := range p.sides {
		s := &p.sides[i]
		slices.SortStableFunc(s.checks, func(a, b checkRef) int { return int(a.row) - int(b.row) })
		for k := range s.checks {
			r := &s.rows[s.checks[k].row]
			if r.n == 0 {
				r.first = int32(k)
			}
			r.n++
		}
		s.matched = slices.Grow(s.matched, len(s.rows))[:len(s.rows)]
		clear(s.matched)
	}
	return nil
}

// skipValues returns the offset after n values starting at off.
func skipValues(data []byte, off, n int) (int, error) {
	for range n {
		if off >= len(data) {
			return 0, errors.New("record cut short")
		}
		kind := data[off]
		off++
		if kind == 0 {
			continue
		}
		l, k := binary.Uvarint(data[off:])
		if k <= 0 || off+k+int(l) > len(data) {
			return 0, errors.New("record cut short")
		}
		off += k + int(l)
	}
	return off, nil
}

// valueAt decodes the value at off and returns it with the offset after it.
func valueAt(data []byte, off int) (Value, int) {
	kind := data[off]
	off++
	if kind == 0 {
		return Value{}, off
	}
	l, k := binary.Uvarint(data[off:])
	off += k
	return Value{Kind: columnar.CellKind(kind), Data: data[off : off+int(l) : off+int(l)]}, off + int(l)
}

// row fills r with row i of side s.
func (p *partition) row(s *partSide, i int32, r *Row, vals []Value, checks [][]Value, cbuf []Value) ([]Value, [][]Value, []Value) {
	pr := &s.rows[i]
	vals = vals[:0]
	off := pr.off
	for range p.nRew - 1 {
		var v Value
		v, off = valueAt(p.data, off)
		vals = append(vals, v)
	}
	checks, cbuf = checks[:0], cbuf[:0]
	w := p.nCheck - 1
	for _, c := range s.checks[pr.first : pr.first+pr.n] {
		off := c.off
		for range w {
			var v Value
			v, off = valueAt(p.data, off)
			cbuf = append(cbuf, v)
		}
	}
	for k := range int(pr.n) {
		checks = append(checks, cbuf[k*w:(k+1)*w:(k+1)*w])
	}
	*r = Row{ID: pr.id, Ordinal: pr.ordinal, Values: vals, Checks: checks}
	return vals, checks, cbuf
}

// joinPartition hands the pairs of partition p (number i) to the caller.
func (j *joiner) joinPartition(p *partition, i int) error {
	l, r := &p.sides[0], &p.sides[1]
	j.stats.LeftRows += int64(len(l.rows))
	j.stats.RightRows += int64(len(r.rows))
	j.stats.LeftDuplicates += l.dups
	j.stats.RightDuplicates += r.dups
	var left, right Row
	var lv, rv, lc, rc []Value
	var lch, rch [][]Value
	pair := Pair{Partition: i}
	for k := range l.rows {
		lv, lch, lc = p.row(l, int32(k), &left, lv, lch, lc)
		pair.Left, pair.Right = &left, nil
		key := unsafe.String(unsafe.SliceData(l.rows[k].id), len(l.rows[k].id))
		if m, ok := r.index[key]; ok {
			r.matched[m] = true
			rv, rch, rc = p.row(r, m, &right, rv, rch, rc)
			pair.Right = &right
		}
		if err := j.fn(&pair); err != nil {
			return err
		}
		j.progress(1)
	}
	for k := range r.rows {
		if r.matched[k] {
			j.progress(1)
			continue
		}
		rv, rch, rc = p.row(r, int32(k), &right, rv, rch, rc)
		pair.Left, pair.Right = nil, &right
		if err := j.fn(&pair); err != nil {
			return err
		}
		j.progress(1)
	}
	j.progress(l.dups + r.dups)
	return nil
}
