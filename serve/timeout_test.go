package serve

import (
	"context"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gavelhq/gavel/verifiers"
)

// hanging returns a verifier of TASK-HANG that blocks until release is
// closed.
func hanging(release <-chan struct{}) *verifiers.Verifier {
	return &verifiers.Verifier{ID: "VER-HANG", Name: "hangs", Tasks: []string{"TASK-HANG"},
		Grade: func(*verifiers.Rollout, *verifiers.Checks) error {
			<-release
			return nil
		}}
}

// A verifier that never returns gives its rollout status error, kind
// verifier, after --timeout, as in grade; the request and the server carry
// on. Once the verifier returns, no goroutine is left.
func TestVerifierTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	release := make(chan struct{})
	s := New(Config{Timeout: 50 * time.Millisecond})
	if err := s.Reload(append(allVerifiers(), hanging(release))); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer func() {
		close(release)
		ts.Client().CloseIdleConnections()
		ts.Close()
	}()
	for _, tt := range []struct {
		name, ctype, body string
	}{
		{"object", "application/json", `{"task_id": "TASK-HANG"}`},
		{"array", "", `[{"task_id": "TASK-HANG"}, {"task_id": "TASK-C01"}]`},
		{"ndjson", "application/x-ndjson", "{\"task_id\": \"TASK-C01\"}\n{\"task_id\": \"TASK-HANG\"}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan response, 1)
			go func() { done <- do(t, ts, "POST", "/v1/grade", tt.ctype, tt.body) }()
			var got response
			select {
			case got = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("a hanging verifier holds its request")
			}
			if got.code != 200 {
				t.Fatalf("POST /v1/grade = %d %s", got.code, got.body)
			}
			for i, line := range strings.Split(strings.TrimSuffix(got.body, "\n"), "\n") {
				hang := strings.Contains(line, `"task_id":"TASK-HANG"`)
				timedOut := strings.Contains(line, `"error_kind":"verifier","error":"verifier VER-HANG timed out after 50ms"`)
				if hang != timedOut || (!hang && !strings.Contains(line, `"status":"failed"`)) {
					t.Errorf("line %d = %s", i, line)
				}
			}
		})
	}
	if got := do(t, ts, "GET", "/healthz", "", ""); got.code != 200 {
		t.Errorf("/healthz = %d", got.code)
	}
}

// While as many verifier calls as --max-inflight are stuck, grading
// answers 503 and /readyz is not ready; when they return, both recover.
func TestTooManyStuck(t *testing.T) {
	defer goleak.VerifyNone(t)
	release := make(chan struct{})
	s := New(Config{Timeout: 20 * time.Millisecond, MaxInflight: 2})
	if err := s.Reload(append(allVerifiers(), hanging(release))); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer func() {
		ts.Client().CloseIdleConnections()
		ts.Close()
	}()
	for range 2 {
		if got := do(t, ts, "POST", "/v1/grade", "", `{"task_id": "TASK-HANG"}`); got.code != 200 || !strings.Contains(got.body, "timed out after 20ms") {
			t.Fatalf("POST /v1/grade = %d %s, want a timed-out row", got.code, got.body)
		}
	}
	for _, body := range []string{`{"task_id": "TASK-C01"}`, `[{"task_id": "TASK-C01"}]`} {
		if got := do(t, ts, "POST", "/v1/grade", "", body); got.code != 503 || !strings.Contains(got.body, "2 verifier calls are stuck past the timeout of 20ms (limit 2)") {
			t.Errorf("POST /v1/grade %s with 2 stuck = %d %s, want 503", body, got.code, got.body)
		}
	}
	if got := do(t, ts, "GET", "/readyz", "", ""); got.code != 503 {
		t.Errorf("/readyz with 2 stuck = %d, want 503", got.code)
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for s.set.Load().grader.Stuck() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := do(t, ts, "GET", "/readyz", "", ""); got.code != 200 {
		t.Errorf("/readyz once released = %d, want 200", got.code)
	}
	if got := do(t, ts, "POST", "/v1/grade", "", `{"task_id": "TASK-C01"}`); got.code != 200 {
		t.Errorf("POST /v1/grade once released = %d %s", got.code, got.body)
	}
}

// A single-rollout request whose grading outlasts --request-timeout is a
// 503.
func TestRequestTimeout(t *testing.T) {
	slow := &verifiers.Verifier{ID: "VER-SLOW", Name: "slow", Tasks: []string{"TASK-SLOW"},
		Grade: func(*verifiers.Rollout, *verifiers.Checks) error {
			time.Sleep(100 * time.Millisecond)
			return nil
		}}
	_, ts := newServer(t, Config{RequestTimeout: 50 * time.Millisecond}, slow)
	if got := do(t, ts, "POST", "/v1/grade", "", `{"task_id": "TASK-SLOW"}`); got.code != 503 || !strings.Contains(got.body, "longer than 50ms") {
		t.Errorf("slow request = %d %s, want 503", got.code, got.body)
	}
}

// Serve cuts a client that does not send its headers or its body within
// --request-timeout.
func TestSlowClients(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := New(Config{RequestTimeout: 200 * time.Millisecond})
	if err := s.Reload(allVerifiers()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, time.Second) }()
	defer func() {
		cancel()
		<-served
	}()
	for _, tt := range []struct {
		name, sent, want string
	}{
		{"headers", "POST /v1/grade HTTP/1.1\r\nHost: x\r\n", ""},
		{"body", "POST /v1/grade HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"task_id\": ", "HTTP/1.1 503"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			start := time.Now()
			if _, err := io.WriteString(c, tt.sent); err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(c) // until the server closes the connection
			if d := time.Since(start); d > 5*time.Second || !strings.HasPrefix(string(got), tt.want) {
				t.Errorf("after %s the server answered %q, want it to cut the connection with %q", d, got, tt.want)
			}
		})
	}
}

// A request that finds --max-inflight requests in flight waits a moment
// for a place: one freed within the wait serves it.
func TestAdmitWait(t *testing.T) {
	s := New(Config{MaxInflight: 1})
	if err := s.Reload(allVerifiers()); err != nil {
		t.Fatal(err)
	}
	// A wait no loaded machine outlasts: the place is freed only once the
	// second request is seen waiting.
	s.maxAdmitWait = time.Minute
	ts := startServer(t, s)
	release := make(chan struct{})
	done, cleanup := stalled(t, ts.URL, release)
	defer cleanup()
	waitUntil(t, "the first request in flight", func() bool { return len(s.inflight) == 1 })
	second := make(chan response, 1)
	go func() {
		resp, err := ts.Client().Post(ts.URL+"/v1/grade", "", strings.NewReader(`{"task_id": "TASK-C01"}`))
		if err != nil {
			second <- response{code: -1, body: err.Error()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		second <- response{resp.StatusCode, resp.Header, string(b)}
	}()
	waitUntil(t, "the second request waiting for a place", func() bool { return s.admitWaits.Load() == 1 })
	close(release)
	if r := <-done; r.code != 200 {
		t.Errorf("first request = %d %s, want 200", r.code, r.body)
	}
	if got := <-second; got.code != 200 {
		t.Errorf("request while full, freed within the wait = %d %s, want 200", got.code, got.body)
	}
	if n := s.admitWaits.Load(); n != 1 {
		t.Errorf("%d requests waited for a place, want 1", n)
	}
}

// waitUntil polls cond until it holds, failing the test if it does not
// within a bound no loaded machine reaches.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
