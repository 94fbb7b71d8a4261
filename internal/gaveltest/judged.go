package gaveltest

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/judge/judgetest"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/spec"
)

// JudgedSpec binds VER-J to TASK-J: a check that the output is not empty
// and a rubric check, polite, with its own query and a context.
const JudgedSpec = `verifiers:
  - id: VER-J
    task: TASK-J
    name: answers judged
    checks:
      - id: answered
        type: expr
        expr: "output != ''"
      - id: polite
        type: rubric
        rubric: The answer is polite.
        query: Answer politely.
        context: {n: "meta.n"}
`

// ParseSpec parses the spec text as judged.yaml, failing t on an error.
func ParseSpec(t testing.TB, text string) []*verifiers.Verifier {
	t.Helper()
	vs, err := spec.Parse("judged.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// WriteJudgedRows writes n rows of TASK-J from index from, each with its
// own output; rows whose index is a multiple of 3 say FAIL (judgetest
// scores them 0), the others PASS.
func WriteJudgedRows(t testing.TB, path string, from, n int) {
	t.Helper()
	var b bytes.Buffer
	for i := from; i < from+n; i++ {
		word := "PASS"
		if i%3 == 0 {
			word = "FAIL"
		}
		fmt.Fprintf(&b, `{"rollout_id":"r%05d","task_id":"TASK-J","output":"answer %d: %s","n":%d}`+"\n", i, i, word, i)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// JudgeConfig returns the configuration of judge-1 on srv, its cache in
// cache, without retries.
func JudgeConfig(srv *judgetest.Server, cache string) *judge.Config {
	return &judge.Config{Model: "judge-1", BaseURL: srv.URL, CacheDir: cache, MaxRetries: -1, Timeout: 5 * time.Second}
}
