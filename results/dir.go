package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/internal/atomicfile"
)

// JudgementsDir is the subdirectory of the judgements parts, written by
// runs where some rubric check gets more than one judgement.
const JudgementsDir = "judgements"

// RemoveUnit removes a unit's part files, in every format, and statistics.
func RemoveUnit(dir string, unit int) error {
	for _, sub := range []string{"rewards", "checks", JudgementsDir} {
		for _, f := range []string{columnar.FormatParquet, columnar.FormatArrow, columnar.FormatJSONL} {
			if err := RemoveIfExists(filepath.Join(dir, sub, columnar.PartName(unit, f))); err != nil {
				return err
			}
		}
	}
	if err := RemoveIfExists(IDsPath(dir, unit)); err != nil {
		return err
	}
	return RemoveIfExists(StatsPath(dir, unit))
}

func RemoveIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("clear output directory: %w", err)
	}
	return nil
}

// ClearOut removes the results of an earlier run in dir: parts, their
// statistics, shard files, summary and manifest.
func ClearOut(dir string) error {
	for _, sub := range []string{"rewards", "checks", JudgementsDir, StatsDir, ShardsDir} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read output directory: %w", err)
		}
		for _, e := range entries {
			n := e.Name()
			if strings.HasPrefix(n, "part-") || strings.HasPrefix(n, ".part-") || strings.HasPrefix(n, "shard-") {
				if err := RemoveIfExists(filepath.Join(dir, sub, n)); err != nil {
					return err
				}
			}
		}
	}
	for _, f := range []string{SummaryFile, ManifestFile} {
		if err := RemoveIfExists(filepath.Join(dir, f)); err != nil {
			return err
		}
	}
	return nil
}

func WriteSuccess(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, SuccessFile), nil, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, SuccessFile), err)
	}
	return nil
}

// WriteJSON writes v as indented JSON to path, atomically; durable for
// the files a run's completion is read from (manifest and summary).
func WriteJSON(path string, v any, durable bool) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	data = append(data, '\n')
	return atomicfile.Write(path, atomicfile.Options{Perm: 0o644, Durable: durable}, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
