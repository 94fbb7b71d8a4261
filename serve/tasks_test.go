package serve

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/verifiers"
)

// TestGradeTaskPatterns checks that the service binds tasks as gavel grade
// does: a task id as written, then the longest prefix, then all.
func TestGradeTaskPatterns(t *testing.T) {
	pass := func(r *verifiers.Rollout, c *verifiers.Checks) error {
		c.Require("ok", true, "")
		return nil
	}
	_, ts := newServer(t, Config{MaxBody: 4096},
		&verifiers.Verifier{ID: "AIR", Name: "airline", Tasks: []string{"airline/*"}, Grade: pass, Source: "a.go:1"},
		&verifiers.Verifier{ID: "REST", Name: "rest", Tasks: []string{verifiers.AllTasks}, Grade: pass, Source: "b.go:1"},
	)
	r := do(t, ts, "POST", "/v1/grade", "", `[{"task_id": "airline/3"}, {"task_id": "TASK-C01"}, {"task_id": "retail/1"}]`)
	if r.code != 200 {
		t.Fatalf("POST /v1/grade: %d %s", r.code, r.body)
	}
	var got []string
	for _, m := range regexp.MustCompile(`"rewards":\{"rollout_id":"[^"]*","task_id":"[^"]*","verifier_id":"([^"]*)"`).FindAllStringSubmatch(r.body, -1) {
		got = append(got, m[1])
	}
	if g, want := strings.Join(got, " "), "AIR VER-C01 REST"; g != want {
		t.Errorf("verifier ids = %s, want %s\n%s", g, want, r.body)
	}
}
