// Package inputs is the input contract of a run: the inputs named on the
// command line expanded into files and objects (Inputs), each described
// once and cut into units (Describe, Unit), shards of units (Shard), the
// tasks table (Task, LoadTasks), the ids of rows, the input hash of a
// rollout (InputHasher), standard input that a run can stop reading
// (StopReader), and the configuration error of a run that has not
// started (ConfigError).
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package inputs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/internal/store"
)

// Stdin is the input name that reads standard input: JSON Lines, or a
// log in the harness format of Config.From.
const Stdin = "-"

// Unit is one input unit, graded into one part: a file, standard input, or
// a range of row groups of a large Parquet file.
type Unit struct {
	// Index numbers the unit in input order; it names the unit's parts.
	Index int
	// Path is the file path as given or as found under a given directory;
	// for an object in object storage, its URL without user information
	// and query (store.Redact).
	Path string
	// ETag is the ETag of an object in object storage as the run found
	// it ("" for a local file).
	ETag string
	// Format is the input format (columnar.InputParquet, ...).
	Format string
	// Size is the file's size in bytes (-1 for standard input).
	Size int64
	// FirstRowGroup and RowGroups give the row-group range of a Parquet
	// unit; RowGroups 0 means the whole file.
	FirstRowGroup int
	RowGroups     int

	// input describes the unit's file or standard input; it is nil when
	// describing failed, with err.
	input *columnar.Input
	err   error
	rows  int64 // rows of the unit; -1 when unknown
	// src is the URL an object is opened with (with its query: bucket
	// options or a presigned URL's signature); "" for a local file.
	src string
	// spool is the temporary file standard input was copied into (an
	// .eval archive needs random access), removed when the run ends; ""
	// for none.
	spool string
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
// in lexicographic order; "-" for standard input. A URL of object storage
// (s3://, gs://, azblob://, file://, https://) is expanded by
// store.Location.Expand: an object, or the objects under a prefix or
// matching a glob, in lexicographic key order, unsupported ones skipped
// as in a directory. Files are typed by
// columnar.Resolve with from, the harness format .json files are
// read in ("" for none). A named file of an unsupported type, a missing
// path or a glob matching nothing is a ConfigError.
func Inputs(args []string, from string) (units []Unit, skipped []string, err error) {
	add := func(path string, size int64) {
		format, _ := columnar.Resolve(columnar.Source{Name: path, From: from})
		units = append(units, Unit{Index: len(units), Path: path, Format: format, Size: size})
	}
	for _, arg := range args {
		if arg == Stdin {
			format, _ := columnar.Resolve(columnar.Source{Stdin: true, From: from})
			units = append(units, Unit{Index: len(units), Path: Stdin, Format: format, Size: -1})
			continue
		}
		if store.IsURL(arg) {
			objs, err := expandURL(arg)
			if err != nil {
				return nil, nil, err
			}
			for _, o := range objs {
				name := o.name
				if _, ok := columnar.Resolve(columnar.Source{Name: name, From: from}); !ok {
					if len(objs) == 1 && !strings.HasSuffix(arg, "/") && !hasMeta(arg) {
						return nil, nil, &ConfigError{Field: "Inputs", Msg: fmt.Sprintf("input %s: unsupported file type (want a %s object, a .json log with --from, a prefix or a glob)", name, inputTypes)}
					}
					skipped = append(skipped, name)
					continue
				}
				add(name, o.size)
				units[len(units)-1].src = o.src
			}
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
				if _, ok := columnar.Resolve(columnar.Source{Name: p, From: from}); !ok {
					return nil, nil, &ConfigError{Field: "Inputs", Msg: fmt.Sprintf("input %s: unsupported file type (want a %s file, a .json log with --from, a directory, a glob or -)", p, inputTypes)}
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
				if _, ok := columnar.Resolve(columnar.Source{Name: path, From: from}); !ok {
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
		return nil, skipped, &ConfigError{Field: "Inputs", Msg: noInputs(args, skipped)}
	}
	return units, skipped, nil
}

// inputTypes lists the file types read as inputs whatever --from.
const inputTypes = ".parquet, .jsonl, .ndjson, .jsonl.zst, .jsonl.gz, .arrow, .feather or .eval"

// noInputs words the error of inputs args (directories, prefixes and
// globs of object storage: a file given is read or refused) that hold no
// file to read: which, how many files were skipped and why (by
// skipReason), and what is read.
func noInputs(args, skipped []string) string {
	if len(args) == 0 {
		return "no input files given"
	}
	var b strings.Builder
	b.WriteString("no input files in ")
	for i, a := range args {
		switch {
		case i == 0:
		case i == len(args)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(a)
	}
	if len(skipped) == 0 {
		b.WriteString(" (no files there)")
	} else {
		counts := map[string]int{}
		var reasons []string
		for _, p := range skipped {
			r := skipReason(p)
			if counts[r] == 0 {
				reasons = append(reasons, r)
			}
			counts[r]++
		}
		sort.Slice(reasons, func(i, j int) bool {
			if counts[reasons[i]] != counts[reasons[j]] {
				return counts[reasons[i]] > counts[reasons[j]]
			}
			return reasons[i] < reasons[j]
		})
		noun := "files"
		if len(skipped) == 1 {
			noun = "file"
		}
		fmt.Fprintf(&b, " (%d %s skipped: ", len(skipped), noun)
		for i, r := range reasons {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d %s", counts[r], r)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, "; want %s files, or .json logs with --from inspect, tau-bench, tau2 or atif", inputTypes)
	return b.String()
}

// skipReason says why the file at p, of no input type, was skipped:
// "hidden" (its name starts with a dot), "with extension .txt" (two
// extensions when the last is a compression's: .json.gz), or "without an
// extension".
func skipReason(p string) string {
	base := path.Base(filepath.ToSlash(p))
	if strings.HasPrefix(base, ".") {
		return "hidden"
	}
	ext := path.Ext(base)
	switch strings.ToLower(ext) {
	case "":
		return "without an extension"
	case ".gz", ".zst", ".bz2", ".xz":
		ext = path.Ext(strings.TrimSuffix(base, ext)) + ext
	}
	return "with extension " + ext
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

// urlObject is an object an input URL names.
type urlObject struct {
	src, name string
	size      int64
}

// expandURL lists the objects of the input URL raw. Nothing found is a
// ConfigError, as a missing path is.
func expandURL(raw string) ([]urlObject, error) {
	ctx := context.Background()
	loc, err := store.Open(ctx, raw)
	if err != nil {
		return nil, &ConfigError{Field: "Inputs", Msg: fmt.Sprintf("input %v", err)}
	}
	defer loc.Close()
	objs, err := loc.Expand(ctx)
	if errors.Is(err, store.ErrNotExist) {
		return nil, &ConfigError{Field: "Inputs", Msg: fmt.Sprintf("input %s: no such object or prefix", store.Redact(raw))}
	}
	if err != nil {
		return nil, fmt.Errorf("input %w", err)
	}
	if len(objs) == 0 {
		return nil, &ConfigError{Field: "Inputs", Msg: fmt.Sprintf("input %s: no such object or prefix", store.Redact(raw))}
	}
	out := make([]urlObject, len(objs))
	for i, o := range objs {
		src := raw
		if o.Key != loc.Key || strings.HasSuffix(raw, "/") {
			src = loc.URL(o.Key)
		}
		out[i] = urlObject{src: src, name: store.Redact(src), size: o.Size}
	}
	return out, nil
}

// OpenUnit returns the reader of a unit, made from its input's
// description (standard input's too: Describe).
func OpenUnit(u *Unit, opts columnar.Options) (columnar.Reader, error) {
	if u.input == nil {
		return nil, u.err
	}
	return u.input.Open(columnar.InputUnit{FirstRowGroup: u.FirstRowGroup, RowGroups: u.RowGroups, Rows: u.rows}, opts)
}

// RemoveSpools removes the temporary files of the units (see Unit.spool).
func RemoveSpools(units []Unit) {
	for _, u := range units {
		if u.spool != "" {
			os.Remove(u.spool)
		}
	}
}

// Described returns the description of the unit's input (nil when
// describing it failed: opening the unit returns that error).
func (u *Unit) Described() *columnar.Input { return u.input }

// TotalRows sums the row counts of the units, as their inputs' footers
// record them, or returns -1 when one is unknown.
func TotalRows(units []*Unit) int64 {
	var total int64
	for _, u := range units {
		if u.rows < 0 {
			return -1
		}
		total += u.rows
	}
	return total
}

// EachBatch reads the units in order, each opened with opts, and calls fn
// with every batch, released once fn returns. It returns the first error
// of reading, named by the unit's path, or of fn, as it is.
func EachBatch(units []Unit, opts columnar.Options, fn func(u *Unit, b *columnar.Batch) error) error {
	for ui := range units {
		u := &units[ui]
		r, err := OpenUnit(u, opts)
		if err != nil {
			return fmt.Errorf("read %s: %w", u.Path, err)
		}
		for {
			b, err := r.Next(256)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.Close()
				return fmt.Errorf("read %s: %w", u.Path, err)
			}
			err = fn(u, b)
			b.Release()
			if err != nil {
				r.Close()
				return err
			}
		}
		if err := r.Close(); err != nil {
			return fmt.Errorf("close %s: %w", u.Path, err)
		}
	}
	return nil
}
