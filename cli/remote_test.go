package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// remoteService is a gavel-protocol service on 127.0.0.1 answering each
// rollout's reward from its output ("n: X" gives X/100); rollouts whose
// n is in hang wait until released.
type remoteService struct {
	*httptest.Server
	requests atomic.Int64
	hung     atomic.Int64
	mu       sync.Mutex
	hang     func(n int) bool
	release  chan struct{}
	token    string
}

func newRemoteService(t *testing.T, token string) *remoteService {
	t.Helper()
	s := &remoteService{release: make(chan struct{}), token: token}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+s.token {
			http.Error(w, `{"error":"who are you"}`, http.StatusUnauthorized)
			return
		}
		var body struct {
			Output string `json:"output"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			http.Error(w, `{"error":"bad body"}`, http.StatusBadRequest)
			return
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(body.Output, "n: "))
		s.mu.Lock()
		hang := s.hang
		s.mu.Unlock()
		if hang != nil && hang(n) {
			s.hung.Add(1)
			select {
			case <-s.release:
			case <-r.Context().Done():
				return
			}
		}
		fmt.Fprintf(w, `{"reward": %g}`, float64(n%100)/100)
	}))
	t.Cleanup(func() {
		close(s.release)
		s.Close()
	})
	return s
}

const remoteSpecYAML = `verifiers:
  - id: VER-R
    task: TASK-R
    name: graded by a service
    remote: {url: %q, version: 1, pure: true, token_env: GAVEL_CLI_REMOTE_TOKEN, concurrency: 4}
`

// TestRemoteKill9Resume kills gavel grade (SIGKILL) while requests to a
// remote verifier hang, the first part written; --resume then asks only
// what was not answered before the kill. A wrong token fails the probe
// before any part: exit 2, nothing written, the token in no message.
func TestRemoteKill9Resume(t *testing.T) {
	const token = "svc-token-SECRET-91c2"
	t.Setenv("GAVEL_CLI_REMOTE_TOKEN", token)
	srv := newRemoteService(t, token)
	srv.hang = func(n int) bool { return n >= 15 }
	dir := t.TempDir()
	specPath := filepath.Join(dir, "remote.yaml")
	os.WriteFile(specPath, []byte(fmt.Sprintf(remoteSpecYAML, srv.URL)), 0o644)
	var inputs []string
	for u := range 3 {
		var b strings.Builder
		for i := u * 10; i < u*10+10; i++ {
			fmt.Fprintf(&b, `{"rollout_id":"r%d","task_id":"TASK-R","output":"n: %d"}`+"\n", i, i)
		}
		p := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", u))
		os.WriteFile(p, []byte(b.String()), 0o644)
		inputs = append(inputs, p)
	}
	out := filepath.Join(dir, "out")
	cache := filepath.Join(dir, "cache")
	args := append([]string{"grade", "--quiet", "--spec", specPath, "--out", out, "--format", "jsonl", "--batch-size", "4",
		"--remote-cache", cache}, inputs...)
	cmd, stderr := gavelCmd(t, dir, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for (srv.hung.Load() < 4 || countParts(out) < 1) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if srv.hung.Load() != 4 || countParts(out) != 1 {
		t.Fatalf("at the kill: %d requests hanging, %d parts; want 4 (the concurrency) and 1\n%s", srv.hung.Load(), countParts(out), stderr)
	}
	srv.mu.Lock()
	srv.hang = nil
	srv.mu.Unlock()
	// A request sent just before the kill may reach the service after it.
	before := settled(srv.requests.Load)
	cmd, stderr = gavelCmd(t, dir, append([]string{args[0], "--resume"}, args[1:]...)...)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("resume: %v\n%s", err, stderr)
	}
	m := regexp.MustCompile(`remote verifiers: [^\n]*?, (\d+) requests?, (\d+) cache hits?,`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("resume printed no remote counters:\n%s", stdout.String())
	}
	requests, _ := strconv.Atoi(m[1])
	hits, _ := strconv.Atoi(m[2])
	// Rows 10 to 14 were answered and cached before the kill; 15 to 29
	// hung or were never sent.
	if requests+hits != 20 || hits < 5 || requests < 15 {
		t.Errorf("resumed run: %d requests, %d cache hits; want 20 rows, rows 10 to 14 from the cache", requests, hits)
	}
	if got := srv.requests.Load() - before; got != int64(requests) {
		t.Errorf("service saw %d requests, grade counted %d", got, requests)
	}
	rewards, _ := os.ReadFile(filepath.Join(out, "rewards", "part-00002.jsonl"))
	if !strings.Contains(string(rewards), `"rollout_id":"r29"`) || !strings.Contains(string(rewards), `"reward":0.29`) {
		t.Errorf("last part:\n%s", rewards)
	}

	// A wrong token: the first request (the probe) fails, exit 2.
	t.Setenv("GAVEL_CLI_REMOTE_TOKEN", token+"-wrong")
	out2 := filepath.Join(dir, "out2")
	code, so, se := runCLI(t, "grade", "--quiet", "--spec", specPath, "--out", out2, "--remote-cache", "off", inputs[0])
	if code != 2 || !strings.Contains(se, "HTTP 401") || !strings.Contains(se, "nothing was written") || strings.Contains(so+se, token) {
		t.Errorf("grade with a wrong token = %d\nstdout:\n%s\nstderr:\n%s", code, so, se)
	}
	if _, err := os.Stat(out2); !os.IsNotExist(err) {
		t.Errorf("a failed probe left %s", out2)
	}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(path); strings.Contains(string(data), token) {
				t.Errorf("%s holds the token", path)
			}
		}
		return nil
	})
}

// settled returns count() once it has not changed for 200 ms (at most 10 s).
func settled(count func() int64) int64 {
	n := count()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		m := count()
		if m == n {
			return n
		}
		n = m
	}
	return n
}
