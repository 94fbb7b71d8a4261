package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const reloadSpec = `{"verifiers": [{"id": "%s", "task": "TASK-R", "name": "reload", "checks": [{"id": "c", "type": "log", "asserts": [{"comparator": "eq", "value": []}]}]}]}`

// SIGHUP reloads --spec: a valid set replaces the old one, an invalid one
// is logged and the old set stays; SIGTERM's context ends the server with
// status 0.
func TestServeReload(t *testing.T) {
	dir := t.TempDir()
	specPath := filepath.Join(dir, "r.json")
	write := func(text string) {
		if err := os.WriteFile(specPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(strings.Replace(reloadSpec, "%s", "VER-R1", 1))
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--spec", specPath}, io.Discard, &stderr)
	}()
	addrRe := regexp.MustCompile(`"addr":"(127\.0\.0\.1:\d+)"`)
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; log:\n%s", what, stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("listening", func() bool { return addrRe.MatchString(stderr.String()) })
	url := "http://" + addrRe.FindStringSubmatch(stderr.String())[1]
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	verifiers := func() string {
		resp, err := client.Get(url + "/v1/verifiers")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if v := verifiers(); !strings.Contains(v, "VER-R1") {
		t.Fatalf("verifiers = %s, want VER-R1", v)
	}
	write(strings.Replace(reloadSpec, "%s", "VER-R2", 1))
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	waitFor("reload", func() bool { return strings.Contains(stderr.String(), `"msg":"reloaded"`) })
	if v := verifiers(); !strings.Contains(v, "VER-R2") || strings.Contains(v, "VER-R1") {
		t.Errorf("after reload verifiers = %s, want VER-R2 only", v)
	}
	write(`{"verifiers": [{"id": "VER-R3", "task": "TASK-R", "name": "bad", "checks": [{"id": "c", "type": "nope"}]}]}`)
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	waitFor("failed reload", func() bool { return strings.Contains(stderr.String(), "reload failed") })
	// The failed reload's line lists each problem with its place, and the
	// command that checks the spec.
	failed := logLine(t, stderr.String(), "reload failed; the loaded verifiers stay")
	var problems []string
	if err := json.Unmarshal(failed["problems"], &problems); err != nil || len(problems) != 1 ||
		!strings.HasPrefix(problems[0], specPath+":1:") || !strings.Contains(problems[0], `unknown check type "nope"`) {
		t.Errorf("failed reload logged problems %s, want [%q]", failed["problems"], specPath+`:1:...: unknown check type "nope" ...`)
	}
	if hint := string(failed["hint"]); !strings.Contains(hint, "gavel spec check "+specPath) {
		t.Errorf("failed reload logged hint %s, want gavel spec check %s", hint, specPath)
	}
	if v := verifiers(); !strings.Contains(v, "VER-R2") {
		t.Errorf("after a failed reload verifiers = %s, want VER-R2 still", v)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d, want 0; log:\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	// A clean stop logs no error at all, not "<nil>".
	if stopped := logLine(t, stderr.String(), "stopped"); stopped["error"] != nil || string(stopped["level"]) != `"INFO"` {
		line, _ := json.Marshal(stopped)
		t.Errorf("clean stop logged %s, want level INFO and no error", line)
	}
}

// logLine returns the members of the JSON log line whose msg is msg.
func logLine(t *testing.T, log, msg string) map[string]json.RawMessage {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &m) == nil && string(m["msg"]) == strconv.Quote(msg) {
			return m
		}
	}
	t.Fatalf("no log line %q in:\n%s", msg, log)
	return nil
}

// A non-loopback address needs a token or --insecure. A run let through
// on a non-loopback address is shown by its listen error: 192.0.2.1
// (TEST-NET-1) is no address of this machine, so no test serves other
// machines. A run that starts is stopped once it logs that it listens, so
// a refusal that went missing fails rather than hangs.
func TestServeRefusesOpenAddress(t *testing.T) {
	t.Setenv("GAVEL_TEST_TOKEN", "s3cret")
	for _, tt := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"--addr", "0.0.0.0:0"}, 2, "--token-env"},
		{[]string{"--addr", "[::]:0"}, 2, "--token-env"},
		{[]string{"--addr", "192.0.2.1:0"}, 2, "--token-env"},
		{[]string{"--addr", "192.0.2.1:0", "--insecure"}, 1, "listen tcp 192.0.2.1:0"},
		{[]string{"--addr", "192.0.2.1:0", "--token-env", "GAVEL_TEST_TOKEN"}, 1, "listen tcp 192.0.2.1:0"},
		{[]string{"--addr", "127.0.0.1:0", "--token-env", "GAVEL_TEST_TOKEN"}, 0, `"auth":true`},
		{[]string{"--addr", "localhost:0"}, 0, `"msg":"listening"`},
		{[]string{"--spec", "/nonexistent.yaml"}, 2, "nonexistent"},
		{[]string{"--timeout", "0s"}, 2, "--timeout"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		var stderr syncBuffer
		done := make(chan int, 1)
		go func() { done <- run(ctx, append([]string{"serve"}, tt.args...), io.Discard, &stderr) }()
		code, listened := -1, false
		deadline := time.Now().Add(60 * time.Second)
		for code == -1 {
			select {
			case code = <-done:
				continue
			default:
			}
			if !listened && strings.Contains(stderr.String(), `"msg":"listening"`) {
				listened = true
				cancel()
			}
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("serve %v neither returned nor listened in 60s:\n%s", tt.args, stderr.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("serve %v = %d %s, want %d with %q", tt.args, code, stderr.String(), tt.code, tt.want)
		}
	}
}
