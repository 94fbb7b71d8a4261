package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runRow is one rollout of a result directory written for a run report:
// its checks are "id=status" or "id=status=actual" (optional ids start
// with "opt-").
type runRow struct {
	id, verifier, status string
	reward               any
	errKind, errMsg      string
	checks               []string
}

// writeRun writes a JSON Lines result directory, the rows split over two
// parts.
func writeRun(t *testing.T, rows []runRow) string {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"rewards", "checks"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var rw, cw [2]bytes.Buffer
	for i, r := range rows {
		part := i * 2 / max(1, len(rows))
		null := func(s string) any {
			if s == "" {
				return nil
			}
			return s
		}
		line, _ := json.Marshal(map[string]any{"rollout_id": r.id, "task_id": "T-" + r.verifier, "verifier_id": null(r.verifier), "status": r.status,
			"reward": r.reward, "error_kind": null(r.errKind), "error": null(r.errMsg), "source_file": "in.jsonl", "source_row": i})
		rw[part].Write(append(line, '\n'))
		for k, c := range r.checks {
			parts := strings.SplitN(c, "=", 3)
			var actual any
			if len(parts) == 3 {
				actual = parts[2]
			}
			line, _ := json.Marshal(map[string]any{"rollout_id": r.id, "task_id": "T-" + r.verifier, "verifier_id": null(r.verifier), "check_index": k,
				"check_id": parts[0], "label": parts[0], "required": !strings.HasPrefix(parts[0], "opt-"), "status": parts[1],
				"detail": parts[0] + " on " + r.id, "actual": actual, "expected": "true"})
			cw[part].Write(append(line, '\n'))
		}
	}
	for p := range 2 {
		name := fmt.Sprintf("part-%05d.jsonl", p)
		os.WriteFile(filepath.Join(dir, "rewards", name), rw[p].Bytes(), 0o644)
		os.WriteFile(filepath.Join(dir, "checks", name), cw[p].Bytes(), 0o644)
	}
	m, _ := json.Marshal(map[string]any{"gavel_version": "0.1.0", "verifiers": []map[string]any{{"id": "V1", "fingerprint": "a"}, {"id": "V2", "fingerprint": "b"}},
		"inputs": []map[string]any{{"path": "in.jsonl", "size": 10, "rows": len(rows)}}})
	os.WriteFile(filepath.Join(dir, "manifest.json"), m, 0o644)
	return dir
}

// sampleRun is a run of two verifiers: V1's check a fails most (5 times),
// V2's check d twice, c once; two error kinds.
func sampleRun() []runRow {
	return []runRow{
		{"r1", "V1", "passed", 1.0, "", "", []string{"a=pass", "opt-b=pass"}},
		{"r2", "V1", "failed", 0.5, "", "", []string{"a=fail=[1]", "opt-b=pass"}},
		{"r3", "V1", "failed", 0.0, "", "", []string{"a=fail=[2]", "opt-b=fail"}},
		{"r4", "V1", "failed", 0.5, "", "", []string{"a=fail=[3]", "opt-b=pass"}},
		{"r5", "V1", "failed", 0.5, "", "", []string{"a=fail=[4]", "opt-b=pass"}},
		{"r6", "V1", "failed", 0.5, "", "", []string{"a=fail=[5]", "opt-b=pass"}},
		{"r7", "V1", "error", nil, "verifier", "check a: state lacks deals", []string{"a=error", "opt-b=pass"}},
		{"r8", "V2", "pending", nil, "", "", []string{"c=pass", "d=pending"}},
		{"r9", "V2", "failed", 0.0, "", "", []string{"c=fail", "d=fail"}},
		{"r10", "V2", "failed", 0.5, "", "", []string{"c=pass", "d=fail"}},
		{"r11", "", "error", nil, "no_verifier", "no verifier binds task T-", nil},
		{"r12", "V2", "error", nil, "input", "final_state: invalid JSON at byte 3", nil},
		{"r13", "V2", "error", nil, "input", "task_id is missing", nil},
	}
}

func TestBuildRunReport(t *testing.T) {
	dir := writeRun(t, sampleRun())
	rep, err := BuildRunReport(dir, RunConfig{TopChecks: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Summary
	if got, want := s.OutcomeCounts, (OutcomeCounts{Total: 13, Pass: 1, Fail: 7, Pending: 1, Error: 4}); got != want {
		t.Errorf("summary counts = %+v, want %+v", got, want)
	}
	if s.PassRate == nil || *s.PassRate != 1.0/8 || s.MeanReward == nil || *s.MeanReward != 3.5/8 || s.Checks != 20 || s.ChecksPassed != 9 {
		t.Errorf("summary = pass rate %v, mean reward %v, checks %d passed %d", f4(s.PassRate), f4(s.MeanReward), s.Checks, s.ChecksPassed)
	}
	wantVerifiers := []OutcomeCounts{
		{Name: "", Total: 1, Error: 1},
		{Name: "V1", Total: 7, Pass: 1, Fail: 5, Error: 1},
		{Name: "V2", Total: 5, Fail: 2, Pending: 1, Error: 2},
	}
	if diff := cmp.Diff(wantVerifiers, rep.Verifiers); diff != "" {
		t.Errorf("verifiers (-want +got):\n%s", diff)
	}
	var checks []string
	for _, c := range rep.Checks {
		checks = append(checks, fmt.Sprintf("%s/%s req=%v %d:%d/%d/%d/%d", c.Verifier, c.Check, c.Required, c.Total, c.Pass, c.Fail, c.Pending, c.Error))
	}
	wantChecks := []string{"V1/a req=true 7:1/5/0/1", "V1/opt-b req=false 7:6/1/0/0", "V2/c req=true 3:2/1/0/0", "V2/d req=true 3:0/2/1/0"}
	if diff := cmp.Diff(wantChecks, checks); diff != "" {
		t.Errorf("checks (-want +got):\n%s", diff)
	}
	// The two most failed: V1/a (5), then V2/d (2, before V2/c and V1/opt-b
	// with 1); three examples each, the first ones in input order.
	wantFailed := []FailedCheck{
		{Verifier: "V1", Check: "a", Required: true, Failed: 5, Total: 7, Examples: []Example{
			{"r2", "a on r2", "[1]", "true"}, {"r3", "a on r3", "[2]", "true"}, {"r4", "a on r4", "[3]", "true"}}},
		{Verifier: "V2", Check: "d", Required: true, Failed: 2, Total: 3, Examples: []Example{
			{"r9", "d on r9", "", "true"}, {"r10", "d on r10", "", "true"}}},
	}
	if diff := cmp.Diff(wantFailed, rep.MostFailed); diff != "" {
		t.Errorf("most failed (-want +got):\n%s", diff)
	}
	wantErrors := []ErrorKind{
		{Kind: "input", Count: 2, Examples: []ErrorExample{{"r12", "final_state: invalid JSON at byte 3"}, {"r13", "task_id is missing"}}},
		{Kind: "no_verifier", Count: 1, Examples: []ErrorExample{{"r11", "no verifier binds task T-"}}},
		{Kind: "verifier", Count: 1, Examples: []ErrorExample{{"r7", "check a: state lacks deals"}}},
	}
	if diff := cmp.Diff(wantErrors, rep.ErrorKinds); diff != "" {
		t.Errorf("error kinds (-want +got):\n%s", diff)
	}
	if rep.Diff != nil {
		t.Errorf("diff without a baseline: %+v", rep.Diff)
	}
}

// TestRunReportKeepsFewExamples reads many failing rollouts: each check and
// error kind keeps only its first examples, and long texts are cut.
func TestRunReportKeepsFewExamples(t *testing.T) {
	long := strings.Repeat("é", MaxExampleText) // two bytes a rune
	var rows []runRow
	for i := range 2000 {
		rows = append(rows, runRow{fmt.Sprintf("r%04d", i), "V1", "failed", 0.0, "", "", []string{"a=fail=" + long}})
		rows = append(rows, runRow{fmt.Sprintf("e%04d", i), "V1", "error", nil, "verifier", "boom", nil})
	}
	rep, err := BuildRunReport(writeRun(t, rows), RunConfig{Examples: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.MostFailed) != 1 || len(rep.MostFailed[0].Examples) != 2 || rep.MostFailed[0].Failed != 2000 {
		t.Fatalf("most failed = %+v", rep.MostFailed)
	}
	a := rep.MostFailed[0].Examples[1].Actual
	if len(a) > MaxExampleText || !strings.HasSuffix(a, "é...") || rep.MostFailed[0].Examples[1].RolloutID != "r0001" {
		t.Errorf("example actual is %d bytes, ends %q", len(a), a[len(a)-8:])
	}
	if len(rep.ErrorKinds) != 1 || rep.ErrorKinds[0].Count != 2000 || len(rep.ErrorKinds[0].Examples) != 2 {
		t.Errorf("error kinds = %+v", rep.ErrorKinds)
	}
}

// baselineOf rewrites the sample run as a baseline in which r2 and r9
// passed (two regressions now) and r1 failed (a fix now).
func baselineOf(t *testing.T) string {
	rows := sampleRun()
	rows[0] = runRow{"r1", "V1", "failed", 0.5, "", "", []string{"a=fail", "opt-b=pass"}}
	rows[1] = runRow{"r2", "V1", "passed", 1.0, "", "", []string{"a=pass", "opt-b=pass"}}
	rows[8] = runRow{"r9", "V2", "passed", 1.0, "", "", []string{"c=pass", "d=pass"}}
	return writeRun(t, rows)
}

func TestRunReportBaseline(t *testing.T) {
	rep, err := BuildRunReport(writeRun(t, sampleRun()), RunConfig{Baseline: baselineOf(t)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diff == nil || rep.Diff.Regressions != 2 || rep.Diff.Paired != 13 {
		t.Fatalf("diff = %+v", rep.Diff)
	}
	var flips []string
	for _, c := range checkFlips(rep.Diff) {
		flips = append(flips, fmt.Sprintf("%s/%s %d %d", c.Verifier, c.Check, c.PassToFail, c.FailToPass))
	}
	// Most regressions first: pass -> fail, then fail -> pass.
	if diff := cmp.Diff([]string{"V1/a 1 1", "V2/c 1 0", "V2/d 1 0"}, flips); diff != "" {
		t.Errorf("flips (-want +got):\n%s", diff)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	text := md.String()
	i, j, k := strings.Index(text, "| r2 |"), strings.Index(text, "| r9 |"), strings.Index(text, "| r1 |")
	if i < 0 || j < 0 || k < 0 || !(i < k && j < k) || !strings.Contains(text, "**2 regressions**") {
		t.Errorf("changed rollouts are not listed regressions first:\n%s", text)
	}
}

func TestRunReportMarkdown(t *testing.T) {
	rep, err := BuildRunReport(writeRun(t, sampleRun()), RunConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	text := md.String()
	for _, want := range []string{
		"# gavel report", "## Summary", "| 13 | 1 | 7 | 1 | 4 | 0.1250 | 0.4375 | 20 | 9 |",
		"## Verifiers", "## Checks", "## Most failed checks", "### V1 / a: failed 5 of 7",
		"| <code>r2</code> | a on r2 | <code>[1]</code> | <code>true</code> |",
		"## Error kinds", "| input | 2 | r12: final\\_state: invalid JSON at byte 3 / r13: task\\_id is missing |",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("markdown lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Against the baseline") {
		t.Error("markdown has a baseline section without a baseline")
	}
	// Bars: V1 has the most rollouts (7), its bar is textBarWidth long;
	// V2's (5: 2 fail, 1 pending, 2 error) 9 + 4 + 9 characters.
	for _, want := range []string{
		"| V1 | 7 | 1 | 5 | 0 | 1 | " + strings.Repeat("█", 4) + strings.Repeat("▓", 21) + strings.Repeat("░", 4) + " |",
		"| V2 | 5 | 0 | 2 | 1 | 2 | " + strings.Repeat("▓", 9) + strings.Repeat("▒", 4) + strings.Repeat("░", 9) + " |",
		"| (none) | 1 | 0 | 0 | 0 | 1 | " + strings.Repeat("░", 4) + " |",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("markdown lacks the bar row %q:\n%s", want, text)
		}
	}
}

func TestTextBar(t *testing.T) {
	for _, tc := range []struct {
		c     OutcomeCounts
		scale int64
		want  string
	}{
		{OutcomeCounts{Total: 10, Pass: 10}, 10, strings.Repeat("█", 30)},
		{OutcomeCounts{Total: 10, Pass: 5, Fail: 5}, 20, strings.Repeat("█", 8) + strings.Repeat("▓", 8)},
		{OutcomeCounts{Total: 1, Error: 1}, 1000, "░"},
		{OutcomeCounts{}, 0, ""},
	} {
		if got := textBar(tc.c, tc.scale); got != tc.want {
			t.Errorf("textBar(%+v, %d) = %q, want %q", tc.c, tc.scale, got, tc.want)
		}
	}
}
