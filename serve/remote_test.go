package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/remote"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/spec"
)

// TestRemoteRoundTrip grades rollouts three ways: locally with VER-GYM of
// mathSpec; with a gavel-protocol remote verifier of the same id asking
// this server's /v1/grade (in batches of 3); and with a nemo-gym remote
// verifier asking its /verify. The first two write byte-identical parts
// (the remote checks are the local ones); the NeMo Gym round trip gives the
// same rewards.
func TestRemoteRoundTrip(t *testing.T) {
	local, err := spec.Parse("math.yaml", []byte(mathSpec))
	if err != nil {
		t.Fatal(err)
	}
	_, ts := newServer(t, Config{}, local...)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b bytes.Buffer
	outs := []string{"4", "5", " 4 ", "four", "4", "22"}
	for i, o := range outs {
		prompt := "What is 2+2?"
		if i == 4 {
			prompt = "What is 3+1?" // fails the prompt condition
		}
		fmt.Fprintf(&b, `{"rollout_id":"g%d","task_id":"TASK-GYM","output":%q,"expected_answer":"4","prompt":%q}`+"\n", i, o, prompt)
	}
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name string, vs []*verifiers.Verifier) string {
		t.Helper()
		out := filepath.Join(dir, name)
		cfg := pipeline.Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: vs, Workers: 2, BatchSize: 4,
			Remote: &pipeline.RemoteConfig{Config: remote.Config{CacheDir: "off"}}}
		res, err := pipeline.Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Summary.Rollouts != int64(len(outs)) || res.Summary.Error != 0 {
			t.Fatalf("%s: %+v", name, res.Summary.Counts)
		}
		return out
	}
	parse := func(text string) []*verifiers.Verifier {
		vs, err := spec.Parse("remote.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return vs
	}
	want := run("local", local)
	viaGrade := run("gavel", parse(fmt.Sprintf(`verifiers:
  - {id: VER-GYM, task: TASK-GYM, name: the answer is the expected one, remote: {url: %q, version: 1, pure: true, batch: 3}}
`, ts.URL+"/v1/grade")))
	for _, sub := range []string{"rewards", "checks"} {
		a, _ := os.ReadFile(filepath.Join(want, sub, "part-00000.jsonl"))
		b, _ := os.ReadFile(filepath.Join(viaGrade, sub, "part-00000.jsonl"))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s through /v1/grade differ from local grading:\n%s\n%s", sub, a, b)
		}
	}
	viaGym := run("gym", parse(fmt.Sprintf(`verifiers:
  - {id: VER-GYM, task: TASK-GYM, name: the answer is the expected one, remote: {url: %q, protocol: nemo-gym, version: 1}}
`, ts.URL+"/?task=TASK-GYM")))
	wantR, gotR := rewards(t, want), rewards(t, viaGym)
	passed := 0
	for id, r := range wantR {
		if gotR[id] != r {
			t.Errorf("%s: reward %v through /verify, %v locally", id, gotR[id], r)
		}
		if r == 1 {
			passed++
		}
	}
	if passed != 2 || len(gotR) != len(outs) {
		t.Errorf("local rewards %v: want 2 of %d passing", wantR, len(outs))
	}
}

// rewards returns the reward of each rollout of a JSON Lines result
// directory.
func rewards(t *testing.T, dir string) map[string]float64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "rewards", "part-00000.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r struct {
			ID     string  `json:"rollout_id"`
			Reward float64 `json:"reward"`
		}
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatal(err)
		}
		m[r.ID] = r.Reward
	}
	return m
}

// TestServeRemoteVerifier: a server whose spec has a remote verifier
// answers /v1/grade with the checks of the service it asks (here another
// server holding the checks): the same lines as that server's own. A
// service gone later makes rows errors.
func TestServeRemoteVerifier(t *testing.T) {
	local, err := spec.Parse("math.yaml", []byte(mathSpec))
	if err != nil {
		t.Fatal(err)
	}
	_, inner := newServer(t, Config{}, local...)
	vs, err := spec.Parse("remote.yaml", []byte(fmt.Sprintf(`verifiers:
  - {id: VER-GYM, task: TASK-GYM, name: the answer is the expected one, remote: {url: %q, version: 1, pure: true}}
`, inner.URL+"/v1/grade")))
	if err != nil {
		t.Fatal(err)
	}
	_, outer := newServer(t, Config{Remote: &pipeline.RemoteConfig{Config: remote.Config{CacheDir: "off"}}}, vs...)
	body := `[{"rollout_id":"a","task_id":"TASK-GYM","output":"4","expected_answer":"4","prompt":"What is 2+2?"},` +
		`{"rollout_id":"b","task_id":"TASK-GYM","output":"5","expected_answer":"4","prompt":"What is 2+2?"}]`
	want := do(t, inner, "POST", "/v1/grade", "application/json", body)
	got := do(t, outer, "POST", "/v1/grade", "application/json", body)
	if want.code != 200 || got.code != 200 || got.body != want.body {
		t.Errorf("through a remote verifier: %d\n%s\nwant %d\n%s", got.code, got.body, want.code, want.body)
	}
	// Two requests: the first rollout alone (the probe), then the other.
	m := do(t, outer, "GET", "/metrics", "", "")
	if !strings.Contains(m.body, "gavel_remote_requests_total 2\n") {
		t.Errorf("/metrics without the remote request:\n%s", m.body)
	}
	// A service gone after its probe: the rows are errors naming it,
	// never a score.
	inner.Close()
	got = do(t, outer, "POST", "/v1/grade", "application/json", body)
	if got.code != 200 || strings.Count(got.body, `"status":"error","passed":null,"reward":null`) != 2 || !strings.Contains(got.body, "connection refused") {
		t.Errorf("service gone: %d %s", got.code, got.body)
	}
}
