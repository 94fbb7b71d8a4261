package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/internal/gaveltest"
)

// flagExamples holds the library of reward-hacking flags: each spec
// beside rollouts whose ids say whether the spec's flag must be raised
// on them (raise-...) or not (clear-...).
var flagExamples = filepath.Join("..", "examples", "flags")

// checkRows reads the checks of a JSON Lines result directory, in order.
func checkRows(t *testing.T, out string) []map[string]any {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(out, "checks", "*.jsonl"))
	var rows []map[string]any
	for _, p := range paths {
		rows = append(rows, gaveltest.DecodeJSONL(t, p)...)
	}
	return rows
}

func TestFlagLibrary(t *testing.T) {
	specs, _ := filepath.Glob(filepath.Join(flagExamples, "*.yaml"))
	if len(specs) < 4 {
		t.Fatalf("examples/flags holds %d specs, want the 4 of the library", len(specs))
	}
	for _, spec := range specs {
		name := strings.TrimSuffix(filepath.Base(spec), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, code, stderr := gradeFrom(t, "--spec", spec, filepath.Join(flagExamples, name+".jsonl"))
			if code != 0 && code != 1 {
				t.Fatalf("grade: exit %d: %s", code, stderr)
			}
			rows := rewardRows(t, out)
			raised, cleared := 0, 0
			for id, row := range rows {
				flags, ok := row["flags"].([]any)
				if !ok {
					t.Fatalf("%s: flags = %#v, want a list", id, row["flags"])
				}
				switch {
				case strings.HasPrefix(id, "raise-"):
					raised++
					if !reflect.DeepEqual(flags, []any{name}) {
						t.Errorf("%s: flags %v, want [%s]", id, flags, name)
					}
				case strings.HasPrefix(id, "clear-"):
					cleared++
					if len(flags) != 0 {
						t.Errorf("%s: flags %v, want none", id, flags)
					}
				default:
					t.Fatalf("rollout id %q says neither raise- nor clear-", id)
				}
				if row["status"] == "error" {
					t.Errorf("%s: status error: %v", id, row["error"])
				}
			}
			if raised < 2 || cleared < 2 {
				t.Errorf("%d rollouts raise the flag and %d do not: want at least 2 of each", raised, cleared)
			}
			// Each rollout has its check row, then its flag row; the
			// flag counts in none of the rollout's check counts.
			for _, cr := range checkRows(t, out) {
				id := cr["rollout_id"].(string)
				switch cr["kind"] {
				case "check":
					if cr["check_index"] != 0.0 {
						t.Errorf("%s: check row at index %v", id, cr["check_index"])
					}
				case "flag":
					want := "clear"
					if strings.HasPrefix(id, "raise-") {
						want = "raised"
					}
					if cr["check_index"] != 1.0 || cr["status"] != want || cr["check_id"] != name {
						t.Errorf("%s: flag row %v, want index 1, %s, %s", id, cr, name, want)
					}
				default:
					t.Errorf("%s: kind %v", id, cr["kind"])
				}
			}
			for id, row := range rows {
				if row["checks_total"] != 1.0 || row["required_total"] != 1.0 {
					t.Errorf("%s: checks_total %v, required_total %v, want 1 and 1: flags are not checks", id, row["checks_total"], row["required_total"])
				}
			}
		})
	}
}

// flagSpec has a flag whose condition errs on some rollouts, and one
// check, which decides the status.
const flagSpec = `verifiers:
  - id: V
    tasks: all
    name: answer holds 4
    checks:
      - {id: four, type: expr, expr: 'output.contains("4")'}
    flags:
      - {id: shouty, label: all capitals, expr: 'output == output.upperAscii() && output.size() > 0'}
      - {id: long-log, label: long log or shouted, expr: 'size(log) > 1 || meta.shout'}
`

// A flag never moves the status, passed or reward; one that errs is
// counted as an error and raises nothing; a run without flags writes
// neither the kind nor the flags column.
func TestFlagsNeverMoveReward(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "flags.yaml")
	plain := filepath.Join(dir, "plain.yaml")
	in := filepath.Join(dir, "in.jsonl")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(spec, flagSpec)
	write(plain, strings.Split(flagSpec, "    flags:")[0])
	write(in, `{"rollout_id": "a", "task_id": "t", "output": "IT IS 4", "log": [{"eventType": "x"}, {"eventType": "y"}]}
{"rollout_id": "b", "task_id": "t", "output": "it is 5", "log": [{"eventType": "x"}], "shout": false}
{"rollout_id": "c", "task_id": "t", "output": "four is 4"}
`)
	out, code, stderr := gradeFrom(t, "--spec", spec, in)
	if code != 0 {
		t.Fatalf("grade: exit %d, want 0 (b fails, which is no error): %s", code, stderr)
	}
	base, code, stderr := gradeFrom(t, "--health", "off", "--spec", plain, in)
	if code != 0 {
		t.Fatalf("grade without flags: exit %d, want 0: %s", code, stderr)
	}
	rows, plainRows := rewardRows(t, out), rewardRows(t, base)
	want := map[string][]any{"a": {"shouty", "long-log"}, "b": {}, "c": {}}
	for id, flags := range want {
		row, prow := rows[id], plainRows[id]
		if !reflect.DeepEqual(row["flags"], flags) {
			t.Errorf("%s: flags %v, want %v", id, row["flags"], flags)
		}
		if _, ok := prow["flags"]; ok {
			t.Errorf("%s: a run without flags writes a flags column", id)
		}
		for _, col := range []string{"status", "passed", "reward", "checks_total", "checks_passed", "required_total", "required_passed", "error_kind"} {
			if !reflect.DeepEqual(row[col], prow[col]) {
				t.Errorf("%s: %s %v with flags, %v without", id, col, row[col], prow[col])
			}
		}
	}
	// c has a short log and no shout: the flag's condition errs, and the
	// flag is an error, not raised.
	var cFlag map[string]any
	for _, cr := range checkRows(t, out) {
		if cr["rollout_id"] == "c" && cr["check_id"] == "long-log" {
			cFlag = cr
		}
	}
	if cFlag == nil || cFlag["status"] != "error" || cFlag["kind"] != "flag" {
		t.Errorf("c's long-log flag row = %v, want status error, kind flag", cFlag)
	}
	for _, cr := range checkRows(t, base) {
		if _, ok := cr["kind"]; ok {
			t.Fatalf("a run without flags writes a kind column: %v", cr)
		}
	}
	var sum struct {
		Flagged int64                       `json:"flagged"`
		Flags   map[string]map[string]int64 `json:"flags"`
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Flagged != 1 || sum.Flags["V/long-log"]["error"] != 1 || sum.Flags["V/long-log"]["clear"] != 1 || sum.Flags["V/shouty"]["raised"] != 1 || sum.Flags["V/shouty"]["clear"] != 2 {
		t.Errorf("summary flagged %d, flags %v", sum.Flagged, sum.Flags)
	}
}

func TestLeaderboardFlags(t *testing.T) {
	name := "git-history"
	out, code, stderr := gradeFrom(t, "--set", "model=m", "--spec", filepath.Join(flagExamples, name+".yaml"), filepath.Join(flagExamples, name+".jsonl"))
	if code != 0 && code != 1 {
		t.Fatalf("grade: exit %d: %s", code, stderr)
	}
	board := func(args ...string) (lb struct {
		Excluded *int64 `json:"excluded_flagged"`
		Flags    []string
		Entries  []struct {
			Rollouts     int64            `json:"rollouts"`
			Flagged      *int64           `json:"flagged"`
			FlaggedShare *float64         `json:"flagged_share"`
			FlagCounts   map[string]int64 `json:"flag_counts"`
		}
		Conventions []string
	}) {
		t.Helper()
		code, stdout, stderr := runCLI(t, append(append([]string{"leaderboard", "--format", "json"}, args...), out)...)
		if code != 0 {
			t.Fatalf("leaderboard %v: exit %d: %s", args, code, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), &lb); err != nil {
			t.Fatal(err)
		}
		if len(lb.Entries) != 1 {
			t.Fatalf("leaderboard %v: %d entries, want 1", args, len(lb.Entries))
		}
		return lb
	}
	lb := board("--flags")
	e := lb.Entries[0]
	if e.Rollouts != 5 || e.Flagged == nil || *e.Flagged != 3 || *e.FlaggedShare != 0.6 || e.FlagCounts[name] != 3 || lb.Excluded != nil {
		t.Errorf("--flags: %+v, excluded %v", e, lb.Excluded)
	}
	lb = board("--exclude-flagged")
	if e := lb.Entries[0]; e.Rollouts != 2 || *e.Flagged != 0 || lb.Excluded == nil || *lb.Excluded != 3 {
		t.Errorf("--exclude-flagged: %+v, excluded %v", e, lb.Excluded)
	}
	if !strings.Contains(strings.Join(lb.Conventions, "\n"), "3 rollouts that raised any flag are left out") {
		t.Errorf("conventions do not say what was left out: %q", lb.Conventions)
	}
	lb = board("--exclude-flagged=other-flag")
	if e := lb.Entries[0]; e.Rollouts != 5 || *lb.Excluded != 0 {
		t.Errorf("--exclude-flagged=other-flag: %+v, excluded %v", e, *lb.Excluded)
	}
	// A run without flags: no flagged column, and excluding is an error.
	plain, code, stderr := gradeFrom(t, "--health", "off", "--set", "model=m", "--spec", filepath.Join(examples, "messages.yaml"), "--from", "messages", filepath.Join(examples, "chats.jsonl"))
	if code != 0 && code != 1 {
		t.Fatalf("grade: exit %d: %s", code, stderr)
	}
	code, stdout, _ := runCLI(t, "leaderboard", "--format", "json", plain)
	if code != 0 || strings.Contains(stdout, "flagged") {
		t.Errorf("leaderboard of a run without flags: exit %d, output %s", code, stdout)
	}
	if code, _, stderr := runCLI(t, "leaderboard", "--exclude-flagged", plain); code != 2 && code != 1 || !strings.Contains(stderr, "no result directory has flags") {
		t.Errorf("--exclude-flagged of a run without flags: exit %d, %s", code, stderr)
	}
}

func TestLeaderboardCoverage(t *testing.T) {
	name := "git-history" // 3 rollouts of git-history/1, 2 of git-history/2
	out, code, stderr := gradeFrom(t, "--set", "model=m", "--spec", filepath.Join(flagExamples, name+".yaml"), filepath.Join(flagExamples, name+".jsonl"))
	if code != 0 && code != 1 {
		t.Fatalf("grade: exit %d: %s", code, stderr)
	}
	expect := filepath.Join(t.TempDir(), "tasks.txt")
	if err := os.WriteFile(expect, []byte("# the tasks of the run\ngit-history/1\ngit-history/2\n\ngit-history/3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "leaderboard", "--expect", expect, "--trials", "2", out)
	if code != 1 || stdout != "" {
		t.Errorf("incomplete: exit %d, output %q; want 1 and nothing", code, stdout)
	}
	for _, want := range []string{"2 cells missing, 1 rollouts beyond", "model m task git-history/1: 3 rollouts for 2 trials", "model m task git-history/3: 0 of 2 rollouts"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not say %q", stderr, want)
		}
	}
	code, stdout, stderr = runCLI(t, "leaderboard", "--format", "json", "--expect", expect, "--trials", "2", "--allow-incomplete", out)
	if code != 0 {
		t.Fatalf("--allow-incomplete: exit %d: %s", code, stderr)
	}
	var lb struct {
		Coverage struct {
			Complete bool
			Gaps     []string
		}
		Entries []struct {
			Coverage map[string]int64
		}
	}
	if err := json.Unmarshal([]byte(stdout), &lb); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"expected": 6, "graded": 4, "errored": 0, "missing": 2, "duplicated": 1, "unexpected": 0}
	if lb.Coverage.Complete || len(lb.Coverage.Gaps) != 2 || len(lb.Entries) != 1 || !reflect.DeepEqual(lb.Entries[0].Coverage, want) {
		t.Errorf("coverage %+v, entries %+v; want incomplete, 2 gaps, %v", lb.Coverage, lb.Entries, want)
	}
	code, stdout, _ = runCLI(t, "leaderboard", "--expect", expect, "--trials", "2", "--allow-incomplete", out)
	if code != 0 || !strings.Contains(stdout, "(incomplete)") {
		t.Errorf("text of an incomplete leaderboard does not mark its rates: %s", stdout)
	}
	// Without --expect, the unequal trial counts are a note.
	code, stdout, _ = runCLI(t, "leaderboard", out)
	if code != 0 || !strings.Contains(stdout, "model m: its 2 tasks have unequal numbers of rollouts (2 to 3)") {
		t.Errorf("no note of unequal trials: %s", stdout)
	}
	// Only git-history/2 expected: the rollouts of git-history/1 are
	// unexpected, not a gap.
	if err := os.WriteFile(expect, []byte("git-history/2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "leaderboard", "--expect", expect, "--trials", "2", out); code != 0 {
		t.Errorf("complete coverage: exit %d: %s", code, stderr)
	}
}

// Rescoring a run with flags steps over the flag rows and keeps the
// rewards' flags: the run's own formula gives the same rewards part, byte
// for byte; and a diff of two runs with flags reads only their checks.
func TestFlagsRescoreAndDiff(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, filepath.Join(dir, "flags.yaml"), flagSpec)
	in := writeFile(t, filepath.Join(dir, "in.jsonl"), `{"rollout_id": "a", "task_id": "t", "output": "IT IS 4", "log": [{"eventType": "x"}, {"eventType": "y"}]}
{"rollout_id": "b", "task_id": "t", "output": "it is 5", "log": [{"eventType": "x"}], "shout": false}
{"rollout_id": "c", "task_id": "t", "output": "four is 4"}
{"rollout_id": "d", "task_id": "t", "output": "44", "log": [], "shout": true}
`)
	identity := writeFile(t, filepath.Join(dir, "identity.json"), `{"V": "fraction"}`)
	zero := writeFile(t, filepath.Join(dir, "zero.json"), `{"V": {"expr": "0.25"}}`)
	for _, format := range []string{"parquet", "jsonl"} {
		t.Run(format, func(t *testing.T) {
			out := filepath.Join(dir, "g-"+format)
			if code, _, stderr := runCLI(t, "grade", "--quiet", "--format", format, "--spec", spec, "--out", out, in); code != 0 {
				t.Fatalf("grade: exit %d: %s", code, stderr)
			}
			part := "part-00000." + format
			same := filepath.Join(dir, "same-"+format)
			if code, _, stderr := runCLI(t, "rescore", out, "--reward", identity, "--out", same); code != 0 {
				t.Fatalf("rescore: exit %d: %s", code, stderr)
			}
			for _, table := range []string{"rewards", "checks"} {
				if !sameFile(t, filepath.Join(out, table, part), filepath.Join(same, table, part)) {
					t.Errorf("rescore with the run's formula changed %s", table)
				}
			}
			other := filepath.Join(dir, "other-"+format)
			if code, _, stderr := runCLI(t, "rescore", out, "--reward", zero, "--out", other); code != 0 {
				t.Fatalf("rescore: exit %d: %s", code, stderr)
			}
			if format == "jsonl" {
				rows := rewardRows(t, other)
				if !reflect.DeepEqual(rows["a"]["flags"], []any{"shouty", "long-log"}) || rows["a"]["reward"] != 0.25 || rows["b"]["reward"] != 0.25 {
					t.Errorf("rescored rows: a %v, b %v", rows["a"], rows["b"])
				}
			}
			code, stdout, stderr := runCLI(t, "diff", out, same)
			if code != 0 {
				t.Errorf("diff of a run with flags and its rescore: exit %d: %s%s", code, stdout, stderr)
			}
		})
	}
}

// gavel report lists the flagged rollouts with their evidence.
func TestReportFlags(t *testing.T) {
	name := "git-history"
	out, code, stderr := gradeFrom(t, "--spec", filepath.Join(flagExamples, name+".yaml"), filepath.Join(flagExamples, name+".jsonl"))
	if code != 0 {
		t.Fatalf("grade: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "report", "--format", "markdown", out)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"## Flags", "3 rollouts raised a flag", "| SWE-GIT-HISTORY | git-history | 3 |",
		"| raise-reflog | SWE-GIT-HISTORY | git-history: [\"cd /repo && git reflog\"] |"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	if _, flags, _ := strings.Cut(stdout, "## Flags"); strings.Contains(flags, "clear-") {
		t.Errorf("report lists a rollout that raised no flag:\n%s", flags)
	}
	code, stdout, _ = runCLI(t, "report", out)
	if code != 0 || !strings.Contains(stdout, `<section id="flags">`) || !strings.Contains(stdout, "<code>raise-log-all</code>") {
		t.Errorf("the HTML report has no flags section: exit %d", code)
	}
}

// gavel diff lists the flags raised and cleared between two runs, and a
// run without flags against one with them reads none on its side.
func TestDiffFlags(t *testing.T) {
	name := "git-history"
	spec := filepath.Join(flagExamples, name+".yaml")
	base, code, stderr := gradeFrom(t, "--spec", spec, filepath.Join(flagExamples, name+".jsonl"))
	if code != 0 {
		t.Fatalf("grade: exit %d: %s", code, stderr)
	}
	rows := mustRead(t, filepath.Join(flagExamples, name+".jsonl"))
	rows = strings.Replace(rows, "cd /repo && git reflog", "cd /repo && git status", 1)      // raise-reflog clears
	rows = strings.Replace(rows, "git status && git diff", "git status && git reflog -5", 1) // clear-status raises
	in := writeFile(t, filepath.Join(t.TempDir(), "rollouts.jsonl"), rows)
	cur, code, stderr := gradeFrom(t, "--spec", spec, in)
	if code != 0 {
		t.Fatalf("grade: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "diff", "--json", base, cur)
	if code != 0 {
		t.Fatalf("diff: exit %d: %s", code, stderr)
	}
	var d struct {
		Flags        []map[string]any
		FlagExamples []struct {
			RolloutID       string `json:"rollout_id"`
			Raised, Cleared []string
		} `json:"flag_examples"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Flags) != 1 || d.Flags[0]["raised"] != 1.0 || d.Flags[0]["cleared"] != 1.0 || len(d.FlagExamples) != 2 ||
		d.FlagExamples[0].RolloutID != "clear-status" || !reflect.DeepEqual(d.FlagExamples[0].Raised, []string{name}) ||
		d.FlagExamples[1].RolloutID != "raise-reflog" || !reflect.DeepEqual(d.FlagExamples[1].Cleared, []string{name}) {
		t.Errorf("diff flags %v, examples %+v", d.Flags, d.FlagExamples)
	}
	code, stdout, _ = runCLI(t, "diff", "--markdown", base, cur)
	if code != 0 || !strings.Contains(stdout, "#### Flags raised or cleared") || !strings.Contains(stdout, "| raise-reflog | SWE-GIT-HISTORY | cleared git-history |") {
		t.Errorf("markdown diff lacks the flags:\n%s", stdout)
	}
	code, stdout, _ = runCLI(t, "diff", base, cur)
	if code != 0 || !strings.Contains(stdout, "flags raised or cleared") || !strings.Contains(stdout, "clear-status  SWE-GIT-HISTORY  raised git-history") {
		t.Errorf("text diff lacks the flags:\n%s", stdout)
	}
}

func TestVerifyRepeatsFlag(t *testing.T) {
	for _, args := range [][]string{{"grade", "x.jsonl"}, {"serve"}} {
		cmd := args[0]
		code, _, stderr := runCLI(t, append(args, "--verify-repeats", "0")...)
		if code != 2 || !strings.Contains(stderr, "--verify-repeats 0: want 1 or more") {
			t.Errorf("%s --verify-repeats 0: exit %d, %s", cmd, code, stderr)
		}
	}
}

// Health flags, per harness format, on the fixtures of each: which
// recorded field raises which flag (docs/flags.md has the table).
func TestHealthFlags(t *testing.T) {
	const (
		empty, noTurn, trunc, harnessErr = "health/empty-output", "health/no-agent-turn", "health/truncated", "health/harness-error"
	)
	dir := t.TempDir()
	plain := writeFile(t, filepath.Join(dir, "plain.jsonl"), `{"rollout_id": "blank-empty-log", "task_id": "t", "output": " ", "log": []}
{"rollout_id": "blank-with-tool-call", "task_id": "t", "output": "", "log": [{"eventType": "tool_call", "name": "bash", "kwargs": {}}]}
{"rollout_id": "answered", "task_id": "t", "output": "42", "log": []}
{"rollout_id": "answer-row", "task_id": "t", "output": ""}
{"rollout_id": "user-only-messages", "task_id": "t", "output": "", "messages": [{"role": "user", "content": "hi"}]}
{"rollout_id": "length", "task_id": "t", "output": "partial", "termination_reason": "max_turns"}
{"rollout_id": "bad input", "task_id": 7.5}
`)
	for _, tc := range []struct {
		name string
		args []string
		want map[string][]string
	}{
		{"jsonl", []string{plain}, map[string][]string{
			"blank-empty-log": {empty, noTurn}, "blank-with-tool-call": {empty}, "answered": {}, "answer-row": {empty},
			"user-only-messages": {empty, noTurn}, "length": {trunc}}},
		{"tau2", []string{"--from", "tau2", filepath.Join(harnessData, "tau2", "results.json")}, map[string][]string{
			"2b1d9c1e-0001": {}, "2b1d9c1e-0002": {trunc}, "2b1d9c1e-0003": {empty, noTurn, harnessErr}}},
		{"inspect", []string{"--from", "inspect", filepath.Join(harnessData, "inspect", "log.json")}, map[string][]string{
			"Ev7kQ2/1/1": {}, "Ev7kQ2/1/2": {empty, trunc}, "Ev7kQ2/q-2/1": {empty, noTurn, harnessErr}}},
		{"tau-bench", []string{"--from", "tau-bench", filepath.Join(harnessData, "tau-bench", "tool-calling-gpt-4o-0.0_range_0--1.json")}, map[string][]string{
			"tool-calling-gpt-4o-0.0_range_0--1/0/0": {}, "tool-calling-gpt-4o-0.0_range_0--1/0/1": {empty, noTurn, harnessErr}}},
		{"nemo-gym", []string{"--from", "nemo-gym", filepath.Join(harnessData, "nemo-gym", "run", "rollouts_failures.jsonl")}, map[string][]string{
			"rollouts_failures/2/0": {harnessErr}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code, stderr := gradeFrom(t, tc.args...) // on by default
			if code != 3 {
				t.Fatalf("grade: exit %d (want 3: no verifier binds the tasks): %s", code, stderr)
			}
			rows := rewardRows(t, out)
			for id, want := range tc.want {
				got, ok := rows[id]["flags"].([]any)
				if !ok {
					t.Errorf("%s: flags %v", id, rows[id]["flags"])
					continue
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: flags %v, want %v", id, got, want)
				}
			}
			for id, row := range rows {
				if row["error_kind"] == "input" && len(row["flags"].([]any)) != 0 {
					t.Errorf("%s: an input error raised %v", id, row["flags"])
				}
			}
		})
	}
	// --health off: no flags column, no kind column.
	out, _, _ := gradeFrom(t, "--health", "off", plain)
	for id, row := range rewardRows(t, out) {
		if _, ok := row["flags"]; ok {
			t.Fatalf("%s: a run with --health off has flags", id)
		}
	}
	for _, cr := range checkRows(t, out) {
		if _, ok := cr["kind"]; ok {
			t.Fatalf("a run with --health off writes a kind column: %v", cr)
		}
	}
	// A verifier's flags come first, then the health flags; a judged
	// verifier's SetFlags keeps them (TestJudgeWithFlags covers the order
	// of the verifier's own).
	spec := writeFile(t, filepath.Join(dir, "flags.yaml"), flagSpec)
	out, code, stderr := gradeFrom(t, "--health", "on", "--spec", spec, writeFile(t, filepath.Join(dir, "one.jsonl"),
		`{"rollout_id": "a", "task_id": "t", "output": "   ", "log": [{"eventType": "x"}, {"eventType": "y"}]}`+"\n"))
	if code != 0 {
		t.Fatalf("grade: exit %d: %s", code, stderr)
	}
	if got := rewardRows(t, out)["a"]["flags"]; fmt.Sprint(got) != fmt.Sprint([]any{"shouty", "long-log", empty, noTurn}) {
		t.Errorf("flags %v, want the verifier's then the health flags", got)
	}
	if code, _, stderr := runCLI(t, "grade", "--health", "maybe", plain); code != 2 || !strings.Contains(stderr, `--health: unknown value "maybe"`) {
		t.Errorf("--health maybe: exit %d, %s", code, stderr)
	}
}

// A group whose rollouts all give the same output over several tasks gets
// a note; a group with varied outputs, one of a single task, and a run
// with --health off (no output hashes) get none.
func TestLeaderboardSameOutputs(t *testing.T) {
	dir := t.TempDir()
	spec := writeFile(t, filepath.Join(dir, "spec.yaml"), `verifiers:
  - id: V-ANS
    task: all
    name: answers 4
    checks:
      - {id: four, type: expr, expr: 'output.contains("4")'}
`)
	in := writeFile(t, filepath.Join(dir, "in.jsonl"), `{"rollout_id":"c1","task_id":"t1","model":"constant","output":"The answer is 4."}
{"rollout_id":"c2","task_id":"t2","model":"constant","output":"The answer is 4."}
{"rollout_id":"c3","task_id":"t2","model":"constant","output":"The answer is 4."}
{"rollout_id":"v1","task_id":"t1","model":"varied","output":"4"}
{"rollout_id":"v2","task_id":"t2","model":"varied","output":"it is 4"}
{"rollout_id":"o1","task_id":"t1","model":"one-task","output":"4"}
{"rollout_id":"o2","task_id":"t1","model":"one-task","output":"4"}
`)
	for _, health := range []string{"on", "off"} {
		out, code, stderr := gradeFrom(t, "--health", health, "--spec", spec, in)
		if code != 0 {
			t.Fatalf("grade: exit %d: %s", code, stderr)
		}
		code, stdout, stderr := runCLI(t, "leaderboard", "--format", "json", out)
		if code != 0 {
			t.Fatalf("leaderboard: exit %d: %s", code, stderr)
		}
		var lb struct{ Conventions []string }
		if err := json.Unmarshal([]byte(stdout), &lb); err != nil {
			t.Fatal(err)
		}
		var notes []string
		for _, c := range lb.Conventions {
			if strings.Contains(c, "have the same output") {
				notes = append(notes, c)
			}
		}
		want := []string{"model constant: all 3 rollouts with an output have the same output, over 2 tasks: one answer whatever the task."}
		if health == "off" {
			want = nil
		}
		if !reflect.DeepEqual(notes, want) {
			t.Errorf("--health %s: notes %q, want %q", health, notes, want)
		}
	}
}
