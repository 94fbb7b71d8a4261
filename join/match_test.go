package join

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// key is a row of a new run.
type key struct {
	unit int
	row  int64
	id   string
}

func emitKeys(ks []key) func(emit func(int, int64, []byte) error) error {
	return func(emit func(int, int64, []byte) error) error {
		for _, k := range ks {
			if err := emit(k.unit, k.row, []byte(k.id)); err != nil {
				return err
			}
		}
		return nil
	}
}

// writeParts writes a result directory in JSON Lines, one part per list
// of ids: each rewards row numbered n in the directory's order, with
// checks_total check rows of its own (0 to 2, by n), one with a null
// status.
func writeParts(t testing.TB, parts ...[]string) string {
	t.Helper()
	dir := t.TempDir()
	var inputs []string
	n := 0
	for p, ids := range parts {
		var rw, cw strings.Builder
		for _, id := range ids {
			fmt.Fprintf(&rw, `{"rollout_id":%q,"checks_total":%d,"n":%d}`+"\n", id, n%3, n)
			for c := range n % 3 {
				status := `"passed"`
				if c == 1 {
					status = "null"
				}
				fmt.Fprintf(&cw, `{"rollout_id":%q,"check_id":"%s/%d","status":%s}`+"\n", id, id, n, status)
			}
			n++
		}
		name := fmt.Sprintf("part-%05d.jsonl", p)
		for table, text := range map[string]string{Rewards: rw.String(), Checks: cw.String()} {
			if err := os.MkdirAll(filepath.Join(dir, table), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, table, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		inputs = append(inputs, fmt.Sprintf(`{"path":"in%d.jsonl","size":1,"rows":%d,"part":%q,"complete":true}`, p, len(ids), name))
	}
	manifest := `{"inputs":[` + strings.Join(inputs, ",") + `]}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

var matchCfg = Config{Rewards: []string{"n"}, Checks: []string{"check_id", "status"}}

// readMatches reads every unit of m up to units, in increasing order (in
// decreasing order when reverse is set), as lines "unit/row id n checks".
func readMatches(t *testing.T, m *Matches, units int, reverse bool) []string {
	t.Helper()
	var got []string
	for k := range units {
		u := k
		if reverse {
			u = units - 1 - k
		}
		um, err := m.Unit(u)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		last := int64(-1)
		for {
			row, r, err := um.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if row <= last {
				t.Errorf("unit %d: row %d after row %d", u, row, last)
			}
			last = row
			lines = append(lines, fmt.Sprintf("%d/%d %s %s %s", u, row, r.ID, r.Values[0].Data, checksText(r.Checks)))
		}
		if reverse {
			got = append(lines, got...)
		} else {
			got = append(got, lines...)
		}
	}
	return got
}

func checksText(checks [][]Value) string {
	var s []string
	for _, c := range checks {
		status := "null"
		if !c[1].Null() {
			status = string(c[1].Data)
		}
		s = append(s, string(c[0].Data)+":"+status)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// TestMatch matches a new run whose units and order differ from the
// directory's, with ids on one side only and repeated on both, in one
// partition and in many.
func TestMatch(t *testing.T) {
	dirIDs := ids("r", 400)
	dirIDs = append(dirIDs, "r0005", "r0399") // duplicates: their first rows stay
	d, err := Open(writeParts(t, dirIDs[:150], dirIDs[150:]))
	if err != nil {
		t.Fatal(err)
	}
	// The new run: three units (the second without rows) of the ids in
	// reverse, every third left out, new ids among them, r0007 thrice.
	var ks []key
	unit, row := 0, int64(0)
	for i := 399; i >= 0; i-- {
		if i == 250 {
			unit, row = 2, 0
		}
		if i%3 == 0 {
			ks = append(ks, key{unit, row, fmt.Sprintf("x%04d", i)})
		} else {
			ks = append(ks, key{unit, row, fmt.Sprintf("r%04d", i)})
		}
		row += int64(1 + i%2)
		if i == 100 || i == 300 {
			ks = append(ks, key{unit, row, "r0007"})
			row++
		}
	}
	ks = append(ks, key{2, row, "r0007"})
	want := wantMatches(dirIDs, ks)
	for _, tc := range []struct {
		name       string
		budget     int64
		partitions int // 0: more than one
	}{
		{"one partition", 1 << 40, 1},
		{"many partitions", 1024, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := matchCfg
			cfg.MemoryBudget, cfg.TempDir = tc.budget, t.TempDir()
			m, err := Match(context.Background(), d, emitKeys(ks), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			st := m.Stats
			if tc.partitions == 1 && st.Partitions != 1 || tc.partitions == 0 && st.Partitions < 2 {
				t.Errorf("%d partitions, want %d (0: more than one)", st.Partitions, tc.partitions)
			}
			if st.Rows != 400 || st.Duplicates != 2 || st.Keys != int64(len(ks)) || st.Matched != int64(len(want)) || st.DiskBytes <= 0 {
				t.Errorf("stats %+v, want 400 rows, 2 duplicates, %d keys, %d matched", st, len(ks), len(want))
			}
			got := readMatches(t, m, 4, false)
			if !slices.Equal(got, want) {
				t.Errorf("Match: %d matches, want %d\n%s", len(got), len(want), lineDiff(got, want))
			}
			if got := readMatches(t, m, 4, true); !slices.Equal(got, want) {
				t.Errorf("units read in reverse: %d matches, want %d\n%s", len(got), len(want), lineDiff(got, want))
			}
			// Each unit read by a goroutine of its own.
			var wg sync.WaitGroup
			perUnit := make([][]string, 4)
			for u := range perUnit {
				wg.Go(func() {
					um, err := m.Unit(u)
					if err != nil {
						t.Error(err)
						return
					}
					for {
						row, r, err := um.Next()
						if err != nil {
							if !errors.Is(err, io.EOF) {
								t.Error(err)
							}
							return
						}
						perUnit[u] = append(perUnit[u], fmt.Sprintf("%d/%d %s %s %s", u, row, r.ID, r.Values[0].Data, checksText(r.Checks)))
					}
				})
			}
			wg.Wait()
			if got := slices.Concat(perUnit...); !slices.Equal(got, want) {
				t.Errorf("units read at once: %d matches, want %d\n%s", len(got), len(want), lineDiff(got, want))
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if left, _ := os.ReadDir(cfg.TempDir); len(left) != 0 {
				t.Errorf("after Close, %d files are left in the temporary directory", len(left))
			}
			if _, err := m.Unit(0); err == nil {
				t.Errorf("Unit after Close: no error")
			}
		})
	}
}

// wantMatches returns the lines readMatches should read when the rows of
// a directory written by writeParts with dirIDs are matched with ks.
func wantMatches(dirIDs []string, ks []key) []string {
	var want []string
	for _, k := range ks {
		n := slices.Index(dirIDs, k.id)
		if n < 0 {
			continue
		}
		var checks []string
		for dup, id := range dirIDs {
			if id != k.id {
				continue
			}
			for c := range dup % 3 {
				status := "passed"
				if c == 1 {
					status = "null"
				}
				checks = append(checks, fmt.Sprintf("%s/%d:%s", id, dup, status))
			}
		}
		want = append(want, fmt.Sprintf("%d/%d %s %d [%s]", k.unit, k.row, k.id, n, strings.Join(checks, " ")))
	}
	return want
}

// TestMatchEdges matches without keys, without rows, in one unit.
func TestMatchEdges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dirIDs []string
		keys   []key
	}{
		{"no keys", ids("r", 20), nil},
		{"no rows", nil, []key{{0, 0, "r0001"}, {1, 0, "r0002"}}},
		{"one unit", ids("r", 20), []key{{2, 0, "r0019"}, {2, 4, "x"}, {2, 5, "r0001"}, {2, 9, "r0001"}}},
		{"first unit", ids("r", 20), []key{{0, 0, "r0019"}, {0, 4, "x"}, {0, 5, "r0001"}}},
	} {
		for _, budget := range []int64{1 << 40, 64} {
			t.Run(fmt.Sprintf("%s/budget=%d", tc.name, budget), func(t *testing.T) {
				d, err := Open(writeParts(t, tc.dirIDs))
				if err != nil {
					t.Fatal(err)
				}
				cfg := matchCfg
				cfg.MemoryBudget, cfg.TempDir = budget, t.TempDir()
				m, err := Match(context.Background(), d, emitKeys(tc.keys), cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				got, want := readMatches(t, m, 4, false), wantMatches(tc.dirIDs, tc.keys)
				if !slices.Equal(got, want) {
					t.Errorf("Match: %q, want %q", got, want)
				}
			})
		}
	}
}

// lineDiff names the first line that differs.
func lineDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("line %d: got %q, want %q", i, g, w)
		}
	}
	return ""
}

// TestMatchErrors stops a match for each of its errors, and leaves no
// file behind.
func TestMatchErrors(t *testing.T) {
	good := writeParts(t, ids("r", 50))
	bad := writeParts(t, ids("r", 50))
	badPart := filepath.Join(bad, Rewards, "part-00000.jsonl")
	data, err := os.ReadFile(badPart)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(badPart, append(data, "{not json\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		dir  string
		ctx  context.Context
		keys func(emit func(int, int64, []byte) error) error
		want string // in the error
		is   error
	}{
		{"bad part", bad, nil, emitKeys([]key{{0, 0, "r0001"}}), "old: read " + badPart, nil},
		{"keys fail", good, nil, func(emit func(int, int64, []byte) error) error { return boom }, "", boom},
		{"rows out of order", good, nil, emitKeys([]key{{0, 5, "a"}, {0, 5, "b"}}), `key "b" of unit 0 row 5 after unit 0 row 5`, nil},
		{"units out of order", good, nil, emitKeys([]key{{1, 0, "a"}, {0, 7, "b"}}), `key "b" of unit 0 row 7 after unit 1 row 0`, nil},
		{"negative row", good, nil, emitKeys([]key{{0, -1, "a"}}), "negative", nil},
		{"error of emit not returned", good, nil, func(emit func(int, int64, []byte) error) error {
			emit(1, 0, []byte("a"))
			emit(0, 0, []byte("b"))
			return nil
		}, "increasing order", nil},
		{"canceled", good, canceled, emitKeys([]key{{0, 0, "r0001"}}), "", context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Open(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			cfg := matchCfg
			cfg.TempDir, cfg.LeftName = t.TempDir(), "old"
			m, err := Match(ctx, d, tc.keys, cfg)
			if err == nil {
				m.Close()
				t.Fatal("Match: no error")
			}
			if tc.want != "" && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Match: error %q, want it to contain %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Match: error %q, want %v", err, tc.is)
			}
			if left, _ := os.ReadDir(cfg.TempDir); len(left) != 0 {
				t.Errorf("after an error, %d files are left in the temporary directory", len(left))
			}
		})
	}
}

// TestMatchCancelKeys cancels the match while the keys are read: emit
// returns the context's error soon after.
func TestMatchCancelKeys(t *testing.T) {
	d, err := Open(writeParts(t, ids("r", 10)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	emitted := 0
	keys := func(emit func(int, int64, []byte) error) error {
		for i := range 100000 {
			if i == 10 {
				cancel()
			}
			if err := emit(0, int64(i), []byte("r0001")); err != nil {
				return err
			}
			emitted++
		}
		return nil
	}
	cfg := matchCfg
	cfg.TempDir = t.TempDir()
	_, err = Match(ctx, d, keys, cfg)
	if !errors.Is(err, context.Canceled) || emitted > 10+1024 {
		t.Errorf("Match canceled after %d keys: error %v after %d keys, want context.Canceled within 1024", 10, err, emitted)
	}
}

// BenchmarkMatch matches a new run of 200,000 rows, in reverse order and
// three units, with a directory of as many, in one partition and in many.
func BenchmarkMatch(b *testing.B) {
	const rows = 200_000
	d, err := Open(writeParts(b, ids("r", rows/2), ids("s", rows/2)))
	if err != nil {
		b.Fatal(err)
	}
	keys := func(emit func(int, int64, []byte) error) error {
		id := make([]byte, 0, 8)
		for i := range rows {
			k := rows - 1 - i
			prefix := byte('r')
			if k >= rows/2 {
				prefix, k = 's', k-rows/2
			}
			id = fmt.Appendf(id[:0], "%c%04d", prefix, k)
			if err := emit(i/(rows/3+1), int64(i), id); err != nil {
				return err
			}
		}
		return nil
	}
	for _, budget := range []int64{16 << 20, 1 << 20} {
		b.Run(fmt.Sprintf("rows=200k/budget=%dMiB", budget>>20), func(b *testing.B) {
			cfg := matchCfg
			cfg.MemoryBudget, cfg.TempDir = budget, b.TempDir()
			b.ReportAllocs()
			for b.Loop() {
				m, err := Match(context.Background(), d, keys, cfg)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for u := range 3 {
					um, _ := m.Unit(u)
					for {
						_, _, err := um.Next()
						if err != nil {
							break
						}
						n++
					}
				}
				m.Close()
				if n != rows {
					b.Fatalf("%d matches, want %d", n, rows)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
