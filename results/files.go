package results

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/internal/atomicfile"
)

// SameDir reports whether a and b name the same directory.
func SameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// CopyFile copies src to dst byte for byte, written under another name
// and renamed into place.
func CopyFile(src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dst), err)
	}
	return atomicfile.Write(dst, atomicfile.Options{Perm: 0o644}, func(w io.Writer) error {
		_, err := io.Copy(w, f)
		return err
	})
}

// DecodeReward decodes the cells of a rewards row, read as
// columnar.RewardColumns then the kept columns: the one decoding of the
// rewards a rescore rewrites and --reuse takes from an earlier run.
func DecodeReward(dec *columnar.ResultDecoder[columnar.RewardRow], c []columnar.Cell) (columnar.RewardRow, error) {
	var rw columnar.RewardRow
	err := dec.Decode(c, &rw)
	if err == nil && rw.ChecksTotal < 0 {
		err = fmt.Errorf("checks_total %d", rw.ChecksTotal)
	}
	return rw, err
}
