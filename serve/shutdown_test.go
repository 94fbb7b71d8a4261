package serve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Cancelling Serve's context (SIGTERM in gavel serve) stops accepting,
// lets the request in flight finish, and leaves no goroutine behind.
func TestShutdownDrains(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := New(Config{})
	if err := s.Reload(allVerifiers()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, 10*time.Second) }()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", url+"/v1/grade", pr)
	req.Header.Set("Content-Type", "application/x-ndjson")
	got := make(chan string, 1)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- resp.Status + " " + string(b)
	}()
	pw.Write([]byte(`{"task_id": "TASK-C01"}` + "\n"))
	waitUntil(t, "the request in flight", func() bool { return len(s.inflight) == 1 })
	cancel()
	// The listener closes: a new connection is refused.
	waitUntil(t, "a new connection refused", func() bool {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return errors.Is(err, syscall.ECONNREFUSED)
	})
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default:
	}
	pw.Write([]byte(`{"task_id": "TASK-001"}` + "\n"))
	pw.Close()
	if r := <-got; !strings.HasPrefix(r, "200 OK") || strings.Count(r, "\n") != 2 {
		t.Errorf("request in flight at shutdown = %q, want 200 with two lines", r)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
}
