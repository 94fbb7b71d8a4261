package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/judge/judgetest"
)

// firstPositionJudge scripts srv as a judge that always prefers the output
// shown first, except that an output saying BROKEN gets a reply naming
// neither.
func firstPositionJudge(srv *judgetest.Server) {
	srv.Script(func(r judgetest.Request) judgetest.Reply {
		a, b, _ := judgetest.FencedPair(r.User)
		better := "A"
		if strings.Contains(a+b, "BROKEN") {
			better = "neither"
		}
		return judgetest.Reply{Body: judgetest.Completion(r.Model, judgetest.Preference(better, "first"))}
	})
}

// TestJudgePairwise runs gavel judge pairwise with a judge that always
// prefers the first position: every pair is inconsistent, the share is
// reported as 1, every group's Elo is 1000; ranking.json is byte-identical
// for any concurrency and from the cache.
func TestJudgePairwise(t *testing.T) {
	srv := judgetest.New(t)
	firstPositionJudge(srv)
	dir := t.TempDir()
	specPath := filepath.Join(dir, "judged.yaml")
	os.WriteFile(specPath, []byte(judgedSpecYAML), 0o644)
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	for i := range 6 {
		for _, m := range []string{"m1", "m2", "m3"} {
			fmt.Fprintf(&b, `{"rollout_id":"%s-%d","task_id":"TASK-J","sample":%d,"model":"%s","output":"answer %s %d"}`+"\n", m, i, i, m, m, i)
		}
	}
	os.WriteFile(in, []byte(b.String()), 0o644)
	run := func(out, cache, concurrency string) (int, string, string) {
		return runCLI(t, "judge", "pairwise", "--spec", specPath, "--check", "polite", "--judge-model", "judge-1",
			"--judge-url", srv.URL, "--judge-cache", cache, "--judge-concurrency", concurrency, "--out", out, in)
	}
	code, stdout, stderr := run(filepath.Join(dir, "out1"), filepath.Join(dir, "c1"), "1")
	if code != 0 {
		t.Fatalf("pairwise = %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"compared 18 pairs of 18 rollouts by model: 18 judged, 0 errors, 0 pending by the budget; 0 rows skipped, 0 rollouts unpaired",
		"18 games on 1 task; 18 inconsistent (share 1.0000",
		"judge: 1 probe of the server, 36 requests, 0 cache hits",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// The spec's rubric is what the judge sees.
	if u := srv.Received()[0].User; !strings.Contains(u, "The answer is polite.") {
		t.Errorf("the prompt lacks the spec's rubric:\n%s", u)
	}
	var rk struct {
		InconsistentShare float64 `json:"inconsistent_share"`
		Template          string  `json:"template"`
		Groups            []struct {
			Group string  `json:"group"`
			Elo   float64 `json:"elo"`
			Ties  int     `json:"ties"`
		} `json:"groups"`
	}
	first, _ := os.ReadFile(filepath.Join(dir, "out1", "ranking.json"))
	if err := json.Unmarshal(first, &rk); err != nil {
		t.Fatal(err)
	}
	if rk.InconsistentShare != 1 || rk.Template != "gavel-pairwise-v1" || len(rk.Groups) != 3 {
		t.Fatalf("ranking.json = %s", first)
	}
	for _, g := range rk.Groups {
		if g.Elo < 1000-1e-9 || g.Elo > 1000+1e-9 || g.Ties != 12 {
			t.Errorf("group %s: Elo %v, %d ties, want 1000, 12", g.Group, g.Elo, g.Ties)
		}
	}
	code, stdout, _ = run(filepath.Join(dir, "out2"), filepath.Join(dir, "c2"), "8")
	if code != 0 {
		t.Fatalf("pairwise with 8 in flight = %d", code)
	}
	code, stdout, _ = run(filepath.Join(dir, "out3"), filepath.Join(dir, "c1"), "8")
	if code != 0 || !strings.Contains(stdout, "judge: 0 probes of the server, 0 requests, 36 cache hits") {
		t.Fatalf("pairwise from the cache = %d:\n%s", code, stdout)
	}
	for _, o := range []string{"out2", "out3"} {
		for _, f := range []string{"ranking.json", filepath.Join("pairs", "part-00000.parquet")} {
			a, _ := os.ReadFile(filepath.Join(dir, "out1", f))
			b, err := os.ReadFile(filepath.Join(dir, o, f))
			if err != nil || string(a) != string(b) {
				t.Errorf("%s/%s differs from out1's (%v)", o, f, err)
			}
		}
	}
}

func TestJudgePairwiseExitStatus(t *testing.T) {
	srv := judgetest.New(t)
	firstPositionJudge(srv)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"task_id":"T1","model":"x","output":"fine"}
{"task_id":"T1","model":"y","output":"BROKEN"}
{"task_id":"T2","model":"x","output":"fine"}
{"task_id":"T2","model":"y","output":"also fine"}
`), 0o644)
	base := []string{"judge", "pairwise", "--rubric", "r", "--judge-model", "judge-1", "--judge-url", srv.URL,
		"--judge-cache", filepath.Join(dir, "cache"), "--format", "jsonl"}
	code, stdout, stderr := runCLI(t, append(base, "--out", filepath.Join(dir, "out"), in)...)
	if code != 3 || !strings.Contains(stderr, "1 pairs could not be judged") || !strings.Contains(stdout, "2 pairs of 4 rollouts by model: 1 judged, 1 errors") {
		t.Errorf("a failed judgement: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	pairs, _ := os.ReadFile(filepath.Join(dir, "out", "pairs", "part-00000.jsonl"))
	if !strings.Contains(string(pairs), `"outcome":"error","error":"a first: judge: model judge-1`) {
		t.Errorf("pairs table:\n%s", pairs)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no subcommand", []string{"judge"}, "judge: no subcommand given"},
		{"unknown subcommand", []string{"judge", "pairwise2"}, `unknown subcommand "pairwise2"`},
		{"no model", []string{"judge", "pairwise", "--rubric", "r", in}, "--judge-model: no judge model given"},
		{"threshold", append(append([]string{}, base...), "--judge-threshold", "0.5", in), "--judge-threshold does not apply"},
		{"rubric and spec", append(append([]string{}, base...), "--spec", "x.yaml", in), "--rubric and --spec contradict"},
		{"format", append(append([]string{}, base...), "--format", "csv", in), `--format: "csv": want parquet, arrow or jsonl`},
		{"one group", append(append([]string{}, base...), "--by", "nothing", in), "nothing: missing or null"},
		{"against", append(append([]string{}, base...), "--against", "z", in), "--against: z: no rollout is in this group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := tc.args
			if len(args) > 1 {
				args = append(args, "--out", out)
			}
			code, _, stderr := runCLI(t, args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q, want 2 and %q", code, stderr, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a usage error wrote %s", out)
			}
		})
	}
	// A failed probe: exit 2, nothing written.
	srv.Models("another")
	out := filepath.Join(dir, "out-probe")
	code, _, stderr = runCLI(t, "judge", "pairwise", "--rubric", "r", "--judge-model", "judge-1", "--judge-url", srv.URL,
		"--judge-cache", "off", "--out", out, in)
	if code != 2 || !strings.Contains(stderr, "probe: model judge-1") || !strings.Contains(stderr, "nothing written") {
		t.Errorf("a failed probe: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed probe wrote %s", out)
	}
}
