package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gavelhq/gavel/judge/judgetest"
)

const judgedSpecYAML = `verifiers:
  - id: VER-J
    task: TASK-J
    name: answers judged
    checks:
      - {id: answered, type: expr, expr: "output != ''"}
      - {id: polite, type: rubric, rubric: The answer is polite.}
`

// TestGradeJudgeFlags grades with the judge flags against a local server:
// exit 0 and the judge counts printed; a failed probe before any part
// exits 2 with nothing written; the key never reaches the output.
func TestGradeJudgeFlags(t *testing.T) {
	const key = "sk-cli-secret-777"
	t.Setenv("GAVEL_CLI_JUDGE_KEY", key)
	srv := judgetest.New(t)
	srv.RequireKey(key)
	dir := t.TempDir()
	specPath := filepath.Join(dir, "judged.yaml")
	os.WriteFile(specPath, []byte(judgedSpecYAML), 0o644)
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	for i := range 5 {
		fmt.Fprintf(&b, `{"rollout_id":"r%d","task_id":"TASK-J","output":"PASS %d"}`+"\n", i, i)
	}
	os.WriteFile(in, []byte(b.String()), 0o644)
	out := filepath.Join(dir, "out")
	args := []string{"grade", "--quiet", "--spec", specPath, "--out", out, "--format", "jsonl",
		"--judge-model", "judge-1", "--judge-url", srv.URL, "--judge-api-key-env", "GAVEL_CLI_JUDGE_KEY",
		"--judge-cache", filepath.Join(dir, "cache"), "--judge-concurrency", "2", in}
	// The probe is counted apart from the 5 requests, and the tokens are
	// labelled (the test server reports 10 prompt tokens a request).
	first := regexp.MustCompile(`\njudge: 1 probe of the server, 5 requests, 0 cache hits, 0 retries, 0 failures, 50 prompt \+ [1-9][0-9]* completion tokens, 0 checks pending by the budget\n`)
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 || !first.MatchString(stdout) || !strings.Contains(stdout, "passed 5") {
		t.Fatalf("grade = %d, want the judge line to match %s\nstdout:\n%s\nstderr:\n%s", code, first, stdout, stderr)
	}
	summary, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if !strings.Contains(string(summary), `"probes": 1,`) {
		t.Errorf("summary.json lacks the probe:\n%s", summary)
	}
	code, stdout, _ = runCLI(t, args...)
	if second := "\njudge: 0 probes of the server, 0 requests, 5 cache hits, 0 retries, 0 failures, 0 prompt + 0 completion tokens, 0 checks pending by the budget\n"; code != 0 || !strings.Contains(stdout, second) {
		t.Errorf("second grade = %d, want %q:\n%s", code, second, stdout)
	}
	summary, _ = os.ReadFile(filepath.Join(out, "summary.json"))
	if !strings.Contains(string(summary), `"cache_hits": 5`) {
		t.Errorf("summary.json lacks the judge counts:\n%s", summary)
	}

	// A wrong key: the probe fails before any part, exit 2, nothing written.
	t.Setenv("GAVEL_CLI_JUDGE_KEY", key+"x")
	out2 := filepath.Join(dir, "out2")
	args2 := append([]string{}, args...)
	for i, a := range args2 {
		if a == out {
			args2[i] = out2
		}
		if a == filepath.Join(dir, "cache") {
			args2[i] = "off"
		}
	}
	code, stdout, stderr = runCLI(t, args2...)
	if code != 2 || !strings.Contains(stderr, "HTTP 401") || strings.Contains(stdout+stderr, key) {
		t.Errorf("grade with a wrong key = %d, want 2 naming HTTP 401 without the key\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out2); !os.IsNotExist(err) {
		t.Errorf("grade with a failed probe left %s: %v", out2, err)
	}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(path); strings.Contains(string(data), key) {
				t.Errorf("%s holds the API key", path)
			}
		}
		return nil
	})
}

// TestJudgeKill9Resume kills gavel grade (SIGKILL) while judge requests
// hang, the first part written and the second unit's first rows judged;
// --resume then asks only the rows not answered before the kill.
func TestJudgeKill9Resume(t *testing.T) {
	srv := judgetest.New(t)
	hanging := regexp.MustCompile(`: (1[5-9]|2[0-9])\n`)
	var hung atomic.Int64
	srv.Script(func(req judgetest.Request) judgetest.Reply {
		if out, _ := judgetest.FencedOutput(req.User); hanging.MatchString(out + "\n") {
			hung.Add(1)
			return judgetest.Reply{Hang: true}
		}
		return judgetest.Reply{}
	})
	dir := t.TempDir()
	specPath := filepath.Join(dir, "judged.yaml")
	os.WriteFile(specPath, []byte(judgedSpecYAML), 0o644)
	var inputs []string
	for u := range 3 {
		var b strings.Builder
		for i := u * 10; i < u*10+10; i++ {
			fmt.Fprintf(&b, `{"rollout_id":"r%d","task_id":"TASK-J","output":"PASS: %d"}`+"\n", i, i)
		}
		p := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", u))
		os.WriteFile(p, []byte(b.String()), 0o644)
		inputs = append(inputs, p)
	}
	out := filepath.Join(dir, "out")
	args := append([]string{"grade", "--quiet", "--spec", specPath, "--out", out, "--format", "jsonl", "--batch-size", "4",
		"--judge-model", "judge-1", "--judge-url", srv.URL, "--judge-cache", filepath.Join(dir, "cache")}, inputs...)
	cmd, stderr := gavelCmd(t, dir, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for (hung.Load() < 15 || countParts(out) < 1) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if hung.Load() != 15 || countParts(out) != 1 {
		t.Fatalf("at the kill: %d requests hanging, %d parts; want 15 and 1\n%s", hung.Load(), countParts(out), stderr)
	}
	srv.Script(nil)
	// A request sent just before the kill may reach the server after it:
	// count the killed run's requests once they stop coming.
	before := int(settled(func() int64 { return int64(srv.Requests()) }))
	cmd, stderr = gavelCmd(t, dir, append([]string{args[0], "--resume"}, args[1:]...)...)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("resume: %v\n%s", err, stderr)
	}
	// The resumed run judges the rows of the units not written, 10 to 29:
	// asking the server or hitting the cache.
	m := judgeCounts.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("resume printed no judge counters:\n%s", stdout.String())
	}
	requests, _ := strconv.Atoi(m[1])
	hits, _ := strconv.Atoi(m[2])
	if requests+hits != 20 {
		t.Errorf("resumed run judged %d rows (%d requests, %d cache hits), want 20 (rows 10 to 29)", requests+hits, requests, hits)
	}
	// The first part (rows 0 to 9) is kept: the resumed run asks for rows 10 to 29 at most, those hanging at the kill and
	// those never answered; by timing, rows of 10 to 14 answered but not
	// yet cached when the kill landed may be among them. It asks for no
	// fewer than the rows never answered.
	answered := before - int(hung.Load())
	if got := srv.Requests() - before; got > 20 || got < 30-answered {
		t.Errorf("resumed run sent %d requests, want %d to 20 (%d rows answered before the kill)", got, 30-answered, answered)
	}
}

// judgeCounts matches the requests and cache hits in grade's summary.
var judgeCounts = regexp.MustCompile(`judge: [^\n]*?, (\d+) requests?, (\d+) cache hits?,`)

// TestJudgeRerunAsksOnlyFailures: a failed judgement is not cached, so a
// second run with the same cache asks only the verdicts that failed.
func TestJudgeRerunAsksOnlyFailures(t *testing.T) {
	srv := judgetest.New(t)
	failing := regexp.MustCompile(`PASS [13]\b`)
	srv.Script(func(req judgetest.Request) judgetest.Reply {
		if out, _ := judgetest.FencedOutput(req.User); failing.MatchString(out) {
			return judgetest.Reply{Status: 400}
		}
		return judgetest.Reply{}
	})
	dir := t.TempDir()
	specPath := writeFile(t, filepath.Join(dir, "judged.yaml"), judgedSpecYAML)
	var b strings.Builder
	for i := range 5 {
		fmt.Fprintf(&b, `{"rollout_id":"r%d","task_id":"TASK-J","output":"PASS %d"}`+"\n", i, i)
	}
	in := writeFile(t, filepath.Join(dir, "in.jsonl"), b.String())
	args := []string{"grade", "--quiet", "--spec", specPath, "--out", filepath.Join(dir, "out"), "--format", "jsonl",
		"--judge-model", "judge-1", "--judge-url", srv.URL, "--judge-cache", filepath.Join(dir, "cache"), in}
	code, stdout, _ := runCLI(t, args...)
	if code != 3 || !strings.Contains(stdout, " 5 requests, 0 cache hits, 0 retries, 2 failures,") {
		t.Fatalf("first grade = %d, want 3 with 2 failed judgements:\n%s", code, stdout)
	}
	srv.Script(nil)
	before := srv.Requests()
	code, stdout, _ = runCLI(t, args...)
	if code != 0 || !strings.Contains(stdout, " 2 requests, 3 cache hits, 0 retries, 0 failures,") {
		t.Errorf("second grade = %d, want 0 with the 2 failed verdicts asked again:\n%s", code, stdout)
	}
	if got := srv.Requests() - before; got != 2 {
		t.Errorf("second grade sent %d requests, want 2", got)
	}
}
