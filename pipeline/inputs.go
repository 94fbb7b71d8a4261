// Package pipeline runs a grading job: input units are read in batches,
// graded by a bounded pool of workers, put back in input order and written
// as result parts, with a summary and a manifest.
package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/gavelhq/gavel/columnar"
)

// Stdin is the input name that reads JSON Lines from standard input.
const Stdin = "-"

// Unit is one input unit, graded into one part: a file, standard input, or
// a range of row groups of a large Parquet file.
type Unit struct {
	// Index numbers the unit in input order; it names the unit's parts.
	Index int
	// Path is the file path as given or as found under a given directory.
	Path string
	// Format is the input format (columnar.InputParquet, ...).
	Format string
	// Size is the file's size in bytes (-1 for standard input).
	Size int64
	// FirstRowGroup and RowGroups give the row-group range of a Parquet
	// unit; RowGroups 0 means the whole file.
	FirstRowGroup int
	RowGroups     int

	// input describes the unit's file; it is nil for standard input and
	// when describing failed, with err.
	input *columnar.Input
	err   error
	rows  int64 // rows of the unit; -1 when unknown
}

// ConfigError is a configuration problem found before anything is graded:
// nothing is written. Msg says what is wrong without a command line's
// spelling of it; Field names the Config field at fault ("Format", "Keep",
// "Shard", "Resume", "TasksFile", "Inputs"; "" when none), for a command to
// word the error with its own flag names and hints.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return e.Msg }

// Inputs expands the command-line inputs into units, in order: a file as
// given; a directory's supported files, recursively, in lexicographic path
// order (other files are skipped and returned in skipped); a glob's matches
// in lexicographic order; "-" for standard input. Files are typed by
// columnar.InputFormatFrom with from, the harness format .json files are
// read in ("" for none). A named file of an unsupported type, a missing
// path or a glob matching nothing is a ConfigError.
func Inputs(args []string, from string) (units []Unit, skipped []string, err error) {
	add := func(path string, size int64) {
		format, _ := columnar.InputFormatFrom(path, from)
		units = append(units, Unit{Index: len(units), Path: path, Format: format, Size: size})
	}
	for _, arg := range args {
		if arg == Stdin {
			format := columnar.InputJSONL
			if from != "" {
				format = from
			}
			units = append(units, Unit{Index: len(units), Path: Stdin, Format: format, Size: -1})
			continue
		}
		paths := []string{arg}
		if _, statErr := os.Stat(arg); statErr != nil && hasMeta(arg) {
			matches, err := filepath.Glob(arg)
			if err != nil {
				return nil, nil, &ConfigError{Msg: fmt.Sprintf("input %q: bad glob: %v", arg, err)}
			}
			if len(matches) == 0 {
				return nil, nil, &ConfigError{Msg: fmt.Sprintf("input %q: no file matches", arg)}
			}
			sort.Strings(matches)
			paths = matches
		}
		for _, p := range paths {
			info, err := os.Stat(p)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil, nil, &ConfigError{Msg: fmt.Sprintf("input %s: no such file or directory", p)}
				}
				return nil, nil, &ConfigError{Msg: fmt.Sprintf("input %s: %v", p, err)}
			}
			if !info.IsDir() {
				if _, ok := columnar.InputFormatFrom(p, from); !ok {
					return nil, nil, &ConfigError{Field: "Inputs", Msg: fmt.Sprintf("input %s: unsupported file type (want a .parquet, .jsonl, .ndjson, .jsonl.zst, .jsonl.gz, .arrow, .feather or .eval file, a .json log with --from, a directory, a glob or -)", p)}
				}
				add(p, info.Size())
				continue
			}
			var files []string
			sizes := map[string]int64{}
			err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() {
					return nil
				}
				if _, ok := columnar.InputFormatFrom(path, from); !ok {
					skipped = append(skipped, path)
					return nil
				}
				fi, err := d.Info()
				if err != nil {
					return err
				}
				files = append(files, path)
				sizes[path] = fi.Size()
				return nil
			})
			if err != nil {
				return nil, nil, fmt.Errorf("list %s: %w", p, err)
			}
			sort.Strings(files)
			for _, f := range files {
				add(f, sizes[f])
			}
		}
	}
	if len(units) == 0 {
		return nil, skipped, &ConfigError{Field: "Inputs", Msg: "no input files"}
	}
	return units, skipped, nil
}

func hasMeta(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			return true
		}
	}
	return false
}
