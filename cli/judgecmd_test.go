package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/judge/judgetest"
	"github.com/gavelhq/gavel/report"
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

// TestJudgeCalibrateCLI grades rollouts with a scripted judge (an output
// containing PASS scores 1), labels them, and calibrates: the confusion
// counts, the formats and the exit status of --require-tpr/--require-tnr.
func TestJudgeCalibrateCLI(t *testing.T) {
	srv := judgetest.New(t)
	dir := t.TempDir()
	specPath := writeFile(t, filepath.Join(dir, "judged.yaml"), judgedSpecYAML)
	// Humans pass r0-r5 and fail r6-r9; the judge passes r0-r4 and r6
	// (PASS in the output): TP 5, FN 1 (r5), FP 1 (r6), TN 3 (r7-r9).
	outputs := []string{"PASS", "PASS", "PASS", "PASS", "PASS", "no", "PASS", "no", "no", "no"}
	var in, labels strings.Builder
	for i, o := range outputs {
		fmt.Fprintf(&in, `{"rollout_id":"r%d","task_id":"TASK-J","output":"%s %d"}`+"\n", i, o, i)
		fmt.Fprintf(&labels, `{"id":"r%d","check":"polite","human":%v}`+"\n", i, i < 6)
	}
	inPath := writeFile(t, filepath.Join(dir, "in.jsonl"), in.String())
	labelsPath := writeFile(t, filepath.Join(dir, "labels.jsonl"), labels.String())
	out := filepath.Join(dir, "out")
	code, _, stderr := runCLI(t, "grade", "--quiet", "--spec", specPath, "--out", out, "--format", "parquet",
		"--judge-model", "judge-1", "--judge-url", srv.URL, "--judge-cache", "off", inPath)
	if code != 0 && code != 3 {
		t.Fatalf("grade: exit %d: %s", code, stderr)
	}
	base := []string{"judge", "calibrate", "--labels", labelsPath, "--id-columns", "rollout_id=id,check_id=check", "--label-column", "human"}
	code, stdout, stderr := runCLI(t, append(base, "--format", "json", out)...)
	if code != 0 {
		t.Fatalf("judge calibrate: exit %d: %s", code, stderr)
	}
	var got struct {
		Overall struct{ N, TP, FN, FP, TN, Unlabeled int64 }
		Checks  []struct{ Check string }
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	o := got.Overall
	if o.N != 10 || o.TP != 5 || o.FN != 1 || o.FP != 1 || o.TN != 3 || len(got.Checks) != 1 || got.Checks[0].Check != "polite" {
		t.Errorf("calibration %+v %+v, want n 10, TP 5 FN 1 FP 1 TN 3 on polite:\n%s", o, got.Checks, stdout)
	}
	for _, format := range []string{"table", "markdown"} {
		code, stdout, _ := runCLI(t, append(base, "--format", format, out)...)
		if code != 0 || !strings.Contains(stdout, "polite") || !strings.Contains(stdout, "0.833 (5/6)") {
			t.Errorf("--format %s: exit %d:\n%s", format, code, stdout)
		}
	}
	// TPR 5/6 and TNR 3/4 have Wilson lower bounds 0.4365 and 0.3006.
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--require-tpr", "0.43", "--require-tnr", "0.30"}, 0, ""},
		{[]string{"--require-tpr", "0.44", "--require-tnr", "0.30"}, 1, "not certified: overall: TPR lower bound 0.4365 < 0.44 (5 of 6)"},
		{[]string{"--require-tnr", "0.31", "--per-check"}, 1, "not certified: check polite: TNR lower bound 0.3006 < 0.31 (3 of 4)"},
		{[]string{"--require-tpr", "1.5"}, 2, "--require-tpr must be between 0 and 1"},
		{[]string{"--per-check"}, 2, "--per-check applies --require-tpr and --require-tnr"},
	} {
		code, stdout, stderr := runCLI(t, append(append(base, tt.args...), out)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("calibrate %v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
		if tt.code == 1 && !strings.Contains(stdout, "NOT certified") {
			t.Errorf("calibrate %v printed no verdict:\n%s", tt.args, stdout)
		}
	}
	// --judge needs the judgements table, which this one-judge run lacks.
	code, _, stderr = runCLI(t, append(base, "--judge", "judge-1", out)...)
	if code != 1 || !strings.Contains(stderr, "no judgements table") {
		t.Errorf("calibrate --judge without judgements: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "judge", "calibrate", out)
	if code != 2 || !strings.Contains(stderr, "needs --labels") {
		t.Errorf("calibrate without --labels: exit %d: %s", code, stderr)
	}
}

// TestJudgeAgreementURL reads the judgements of a result directory in
// object storage: the same statistics as from the local copy.
func TestJudgeAgreementURL(t *testing.T) {
	srv := startS3(t)
	dir := writeJudgementsDir(t, t.TempDir(), []string{
		judgementLine("r1", "c", "a", 0, "pass", 1), judgementLine("r1", "c", "b", 0, "pass", 0.9),
		judgementLine("r2", "c", "a", 0, "pass", 0.8), judgementLine("r2", "c", "b", 0, "fail", 0.2),
		judgementLine("r3", "c", "a", 0, "fail", 0), judgementLine("r3", "c", "b", 0, "fail", 0.1),
	})
	writeFile(t, filepath.Join(dir, "rewards", "part-00000.jsonl"), `{"rollout_id":"r1","task_id":"T","status":"passed"}`+"\n")
	for _, rel := range []string{"rewards/part-00000.jsonl", "judgements/part-00000.jsonl"} {
		if err := srv.Put("gavel", "run/"+rel, filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
			t.Fatal(err)
		}
	}
	_, local, _ := runCLI(t, "judge", "agreement", "--resamples", "100", dir)
	code, remote, stderr := runCLI(t, "judge", "agreement", "--resamples", "100", "s3://gavel/run")
	if code != 0 || remote != local {
		t.Errorf("judge agreement s3://gavel/run: exit %d, %s\n%s\nwant as local:\n%s", code, stderr, remote, local)
	}
}

// A run graded by two judges, three samples each, against a server that
// answers per model and seed, then measured by gavel judge agreement: the
// values computed by hand; the judgements and the agreement byte-identical
// for another worker and judge concurrency and from the cache.
func TestJudgeAgreementEndToEnd(t *testing.T) {
	srv := judgetest.New(t)
	srv.Script(func(r judgetest.Request) judgetest.Reply {
		out, _ := judgetest.FencedOutput(r.User)
		score := 0.0
		if strings.Contains(out, "PASS") || r.Model == "lenient" {
			score = 1
		}
		if r.Seed != nil && *r.Seed > 1 {
			score = max(0, score-0.25*float64(*r.Seed-1))
		}
		return judgetest.Reply{Body: judgetest.Completion(r.Model, judgetest.Verdict(score, []string{}, ""))}
	})
	dir := t.TempDir()
	specPath := writeFile(t, filepath.Join(dir, "judged.yaml"), judgedSpecYAML)
	var in strings.Builder
	for i := range 6 {
		word := "PASS"
		if i%3 == 0 {
			word = "no"
		}
		fmt.Fprintf(&in, `{"rollout_id":"r%d","task_id":"TASK-J","output":"%s %d"}`+"\n", i, word, i)
	}
	inPath := writeFile(t, filepath.Join(dir, "in.jsonl"), in.String())
	cache := filepath.Join(dir, "cache")
	grade := func(out string, extra ...string) {
		args := append([]string{"grade", "--quiet", "--spec", specPath, "--out", out, "--format", "jsonl",
			"--judge-model", "strict", "--judge-model", "lenient", "--judge-samples", "3", "--judge-threshold", "0.5",
			"--judge-url", srv.URL, "--judge-cache", cache}, extra...)
		if code, _, stderr := runCLI(t, append(args, inPath)...); code != 0 {
			t.Fatalf("grade %v: exit %d: %s", extra, code, stderr)
		}
	}
	agreement := func(out string) string {
		code, stdout, stderr := runCLI(t, "judge", "agreement", "--format", "json", out)
		if code != 0 {
			t.Fatalf("judge agreement %s: exit %d: %s", out, code, stderr)
		}
		return strings.Replace(stdout, out, "DIR", 1)
	}
	a := filepath.Join(dir, "a")
	grade(a, "--workers", "2", "--judge-concurrency", "8")
	if n := srv.Requests(); n != 36 {
		t.Errorf("%d judge requests, want 36 (6 rollouts x 2 judges x 3 samples)", n)
	}
	first := agreement(a)
	var got report.Agreement
	if err := json.Unmarshal([]byte(first), &got); err != nil {
		t.Fatalf("%v:\n%s", err, first)
	}
	o := got.Overall
	val := func(e report.Estimate) float64 {
		if e.Value == nil {
			t.Fatalf("undefined: %s\n%s", e.Reason, first)
		}
		return *e.Value
	}
	near := func(what string, got, want float64) {
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	if got.Kappa != "cohen" || got.Judgements != 36 || got.Failed != 0 || got.Samples != 3 || o.Units != 6 || len(o.Self) != 2 {
		t.Fatalf("agreement %+v:\n%s", got, first)
	}
	// Sample 0: strict fails r0 and r3, lenient passes all.
	near("agree", val(o.Agree), 4.0/6)
	near("Cohen's kappa", val(o.Kappa), 0) // po = pe = 4/6
	near("mean abs diff", val(o.MeanAbsDiff), 2.0/6)
	// Samples score s, s-0.25, s-0.5: passes stay passes at 0.5, so all
	// agree; the standard deviation is 0.25 where s is 1, 0 where it is 0.
	for _, s := range o.Self {
		near(s.Judge+" samples all agree", val(s.AllAgree), 1)
		want := 0.25
		if s.Judge == "strict" {
			want = 0.25 * 4 / 6
		}
		near(s.Judge+" mean sd", val(s.MeanSD), want)
	}
	// Another concurrency, and the cache alone: the same bytes.
	b := filepath.Join(dir, "b")
	grade(b, "--workers", "1", "--judge-concurrency", "1")
	if n := srv.Requests(); n != 36 {
		t.Errorf("%d judge requests after a cached run, want still 36", n)
	}
	for _, f := range []string{"judgements/part-00000.jsonl", "checks/part-00000.jsonl", "rewards/part-00000.jsonl"} {
		if mustRead(t, filepath.Join(a, f)) != mustRead(t, filepath.Join(b, f)) {
			t.Errorf("%s differs between concurrency 8, fresh, and 1, from the cache", f)
		}
	}
	if second := agreement(b); second != first {
		t.Errorf("agreement differs:\n%s\n%s", first, second)
	}
}
