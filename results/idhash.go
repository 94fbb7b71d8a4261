package results

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/gavelhq/gavel/internal/atomicfile"
	"github.com/gavelhq/gavel/internal/kmerge"
	"github.com/gavelhq/gavel/internal/mix"
)

// Duplicate rollout ids are found from 64-bit hashes of the ids, which the
// writer computes as it writes each rewards part and stores beside the
// part's statistics (_stats/part-NNNNN.ids): little-endian uint64, in sorted
// runs of idRunLen hashes (the last run shorter). At the end of a run the
// runs of every part are merged, so finding duplicates costs one pass over
// 8 bytes a rollout instead of reading every rewards part back, and holds
// one run (1 MiB) while writing and a 4 KiB buffer per run (32 KiB per
// million rollouts) while merging, instead of a set of every id. Only
// hashes that repeat send the ids themselves to be compared
// (FindDuplicates). A complete part without its hash file (written by an
// earlier version) has its ids read back and hashed instead.
var idRunLen int64 = 1 << 17 // a variable so that tests can make runs short

// SetIDRunLen sets the number of hashes in a sorted run of the id hash
// files and returns a function that restores it: for tests, in this
// package and others, that make runs far shorter than a part.
func SetIDRunLen(n int64) (restore func()) {
	old := idRunLen
	idRunLen = n
	return func() { idRunLen = old }
}

func IDsPath(dir string, unit int) string {
	return filepath.Join(dir, StatsDir, fmt.Sprintf("part-%05d.ids", unit))
}

// hashID is a 64-bit hash of a rollout id, the same on every machine and in
// every process (the hash files outlive the process). It need not resist
// attack: a collision only costs a comparison of the ids.
func hashID[T string | []byte](s T) uint64 {
	const m = mix.M
	h := uint64(len(s))*m ^ 0x243f6a8885a308d3
	for len(s) >= 8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h = (h ^ w) * m
		h ^= h >> 32
		s = s[8:]
	}
	var w uint64
	for i := len(s) - 1; i >= 0; i-- {
		w = w<<8 | uint64(s[i])
	}
	return mix.Finalize((h ^ w) * m)
}

// IDWriter gathers the id hashes of the part being written and writes its
// hash file.
type IDWriter struct {
	dir  string
	unit int
	buf  []uint64         // the current run, unsorted
	f    *atomicfile.File // the hash file, once a run has been written
	w    *bufio.Writer
}

func (iw *IDWriter) Reset(dir string, unit int) {
	iw.Abort()
	iw.dir, iw.unit, iw.buf = dir, unit, iw.buf[:0]
	if iw.buf == nil {
		iw.buf = make([]uint64, 0, min(idRunLen, 1<<17))
	}
}

func (iw *IDWriter) Add(id string) error {
	iw.buf = append(iw.buf, hashID(id))
	if int64(len(iw.buf)) == idRunLen {
		return iw.flush()
	}
	return nil
}

// flush sorts the current run and appends it to the temporary file.
func (iw *IDWriter) flush() error {
	if iw.f == nil {
		dir := filepath.Join(iw.dir, StatsDir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		f, err := atomicfile.Create(IDsPath(iw.dir, iw.unit), atomicfile.Options{Perm: 0o644})
		if err != nil {
			return fmt.Errorf("write rollout id hashes: %w", err)
		}
		iw.f = f
		if iw.w == nil {
			iw.w = bufio.NewWriterSize(f, 64<<10)
		} else {
			iw.w.Reset(f)
		}
	}
	slices.Sort(iw.buf)
	var b [8]byte
	for _, h := range iw.buf {
		binary.LittleEndian.PutUint64(b[:], h)
		iw.w.Write(b[:])
	}
	iw.buf = iw.buf[:0]
	if err := iw.w.Flush(); err != nil {
		return err
	}
	return nil
}

// finish writes the part's hash file under its final name.
func (iw *IDWriter) Finish() error {
	if len(iw.buf) > 0 || iw.f == nil {
		if err := iw.flush(); err != nil {
			return err
		}
	}
	err := iw.f.Commit()
	iw.f = nil
	if err != nil {
		return fmt.Errorf("write rollout id hashes: %w", err)
	}
	return nil
}

// abort removes the temporary file of a part that will not be completed.
func (iw *IDWriter) Abort() {
	if iw.f != nil {
		iw.f.Abort()
		iw.f = nil
	}
	iw.buf = iw.buf[:0]
}

// idRun is one sorted run of hashes being merged.
type idRun struct {
	cur  uint64
	r    *bufio.Reader
	left int64 // hashes after cur
	mem  []uint64
}

func (ru *idRun) next() (bool, error) {
	if ru.left == 0 {
		return false, nil
	}
	ru.left--
	if ru.r == nil {
		ru.cur, ru.mem = ru.mem[0], ru.mem[1:]
		return true, nil
	}
	var b [8]byte
	if _, err := io.ReadFull(ru.r, b[:]); err != nil {
		return false, err
	}
	ru.cur = binary.LittleEndian.Uint64(b[:])
	return true, nil
}

// repeatedHashes returns the id hashes that occur more than once in the
// rewards parts of units, whose rows are given.
func repeatedHashes(dir, format string, units []int, rows []int64) (map[uint64]bool, error) {
	var runs []*idRun
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for k, u := range units {
		f, err := os.Open(IDsPath(dir, u))
		var size int64
		if err == nil {
			var st os.FileInfo
			if st, err = f.Stat(); err == nil {
				size = st.Size()
			}
			if err != nil || size != 8*rows[k] {
				f.Close()
				err = errors.New("hash file does not match its part")
			}
		}
		if err != nil {
			// No usable hash file: hash the part's ids as one run.
			var mem []uint64
			if err := eachRolloutID(dir, format, []int{u}, func(id []byte) { mem = append(mem, hashID(id)) }); err != nil {
				return nil, err
			}
			slices.Sort(mem)
			runs = append(runs, &idRun{mem: mem, left: int64(len(mem))})
			continue
		}
		files = append(files, f)
		n := size / 8
		for off := int64(0); off < n; off += idRunLen {
			m := min(idRunLen, n-off)
			sr := io.NewSectionReader(f, 8*off, 8*m)
			runs = append(runs, &idRun{r: bufio.NewReaderSize(sr, 4096), left: m})
		}
	}
	repeated := map[uint64]bool{}
	var prev uint64
	first := true
	err := kmerge.Merge(runs, (*idRun).next,
		func(a, b *idRun) bool { return a.cur < b.cur },
		func(ru *idRun) error {
			if !first && ru.cur == prev {
				repeated[ru.cur] = true
			}
			prev, first = ru.cur, false
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("read rollout id hashes: %w", err)
	}
	return repeated, nil
}
