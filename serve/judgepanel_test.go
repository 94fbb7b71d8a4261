package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/judge/judgetest"
	"github.com/gavelhq/gavel/pipeline"
)

// /v1/grade with two judges and two samples: each line carries a
// judgements array, the rows gavel grade writes in its judgements table
// for that rollout; with one judge there is none.
func TestGradeJudgementsArray(t *testing.T) {
	dir := t.TempDir()
	var lines strings.Builder
	for i := range 4 {
		word := "PASS"
		if i%3 == 0 {
			word = "FAIL"
		}
		fmt.Fprintf(&lines, `{"rollout_id":"r%d","task_id":"TASK-J","output":"answer %d: %s"}`+"\n", i, i, word)
	}
	data := filepath.Join(dir, "rollouts.jsonl")
	if err := os.WriteFile(data, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	js := judgetest.New(t)
	js.Script(func(r judgetest.Request) judgetest.Reply {
		out, _ := judgetest.FencedOutput(r.User)
		score := 0.1 * float64(*r.Seed)
		if strings.Contains(out, "PASS") && r.Model == "judge-1" {
			score += 0.5
		}
		return judgetest.Reply{Body: judgetest.Completion(r.Model, judgetest.Verdict(score, []string{}, ""))}
	})
	cfg := func(cache string) *judge.Config {
		return &judge.Config{Model: "judge-1", BaseURL: js.URL, CacheDir: cache, MaxRetries: -1, Timeout: 5 * time.Second}
	}
	panel := pipeline.JudgePanel{Models: []string{"judge-1", "judge-2"}, Samples: 2, Temperature: 0.7, Aggregate: "median"}
	out := filepath.Join(dir, "out")
	if _, err := pipeline.Run(context.Background(), pipeline.Config{Inputs: []string{data}, Out: out, Format: columnar.FormatJSONL,
		Verifiers: judgedVerifiers(t), Judge: cfg(filepath.Join(dir, "grade-cache")), JudgePanel: panel}); err != nil {
		t.Fatal(err)
	}
	want := readLines(t, filepath.Join(out, "judgements", "part-00000.jsonl"))
	if len(want) != 16 {
		t.Fatalf("grade wrote %d judgements, want 16", len(want))
	}
	for _, tc := range []struct {
		name  string
		panel pipeline.JudgePanel
		want  []string
	}{{"panel", panel, want}, {"one judge", pipeline.JudgePanel{}, nil}} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{Judge: cfg(filepath.Join(dir, "serve-cache")), JudgePanel: tc.panel})
			if err := s.Reload(judgedVerifiers(t)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			ts := startServer(t, s)
			got := do(t, ts, "POST", "/v1/grade", "application/x-ndjson", lines.String())
			if got.code != 200 {
				t.Fatalf("POST /v1/grade = %d %s", got.code, got.body)
			}
			var judgements []string
			for i, line := range strings.Split(strings.TrimSuffix(got.body, "\n"), "\n") {
				var l struct {
					Judgements []json.RawMessage `json:"judgements"`
				}
				if err := json.Unmarshal([]byte(line), &l); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				if tc.want != nil && len(l.Judgements) != 4 {
					t.Errorf("line %d has %d judgements, want 4", i, len(l.Judgements))
				}
				if tc.want == nil && strings.Contains(line, `"judgements"`) {
					t.Errorf("one judge: line %d has a judgements array", i)
				}
				for _, j := range l.Judgements {
					judgements = append(judgements, string(j))
				}
			}
			if diff := cmp.Diff(tc.want, judgements); diff != "" {
				t.Errorf("judgements (-grade +serve):\n%s", diff)
			}
		})
	}
}
