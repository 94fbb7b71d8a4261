package join

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/results"
)

// Tables of a result directory.
const (
	Rewards = "rewards"
	Checks  = "checks"
)

// Dir is a result directory opened for reading: its manifest, what its
// summary says of duplicate rollout ids, and its part files. Every reader
// of result directories opens them here.
type Dir struct {
	Path     string
	Manifest *results.Manifest
	// duplicates is the summary's duplicate_ids, -1 when the summary does
	// not say (no summary, or one written before the count existed).
	duplicates int64
}

// Open reads the manifest (and, when there is one, the summary) of the
// result directory dir.
func Open(dir string) (*Dir, error) {
	path := filepath.Join(dir, "manifest.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	var m results.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	d := &Dir{Path: dir, Manifest: &m, duplicates: -1}
	data, err = os.ReadFile(filepath.Join(dir, "summary.json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read summary: %w", err)
	default:
		var s struct {
			Duplicates *int64 `json:"duplicate_ids"`
		}
		if json.Unmarshal(data, &s) == nil && s.Duplicates != nil {
			d.duplicates = *s.Duplicates
		}
	}
	return d, nil
}

// Parts lists the complete part files of one table of the result
// directory (Rewards or Checks) in name order. A missing table is an error:
// it is not a result directory.
func Parts(dir, table string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, table))
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || len(name) < 5 || name[:5] != "part-" {
			continue
		}
		if _, ok := columnar.Resolve(columnar.Source{Name: name}); !ok {
			continue // a part being written has another extension
		}
		out = append(out, filepath.Join(dir, table, name))
	}
	sort.Strings(out)
	return out, nil
}

// Value is one cell of a result row: its kind and its text (a string's
// bytes, a number's decimal text).
type Value struct {
	Kind columnar.CellKind
	Data []byte
}

// Null reports whether v is null or absent.
func (v Value) Null() bool { return v.Kind == columnar.CellNull }

// Scan reads every part file of one table of the result directory dir, in
// part order, and calls fn for each row with the values of the columns
// cols, aligned (a column a part lacks reads as null). The values are
// valid only during the call. Of the checks table it reads the checks
// only, stepping over the rows of flags (newChecksReader).
func Scan(dir, table string, cols []string, fn func(vals []Value) error) error {
	parts, err := Parts(dir, table)
	if err != nil {
		return err
	}
	r := newTableReader(parts, cols)
	if table == Checks {
		r = newChecksReader(parts, cols)
	}
	return r.each(fn)
}

// each calls fn with the values of each row left, then closes t.
func (t *tableReader) each(fn func(vals []Value) error) error {
	defer t.close()
	for {
		vals, err := t.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(vals); err != nil {
			return t.rowError(err)
		}
	}
}

// tableReader reads the rows of a list of part files one at a time, the
// columns cols of each, by name, through columnar.ResultReader.
type tableReader struct {
	parts []string
	cols  []string
	vals  []Value

	part int // index in parts of the open reader
	r    *columnar.ResultReader
	row  int64 // rows read from the open part
	// back makes the next call of next return the current row again.
	back bool
	// kind, when not -1, is the index in cols of the checks' kind
	// column, read to step over flag rows and not returned.
	kind int
}

func newTableReader(parts, cols []string) *tableReader {
	return &tableReader{parts: parts, cols: cols, vals: make([]Value, len(cols)), part: -1, kind: -1}
}

// newChecksReader is newTableReader for the checks table: it steps over
// the rows of flags (kind flag), which follow a rollout's checks in a
// run with flags, so that a rollout's check rows are its checks_total
// rows, as in a run without flags.
func newChecksReader(parts, cols []string) *tableReader {
	all := append(slices.Clip(cols), columnar.ColumnKind)
	t := newTableReader(parts, all)
	t.kind = len(cols)
	return t
}

// width is the number of values next returns per row.
func (t *tableReader) width() int {
	if t.kind >= 0 {
		return t.kind
	}
	return len(t.cols)
}

// ScanFlagRows reads the rows of flags (kind flag) of the checks table of
// the result directory dir, as Scan reads a table, calling fn with the
// values of cols of each; a run without flags has none.
func ScanFlagRows(dir string, cols []string, fn func(vals []Value) error) error {
	parts, err := Parts(dir, Checks)
	if err != nil {
		return err
	}
	r := newTableReader(parts, append(slices.Clip(cols), columnar.ColumnKind))
	return r.each(func(vals []Value) error {
		if k := vals[len(cols)]; k.Null() || string(k.Data) != columnar.KindFlag {
			return nil
		}
		return fn(vals[:len(cols)])
	})
}

// path is the part being read.
func (t *tableReader) path() string {
	if t.part < 0 || t.part >= len(t.parts) {
		return ""
	}
	return t.parts[t.part]
}

// rowError wraps err with the current row's place.
func (t *tableReader) rowError(err error) error {
	if t.row == 0 {
		return fmt.Errorf("read %s: %w", t.path(), err)
	}
	return fmt.Errorf("read %s row %d: %w", t.path(), t.row-1, err)
}

// unread makes the next call of next return the current row again.
func (t *tableReader) unread() { t.back = true }

// next returns the values of the next row, valid until the call after;
// io.EOF after the last row of the last part.
func (t *tableReader) next() ([]Value, error) {
	if t.back {
		t.back = false
		if t.kind >= 0 {
			return t.vals[:t.kind], nil
		}
		return t.vals, nil
	}
	for {
		if t.r == nil {
			if t.part+1 >= len(t.parts) {
				t.part = len(t.parts)
				return nil, io.EOF
			}
			t.part++
			r, err := columnar.OpenResult(t.parts[t.part], t.cols)
			if err != nil {
				return nil, err
			}
			t.r, t.row = r, 0
		}
		cells, err := t.r.Next()
		if errors.Is(err, io.EOF) {
			t.r.Close()
			t.r = nil
			continue
		}
		if err != nil {
			return nil, err
		}
		t.row++
		if t.kind >= 0 {
			if k := cells[t.kind]; k.Kind != columnar.CellNull && string(k.Data) == columnar.KindFlag {
				continue
			}
		}
		for j, c := range cells {
			t.vals[j] = Value{c.Kind, c.Data}
		}
		if t.kind >= 0 {
			return t.vals[:t.kind], nil
		}
		return t.vals, nil
	}
}

func (t *tableReader) close() {
	if t.r != nil {
		t.r.Close()
		t.r = nil
	}
}
