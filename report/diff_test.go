package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/join"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
)

// rr is one reward row of a hand-written result directory.
type rr struct {
	id, task, verifier, status string
	reward                     any // nil: null
	source                     string
	model                      string
	checks                     []string // "check-id=status"
}

// writeResults writes a result directory in JSON Lines with the given
// rows, fingerprints (verifier id -> fingerprint) and inputs (path ->
// size).
func writeResults(t *testing.T, rows []rr, fps map[string]string, inputs map[string]int64) string {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"rewards", "checks"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var rw, cw bytes.Buffer
	for _, r := range rows {
		var passed any
		switch r.status {
		case verifiers.StatusPassed:
			passed = true
		case verifiers.StatusFailed:
			passed = false
		}
		var verifier any
		if r.verifier != "" {
			verifier = r.verifier
		}
		line, _ := json.Marshal(map[string]any{"rollout_id": r.id, "task_id": r.task, "verifier_id": verifier, "status": r.status,
			"passed": passed, "reward": r.reward, "checks_total": len(r.checks), "source_file": r.source, "source_row": 0, "model": r.model})
		rw.Write(append(line, '\n'))
		for i, c := range r.checks {
			id, st, _ := strings.Cut(c, "=")
			line, _ := json.Marshal(map[string]any{"rollout_id": r.id, "task_id": r.task, "verifier_id": verifier, "check_index": i,
				"check_id": id, "label": id, "required": true, "status": st, "detail": "", "actual": nil, "expected": nil})
			cw.Write(append(line, '\n'))
		}
	}
	os.WriteFile(filepath.Join(dir, "rewards", "part-00000.jsonl"), rw.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "checks", "part-00000.jsonl"), cw.Bytes(), 0o644)
	var vs, ins []map[string]any
	for id, fp := range fps {
		vs = append(vs, map[string]any{"id": id, "fingerprint": fp})
	}
	for path, size := range inputs {
		ins = append(ins, map[string]any{"path": path, "size": size, "rows": 10, "complete": true})
	}
	m := map[string]any{"gavel_version": "0.1.0", "verifiers": vs, "inputs": ins}
	data, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644)
	return dir
}

func TestCompare(t *testing.T) {
	base := writeResults(t, []rr{
		{"r1", "T1", "V1", verifiers.StatusPassed, 1.0, "a.jsonl", "", []string{"c1=pass", "c2=pass"}},
		{"r2", "T1", "V1", verifiers.StatusFailed, 0.5, "a.jsonl", "", []string{"c1=fail", "c2=pass"}},
		{"r3", "T2", "V2", verifiers.StatusPassed, 1.0, "b.jsonl", "", []string{"d1=pass"}},
		{"r4", "T2", "V2", verifiers.StatusError, nil, "b.jsonl", "", []string{"d1=error"}},
		{"r5", "T2", "V2", verifiers.StatusPassed, 1.0, "b.jsonl", "", []string{"d1=pass"}},
		{"r7", "T1", "V1", verifiers.StatusPassed, 1.0, "a.jsonl", "", []string{"c1=pass", "c2=pass"}},
		{"r8", "T2", "V2", verifiers.StatusFailed, 0.0, "a.jsonl", "", []string{"d1=fail"}},
	}, map[string]string{"V1": "sha256:one", "V2": "sha256:two"}, map[string]int64{"a.jsonl": 100, "b.jsonl": 200})
	cur := writeResults(t, []rr{
		{"r1", "T1", "V1", verifiers.StatusFailed, 0.5, "a.jsonl", "", []string{"c1=fail", "c2=pass"}},
		{"r2", "T1", "V1", verifiers.StatusPassed, 1.0, "a.jsonl", "", []string{"c1=pass", "c2=pass"}},
		{"r3", "T2", "V2", verifiers.StatusError, nil, "b.jsonl", "", []string{"d1=error"}},
		{"r4", "T2", "V2", verifiers.StatusPassed, 1.0, "b.jsonl", "", []string{"d1=pass"}},
		{"r6", "T2", "V2", verifiers.StatusPassed, 1.0, "b.jsonl", "", []string{"d1=pass"}},
		{"r7", "T1", "V1", verifiers.StatusPassed, 1.0, "a.jsonl", "", []string{"c1=pass", "c2=pass", "c3=pass"}},
		{"r8", "T2", "V2", verifiers.StatusPassed, 1.0, "a.jsonl", "", []string{"d1=pass"}},
	}, map[string]string{"V1": "sha256:ONE", "V2": "sha256:two"}, map[string]int64{"a.jsonl": 100, "b.jsonl": 201})

	d, err := Compare(base, cur, DiffConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("paired %d base-only %d cur-only %d regressions %d failed %v", d.Paired, d.BaseOnly, d.CurOnly, d.Regressions, d.Failed)
	if want := "paired 6 base-only 1 cur-only 1 regressions 2 failed true"; got != want {
		t.Errorf("totals: %s, want %s", got, want)
	}
	if len(d.Verifiers) != 2 {
		t.Fatalf("verifiers: %+v", d.Verifiers)
	}
	v1, v2 := d.Verifiers[0], d.Verifiers[1]
	tests := []struct {
		name      string
		got, want any
	}{
		{"V1 pass->fail", v1.PassToFail, int64(1)},
		{"V1 fail->pass", v1.FailToPass, int64(1)},
		{"V1 regressions", v1.Regressions, int64(1)},
		{"V1 fingerprint changed", v1.FingerprintChanged, true},
		{"V1 changed by verifier", v1.ChangedVerifierOnly, int64(2)},
		{"V1 reward changed", v1.RewardChanged, int64(2)},
		{"V1 mean reward delta", *v1.MeanRewardDelta, 0.0}, // (-0.5 + 0.5 + 0) / 3
		{"V1 McNemar p", v1.McNemarP, 1.0},
		{"V2 fingerprint changed", v2.FingerprintChanged, false},
		{"V2 status changes", formatStatusChanges(v2.StatusChanges), "error->passed 1, passed->error 1"},
		{"V2 fail->pass", v2.FailToPass, int64(1)},
		{"V2 regressions", v2.Regressions, int64(1)},
		{"V2 changed by input", v2.ChangedInputOnly, int64(2)}, // b.jsonl grew
		{"V2 unexplained", v2.ChangedUnexplained, int64(1)},    // r8: a.jsonl and V2 unchanged
		{"V2 base only", v2.BaseOnly, int64(1)},
		{"V2 current only", v2.CurOnly, int64(1)},
		{"V2 McNemar p", v2.McNemarP, 1.0}, // b=0, c=1
		{"first example", d.Examples[0].RolloutID + " " + d.Examples[0].Cause, "r1 verifier changed"},
		{"examples", len(d.Examples), 5},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	checks := map[string]CheckDiff{}
	for _, c := range d.Checks {
		checks[c.Verifier+"/"+c.Check] = c
	}
	if c := checks["V1/c1"]; c.PassToFail != 1 || c.FailToPass != 1 {
		t.Errorf("V1/c1 = %+v, want one flip each way", c)
	}
	if c := checks["V1/c3"]; c.Added != 1 {
		t.Errorf("V1/c3 = %+v, want added 1", c)
	}
	if c := checks["V2/d1"]; c.StatusChanges["pass->error"] != 1 || c.StatusChanges["error->pass"] != 1 || c.FailToPass != 1 {
		t.Errorf("V2/d1 = %+v", c)
	}

	for _, format := range []string{"text", "markdown", "json"} {
		var buf bytes.Buffer
		var err error
		switch format {
		case "text":
			err = d.WriteText(&buf)
		case "markdown":
			err = d.WriteMarkdown(&buf)
		case "json":
			err = d.WriteJSON(&buf)
		}
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if !strings.Contains(buf.String(), "r1") || !strings.Contains(buf.String(), "V2") {
			t.Errorf("%s output lacks the changes:\n%s", format, buf.String())
		}
	}
}

func TestThreshold(t *testing.T) {
	tests := []struct {
		name            string
		in              string
		regress, paired int64
		want            bool
		wantErr         bool
	}{
		{"zero fails on any", "0", 1, 100, true, false},
		{"zero passes none", "0", 0, 100, false, false},
		{"count at limit", "5", 5, 100, false, false},
		{"count over limit", "5", 6, 100, true, false},
		{"percent at limit", "1%", 1, 100, false, false},
		{"percent over limit", "1%", 2, 100, true, false},
		{"fraction over limit", "0.01", 2, 100, true, false},
		{"rate with nothing paired", "0.01", 0, 0, false, false},
		{"negative", "-1", 0, 0, false, true},
		{"rate over one", "1.5", 0, 0, false, true},
		{"words", "many", 0, 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, err := ParseThreshold(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseThreshold(%q) error %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got := th.exceeded(tt.regress, tt.paired); got != tt.want {
				t.Errorf("ParseThreshold(%q).exceeded(%d, %d) = %v, want %v", tt.in, tt.regress, tt.paired, got, tt.want)
			}
		})
	}
}

func TestLoadSideInterleavedChecks(t *testing.T) {
	dir := writeResults(t, []rr{
		{"r1", "T", "V", verifiers.StatusPassed, 1.0, "a", "", nil},
		{"r2", "T", "V", verifiers.StatusPassed, 1.0, "a", "", nil},
	}, map[string]string{"V": "x"}, map[string]int64{"a": 1})
	checks := `{"rollout_id":"r1","check_id":"c1","status":"pass"}
{"rollout_id":"r2","check_id":"d1","status":"pass"}
{"rollout_id":"r1","check_id":"c2","status":"fail"}
{"rollout_id":"r2","check_id":"d2","status":"pass"}
`
	if err := os.WriteFile(filepath.Join(dir, "checks", "part-00000.jsonl"), []byte(checks), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := join.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	_, err = join.Join(context.Background(), d, d, join.Config{Checks: []string{"check_id", "status"}}, func(p *join.Pair) error {
		var row []string
		for _, c := range p.Left.Checks {
			row = append(row, string(c[0].Data)+"="+string(c[1].Data))
		}
		got = append(got, strings.Join(row, " "))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"c1=pass c2=fail", "d1=pass d2=pass"}; !slices.Equal(got, want) {
		t.Errorf("checks = %q, want %q", got, want)
	}
}

// TestThresholdString writes a threshold back as a user would type it.
func TestThresholdString(t *testing.T) {
	for in, want := range map[string]string{"7%": "7%", "0.07": "7%", "0.5%": "0.5%", "5": "5", "0": "0", "100%": "100%"} {
		th, err := ParseThreshold(in)
		if err != nil {
			t.Fatalf("ParseThreshold(%q): %v", in, err)
		}
		if got := th.String(); got != want {
			t.Errorf("ParseThreshold(%q).String() = %q, want %q", in, got, want)
		}
	}
}

// TestManifestInputs sums the rows of the units of one file.
func TestManifestInputs(t *testing.T) {
	var m results.Manifest
	text := `{"inputs": [{"path": "a", "size": 9, "rows": 10}, {"path": "a", "size": 9, "rows": 5}, {"path": "b", "size": 3, "rows": 2}, {"path": "b", "size": 3}]}`
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	got := manifestInputs(&m)
	if want := (inputKey{size: 9, rows: 15}); got["a"] != want {
		t.Errorf("a: %+v, want %+v", got["a"], want)
	}
	if want := (inputKey{size: 3, rows: -1}); got["b"] != want {
		t.Errorf("b: %+v, want %+v", got["b"], want)
	}
}

// TestCompareTaskChanged: a rollout whose task_id changed is bound to
// another verifier; that is a change of input, and of the verifier too
// only when a fingerprint changed (either side's verifier).
func TestCompareTaskChanged(t *testing.T) {
	base := writeResults(t, []rr{
		{"r1", "T1", "V1", verifiers.StatusPassed, 1.0, "a.jsonl", "", []string{"c1=pass"}},
		{"r2", "T1", "V1", verifiers.StatusPassed, 1.0, "a.jsonl", "", []string{"c1=pass"}},
		{"r3", "T1", "V1", verifiers.StatusPassed, 1.0, "a.jsonl", "", []string{"c1=pass"}},
		{"r4", "T3", "V3", verifiers.StatusPassed, 1.0, "a.jsonl", "", []string{"e1=pass"}},
	}, map[string]string{"V1": "sha256:one", "V2": "sha256:two", "V3": "sha256:three"}, map[string]int64{"a.jsonl": 100})
	cur := writeResults(t, []rr{
		{"r1", "T2", "V2", verifiers.StatusFailed, 0.0, "a.jsonl", "", []string{"d1=fail"}},
		{"r2", "T9", "", verifiers.StatusError, nil, "a.jsonl", "", nil},
		{"r3", "T3", "V3", verifiers.StatusFailed, 0.0, "a.jsonl", "", []string{"e1=fail"}},
		{"r4", "T3", "V3", verifiers.StatusFailed, 0.0, "a.jsonl", "", []string{"e1=fail"}},
	}, map[string]string{"V1": "sha256:one", "V2": "sha256:two", "V3": "sha256:THREE"}, map[string]int64{"a.jsonl": 100})
	d, err := Compare(base, cur, DiffConfig{})
	if err != nil {
		t.Fatal(err)
	}
	causes := map[string]string{}
	for _, e := range d.Examples {
		causes[e.RolloutID] = e.Cause
	}
	want := map[string]string{
		"r1": CauseInput, // T1 -> T2: V1 and V2 unchanged
		"r2": CauseInput, // T1 -> T9, bound to no verifier
		"r3": CauseBoth,  // T1 -> T3, and V3 changed
		"r4": CauseVerifier,
	}
	for id, c := range want {
		if causes[id] != c {
			t.Errorf("%s: cause %q, want %q", id, causes[id], c)
		}
	}
}

// TestCompareDuplicateIDs: a rollout id held by two rows stands for its
// first; the checks compared are that row's own, so a directory diffed
// against itself shows no check change.
func TestCompareDuplicateIDs(t *testing.T) {
	rows := []rr{
		{"r1", "T1", "V1", verifiers.StatusPassed, 1.0, "a.jsonl", "", []string{"c1=pass", "c2=pass"}},
		{"r2", "T1", "V1", verifiers.StatusFailed, 0.5, "a.jsonl", "", []string{"c1=fail", "c2=pass"}},
		{"r1", "T1", "V1", verifiers.StatusFailed, 0.0, "a.jsonl", "", []string{"c1=fail", "c2=fail"}},
	}
	fps, ins := map[string]string{"V1": "sha256:one"}, map[string]int64{"a.jsonl": 100}
	d, err := Compare(writeResults(t, rows, fps, ins), writeResults(t, rows, fps, ins), DiffConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Checks {
		if c.PassToFail+c.FailToPass+c.Added+c.Removed != 0 || len(c.StatusChanges) != 0 {
			t.Errorf("check %s/%s changed against itself: %+v", c.Verifier, c.Check, c)
		}
	}
	// The first r1 passed; a current side whose first r1 fails c2 shows
	// that one flip.
	cur := slices.Clone(rows)
	cur[0].checks = []string{"c1=pass", "c2=fail"}
	cur[0].status = verifiers.StatusFailed
	d, err = Compare(writeResults(t, rows, fps, ins), writeResults(t, cur, fps, ins), DiffConfig{})
	if err != nil {
		t.Fatal(err)
	}
	flips := map[string]int64{}
	for _, c := range d.Checks {
		flips[c.Check] = c.PassToFail + c.FailToPass + c.Added + c.Removed + int64(len(c.StatusChanges))
	}
	if flips["c1"] != 0 || flips["c2"] != 1 {
		t.Errorf("check changes %v, want c2's one flip", flips)
	}
}

// TestSameTurnRewards compares lists of turn rewards: a turn not scored
// (NaN) equals another, a null list (nil) only another, and a list of
// another length or value differs.
func TestSameTurnRewards(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		a, b TurnRewards
		same bool
		text string
	}{
		{TurnRewards{nan, 1}, TurnRewards{nan, 1}, true, "[null,1]"},
		{nil, nil, true, "null"},
		{TurnRewards{}, TurnRewards{}, true, "[]"},
		{nil, TurnRewards{}, false, "null"},
		{TurnRewards{nan, 1}, TurnRewards{0, 1}, false, "[null,1]"},
		{TurnRewards{0.5}, TurnRewards{0.5, nan}, false, "[0.5]"},
		{TurnRewards{0, 0}, TurnRewards{0, 0.5}, false, "[0,0]"},
	}
	for _, tt := range tests {
		if got := sameTurnRewards(tt.a, tt.b); got != tt.same {
			t.Errorf("sameTurnRewards(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.same)
		}
		if got := sameTurnRewards(tt.b, tt.a); got != tt.same {
			t.Errorf("sameTurnRewards(%s, %s) = %v, want %v", tt.b, tt.a, got, tt.same)
		}
		if got := tt.a.String(); got != tt.text {
			t.Errorf("%v as text = %s, want %s", []float64(tt.a), got, tt.text)
		}
	}
}
