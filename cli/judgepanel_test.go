package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/judge/judgetest"
)

// TestGradeJudgePanelFlags grades with two judges, the second on its own
// server, two samples each: the judgements table has every judgement,
// each server gets its model's requests, sample 1 is sent with
// --judge-temperature, and the manifest records the panel.
func TestGradeJudgePanelFlags(t *testing.T) {
	a, b := judgetest.New(t), judgetest.New(t)
	dir := t.TempDir()
	specPath := filepath.Join(dir, "judged.yaml")
	os.WriteFile(specPath, []byte(judgedSpecYAML), 0o644)
	in := filepath.Join(dir, "in.jsonl")
	var sb strings.Builder
	for i := range 5 {
		fmt.Fprintf(&sb, `{"rollout_id":"r%d","task_id":"TASK-J","output":"PASS %d"}`+"\n", i, i)
	}
	os.WriteFile(in, []byte(sb.String()), 0o644)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, "grade", "--quiet", "--spec", specPath, "--out", out, "--format", "jsonl",
		"--judge-model", "judge-1", "--judge-model", "judge-2@v1:q4", "--judge-url", a.URL, "--judge-url-for", "judge-2@v1:q4="+b.URL,
		"--judge-samples", "2", "--judge-temperature", "0.3", "--judge-aggregate", "min", "--judge-partial", "ok",
		"--judge-cache", filepath.Join(dir, "cache"), in)
	if code != 0 {
		t.Fatalf("grade = %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if a.Requests() != 10 || b.Requests() != 10 {
		t.Errorf("requests %d and %d, want 10 each", a.Requests(), b.Requests())
	}
	for _, r := range b.Received() {
		if r.Model != "judge-2@v1:q4" || (*r.Seed == 2) != (*r.Temperature == 0.3) {
			t.Errorf("second server got model %s seed %d temperature %v", r.Model, *r.Seed, *r.Temperature)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "judgements", "part-00000.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 20 {
		t.Errorf("%d judgements, want 20", n)
	}
	manifest, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	for _, want := range []string{`"judge-2@v1:q4"`, `"samples": 2`, `"aggregate": "min"`, `"partial": "ok"`, `"temperature": 0.3`} {
		if !strings.Contains(string(manifest), want) {
			t.Errorf("manifest.json lacks %s:\n%s", want, manifest)
		}
	}
}

// TestGradeJudgePanelUsage: bad panel flags are usage errors (exit 2).
func TestGradeJudgePanelUsage(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"rollout_id":"r","task_id":"T","output":"x"}`+"\n"), 0o644)
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--judge-samples", "0"}, "--judge-samples 0: want 1 or more"},
		{[]string{"--judge-temperature", "-1"}, "--judge-temperature -1: want a number in [0, 2]"},
		{[]string{"--judge-aggregate", "mode"}, `--judge-aggregate "mode": want one of mean, median, min, majority`},
		{[]string{"--judge-partial", "maybe"}, `--judge-partial "maybe": want error or ok`},
		{[]string{"--judge-model", "m", "--judge-model", "m"}, `--judge-model "m": want distinct`},
		{[]string{"--judge-url-for", "m"}, `--judge-url-for "m": want MODEL=URL`},
		{[]string{"--judge-url-for", "m=http://a/v1", "--judge-url-for", "m=http://b/v1"}, `model "m" given twice`},
	} {
		args := append([]string{"grade", "--quiet", "--out", filepath.Join(dir, "out")}, tc.flags...)
		code, _, stderr := runCLI(t, append(args, in)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("grade %v = %d, %q; want 2 and %q", tc.flags, code, stderr, tc.want)
		}
	}
}

// TestS3JudgementsUploaded: a panel run into an output URL uploads each
// unit's judgements part, equal to a local run's.
func TestS3JudgementsUploaded(t *testing.T) {
	startS3(t)
	srv := judgetest.New(t)
	dir := t.TempDir()
	specPath := filepath.Join(dir, "judged.yaml")
	os.WriteFile(specPath, []byte(judgedSpecYAML), 0o644)
	var inputs []string
	for u := range 2 {
		in := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", u))
		var sb strings.Builder
		for i := range 3 {
			fmt.Fprintf(&sb, `{"rollout_id":"r%d-%d","task_id":"TASK-J","output":"PASS %d"}`+"\n", u, i, i)
		}
		os.WriteFile(in, []byte(sb.String()), 0o644)
		inputs = append(inputs, in)
	}
	args := func(out string) []string {
		return append([]string{"grade", "--quiet", "--spec", specPath, "--out", out, "--format", "jsonl",
			"--judge-model", "judge-1", "--judge-model", "judge-2", "--judge-url", srv.URL, "--judge-samples", "2",
			"--judge-cache", filepath.Join(dir, "cache")}, inputs...)
	}
	local := filepath.Join(dir, "local")
	if code, stdout, stderr := runCLI(t, args(local)...); code != 0 {
		t.Fatalf("grade = %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, args("s3://gavel/out/")...); code != 0 {
		t.Fatalf("grade to s3 = %d\n%s\n%s", code, stdout, stderr)
	}
	objects := listObjects(t, "s3://gavel/out/")
	got := downloadAll(t, "s3://gavel/out/")
	for u := range 2 {
		name := fmt.Sprintf("judgements/part-%05d.jsonl", u)
		if _, ok := objects[name]; !ok {
			t.Errorf("%s not uploaded (objects %v)", name, objects)
			continue
		}
		a, _ := os.ReadFile(filepath.Join(local, name))
		b, _ := os.ReadFile(filepath.Join(got, name))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s uploaded differs from the local run's:\n%s\n%s", name, a, b)
		}
	}
}

// TestReportJudgesPerCheck: gavel report of a panel run shows each judge's
// judgements of each check, in Markdown and HTML; a one-judge run's
// report has no such section.
func TestReportJudgesPerCheck(t *testing.T) {
	srv := judgetest.New(t)
	// judge-2 fails the rollouts whose output says "PASS 1".
	srv.Script(func(r judgetest.Request) judgetest.Reply {
		out, _ := judgetest.FencedOutput(r.User)
		if r.Model == "judge-2" && strings.Contains(out, "PASS 1") {
			return judgetest.Reply{Status: 400}
		}
		score := 0.25 * float64(*r.Seed)
		if r.Model == "judge-1" {
			score = 1
		}
		return judgetest.Reply{Body: judgetest.Completion(r.Model, judgetest.Verdict(score, []string{}, ""))}
	})
	dir := t.TempDir()
	specPath := filepath.Join(dir, "judged.yaml")
	os.WriteFile(specPath, []byte(judgedSpecYAML), 0o644)
	in := filepath.Join(dir, "in.jsonl")
	var sb strings.Builder
	for i := range 4 {
		fmt.Fprintf(&sb, `{"rollout_id":"r%d","task_id":"TASK-J","output":"PASS %d"}`+"\n", i, i)
	}
	os.WriteFile(in, []byte(sb.String()), 0o644)
	out := filepath.Join(dir, "out")
	if code, stdout, stderr := runCLI(t, "grade", "--quiet", "--spec", specPath, "--out", out, "--judge-model", "judge-1", "--judge-model", "judge-2",
		"--judge-url", srv.URL, "--judge-samples", "2", "--judge-partial", "ok", "--judge-cache", filepath.Join(dir, "cache"), in); code != 0 {
		t.Fatalf("grade = %d\n%s\n%s", code, stdout, stderr)
	}
	code, md, stderr := runCLI(t, "report", "--format", "markdown", out)
	if code != 0 {
		t.Fatalf("report = %d: %s", code, stderr)
	}
	// judge-2: 3 rollouts x 2 samples succeed (scores 0.25 and 0.5: mean
	// 0.375, all fail the 0.8 threshold), 2 judgements fail.
	for _, want := range []string{
		"## Judges per check",
		"| VER-J | polite | judge-1 | 2 | 8 | 8 | 0 | 0 | 1.0000 |",
		"| VER-J | polite | judge-2 | 2 | 8 | 0 | 6 | 2 | 0.3750 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	_, html, _ := runCLI(t, "report", out)
	if !strings.Contains(html, `<section id="judges">`) || strings.Count(html, `<tr class="judge-row">`) != 2 {
		t.Errorf("HTML report lacks the judges section")
	}
	one := filepath.Join(dir, "one")
	runCLI(t, "grade", "--quiet", "--spec", specPath, "--out", one, "--judge-model", "judge-1", "--judge-url", srv.URL,
		"--judge-cache", filepath.Join(dir, "cache"), in)
	if _, md, _ := runCLI(t, "report", "--format", "markdown", one); strings.Contains(md, "Judges per check") {
		t.Errorf("a one-judge run's report has a judges section")
	}
}
