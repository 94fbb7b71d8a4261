package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
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
	if !strings.Contains(stderr.String(), `unknown check type \"nope\"`) {
		t.Errorf("the failed reload's problems are not logged:\n%s", stderr.String())
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
}

func TestServeRefusesOpenAddress(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--addr", "0.0.0.0:0"}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "--token-env") {
		t.Errorf("serve on 0.0.0.0 without a token = %d %s, want 2", code, stderr.String())
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"serve", "--spec", "/nonexistent.yaml"}, io.Discard, &stderr); code != 2 {
		t.Errorf("serve with a missing spec = %d %s, want 2", code, stderr.String())
	}
}
