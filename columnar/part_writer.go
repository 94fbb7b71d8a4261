package columnar

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gavelhq/gavel/internal/atomicfile"
)

// defaultRowGroupRows is the row group (Parquet) and record batch (Arrow)
// length used when PartOptions.RowGroupRows is 0.
const defaultRowGroupRows = 16384

// Subdirectories of the output directory that hold the result parts.
const (
	rewardsDir    = "rewards"
	checksDir     = "checks"
	judgementsDir = "judgements"
)

// PartOptions configures a result part. The zero value is valid except for
// Format, which must be set.
type PartOptions struct {
	// Format is FormatParquet, FormatArrow or FormatJSONL.
	Format string
	// Keep names the kept metadata columns appended to the rewards table,
	// in order, each a nullable string. Names must be non-empty, distinct
	// and differ from the fixed rewards columns.
	Keep []string
	// Flags adds the columns of a run with flags: the rewards' flags
	// after input_hash, the checks' kind last.
	Flags bool
	// Turns adds the columns of a run that scores turns: the rewards'
	// turn_rewards and turns after those of flags, the checks' turn
	// last.
	Turns bool
	// RowGroupRows is the number of rows per Parquet row group and per
	// Arrow record batch; the last one of a file may be shorter
	// (0: 16384). It does not apply to JSON Lines.
	RowGroupRows int
	// RewardsOnly writes the rewards file alone, for a rescore that copies
	// the checks file as it is (put in place before Close).
	RewardsOnly bool
	// Judgements adds judgements/part-NNNNN.<ext>, the table of single
	// judgements (JudgementRow), written by runs where some rubric check
	// gets more than one judgement. Not with RewardsOnly.
	Judgements bool

	// alloc backs the Arrow builders and the Parquet writer; nil means
	// memory.DefaultAllocator. Tests set a checked allocator. It must
	// return zeroed memory, as the Go allocator does: the value slots of
	// null entries are written to Arrow files as they are.
	alloc memory.Allocator
}

// A Part writes one input unit's results: rewards/part-NNNNN.<ext> and
// checks/part-NNNNN.<ext>, with the columns of docs/reference/outputs.md
// in order. A column never null there is non-nullable in Arrow and
// REQUIRED in Parquet; the others, and every keep column, are nullable.
//
// Both files are written under temporary names in their final directories
// and renamed into place by Close, so a part file that exists under its
// final name is complete. The checks file is renamed before the rewards
// file: a rewards part under its final name implies its checks part.
//
// The bytes of each file depend only on the sequence of rows written, not
// on how they were split across Write calls: rows are buffered and cut into
// row groups (record batches) of exactly RowGroupRows rows, so at most one
// row group per table is held in memory.
//
// A Part is not safe for concurrent use. After a failed Write the Part is
// unusable; Close then returns the error and removes the temporary files.
type Part struct {
	rewards    *partFile
	checks     *partFile
	judgements *partFile // nil unless PartOptions.Judgements
	rw         encoder[RewardRow]
	cw         encoder[CheckRow]
	jw         encoder[JudgementRow]
	keep       int   // number of keep columns
	err        error // sticky: the first write error
	closed     bool  // Close or Abort was called
}

// encoder encodes the rows of one table into one file.
type encoder[R any] interface {
	write(rows []R) error
	// finish writes what is still buffered and the file's footer, if any,
	// to the partFile's buffered writer.
	finish() error
	// release frees buffered rows; it is called once, last.
	release()
}

// CreatePart starts rewards/part-NNNNN.<ext> and checks/part-NNNNN.<ext>
// under dir, creating the subdirectories, for the input unit numbered index
// (0-based). Call Close to put the files in place, or Abort to discard them.
func CreatePart(dir string, index int, opts PartOptions) (*Part, error) {
	if index < 0 {
		return nil, fmt.Errorf("create part %d: negative index", index)
	}
	switch opts.Format {
	case FormatParquet, FormatArrow, FormatJSONL:
	default:
		return nil, fmt.Errorf("create part %d: unknown format %q", index, opts.Format)
	}
	if opts.RowGroupRows < 0 {
		return nil, fmt.Errorf("create part %d: negative row group length %d", index, opts.RowGroupRows)
	}
	if opts.RowGroupRows == 0 {
		opts.RowGroupRows = defaultRowGroupRows
	}
	if opts.alloc == nil {
		opts.alloc = memory.DefaultAllocator
	}
	if opts.Judgements && opts.RewardsOnly {
		return nil, fmt.Errorf("create part %d: judgements with rewards only", index)
	}
	if err := checkKeep(opts.Keep, opts.Flags, opts.Turns); err != nil {
		return nil, fmt.Errorf("create part %d: %w", index, err)
	}

	name := PartName(index, opts.Format)
	p := &Part{keep: len(opts.Keep)}
	var err error
	if p.rewards, err = createPartFile(filepath.Join(dir, rewardsDir), name); err != nil {
		return nil, err
	}
	if !opts.RewardsOnly {
		if p.checks, err = createPartFile(filepath.Join(dir, checksDir), name); err != nil {
			p.rewards.remove()
			return nil, err
		}
	}
	if opts.Judgements {
		if p.judgements, err = createPartFile(filepath.Join(dir, judgementsDir), name); err != nil {
			p.rewards.remove()
			p.checks.remove()
			return nil, err
		}
	}

	rewards := rewardsTable(opts.Keep, opts.Flags, opts.Turns)
	switch opts.Format {
	case FormatJSONL:
		p.rw = newJSONLTable(p.rewards.bw, rewards)
		if p.checks != nil {
			p.cw = newJSONLTable(p.checks.bw, checksTable(opts.Flags, opts.Turns))
		}
		if p.judgements != nil {
			p.jw = newJSONLTable(p.judgements.bw, judgementColumns)
		}
	default:
		p.rw, err = newArrowTable(p.rewards.bw, rewards, opts)
		if err == nil && p.checks != nil {
			p.cw, err = newArrowTable(p.checks.bw, checksTable(opts.Flags, opts.Turns), opts)
		}
		if err == nil && p.judgements != nil {
			p.jw, err = newArrowTable(p.judgements.bw, judgementColumns, opts)
		}
	}
	if err != nil {
		p.Abort()
		return nil, fmt.Errorf("create part %d: %w", index, err)
	}
	return p, nil
}

// checkKeep reports an error when a keep column name is empty, repeated or
// the name of a fixed rewards column (flags among them in a run with
// flags).
func checkKeep(keep []string, flags, turns bool) error {
	seen := make(map[string]bool, len(rewardColumns)+len(keep)+1)
	for _, c := range rewardColumns {
		seen[c.name] = true
	}
	seen[ColumnFlags], seen[ColumnOutputHash] = flags, flags
	seen[ColumnTurnRewards], seen[ColumnTurns] = turns, turns
	for _, k := range keep {
		if k == "" {
			return errors.New("empty keep column name")
		}
		if seen[k] {
			return fmt.Errorf("keep column %q: duplicate column name", k)
		}
		seen[k] = true
	}
	return nil
}

// WriteRewards appends rows to the rewards table. A row's Keep holds at most
// one value per keep column; missing trailing values are written as null.
func (p *Part) WriteRewards(rows []RewardRow) error {
	if err := p.usable(); err != nil {
		return err
	}
	for i := range rows {
		if len(rows[i].Keep) > p.keep {
			p.err = fmt.Errorf("write %s: row %q has %d keep values for %d keep columns",
				p.rewards.final, rows[i].RolloutID, len(rows[i].Keep), p.keep)
			return p.err
		}
	}
	if err := p.rw.write(rows); err != nil {
		p.err = pathErr("write", p.rewards.final, err)
		return p.err
	}
	return nil
}

// WriteChecks appends rows to the checks table.
func (p *Part) WriteChecks(rows []CheckRow) error {
	if err := p.usable(); err != nil {
		return err
	}
	if p.checks == nil {
		return fmt.Errorf("write checks of %s: the part writes rewards only", p.rewards.final)
	}
	if err := p.cw.write(rows); err != nil {
		p.err = pathErr("write", p.checks.final, err)
		return p.err
	}
	return nil
}

// WriteJudgements appends rows to the judgements table.
func (p *Part) WriteJudgements(rows []JudgementRow) error {
	if err := p.usable(); err != nil {
		return err
	}
	if p.judgements == nil {
		return fmt.Errorf("write judgements of %s: the part has no judgements table", p.rewards.final)
	}
	if err := p.jw.write(rows); err != nil {
		p.err = pathErr("write", p.judgements.final, err)
		return p.err
	}
	return nil
}

func (p *Part) usable() error {
	if p.err != nil {
		return p.err
	}
	if p.closed {
		return fmt.Errorf("write %s: part is closed", p.rewards.final)
	}
	return nil
}

// Close writes the buffered rows and the footers, syncs the files and
// renames them to their final names, judgements first, then checks, then
// rewards, then syncs the directories. Only after Close returns nil are both part files in place
// and durable. When writing, syncing a file or renaming fails, nothing is
// left under the final or temporary names; when only the final directory
// sync fails, the files stay in place and the error is returned. Close
// after Close or Abort returns an error and does nothing.
func (p *Part) Close() error {
	if p.closed {
		return fmt.Errorf("close %s: part is closed", p.rewards.final)
	}
	if p.err != nil {
		p.Abort()
		return p.err
	}
	err := p.finish()
	p.closed = true
	p.rw.release()
	if p.checks == nil {
		if err == nil {
			err = p.rewards.rename()
		}
		if err != nil {
			p.rewards.remove()
			return err
		}
		return atomicfile.SyncDir(p.rewards.dir)
	}
	p.cw.release()
	if p.jw != nil {
		p.jw.release()
	}
	if err != nil {
		p.rewards.remove()
		p.checks.remove()
		p.judgements.remove()
		return err
	}
	if p.judgements != nil {
		if err := p.judgements.rename(); err != nil {
			p.rewards.remove()
			p.checks.remove()
			p.judgements.remove()
			return err
		}
	}
	if err := p.checks.rename(); err != nil {
		p.rewards.remove()
		p.checks.remove()
		if p.judgements != nil {
			os.Remove(p.judgements.final)
		}
		return err
	}
	if err := p.rewards.rename(); err != nil {
		p.rewards.remove()
		// Take the other files back out so that the part is absent as a
		// whole rather than half present.
		os.Remove(p.checks.final)
		if p.judgements != nil {
			os.Remove(p.judgements.final)
		}
		return err
	}
	// The renames must reach the disk before the part counts as complete.
	if p.judgements != nil {
		if err := atomicfile.SyncDir(p.judgements.dir); err != nil {
			return err
		}
	}
	if err := atomicfile.SyncDir(p.checks.dir); err != nil {
		return err
	}
	return atomicfile.SyncDir(p.rewards.dir)
}

// finish completes both files and closes them, without renaming.
func (p *Part) finish() error {
	if err := p.rw.finish(); err != nil {
		return pathErr("write", p.rewards.final, err)
	}
	if p.checks == nil {
		return p.rewards.close()
	}
	if err := p.cw.finish(); err != nil {
		return pathErr("write", p.checks.final, err)
	}
	if p.judgements != nil {
		if err := p.jw.finish(); err != nil {
			return pathErr("write", p.judgements.final, err)
		}
	}
	if err := p.rewards.close(); err != nil {
		return err
	}
	if err := p.checks.close(); err != nil {
		return err
	}
	if p.judgements != nil {
		return p.judgements.close()
	}
	return nil
}

// Abort discards the part: it frees the buffered rows and removes the
// temporary files. It does nothing after Close or Abort, so it can be
// deferred right after CreatePart.
func (p *Part) Abort() {
	if p.closed {
		return
	}
	p.closed = true
	if p.rw != nil {
		p.rw.release()
	}
	if p.cw != nil {
		p.cw.release()
	}
	if p.jw != nil {
		p.jw.release()
	}
	p.rewards.remove()
	p.checks.remove()
	p.judgements.remove()
}

// PartName returns the file name of the part for input unit index in
// format, such as "part-00042.parquet". The number has five digits, more
// when index is 100000 or above.
func PartName(index int, format string) string {
	return fmt.Sprintf("part-%05d.%s", index, format)
}

// partFile is one result file being written under a temporary name.
type partFile struct {
	dir   string
	final string // path under the final name
	f     *atomicfile.File
	bw    *bufio.Writer
}

// createPartFile creates dir and, in it, the temporary file for name. A
// temporary file left by an earlier, interrupted run is truncated.
func createPartFile(dir, name string) (*partFile, error) {
	pf := &partFile{dir: dir, final: filepath.Join(dir, name)}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, pathErr("create", dir, err)
	}
	f, err := atomicfile.Create(pf.final, atomicfile.Options{Durable: true})
	if err != nil {
		return nil, err
	}
	pf.f = f
	pf.bw = bufio.NewWriterSize(f, 1<<20)
	return pf, nil
}

// close flushes, syncs and closes the temporary file.
func (pf *partFile) close() error {
	if err := pf.bw.Flush(); err != nil {
		pf.f.Abort()
		return pathErr("write", pf.final, err)
	}
	return pf.f.Close()
}

// rename moves the closed temporary file to its final name.
func (pf *partFile) rename() error { return pf.f.Rename() }

// remove closes the temporary file, if open, and removes it. Errors are
// ignored: this is cleanup after a failure or an abort.
func (pf *partFile) remove() {
	if pf != nil {
		pf.f.Abort()
	}
}

// pathErr wraps err as "op path: err". An *os.PathError, which would name
// a path again, is replaced by its underlying error.
func pathErr(op, path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}
