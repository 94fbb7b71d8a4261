package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeJudgementsDir writes a result directory whose judgements table
// holds lines (JSON objects), with empty rewards and checks tables.
func writeJudgementsDir(t *testing.T, dir string, lines []string) string {
	t.Helper()
	for _, sub := range []string{"rewards", "checks", "judgements"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "judgements", "part-00000.jsonl"), strings.Join(lines, "\n")+"\n")
	return dir
}

// judgementLine is one row of a judgements table.
func judgementLine(rollout, check, judge string, sample int, status string, score float64) string {
	return fmt.Sprintf(`{"rollout_id":%q,"task_id":"T","verifier_id":"V","check_index":0,"check_id":%q,"judge_model":%q,"sample":%d,"seed":%d,"temperature":0,"score":%v,"status":%q,"issues":null,"suggestion":null,"error":null}`,
		rollout, check, judge, sample, sample, score, status)
}

func TestJudgeUsage(t *testing.T) {
	code, stdout, stderr := runCLI(t, "judge")
	if code != 2 || !strings.Contains(stdout, "agreement") || !strings.Contains(stderr, "no subcommand") {
		t.Errorf("gavel judge: exit %d, stdout %q, stderr %q; want 2 and the subcommands listed", code, stdout, stderr)
	}
	for _, c := range judgeCommands() {
		for _, args := range [][]string{{"judge", c.name, "--help"}, {"help", "judge", c.name}} {
			code, stdout, _ := runCLI(t, args...)
			if code != 0 || !strings.HasPrefix(stdout, "Usage: gavel judge "+c.name) || !strings.Contains(stdout, "Examples:") {
				t.Errorf("gavel %s: exit %d:\n%s", strings.Join(args, " "), code, stdout)
			}
		}
	}
	code, _, stderr = runCLI(t, "judge", "agrement")
	if code != 2 || !strings.Contains(stderr, `did you mean agreement?`) {
		t.Errorf("gavel judge agrement: exit %d, stderr %q", code, stderr)
	}
}

func TestJudgeAgreementCLI(t *testing.T) {
	dir := writeJudgementsDir(t, t.TempDir(), []string{
		judgementLine("r1", "c", "a", 0, "pass", 1), judgementLine("r1", "c", "b", 0, "pass", 0.9),
		judgementLine("r2", "c", "a", 0, "pass", 0.8), judgementLine("r2", "c", "b", 0, "fail", 0.2),
		judgementLine("r3", "c", "a", 0, "fail", 0), judgementLine("r3", "c", "b", 0, "fail", 0.1),
	})
	code, stdout, stderr := runCLI(t, "judge", "agreement", "--format", "json", "--resamples", "50", dir)
	if code != 0 {
		t.Fatalf("judge agreement: exit %d: %s", code, stderr)
	}
	var got struct {
		Judges  []string
		Kappa   string
		Overall struct {
			Kappa struct{ Value *float64 }
		}
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	// pp 1, pf 1, ff 1: po 2/3, a passes 2/3, b 1/3, pe 2/9+2/9 = 4/9,
	// κ = (6/9-4/9)/(5/9) = 0.4.
	if got.Kappa != "cohen" || got.Overall.Kappa.Value == nil || fmt.Sprintf("%.12f", *got.Overall.Kappa.Value) != "0.400000000000" {
		t.Errorf("judge agreement JSON: %s", stdout)
	}
	for _, format := range []string{"table", "markdown"} {
		code, stdout, _ := runCLI(t, "judge", "agreement", "--format", format, "--resamples", "50", dir)
		if code != 0 || !strings.Contains(stdout, "Cohen's kappa") {
			t.Errorf("judge agreement --format %s: exit %d:\n%s", format, code, stdout)
		}
	}
	// Without a judgements table: exit 1 saying so.
	res := t.TempDir()
	os.MkdirAll(filepath.Join(res, "rewards"), 0o755)
	code, _, stderr = runCLI(t, "judge", "agreement", res)
	if code != 1 || !strings.Contains(stderr, "no judgements table") {
		t.Errorf("judge agreement without judgements: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "judge", "agreement", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "not a result directory") {
		t.Errorf("judge agreement of a non-result directory: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "judge", "agreement", "--format", "csv", dir)
	if code != 2 || !strings.Contains(stderr, "unknown format") {
		t.Errorf("judge agreement --format csv: exit %d, %s", code, stderr)
	}
}
