package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/verifiers"
)

// flagsCase is a generated dataset with rows that raise flags, graded by
// the built-in verifiers (the first given a flag of its own) and by a
// verifier of flags only (VER-FLAGS, whose rows are errors with flag rows
// and no check), two of whose rows share a rollout id and follow each
// other, the first an error without flag rows.
type flagsCase struct {
	dir, data string
}

func newFlagsCase(t *testing.T) *flagsCase {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "rollouts.jsonl")
	if _, err := gen.Run(context.Background(), gen.Config{Out: data, Rollouts: 300, Seed: 11, BadShare: 0.05}); err != nil {
		t.Fatalf("gen: %v", err)
	}
	var b bytes.Buffer
	for i := range 6 {
		fmt.Fprintf(&b, `{"rollout_id":"blank-%d","task_id":"TASK-001","final_state":{},"output":" ","log":[{"role":"user","content":"hi"}],"termination_reason":"max_turns"}`+"\n", i)
	}
	for _, r := range [][2]string{{"f-1", "out"}, {"dup", "fails"}, {"dup", "out"}, {"f-2", "out"}} {
		fmt.Fprintf(&b, `{"rollout_id":%q,"task_id":"FLAGS","output":"%s %s"}`+"\n", r[0], r[0], r[1])
	}
	f, err := os.OpenFile(data, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return &flagsCase{dir: dir, data: data}
}

// verifiers returns the case's verifiers, their calls counted in calls.
func (fc *flagsCase) verifiers(calls map[string]*atomic.Int64) []*verifiers.Verifier {
	vs := countedVerifiers(calls)
	first := vs[0]
	grade := first.Grade
	first.Flagged = true
	first.Grade = func(r *verifiers.Rollout, c *verifiers.Checks) error {
		if err := grade(r, c); err != nil {
			return err
		}
		c.Flag("even-output", "the output has an even length", len(r.Output)%2 == 0, fmt.Sprintf("%d bytes", len(r.Output)))
		return nil
	}
	n := new(atomic.Int64)
	calls["VER-FLAGS"] = n
	only := &verifiers.Verifier{ID: "VER-FLAGS", Name: "flags only", Tasks: []string{"FLAGS"}, Source: "test", Definition: "test", Flagged: true,
		Grade: func(r *verifiers.Rollout, c *verifiers.Checks) error {
			n.Add(1)
			if strings.HasSuffix(r.Output, "fails") {
				return errors.New("no flags for this one")
			}
			c.Flag("says-dup", "the output names dup", strings.Contains(r.Output, "dup"), "")
			c.Flag("always", "always raised", true, "")
			return nil
		}}
	return append(vs, only)
}

func (fc *flagsCase) config(out, format string, health bool, vs []*verifiers.Verifier, reuse string) Config {
	return Config{Inputs: []string{fc.data}, Out: filepath.Join(fc.dir, out), Format: format, Workers: 2, BatchSize: 40,
		Verifiers: vs, Health: health, Reuse: reuse}
}

// TestReuseWithFlags reuses runs with flags, from runs with and without
// health flags into runs with and without them, on each path: the parts
// are those of a fresh run of the same configuration, byte for byte; no
// verifier runs, but for the two rows of VER-FLAGS whose flag rows cannot
// be told apart (same rollout id, no checks), which are graded again.
func TestReuseWithFlags(t *testing.T) {
	for _, format := range []string{columnar.FormatParquet, columnar.FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			fc := newFlagsCase(t)
			for _, prevHealth := range []bool{false, true} {
				prev := fc.config(fmt.Sprintf("prev-%v", prevHealth), format, prevHealth, fc.verifiers(map[string]*atomic.Int64{}), "")
				grade(t, prev)
				for _, health := range []bool{false, true} {
					fresh := fc.config(fmt.Sprintf("fresh-%v-%v", prevHealth, health), format, health, fc.verifiers(map[string]*atomic.Int64{}), "")
					grade(t, fresh)
					for _, path := range []reusePath{reuseAuto, reuseRows} {
						name := fmt.Sprintf("health %v then %v, path %d", prevHealth, health, path)
						calls := map[string]*atomic.Int64{}
						c := fc.config(fmt.Sprintf("reuse-%v-%v-%d", prevHealth, health, path), format, health, fc.verifiers(calls), prev.Out)
						c.reusePath = path
						res := grade(t, c)
						sameParts(t, c.Out, fresh.Out)
						wantFlags := int64(0)
						if prevHealth != health || path == reuseRows {
							wantFlags = 2 // the two rows with rollout id dup
						}
						for id, n := range calls {
							want := int64(0)
							if id == "VER-FLAGS" {
								want = wantFlags
							}
							if n.Load() != want {
								t.Errorf("%s: verifier %s ran %d times, want %d", name, id, n.Load(), want)
							}
						}
						ru := res.Summary.Reuse
						if copied := ru.CopiedParts > 0; copied != (prevHealth == health && path == reuseAuto) {
							t.Errorf("%s: reuse summary %+v: copied whole %v", name, ru, copied)
						}
						if res.Summary.Flagged == 0 || health && res.Summary.Flags["health/empty-output"] == nil {
							t.Errorf("%s: summary counts %d flagged rollouts, flags %v", name, res.Summary.Flagged, res.Summary.Flags)
						}
					}
				}
			}
		})
	}
}

// TestReuseWithFlagsNotAligned reuses a run with flags for the same
// rollouts split into two files in the other order: the earlier rows are
// found by join.Match, which reads no flag rows, so the rows of the
// verifiers with flags are graded again and the others reused; the parts
// are those of a fresh run of the split files.
func TestReuseWithFlagsNotAligned(t *testing.T) {
	fc := newFlagsCase(t)
	prev := fc.config("prev", columnar.FormatParquet, true, fc.verifiers(map[string]*atomic.Int64{}), "")
	grade(t, prev)
	lines := readLines(t, fc.data)
	split := filepath.Join(fc.dir, "split")
	if err := os.MkdirAll(split, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, part := range map[string][][]byte{"0.jsonl": lines[150:], "1.jsonl": lines[:150]} {
		if err := os.WriteFile(filepath.Join(split, name), append(bytes.Join(part, []byte("\n")), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fc.data = split
	fresh := fc.config("fresh", columnar.FormatParquet, true, fc.verifiers(map[string]*atomic.Int64{}), "")
	grade(t, fresh)
	calls := map[string]*atomic.Int64{}
	vs := fc.verifiers(calls)
	res := grade(t, fc.config("again", columnar.FormatParquet, true, vs, prev.Out))
	sameFiles(t, filepath.Join(fc.dir, "again"), fresh.Out)
	flagged := map[string]bool{}
	for _, v := range vs {
		flagged[v.ID] = v.Flagged
	}
	for id, n := range calls {
		if flagged[id] != (n.Load() > 0) {
			t.Errorf("verifier %s (flags: %v) ran %d times", id, flagged[id], n.Load())
		}
	}
	if ru := res.Summary.Reuse; ru.Reused == 0 {
		t.Errorf("reuse summary %+v: nothing reused", ru)
	}
}

// TestResumeOtherHealth checks that a run is resumed only with the health
// setting it was started with.
func TestResumeOtherHealth(t *testing.T) {
	fc := newFlagsCase(t)
	c := fc.config("out", columnar.FormatJSONL, false, fc.verifiers(map[string]*atomic.Int64{}), "")
	grade(t, c)
	c.Health, c.Resume = true, true
	_, err := Run(context.Background(), c)
	var ce *inputs.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "health flags: off there, on given") {
		t.Errorf("resume with health flags on: %v, want a configuration error naming them", err)
	}
}
