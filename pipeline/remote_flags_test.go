package pipeline

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/remote"
)

// TestRemoteFlags grades rollouts with a gavel-protocol service that
// answers flags beside its checks, as a list and beside a reward: the
// flags are flag rows after the checks and the ids raised are the
// rewards' flags, with the verdicts those of the checks alone. A service
// answering flags that its verifier does not declare (flags: true under
// remote) makes those rollouts errors, saying so.
func TestRemoteFlags(t *testing.T) {
	srv := newRemoteSrv(t)
	srv.answer = byOutput(func(out string) string {
		switch out {
		case "list":
			return `[{"id":"peek","label":"read the tests","kind":"flag","status":"raised","detail":"cat tests/"},{"id":"a","status":"pass"}]`
		case "reward":
			return `{"reward": 0.25, "flags": [{"id":"peek","status":"clear"}]}`
		}
		return `1`
	})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeFile(t, in, []byte(`{"rollout_id":"l","task_id":"T","output":"list"}
{"rollout_id":"r","task_id":"T","output":"reward"}
{"rollout_id":"n","task_id":"T","output":"none"}
`))
	for _, declared := range []bool{true, false} {
		spec := fmt.Sprintf(`verifiers:
  - id: VER-RF
    task: T
    name: remote with flags
    remote: {url: %q, version: 1, pure: true, flags: %v}
`, srv.URL, declared)
		out := filepath.Join(dir, fmt.Sprintf("out-%v", declared))
		cache := filepath.Join(dir, fmt.Sprintf("cache-%v", declared))
		grade(t, Config{Inputs: []string{in}, Out: out, Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, spec),
			Remote: &RemoteConfig{Config: remote.Config{CacheDir: cache}}, Health: true})
		// Answered from the cache: the same bytes.
		posts := srv.posts.Load()
		grade(t, Config{Inputs: []string{in}, Out: out + "-cached", Format: columnar.FormatJSONL, Verifiers: gaveltest.ParseSpec(t, spec),
			Remote: &RemoteConfig{Config: remote.Config{CacheDir: cache}}, Health: true})
		if declared && srv.posts.Load() != posts {
			t.Errorf("the cached run asked the service %d times", srv.posts.Load()-posts)
		}
		sameFiles(t, out+"-cached", out)
		rewards := jsonlByID(t, filepath.Join(out, "rewards", "part-00000.jsonl"))
		if !declared {
			for _, id := range []string{"l", "r"} {
				if rw := rewards[id]; rw["status"] != "error" || !strings.Contains(fmt.Sprint(rw["error"]), "add flags: true to its remote: settings") {
					t.Errorf("undeclared flags, %s: %v", id, rw)
				}
			}
			if rewards["n"]["status"] != "passed" {
				t.Errorf("undeclared flags, n: %v", rewards["n"])
			}
			continue
		}
		want := map[string][]any{"l": {"peek"}, "r": {}, "n": {}}
		for id, flags := range want {
			if !reflect.DeepEqual(rewards[id]["flags"], flags) {
				t.Errorf("%s: flags %v, want %v", id, rewards[id]["flags"], flags)
			}
		}
		if rw := rewards["l"]; rw["status"] != "passed" || rw["checks_total"] != 1.0 {
			t.Errorf("l: %v, want passed on its one check", rw)
		}
		if rw := rewards["r"]; rw["reward"] != 0.25 || rw["checks_total"] != 1.0 {
			t.Errorf("r: %v, want reward 0.25 on one check", rw)
		}
		var rows []string
		for _, l := range readLines(t, filepath.Join(out, "checks", "part-00000.jsonl")) {
			rows = append(rows, string(l))
		}
		got := strings.Join(rows, "\n")
		for _, frag := range []string{
			`"rollout_id":"l","task_id":"T","verifier_id":"VER-RF","check_index":1,"check_id":"peek","label":"read the tests","required":false,"status":"raised","detail":"cat tests/"`,
			`"rollout_id":"r","task_id":"T","verifier_id":"VER-RF","check_index":1,"check_id":"peek"`,
		} {
			if !strings.Contains(got, frag) {
				t.Errorf("checks lack %s:\n%s", frag, got)
			}
		}
		if strings.Count(got, `"kind":"flag"`) != 2 {
			t.Errorf("want two flag rows:\n%s", got)
		}
	}
}

// jsonlByID reads a JSON Lines rewards part by rollout id.
func jsonlByID(t *testing.T, path string) map[string]map[string]any {
	t.Helper()
	rows := map[string]map[string]any{}
	for _, l := range readLines(t, path) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		rows[m["rollout_id"].(string)] = m
	}
	return rows
}
