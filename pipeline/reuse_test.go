package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// countedVerifiers returns copies of the built-in verifiers whose calls are
// counted in calls, by verifier id.
func countedVerifiers(calls map[string]*atomic.Int64) []*verifiers.Verifier {
	var vs []*verifiers.Verifier
	for _, b := range crm.Verifiers() {
		v := *b
		n := calls[v.ID]
		if n == nil {
			n = new(atomic.Int64)
			calls[v.ID] = n
		}
		grade := b.Grade
		v.Grade = func(r *verifiers.Rollout, c *verifiers.Checks) error {
			n.Add(1)
			return grade(r, c)
		}
		vs = append(vs, &v)
	}
	return vs
}

// sameFiles fails unless the rewards and checks tables of dirs a and b,
// and their judgements tables when either has one, have the same parts,
// byte-identical.
func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	tables := []string{"rewards", "checks"}
	for _, dir := range []string{a, b} {
		if _, err := os.Stat(filepath.Join(dir, results.JudgementsDir)); err == nil && len(tables) == 2 {
			tables = append(tables, results.JudgementsDir)
		}
	}
	for _, table := range tables {
		names := func(dir string) []string {
			parts, err := filepath.Glob(filepath.Join(dir, table, "part-*"))
			if err != nil || len(parts) == 0 {
				t.Fatalf("no %s parts in %s", table, dir)
			}
			for i, p := range parts {
				parts[i] = filepath.Base(p)
			}
			return parts
		}
		inA, inB := names(a), names(b)
		if !slices.Equal(inA, inB) {
			t.Errorf("%s parts differ: %v in the reusing run, %v in a full run", table, inA, inB)
			continue
		}
		for _, name := range inA {
			x, errX := os.ReadFile(filepath.Join(a, table, name))
			y, errY := os.ReadFile(filepath.Join(b, table, name))
			if errX != nil || errY != nil {
				t.Fatalf("read %s/%s: %v %v", table, name, errX, errY)
			}
			if !bytes.Equal(x, y) {
				t.Errorf("%s/%s differs between the reusing run and a full run", table, name)
			}
		}
	}
}

// TestReuse grades a generated dataset, changes one rollout's final state
// and one verifier's version, grades again reusing the first run, and
// checks that exactly the rows of the changed rollout and of the changed
// verifier ran their verifier (the generated data's errors repeat by
// construction and are reused), and that the parts are those of a full
// run.
func TestReuse(t *testing.T) {
	for _, format := range []string{columnar.FormatParquet, columnar.FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "rollouts.jsonl")
			if _, err := gen.Run(context.Background(), gen.Config{Out: data, Rollouts: 600, Seed: 5, BadShare: 0.05}); err != nil {
				t.Fatalf("gen: %v", err)
			}
			first := filepath.Join(dir, "first")
			calls := map[string]*atomic.Int64{}
			grade(t, Config{Inputs: []string{data}, Out: first, Format: format, Workers: 2, BatchSize: 50, Verifiers: countedVerifiers(calls)})

			// Nothing changed: the part is copied whole.
			same := filepath.Join(dir, "same")
			calls = map[string]*atomic.Int64{}
			res := grade(t, Config{Inputs: []string{data}, Out: same, Format: format, Workers: 2, BatchSize: 50, Verifiers: countedVerifiers(calls), Reuse: first})
			sameFiles(t, same, first)
			if ru := res.Summary.Reuse; ru == nil || ru.CopiedParts != 1 || ru.Reused != res.Summary.Rollouts || ru.Graded != 0 {
				t.Errorf("unchanged: reuse summary %+v, want the part copied", ru)
			}
			for id, n := range calls {
				if n.Load() != 0 {
					t.Errorf("unchanged: verifier %s ran %d times", id, n.Load())
				}
			}

			// Change one verifier only: its rows are graded, the others
			// are taken as they are, without decoding their input.
			calls = map[string]*atomic.Int64{}
			vs := countedVerifiers(calls)
			bumped := vs[1].ID
			vs[1].Version++
			oneVerifier := filepath.Join(dir, "one-verifier")
			res = grade(t, Config{Inputs: []string{data}, Out: oneVerifier, Format: format, Workers: 2, BatchSize: 50, Verifiers: vs, Reuse: first})
			sameFiles(t, oneVerifier, first) // only a version changed: the same results
			checkRegraded(t, first, res.Summary, calls, func(id, verifier string) bool { return verifier == bumped })

			// Change one passed or failed rollout's final state.
			lines := readLines(t, data)
			mutated := ""
			for i, l := range lines {
				var m map[string]any
				if json.Unmarshal(l, &m) != nil || m["final_state"] == nil || m["rollout_id"] == nil || i < 100 {
					continue
				}
				m["final_state"] = map[string]any{"changed": true}
				mutated = m["rollout_id"].(string)
				lines[i], _ = json.Marshal(m)
				break
			}
			if mutated == "" {
				t.Fatal("no rollout with a final state to change")
			}
			if err := os.WriteFile(data, append(bytes.Join(lines, []byte("\n")), '\n'), 0o644); err != nil {
				t.Fatal(err)
			}

			// Change one verifier too.
			calls = map[string]*atomic.Int64{}
			vs = countedVerifiers(calls)
			vs[1].Version++

			again := filepath.Join(dir, "again")
			res = grade(t, Config{Inputs: []string{data}, Out: again, Format: format, Workers: 2, BatchSize: 50, Verifiers: vs, Reuse: first})
			full := filepath.Join(dir, "full")
			grade(t, Config{Inputs: []string{data}, Out: full, Format: format, Workers: 2, BatchSize: 50, Verifiers: countedVerifiers(map[string]*atomic.Int64{})})
			sameFiles(t, again, full)

			checkJudged(t, full, mutated)
			checkRegraded(t, full, res.Summary, calls, func(id, verifier string) bool { return verifier == bumped || id == mutated })
		})
	}
}

// TestReuseNotAligned grades a generated dataset, then the same rollouts
// split into two files listed in the other order, with one rollout
// changed and one verifier's version raised, reusing the first run: its
// units do not line up with the earlier ones, so the earlier rows are
// found by join.Match; exactly the changed rows are graded again and the
// parts are those of a full run of the split files.
func TestReuseNotAligned(t *testing.T) {
	for _, format := range []string{columnar.FormatParquet, columnar.FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "rollouts.jsonl")
			if _, err := gen.Run(context.Background(), gen.Config{Out: data, Rollouts: 600, Seed: 9, BadShare: 0.05}); err != nil {
				t.Fatalf("gen: %v", err)
			}
			first := filepath.Join(dir, "first")
			grade(t, Config{Inputs: []string{data}, Out: first, Format: format, Workers: 2, BatchSize: 50, Verifiers: countedVerifiers(map[string]*atomic.Int64{})})

			lines := readLines(t, data)
			mutated := ""
			for i, l := range lines {
				var m map[string]any
				if json.Unmarshal(l, &m) != nil || m["final_state"] == nil || m["rollout_id"] == nil || i < 450 {
					continue
				}
				m["final_state"] = map[string]any{"changed": true}
				mutated = m["rollout_id"].(string)
				lines[i], _ = json.Marshal(m)
				break
			}
			if mutated == "" {
				t.Fatal("no rollout with a final state to change")
			}
			split := filepath.Join(dir, "split")
			if err := os.MkdirAll(split, 0o755); err != nil {
				t.Fatal(err)
			}
			// The later rows come first.
			for name, part := range map[string][][]byte{"0.jsonl": lines[300:], "1.jsonl": lines[:300]} {
				if err := os.WriteFile(filepath.Join(split, name), append(bytes.Join(part, []byte("\n")), '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			calls := map[string]*atomic.Int64{}
			vs := countedVerifiers(calls)
			bumped := vs[3].ID
			vs[3].Version++
			again := filepath.Join(dir, "again")
			res := grade(t, Config{Inputs: []string{split}, Out: again, Format: format, Workers: 2, BatchSize: 50, Verifiers: vs, Reuse: first})
			full := filepath.Join(dir, "full")
			grade(t, Config{Inputs: []string{split}, Out: full, Format: format, Workers: 2, BatchSize: 50, Verifiers: countedVerifiers(map[string]*atomic.Int64{})})
			sameFiles(t, again, full)
			checkJudged(t, full, mutated)
			checkRegraded(t, full, res.Summary, calls, func(id, verifier string) bool { return verifier == bumped || id == mutated })
		})
	}
}

// checkRegraded checks, against the results in full of the same input,
// that a run reusing an earlier one ran the verifiers of exactly the rows
// changed reports changed (calls, by verifier id; the generated data's
// verifier errors repeat by construction and are reused), and that its
// summary counts those, the rows without a verifier and those with input
// errors (never decoded far enough to be matched) as graded, and no part
// as copied.
func checkRegraded(t *testing.T, full string, s *results.Summary, calls map[string]*atomic.Int64, changed func(id, verifier string) bool) {
	t.Helper()
	want := map[string]int64{}
	var graded, total int64
	scanRewards(t, full, func(id, verifier, status, kind string) {
		total++
		if verifier == "" || kind == verifiers.KindInput || changed(id, verifier) {
			graded++
		}
		if verifier != "" && kind != verifiers.KindInput && changed(id, verifier) {
			want[verifier]++
		}
	})
	if len(want) == 0 {
		t.Fatal("no judged row is among the changed ones: the check would hold for any run")
	}
	for id, n := range calls {
		if got := n.Load(); got != want[id] {
			t.Errorf("verifier %s ran %d times, want %d", id, got, want[id])
		}
	}
	ru := s.Reuse
	if ru == nil || ru.Graded != graded || ru.Reused != total-graded || ru.Reused == 0 || ru.CopiedParts != 0 {
		t.Errorf("reuse summary %+v, want graded %d of %d", ru, graded, total)
	}
}

// checkJudged fails unless rollout id has a row in the results in dir that
// a verifier judged, so that changing it must make that verifier run again.
func checkJudged(t *testing.T, dir, id string) {
	t.Helper()
	judged := false
	scanRewards(t, dir, func(rid, verifier, _, kind string) {
		judged = judged || rid == id && verifier != "" && kind != verifiers.KindInput
	})
	if !judged {
		t.Fatalf("changed rollout %s has no judged row", id)
	}
}

// TestReuseOneVerifier grades a generated Parquet file, raises one
// verifier's version and grades it again reusing the first run: the
// other verifiers' rows are taken without decoding their input, only the
// changed verifier's rows run, and the parts are those of a full run.
func TestReuseOneVerifier(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "rollouts.parquet")
	if _, err := gen.Run(context.Background(), gen.Config{Out: data, Rollouts: 600, Seed: 7, BadShare: 0.05}); err != nil {
		t.Fatalf("gen: %v", err)
	}
	for _, format := range []string{columnar.FormatParquet, columnar.FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			first := filepath.Join(dir, format, "first")
			grade(t, Config{Inputs: []string{data}, Out: first, Format: format, Workers: 2, BatchSize: 50, Verifiers: countedVerifiers(map[string]*atomic.Int64{})})
			calls := map[string]*atomic.Int64{}
			vs := countedVerifiers(calls)
			bumped := vs[2].ID
			vs[2].Version++
			again := filepath.Join(dir, format, "again")
			res := grade(t, Config{Inputs: []string{data}, Out: again, Format: format, Workers: 2, BatchSize: 50, Verifiers: vs, Reuse: first})
			sameFiles(t, again, first)
			checkRegraded(t, first, res.Summary, calls, func(id, verifier string) bool { return verifier == bumped })
			// The rows graded again are the bumped verifier's and those
			// not matched (input errors, no verifier): every other reused
			// row was taken undecoded.
			rs := res.Summary.Reuse
			var bumpedRows int64
			scanRewards(t, first, func(id, verifier, status, kind string) {
				if verifier == bumped && kind != verifiers.KindInput {
					bumpedRows++
				}
			})
			if rs.Reused == 0 || bumpedRows == 0 {
				t.Fatalf("reuse summary %+v, %d rows of %s: want both", rs, bumpedRows, bumped)
			}
			if got := rs.Undecoded; got != rs.Reused {
				t.Errorf("%d rows taken without decoding, want all %d reused", got, rs.Reused)
			}
		})
	}
}

// readLines returns the lines of a file.
func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		out = append(out, append([]byte(nil), sc.Bytes()...))
	}
	return out
}

// scanRewards calls fn with the id, verifier, status and error kind of
// every rewards row of dir.
func scanRewards(t *testing.T, dir string, fn func(id, verifier, status, kind string)) {
	t.Helper()
	parts, _ := filepath.Glob(filepath.Join(dir, "rewards", "part-*"))
	for _, p := range parts {
		rr, err := columnar.OpenResult(p, []string{"rollout_id", "verifier_id", "status", "error_kind"})
		if err != nil {
			t.Fatal(err)
		}
		for {
			c, err := rr.Next()
			if err != nil {
				break
			}
			fn(string(c[0].Data), string(c[1].Data), string(c[2].Data), string(c[3].Data))
		}
		rr.Close()
	}
}

// TestReuseRefused checks that --reuse naming --out is refused and that an
// earlier run without input_hash is graded in full, with a note.
func TestReuseRefused(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "rollouts.jsonl")
	if _, err := gen.Run(context.Background(), gen.Config{Out: data, Rollouts: 100, Seed: 3}); err != nil {
		t.Fatalf("gen: %v", err)
	}
	out := filepath.Join(dir, "out")
	grade(t, Config{Inputs: []string{data}, Out: out, Format: columnar.FormatJSONL, Workers: 2})
	_, err := Run(context.Background(), Config{Inputs: []string{data}, Out: out, Verifiers: crm.Verifiers(), Reuse: out + "/."})
	var ce *inputs.ConfigError
	if !errors.As(err, &ce) || ce.Field != "Reuse" {
		t.Fatalf("--reuse naming --out: err %v, want a ConfigError of Reuse", err)
	}

	// Remove input_hash from the earlier rewards.
	part := filepath.Join(out, "rewards", "part-00000.jsonl")
	var lines [][]byte
	for _, l := range readLines(t, part) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "input_hash")
		l, _ = json.Marshal(m)
		lines = append(lines, l)
	}
	if err := os.WriteFile(part, append(bytes.Join(lines, []byte("\n")), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	res := grade(t, Config{Inputs: []string{data}, Out: filepath.Join(dir, "again"), Format: columnar.FormatJSONL, Workers: 2, Reuse: out})
	if ru := res.Summary.Reuse; ru == nil || ru.Reused != 0 || ru.Graded != 100 || ru.Note == "" {
		t.Errorf("reuse summary %+v, want 100 graded and a note", ru)
	}
}
