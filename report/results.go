package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
)

// value is one cell of a result row: its kind and its text (a string's
// bytes, a number's decimal text).
type value struct {
	kind columnar.CellKind
	data []byte
}

func (v value) null() bool { return v.kind == columnar.CellNull }

// scanTable reads every part file under dir/table (rewards or checks), in
// part order, and calls fn for each row with the values of cols, aligned.
// The values are valid only during the call.
func scanTable(dir, table string, cols []string, fn func(vals []value) error) error {
	parts, err := partFiles(filepath.Join(dir, table))
	if err != nil {
		return err
	}
	vals := make([]value, len(cols))
	var doc jsonview.Doc
	fields := columnar.FieldNames{}.WithDefaults()
	for _, path := range parts {
		if err := scanPart(path, cols, vals, &doc, &fields, fn); err != nil {
			return err
		}
	}
	return nil
}

func scanPart(path string, cols []string, vals []value, doc *jsonview.Doc, fields *columnar.FieldNames, fn func([]value) error) error {
	r, err := columnar.Open(path, columnar.Options{})
	if err != nil {
		return err
	}
	defer r.Close()
	idx := []int(nil)
	for {
		b, err := r.Next(1024)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if !b.JSONLines {
			idx = idx[:0]
			for _, c := range cols {
				idx = append(idx, slices.Index(b.MetaNames, c))
			}
		}
		for i := range b.Rows {
			row := &b.Rows[i]
			if b.JSONLines {
				root, err := columnar.DecodeLine(row, fields, doc)
				if err != nil {
					b.Release()
					return fmt.Errorf("read %s: %w", path, err)
				}
				for j, c := range cols {
					vals[j] = jsonValue(root.Get(c))
				}
			} else {
				for j, c := range cols {
					switch {
					case c == columnar.FieldID:
						vals[j] = value{row.ID.Kind, row.ID.Data}
					case c == columnar.FieldTask:
						vals[j] = value{row.Task.Kind, row.Task.Data}
					case idx[j] >= 0:
						cell := row.Meta[idx[j]]
						vals[j] = value{cell.Kind, cell.Data}
					default:
						vals[j] = value{}
					}
				}
			}
			if err := fn(vals); err != nil {
				b.Release()
				return fmt.Errorf("read %s row %d: %w", path, row.Index, err)
			}
		}
		b.Release()
	}
}

func jsonValue(v jsonview.Value) value {
	switch v.Kind() {
	case jsonview.String:
		s, _ := v.Str()
		return value{columnar.CellString, s}
	case jsonview.Number:
		return value{columnar.CellNumber, v.Raw()}
	case jsonview.True, jsonview.False:
		return value{columnar.CellBool, v.Raw()}
	case jsonview.Object, jsonview.Array:
		return value{columnar.CellJSON, v.Raw()}
	}
	return value{}
}

// partFiles lists the complete part files of one table directory in name
// order. A missing directory is an error: it is not a result directory.
func partFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || len(name) < 5 || name[:5] != "part-" {
			continue
		}
		if _, ok := columnar.InputFormat(name); !ok {
			continue // a part being written has another extension
		}
		out = append(out, filepath.Join(dir, name))
	}
	sort.Strings(out)
	return out, nil
}

// manifest is what a diff reads of manifest.json (SPEC 6): the gavel
// version, each verifier's fingerprint and each input's size and rows.
type manifest struct {
	Version   string `json:"gavel_version"`
	Verifiers []struct {
		ID          string `json:"id"`
		Fingerprint string `json:"fingerprint"`
	} `json:"verifiers"`
	Inputs []struct {
		Path string `json:"path"`
		Size int64  `json:"size"`
		Rows *int64 `json:"rows"`
	} `json:"inputs"`
}

// readManifest reads dir/manifest.json.
func readManifest(dir string) (*manifest, error) {
	path := filepath.Join(dir, "manifest.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return &m, nil
}

// interner shares the storage of repeated strings (task ids, verifier
// ids, file names, check ids), so that millions of rows hold few copies.
type interner map[string]string

func (in interner) get(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	in[s] = s
	return s
}

func parseReward(v value) (float64, bool, error) {
	if v.null() {
		return 0, false, nil
	}
	f, err := strconv.ParseFloat(string(v.data), 64)
	if err != nil {
		return 0, false, fmt.Errorf("reward %q: not a number", v.data)
	}
	return f, true, nil
}
