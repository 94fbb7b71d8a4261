package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gradeFormats grades one small generated dataset in each output format
// and returns the result directories by format.
func gradeFormats(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	input := filepath.Join(dir, "rollouts.parquet")
	if code, _, stderr := runCLI(t, "gen", "--quiet", "--out", input, "--rollouts", "400", "--seed", "5"); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	out := map[string]string{}
	for _, f := range []string{"parquet", "arrow", "jsonl"} {
		out[f] = filepath.Join(dir, "g-"+f)
		if code, _, stderr := runCLI(t, "grade", "--quiet", "--format", f, "--out", out[f], input); code != 0 && code != 3 {
			t.Fatalf("grade: exit %d: %s", code, stderr)
		}
	}
	return out
}

// sameFile reports whether two files have the same bytes.
func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	return bytes.Equal([]byte(mustRead(t, a)), []byte(mustRead(t, b)))
}

func TestRescoreCLI(t *testing.T) {
	graded := gradeFormats(t)
	tmp := t.TempDir()
	// The formulas the run has (every row's verdict is computed again), and
	// weighted with every weight 1, which computes what fraction does: the
	// rewards are byte-identical.
	identity := writeFile(t, filepath.Join(tmp, "identity.json"), `{"VER-001": "fraction"}`)
	ones := writeFile(t, filepath.Join(tmp, "ones.json"), `{"VER-002": {"weighted": {}}, "VER-004": {"expr": "double(checks.filter(c, c.passed).size()) / double(checks.size())"}}`)
	changed := writeFile(t, filepath.Join(tmp, "changed.yaml"), "VER-001: all\nVER-003: {expr: '1.5'}\n")
	for format, dir := range graded {
		t.Run(format, func(t *testing.T) {
			part := "part-00000." + format
			same := filepath.Join(tmp, "same-"+format)
			if code, _, stderr := runCLI(t, "rescore", dir, "--reward", identity, "--out", same); code != 0 && code != 3 {
				t.Fatalf("rescore: exit %d: %s", code, stderr)
			}
			for _, f := range []string{"rewards/" + part, "checks/" + part, "_stats/part-00000.json", "_stats/part-00000.ids", "_SUCCESS"} {
				if !sameFile(t, filepath.Join(dir, f), filepath.Join(same, f)) {
					t.Errorf("identity rescore: %s differs from the graded run's", f)
				}
			}
			if got, want := mustRead(t, filepath.Join(same, "manifest.json")), mustRead(t, filepath.Join(dir, "manifest.json")); got != want {
				t.Errorf("identity rescore: manifest.json differs:\n%s\nwant\n%s", got, want)
			}
			sameOnes := filepath.Join(tmp, "ones-"+format)
			if code, _, stderr := runCLI(t, "rescore", dir, "--reward", ones, "--out", sameOnes); code != 0 && code != 3 {
				t.Fatalf("rescore: exit %d: %s", code, stderr)
			}
			if !sameFile(t, filepath.Join(dir, "rewards", part), filepath.Join(sameOnes, "rewards", part)) {
				t.Errorf("rescore with weights of 1 and the fraction as an expression: the rewards part differs from the graded run's")
			}

			other := filepath.Join(tmp, "other-"+format)
			code, stdout, stderr := runCLI(t, "rescore", dir, "--reward", changed, "--out", other)
			if code != 3 {
				t.Fatalf("rescore with an expression out of range: exit %d, want 3: %s", code, stderr)
			}
			if !strings.Contains(stdout, "rescored 400 rollouts") {
				t.Errorf("stdout = %q, want the counts", stdout)
			}
			if !sameFile(t, filepath.Join(dir, "checks", part), filepath.Join(other, "checks", part)) {
				t.Errorf("changed formulas: the checks part differs from the graded run's")
			}
			if sameFile(t, filepath.Join(dir, "rewards", part), filepath.Join(other, "rewards", part)) {
				t.Errorf("changed formulas: the rewards part is the graded run's")
			}
			var m struct {
				Verifiers []struct{ ID, Fingerprint string }
				Config    struct {
					Rewards map[string]json.RawMessage `json:"rewards"`
				} `json:"config"`
			}
			var old = m
			if err := json.Unmarshal([]byte(mustRead(t, filepath.Join(other, "manifest.json"))), &m); err != nil {
				t.Fatal(err)
			}
			json.Unmarshal([]byte(mustRead(t, filepath.Join(dir, "manifest.json"))), &old)
			if got := string(m.Config.Rewards["VER-001"]); got != `"all"` {
				t.Errorf("manifest rewards VER-001 = %s, want \"all\"", got)
			}
			for i, v := range m.Verifiers {
				changed := v.ID == "VER-001" || v.ID == "VER-003"
				if (v.Fingerprint != old.Verifiers[i].Fingerprint) != changed {
					t.Errorf("fingerprint of %s: changed %v, want %v", v.ID, !changed, changed)
				}
			}
		})
	}

	// Only the rewards changed, row by row as the formulas say: compare the
	// JSON Lines rows.
	dir, other := graded["jsonl"], filepath.Join(tmp, "other-jsonl")
	before := strings.Split(strings.TrimSpace(mustRead(t, filepath.Join(dir, "rewards", "part-00000.jsonl"))), "\n")
	after := strings.Split(strings.TrimSpace(mustRead(t, filepath.Join(other, "rewards", "part-00000.jsonl"))), "\n")
	if len(before) != len(after) {
		t.Fatalf("rows: %d, want %d", len(after), len(before))
	}
	var sawAll, sawExpr int
	for i := range before {
		var b, a map[string]any
		json.Unmarshal([]byte(before[i]), &b)
		json.Unmarshal([]byte(after[i]), &a)
		switch {
		case b["verifier_id"] == "VER-001" && b["status"] != "error":
			sawAll++
			want := 0.0
			if b["checks_passed"] == b["checks_total"] {
				want = 1
			}
			if a["reward"] != want || a["status"] != b["status"] {
				t.Errorf("row %d: VER-001 with all: status %v reward %v, want %v %v", i, a["status"], a["reward"], b["status"], want)
			}
		case b["verifier_id"] == "VER-003" && b["status"] != "error":
			sawExpr++
			if a["status"] != "error" || a["reward"] != nil || a["error_kind"] != "verifier" ||
				a["error"] != "reward expression gave 1.5, outside [0, 1]" || a["checks_total"] != b["checks_total"] {
				t.Errorf("row %d: VER-003 with an expression out of range = %s", i, after[i])
			}
		default:
			if before[i] != after[i] {
				t.Errorf("row %d changed:\n%s\nwant\n%s", i, after[i], before[i])
			}
		}
	}
	if sawAll == 0 || sawExpr == 0 {
		t.Errorf("rows of VER-001: %d, of VER-003: %d; want some of each", sawAll, sawExpr)
	}
}

func TestRescoreRefuses(t *testing.T) {
	dir := gradeFormats(t)["parquet"]
	tmp := t.TempDir()
	for _, tc := range []struct {
		name, file, want string
	}{
		{"unknown verifier", "VER-999: all\n", `unknown verifier "VER-999"`},
		{"unknown check", "VER-001: {weighted: {nope: 2}}\n", `the reward of VER-001 weighs unknown check "nope" (its checks in`},
		{"bad expression", "VER-001: {expr: 'checks.('}\n", `VER-001: reward expression "checks.("`},
		{"unknown formula", "VER-001: most\n", `VER-001: unknown reward formula "most"`},
		{"not a mapping", "- VER-001\n", "not a YAML or JSON mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(tmp, strings.ReplaceAll(tc.name, " ", "-"))
			file := writeFile(t, filepath.Join(tmp, "r.yaml"), tc.file)
			code, _, stderr := runCLI(t, "rescore", dir, "--reward", file, "--out", out)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("rescore: exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("rescore refused, but wrote %s", out)
			}
		})
	}
	file := writeFile(t, filepath.Join(tmp, "r.yaml"), "VER-001: all\n")
	if code, _, stderr := runCLI(t, "rescore", dir, "--reward", file, "--out", dir); code != 2 || !strings.Contains(stderr, "--out must differ") {
		t.Errorf("rescore into DIR: exit %d, stderr %q; want 2", code, stderr)
	}
}

func TestRescoreListsRewardChanges(t *testing.T) {
	dir := t.TempDir()
	// Rewards by fraction: yes 1, no 0.5; by all: yes 1, no 0. Two input
	// files, so two parts: the list follows the input order across them.
	graded := gradeYes(t, dir, "graded", [][]any{{"yes", "no", "no"}, {"yes", "no"}})
	all := writeFile(t, filepath.Join(dir, "all.yaml"), "VER-Y: all\n")
	tests := []struct {
		name  string
		limit []string
		want  string
	}{
		{"default limit", nil, "\nreward changed for 3 of 5 rollouts:\n  r1  VER-Y  0.5 -> 0\n  r2  VER-Y  0.5 -> 0\n  r4  VER-Y  0.5 -> 0\n"},
		{"limit 2", []string{"--limit", "2"}, "\nreward changed for 3 of 5 rollouts; the first 2 in input order (--limit N lists more):\n  r1  VER-Y  0.5 -> 0\n  r2  VER-Y  0.5 -> 0\n"},
		{"limit 0", []string{"--limit", "0"}, "\nreward changed for 3 of 5 rollouts (--limit N lists them)\n"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"rescore", graded, "--reward", all, "--out", filepath.Join(dir, fmt.Sprint("rescored", i))}, tt.limit...)
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("rescore: exit %d: %s", code, stderr)
			}
			if !strings.HasSuffix(stdout, tt.want) {
				t.Errorf("rescore printed:\n%s\nwant it to end with:\n%s", stdout, tt.want)
			}
		})
	}
	same := writeFile(t, filepath.Join(dir, "same.yaml"), "VER-Y: fraction\n")
	if _, stdout, _ := runCLI(t, "rescore", graded, "--reward", same, "--out", filepath.Join(dir, "same")); !strings.HasSuffix(stdout, "\nno reward changed (5 rollouts)\n") {
		t.Errorf("rescore with the same formula printed:\n%s", stdout)
	}
	// A formula that fails makes the rollout an error: its reward is null.
	bad := writeFile(t, filepath.Join(dir, "bad.yaml"), "VER-Y: {expr: '1.5'}\n")
	code, stdout, _ := runCLI(t, "rescore", graded, "--reward", bad, "--out", filepath.Join(dir, "bad"), "--limit", "1")
	if code != 3 || !strings.Contains(stdout, "  r0  VER-Y  1 -> null (passed -> error)\n") {
		t.Errorf("rescore with a failing formula: exit %d:\n%s", code, stdout)
	}
	if code, _, stderr := runCLI(t, "rescore", graded, "--reward", all, "--out", filepath.Join(dir, "neg"), "--limit", "-1"); code != 2 || !strings.Contains(stderr, "--limit -1") {
		t.Errorf("rescore --limit -1: exit %d, stderr %q; want 2", code, stderr)
	}
}
