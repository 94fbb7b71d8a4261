package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/verifiers"
	"github.com/gavelhq/gavel/verifiers/crm"
	"github.com/gavelhq/gavel/verifiers/spec"
)

func allVerifiers() []*verifiers.Verifier {
	return append(crm.Verifiers(), spec.Builtin()...)
}

// newServer returns a server with the built-in verifiers, listening on
// 127.0.0.1 for the test's duration.
func newServer(t testing.TB, cfg Config, vs ...*verifiers.Verifier) (*Server, *httptest.Server) {
	t.Helper()
	s := New(cfg)
	if err := s.Reload(append(allVerifiers(), vs...)); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Client().CloseIdleConnections()
		ts.Close()
	})
	return s, ts
}

type response struct {
	code   int
	header http.Header
	body   string
}

func do(t testing.TB, ts *httptest.Server, method, path, ctype, body string, hdr ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, string(b)}
}

const meeting = `{"id": 1, "title": "Team Meeting", "startTime": "2024-11-20T14:00:00Z"}`

func TestRoutes(t *testing.T) {
	_, ts := newServer(t, Config{MaxBody: 4096})
	big := `{"task_id": "TASK-001", "output": "` + strings.Repeat("x", 5000) + `"}`
	tests := []struct {
		name, method, path, ctype, body string
		code                            int
		want                            string // a substring of the body
	}{
		{"healthz", "GET", "/healthz", "", "", 200, `"ok"`},
		{"readyz", "GET", "/readyz", "", "", 200, `"ready"`},
		{"verifiers", "GET", "/v1/verifiers", "", "", 200, `"id": "VER-C01"`},
		{"metrics", "GET", "/metrics", "", "", 200, "gavel_http_requests_in_flight"},
		{"unknown route", "GET", "/nope", "", "", 404, `"hint"`},
		{"wrong method", "GET", "/v1/grade", "", "", 405, "method GET not allowed on /v1/grade"},
		{"grade one", "POST", "/v1/grade", "application/json", `{"task_id": "TASK-C01", "final_state": {"events": [` + meeting + `]}}`, 200, `"status":"passed"`},
		{"grade array", "POST", "/v1/grade", "", `[{"task_id": "TASK-C01"}, {"task_id": "TASK-404"}]`, 200, `"error_kind":"no_verifier"`},
		{"grade ndjson", "POST", "/v1/grade", "application/x-ndjson", "{\"task_id\": \"TASK-C01\"}\nnot json\n", 200, `"error_kind":"input"`},
		{"grade ndjson stream longer than max body", "POST", "/v1/grade", "application/x-ndjson", strings.Repeat(`{"task_id": "TASK-C01", "output": "`+strings.Repeat("x", 100)+`"}`+"\n", 100), 200, `"source_row":99`},
		{"grade ndjson long line is a row", "POST", "/v1/grade", "application/x-ndjson", big + "\n", 200, "longer than the limit of 4096 bytes"},
		{"grade malformed object", "POST", "/v1/grade", "application/json", `{"task_id": }`, 400, "invalid JSON at byte 12"},
		{"grade malformed array", "POST", "/v1/grade", "", `[{"task_id": "T"}, {`, 400, "invalid JSON at byte"},
		{"grade not json", "POST", "/v1/grade", "", `hello`, 400, "want a JSON object"},
		{"grade empty", "POST", "/v1/grade", "", ``, 400, "empty request body"},
		{"grade too large", "POST", "/v1/grade", "application/json", big, 413, "over 4096 bytes"},
		{"grade array too large", "POST", "/v1/grade", "application/json", "[" + big + "]", 413, "over 4096 bytes"},
		{"grade keep a rollout field", "POST", "/v1/grade?keep=output", "", `{"task_id": "T"}`, 400, "rollout field"},
		{"grade keep input_hash", "POST", "/v1/grade?keep=model,input_hash", "", `{"task_id": "T"}`, 400, "rewards column"},
		{"verifier too large", "POST", "/verifier", "application/json", big, 413, "over 4096 bytes"},
		{"verifier malformed", "POST", "/verifier", "application/json", `{"sessionId": "s", "checks": [}`, 400, "invalid JSON at byte"},
		{"verifier no session id", "POST", "/verifier", "", `{"checks": []}`, 400, "sessionId"},
		{"verifier unknown type", "POST", "/verifier", "", `{"sessionId": "s", "final_state": {}, "checks": [{"id": "c", "type": "sql", "asserts": [{"comparator": "eq", "value": 1}]}]}`, 422, `unknown check type \"sql\"`},
		{"verifier unknown comparator", "POST", "/verifier", "", `{"sessionId": "s", "final_state": {}, "checks": [{"id": "c", "type": "log", "asserts": [{"comparator": "equals", "value": 1}]}]}`, 422, `unknown comparator \"equals\"`},
		{"verifier no state", "POST", "/verifier", "", `{"sessionId": "nobody", "checks": [{"id": "c", "type": "log", "asserts": [{"comparator": "eq", "value": []}]}]}`, 404, "PUT /sessions/nobody"},
		{"verifier bad state", "POST", "/verifier", "", `{"sessionId": "s", "final_state": "{oops", "checks": [{"id": "c", "type": "log", "asserts": [{"comparator": "eq", "value": []}]}]}`, 400, "final_state: invalid JSON at byte 1"},
		{"delete unknown session", "DELETE", "/sessions/nobody", "", "", 404, "no session"},
		{"put bad session", "PUT", "/sessions/s1", "", `[1]`, 400, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := do(t, ts, tt.method, tt.path, tt.ctype, tt.body)
			if got.code != tt.code || !strings.Contains(got.body, tt.want) {
				t.Errorf("%s %s = %d %s, want %d with %q", tt.method, tt.path, got.code, got.body, tt.code, tt.want)
			}
			if got.code >= 400 {
				var e errorBody
				if err := json.Unmarshal([]byte(got.body), &e); err != nil || e.Error == "" || e.Hint == "" {
					t.Errorf("error body %q is not {error, hint}", got.body)
				}
			}
		})
	}
}

// A known route asked with a method it does not serve is a 405 that
// names the methods it serves in Allow.
func TestMethodNotAllowed(t *testing.T) {
	_, ts := newServer(t, Config{})
	for _, tt := range []struct {
		method, path, allow string
	}{
		{"GET", "/v1/grade", "POST"},
		{"PUT", "/verifier", "POST"},
		{"POST", "/healthz", "GET, HEAD"},
		{"DELETE", "/metrics", "GET, HEAD"},
		{"GET", "/sessions/s1", "PUT, DELETE"},
	} {
		got := do(t, ts, tt.method, tt.path, "", "")
		var e errorBody
		if err := json.Unmarshal([]byte(got.body), &e); err != nil || e.Error == "" || e.Hint == "" {
			t.Errorf("%s %s body %q is not {error, hint}", tt.method, tt.path, got.body)
		}
		if got.code != 405 || got.header.Get("Allow") != tt.allow {
			t.Errorf("%s %s = %d with Allow %q, want 405 with %q", tt.method, tt.path, got.code, got.header.Get("Allow"), tt.allow)
		}
	}
	if got := do(t, ts, "GET", "/sessions/a/b", "", ""); got.code != 404 || got.header.Get("Allow") != "" {
		t.Errorf("GET /sessions/a/b = %d with Allow %q, want 404 without", got.code, got.header.Get("Allow"))
	}
}

func TestReadyBeforeReload(t *testing.T) {
	s := New(Config{})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	if got := do(t, ts, "GET", "/readyz", "", ""); got.code != 503 {
		t.Errorf("/readyz before Reload = %d, want 503", got.code)
	}
	if got := do(t, ts, "POST", "/v1/grade", "", `{"task_id": "T"}`); got.code != 503 {
		t.Errorf("/v1/grade before Reload = %d, want 503", got.code)
	}
	if got := do(t, ts, "GET", "/healthz", "", ""); got.code != 200 {
		t.Errorf("/healthz before Reload = %d, want 200", got.code)
	}
}

func TestToken(t *testing.T) {
	_, ts := newServer(t, Config{Token: "s3cret"})
	state := `{"final_state": {"events": []}}`
	for _, tt := range []struct {
		method, path, body string
		open               bool // served without a token
	}{
		{"GET", "/healthz", "", true},
		{"GET", "/readyz", "", true},
		{"GET", "/v1/verifiers", "", false},
		{"GET", "/metrics", "", false},
		{"POST", "/v1/grade", `{"task_id": "TASK-C01"}`, false},
		{"POST", "/verifier", gymRequest(t, "state_check.json", `, "final_state": {"events": []}`), false},
		{"PUT", "/sessions/s1", state, false},
		{"DELETE", "/sessions/s1", "", false},
	} {
		for _, auth := range []string{"", "Bearer wrong", "Bearer s3cre", "Bearer s3cret2", "s3cret", "Basic s3cret", "Bearer S3CRET"} {
			got := do(t, ts, tt.method, tt.path, "", tt.body, "Authorization", auth)
			if tt.open && got.code >= 400 || !tt.open && (got.code != 401 || got.header.Get("WWW-Authenticate") == "") {
				t.Errorf("%s %s with %q = %d, want %s", tt.method, tt.path, auth, got.code, map[bool]string{true: "served", false: "401 with WWW-Authenticate"}[tt.open])
			}
		}
		if got := do(t, ts, tt.method, tt.path, "", tt.body, "Authorization", "Bearer s3cret"); got.code >= 400 {
			t.Errorf("%s %s with the token = %d %s", tt.method, tt.path, got.code, got.body)
		}
	}
}

// stalled starts a JSON Lines request that sends one line and then waits
// until release is closed.
func stalled(t *testing.T, url string, release <-chan struct{}) (<-chan response, func()) {
	pr, pw := io.Pipe()
	done := make(chan response, 1)
	go func() {
		req, _ := http.NewRequest("POST", url+"/v1/grade", pr)
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- response{code: -1, body: err.Error()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- response{resp.StatusCode, resp.Header, string(b)}
	}()
	pw.Write([]byte(`{"task_id": "TASK-C01"}` + "\n"))
	go func() {
		<-release
		pw.Close()
	}()
	return done, func() { http.DefaultClient.CloseIdleConnections() }
}

func TestTooManyInFlight(t *testing.T) {
	s, ts := newServer(t, Config{MaxInflight: 1})
	release := make(chan struct{})
	done, cleanup := stalled(t, ts.URL, release)
	defer cleanup()
	deadline := time.Now().Add(5 * time.Second)
	for len(s.inflight) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	got := do(t, ts, "POST", "/v1/grade", "", `{"task_id": "TASK-C01"}`)
	if got.code != 429 || got.header.Get("Retry-After") == "" {
		t.Errorf("second request = %d (Retry-After %q), want 429 with Retry-After", got.code, got.header.Get("Retry-After"))
	}
	if got := do(t, ts, "GET", "/healthz", "", ""); got.code != 200 {
		t.Errorf("/healthz while full = %d, want 200", got.code)
	}
	close(release)
	if r := <-done; r.code != 200 || strings.Count(r.body, "\n") != 1 {
		t.Errorf("first request = %d %q, want 200 and one line", r.code, r.body)
	}
}

func TestStreamTimeout(t *testing.T) {
	_, ts := newServer(t, Config{RequestTimeout: 200 * time.Millisecond})
	release := make(chan struct{})
	defer close(release)
	done, cleanup := stalled(t, ts.URL, release)
	defer cleanup()
	select {
	case r := <-done:
		if r.code != 503 || !strings.Contains(r.body, "request timeout") {
			t.Errorf("stalled stream = %d %q, want 503", r.code, r.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled stream was not cut")
	}
}

func TestPanickingVerifier(t *testing.T) {
	boom := &verifiers.Verifier{ID: "VER-BOOM", Name: "panics", Tasks: []string{"TASK-BOOM"},
		Grade: func(*verifiers.Rollout, *verifiers.Checks) error { panic("boom") }}
	_, ts := newServer(t, Config{}, boom)
	got := do(t, ts, "POST", "/v1/grade", "", `[{"task_id": "TASK-BOOM"}, {"task_id": "TASK-C01"}]`)
	lines := strings.Split(strings.TrimSpace(got.body), "\n")
	if got.code != 200 || len(lines) != 2 || !strings.Contains(lines[0], `"error_kind":"verifier"`) || !strings.Contains(lines[0], "panicked: boom") || !strings.Contains(lines[1], `"status":"failed"`) {
		t.Errorf("grade with a panicking verifier = %d %s", got.code, got.body)
	}
	if got := do(t, ts, "GET", "/healthz", "", ""); got.code != 200 {
		t.Errorf("after a panic /healthz = %d", got.code)
	}
}

// gymRequest is one of the seed's three request examples with a state.
func gymRequest(t *testing.T, file, state string) string {
	checks, err := os.ReadFile(filepath.Join("..", "verifiers", "spec", "testdata", "gym", file))
	if err != nil {
		t.Fatal(err)
	}
	return `{"sessionId": "test-session", "checks": ` + string(checks) + state + `}`
}

func canon(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	b, _ := json.MarshalIndent(v, "", " ")
	return string(b)
}

// The three request examples of the gym verifier API return the
// documented success and failure responses; a rubric check the pending
// one.
func TestGymExamples(t *testing.T) {
	_, ts := newServer(t, Config{})
	const success = `{"session_id": "test-session", "success": true, "verifiers": [{"id": "check-event-created", "operator": "state_comparison", "success": true,
		"asserts": [{"actual_value": true, "expected_value": true, "comparator": "eq", "success": true,
		"matching_results": [{"id": 1, "title": "Team Meeting", "startTime": "2024-11-20T14:00:00Z"}]}]}]}`
	const failure = `{"session_id": "test-session", "success": false, "verifiers": [{"id": "check-event-created", "operator": "state_comparison", "success": false,
		"asserts": [{"actual_value": false, "expected_value": true, "comparator": "eq", "success": false}], "all_results": []}]}`
	click := `{"eventType": "click", "clickId": "submit-button"}`
	tests := []struct {
		name, body, want string
	}{
		{"state success", gymRequest(t, "state_check.json", `, "final_state": {"events": [`+meeting+`]}`), success},
		{"state failure", gymRequest(t, "state_check.json", `, "final_state": {"events": []}`), failure},
		{"log success", gymRequest(t, "log_check.json", `, "log": [`+click+`]`),
			`{"session_id": "test-session", "success": true, "verifiers": [{"id": "check-button-clicked", "operator": "log_comparison", "success": true,
			"asserts": [{"actual_value": true, "expected_value": true, "comparator": "eq", "success": true, "matching_results": [` + click + `]}]}]}`},
		{"log failure", gymRequest(t, "log_check.json", `, "log": []`),
			`{"session_id": "test-session", "success": false, "verifiers": [{"id": "check-button-clicked", "operator": "log_comparison", "success": false,
			"asserts": [{"actual_value": false, "expected_value": true, "comparator": "eq", "success": false}], "all_results": []}]}`},
		{"manual success", gymRequest(t, "manual_check.json", `, "final_state": {"events": [`+meeting+`]}`),
			`{"session_id": "test-session", "success": true, "verifiers": [{"id": "check-events-on-day", "operator": "manual_function", "success": true,
			"asserts": [{"actual_value": 1, "expected_value": 0, "comparator": "gt", "success": true}]}]}`},
		{"manual failure", gymRequest(t, "manual_check.json", `, "final_state": {"events": []}`),
			`{"session_id": "test-session", "success": false, "verifiers": [{"id": "check-events-on-day", "operator": "manual_function", "success": false,
			"asserts": [{"actual_value": 0, "expected_value": 0, "comparator": "gt", "success": false}], "all_results": []}]}`},
		{"rubric pending", `{"sessionId": "test-session", "final_state": {}, "checks": [{"id": "rubric-check", "type": "rubric", "rubric": "The meeting invite is polite."}]}`,
			`{"session_id": "test-session", "success": "PENDING", "verifiers": [{"id": "rubric-check", "operator": "rubric", "success": "PENDING"}]}`},
		{"check error", `{"sessionId": "test-session", "final_state": {"events": 3}, "checks": [{"id": "c", "type": "state", "table": "events", "asserts": [{"comparator": "eq", "value": []}]}]}`,
			`{"session_id": "test-session", "success": false, "verifiers": [{"id": "c", "operator": "state_comparison", "success": false,
			"error": "final state: table events is number, not a list or object", "asserts": []}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := do(t, ts, "POST", "/verifier", "application/json", tt.body)
			if got.code != 200 {
				t.Fatalf("POST /verifier = %d %s", got.code, got.body)
			}
			if diff := cmp.Diff(canon(t, tt.want), canon(t, got.body)); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSessions(t *testing.T) {
	s, ts := newServer(t, Config{MaxSessions: 2})
	check := gymRequest(t, "state_check.json", "")
	if got := do(t, ts, "PUT", "/sessions/test-session", "", `{"final_state": {"events": [`+meeting+`]}}`); got.code != 201 {
		t.Fatalf("PUT = %d %s", got.code, got.body)
	}
	if got := do(t, ts, "POST", "/verifier", "", check); got.code != 200 || !strings.HasPrefix(got.body, `{"session_id":"test-session","success":true`) {
		t.Errorf("POST /verifier with a stored session = %d %s", got.code, got.body)
	}
	if got := do(t, ts, "PUT", "/sessions/test-session", "", `{"final_state": {"events": []}}`); got.code != 200 {
		t.Fatalf("PUT again = %d %s", got.code, got.body)
	}
	if got := do(t, ts, "POST", "/verifier", "", check); !strings.Contains(got.body, `"success":false`) {
		t.Errorf("POST /verifier after the session changed = %s", got.body)
	}
	// Two more sessions evict the least recently used.
	do(t, ts, "PUT", "/sessions/b", "", `{}`)
	do(t, ts, "PUT", "/sessions/c", "", `{}`)
	if _, ok := s.sessions.get("test-session"); ok {
		t.Error("the least recently used session was not evicted")
	}
	if got := do(t, ts, "DELETE", "/sessions/c", "", ""); got.code != 204 {
		t.Errorf("DELETE = %d", got.code)
	}
	if got := do(t, ts, "DELETE", "/sessions/c", "", ""); got.code != 404 {
		t.Errorf("DELETE again = %d", got.code)
	}
}

func TestMetrics(t *testing.T) {
	_, ts := newServer(t, Config{})
	do(t, ts, "POST", "/v1/grade", "", `[{"task_id": "TASK-C01"}, {"task_id": "nope"}]`)
	got := do(t, ts, "GET", "/metrics", "", "").body
	for _, want := range []string{
		`gavel_http_requests_total{code="200",route="/v1/grade"} 1`,
		`gavel_rollouts_graded_total{status="failed"} 1`,
		`gavel_rollouts_graded_total{status="error"} 1`,
		`gavel_http_request_duration_seconds_bucket{route="/v1/grade",le="+Inf"} 1`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// A generated dataset graded by `gavel grade --format jsonl` and sent to
// /v1/grade as JSON Lines gives the same rows, but for source_file.
func TestGradeMatchesPipeline(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "rollouts.jsonl")
	if _, err := gen.Run(context.Background(), gen.Config{Out: data, Rollouts: 600, Seed: 5, BadShare: 0.05}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if _, err := pipeline.Run(context.Background(), pipeline.Config{Inputs: []string{data}, Out: out, Format: columnar.FormatJSONL, Verifiers: allVerifiers(), BatchSize: 7}); err != nil {
		t.Fatal(err)
	}
	wantRewards := readLines(t, filepath.Join(out, "rewards", "part-00000.jsonl"))
	wantChecks := readLines(t, filepath.Join(out, "checks", "part-00000.jsonl"))

	_, ts := newServer(t, Config{})
	body, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	got := do(t, ts, "POST", "/v1/grade", "application/x-ndjson", string(body))
	if got.code != 200 {
		t.Fatalf("POST /v1/grade = %d %s", got.code, got.body)
	}
	var gotRewards, gotChecks []string
	for _, line := range strings.Split(strings.TrimSuffix(got.body, "\n"), "\n") {
		var l struct {
			Rewards json.RawMessage   `json:"rewards"`
			Checks  []json.RawMessage `json:"checks"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		// The source name differs by design: "request" in a request.
		rw := strings.Replace(string(l.Rewards), `"source_file":"request"`, `"source_file":`+jsonString(data), 1)
		rw = strings.Replace(rw, `"rollout_id":"request#`, `"rollout_id":"`+strings.Trim(jsonString(data), `"`)+`#`, 1)
		gotRewards = append(gotRewards, rw)
		for _, c := range l.Checks {
			gotChecks = append(gotChecks, string(c))
		}
	}
	if len(wantRewards) != 600 {
		t.Fatalf("grade wrote %d rewards, want 600", len(wantRewards))
	}
	if diff := cmp.Diff(wantRewards, gotRewards); diff != "" {
		t.Errorf("rewards (-grade +serve):\n%s", diff)
	}
	if diff := cmp.Diff(wantChecks, gotChecks); diff != "" {
		t.Errorf("checks (-grade +serve):\n%s", diff)
	}
}

func jsonString(s string) string { return string(jsonview.AppendJSONString(nil, s)) }

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func fuzzServer(f *testing.F) *Server {
	s := New(Config{MaxBody: 1 << 16, RequestTimeout: 5 * time.Second})
	if err := s.Reload(allVerifiers()); err != nil {
		f.Fatal(err)
	}
	return s
}

func serveOnce(s *Server, method, path, ctype string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// FuzzGradeBody posts arbitrary bodies to /v1/grade as JSON and as JSON
// Lines: the answer is 200 with one JSON object per line, or an error with
// a JSON {error, hint} body. A body that encoding/json reads as one object
// or an array (valid UTF-8), or any JSON Lines body, must answer 200 with
// the rows `gavel grade --format jsonl` writes for the same rollouts in a
// file (gradeFile), but for the source name; any other JSON body must
// fail, with an error status or a stream that ends in an error line.
func FuzzGradeBody(f *testing.F) {
	for _, seed := range []string{`{"task_id": "TASK-C01", "final_state": {"events": []}}`, `[{"task_id": 1}, 2]`, "{\"task_id\": \"TASK-001\"}\n\n[", `[`, `{"task_id": "TASK-004", "output": "$1,234", "log": "[]"}`,
		`[{"task_id": "TASK-C01", "model": "m", "final_state": {"events": [` + meeting + `]}}, {"task_id": "TASK-404", "rollout_id": "r"}, {"task_id": "TASK-001",` + "\n" + ` "output": "x"}]`,
		`{"task_id": "TASK-C01", "run_id": "r1", "sample": 3, "final_state": {"events": [` + meeting + `, 1]}}`,
		`[{"task_id": "TASK-001"}] {}`} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	s := fuzzServer(f)
	dir := f.TempDir()
	n := 0
	f.Fuzz(func(t *testing.T, body []byte, ndjson bool) {
		if len(body) > 1<<16 { // the server's MaxBody
			return
		}
		ctype := "application/json"
		if ndjson {
			ctype = "application/x-ndjson"
		}
		rec := serveOnce(s, "POST", "/v1/grade", ctype, body)
		checkFuzzResponse(t, rec)
		var lines []string
		if rec.Code == 200 {
			for _, line := range strings.Split(strings.TrimSuffix(rec.Body.String(), "\n"), "\n") {
				if line != "" && !json.Valid([]byte(line)) {
					t.Fatalf("response line is not JSON: %q", line)
				}
				if line != "" {
					lines = append(lines, line)
				}
			}
		}
		// The plain reading of the body: its rollouts as JSON Lines.
		var rows []byte
		switch trimmed := bytes.TrimLeft(body, " \t\r\n"); {
		case ndjson:
			rows = body
		case json.Valid(body) && !utf8.Valid(body) && len(trimmed) > 0 && trimmed[0] == '[':
			// Invalid UTF-8 inside an element's strings: encoding/json
			// reads past it, the server's row decoder does not, so the
			// element is a row with status error (or the stream ends
			// with an error line).
			if rec.Code == 200 && (len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], `{"error":`)) && !strings.Contains(rec.Body.String(), "invalid UTF-8") {
				t.Fatalf("an array with invalid UTF-8 answered 200 with neither an error line nor a row naming it: %q", rec.Body.String())
			}
			return
		case !json.Valid(body) || !utf8.Valid(body) || len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '['):
			if rec.Code == 200 && (len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], `{"error":`)) {
				t.Fatalf("an invalid body answered 200 without an error line: %q", rec.Body.String())
			}
			return
		case trimmed[0] == '{':
			rows = compactLine(t, body)
		default:
			var elems []json.RawMessage
			if err := json.Unmarshal(body, &elems); err != nil {
				t.Fatal(err)
			}
			for _, e := range elems {
				rows = append(rows, compactLine(t, e)...)
			}
		}
		if rec.Code != 200 {
			t.Fatalf("a body read as %d rows answered %d %s", bytes.Count(rows, []byte("\n")), rec.Code, rec.Body.String())
		}
		checkPlainRows(t, rows, ndjson, lines)
		if fuzzing() {
			// Grading a file costs tens of milliseconds (its outputs are
			// synced to disk): the corpus is compared with the file path,
			// new inputs with the plain decode only.
			return
		}
		n++
		path := filepath.Join(dir, fmt.Sprintf("in-%d.jsonl", n))
		wantRewards, wantChecks := gradeFile(t, path, rows)
		var gotRewards, gotChecks []string
		for _, line := range lines {
			var l struct {
				Rewards json.RawMessage   `json:"rewards"`
				Checks  []json.RawMessage `json:"checks"`
			}
			if err := json.Unmarshal([]byte(line), &l); err != nil || l.Rewards == nil {
				t.Fatalf("response line %q is not {rewards, checks}: %v", line, err)
			}
			// An array's element that is not an object is named as an
			// element, not a line: by design.
			gotRewards = append(gotRewards, notObjectElement.ReplaceAllString(string(l.Rewards), `"error":"line $1: not a JSON object"`))
			for _, c := range l.Checks {
				gotChecks = append(gotChecks, string(c))
			}
		}
		if diff := cmp.Diff(wantRewards, gotRewards); diff != "" {
			t.Fatalf("rewards (-grade +serve):\n%s", diff)
		}
		if diff := cmp.Diff(wantChecks, gotChecks); diff != "" {
			t.Fatalf("checks (-grade +serve):\n%s", diff)
		}
	})
}

// fuzzing reports whether the test binary runs with -fuzz.
func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// checkPlainRows checks the response lines of a graded body against a
// plain decode of its rows, JSON Lines (as the request had them, or the
// elements of its array or its one object, one a line): a line per
// non-blank row, in order, each with the row's index as source_row, and
// the rollout id the row gives (a string as it is, a number in decimal
// form, else request#<row>); a row that is not a JSON object is an input
// error, and an input error may fall back to request#<row>.
func checkPlainRows(t *testing.T, rows []byte, ndjson bool, lines []string) {
	t.Helper()
	type plainRow struct {
		index  int
		id     string
		object bool
	}
	var want []plainRow
	if ndjson {
		rows = bytes.TrimPrefix(rows, []byte("\xef\xbb\xbf"))
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(rows, []byte("\n")), []byte("\n")) {
		if len(rows) == 0 {
			break
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		index := i
		if !ndjson {
			index = len(want)
		}
		r := plainRow{index: index, id: fmt.Sprintf("request#%d", index)}
		if m := firstMembers(line); m != nil && utf8.Valid(line) {
			r.object = true
			if id, ok := plainID(m["rollout_id"]); ok {
				r.id = id
			}
		}
		want = append(want, r)
	}
	if len(lines) != len(want) {
		t.Fatalf("%d response lines for %d rows", len(lines), len(want))
	}
	for i, line := range lines {
		var l struct {
			Rewards struct {
				RolloutID string `json:"rollout_id"`
				SourceRow int    `json:"source_row"`
				ErrorKind string `json:"error_kind"`
			} `json:"rewards"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("response line %q: %v", line, err)
		}
		got, w := l.Rewards, want[i]
		input := got.ErrorKind == "input"
		switch {
		case got.SourceRow != w.index:
			t.Fatalf("line %d: source_row %d, want %d", i, got.SourceRow, w.index)
		case !w.object && !input:
			t.Fatalf("line %d: row %d is not a JSON object, error_kind %q, want input", i, w.index, got.ErrorKind)
		case got.RolloutID != w.id && !(input && got.RolloutID == fmt.Sprintf("request#%d", w.index)):
			t.Fatalf("line %d: rollout_id %q, want %q", i, got.RolloutID, w.id)
		}
	}
}

// firstMembers returns the members of a JSON object, the first of a
// repeated key, or nil when raw is not one valid JSON object.
func firstMembers(raw []byte) map[string]json.RawMessage {
	if !json.Valid(raw) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	m := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if _, ok := m[tok.(string)]; !ok {
			m[tok.(string)] = v
		}
	}
	return m
}

// plainID returns the text of a rollout id: a string as it is, a number
// in its plain decimal form; ok is false for null, a missing id or any
// other value.
func plainID(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if strings.Trim(string(raw), "-0123456789") == "" {
			return string(raw), true
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return string(raw), true
		}
		return strconv.FormatFloat(f, 'f', -1, 64), true
	}
	return "", false
}

var notObjectElement = regexp.MustCompile(`"error":"element (\d+) of the array: not a JSON object but [a-z ]+"`)

// compactLine returns the JSON value raw compacted, as one line.
func compactLine(t *testing.T, raw []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return append(b.Bytes(), '\n')
}

// gradeFile grades rows, JSON Lines written to path, as `gavel grade
// --format jsonl` does, and returns its rewards and checks lines with the
// source named as a request names it: source_file "request", default
// rollout ids request#<row>.
func gradeFile(t *testing.T, path string, rows []byte) (rewards, checks []string) {
	t.Helper()
	if err := os.WriteFile(path, rows, 0o644); err != nil {
		t.Fatal(err)
	}
	out := path + ".out"
	if _, err := pipeline.Run(context.Background(), pipeline.Config{Inputs: []string{path}, Out: out, Format: columnar.FormatJSONL, Verifiers: allVerifiers(), Workers: 1}); err != nil {
		t.Fatalf("grade %s: %v", path, err)
	}
	name := jsonString(path)
	fix := strings.NewReplacer(`"source_file":`+name, `"source_file":"request"`, `"rollout_id":"`+strings.Trim(name, `"`)+`#`, `"rollout_id":"request#`)
	for _, l := range readLines(t, filepath.Join(out, "rewards", "part-00000.jsonl")) {
		rewards = append(rewards, fix.Replace(l))
	}
	for _, l := range readLines(t, filepath.Join(out, "checks", "part-00000.jsonl")) {
		checks = append(checks, fix.Replace(l))
	}
	os.RemoveAll(out)
	os.Remove(path)
	return rewards, checks
}

// FuzzVerifierBody posts arbitrary bodies to /verifier. Its checks must
// compile and grade as the same checks do in a spec file, loaded by
// spec.Parse: a 200 answers the checks' ids in order and each check's
// result and the verdict as the spec verifier's grading of the body's
// state gives them; a 422 is a checks array the spec file refuses; a 404
// (no session is stored) is a body whose checks load and that has no
// state; a body that encoding/json reads as an object with a string
// sessionId, checks and no state fields is never a 400.
func FuzzVerifierBody(f *testing.F) {
	for _, seed := range []string{
		`{"sessionId": "s", "final_state": {"events": []}, "checks": [{"id": "c", "type": "state", "table": "events", "asserts": [{"comparator": "eq", "function": "count", "function_args": ["_result"], "value": 0}]}]}`,
		`{"sessionId": "s", "log": [{"a": 1}], "checks": [{"id": "c", "type": "sequential", "steps": [{"a": 1}]}, {"id": "r", "type": "rubric", "rubric": "x"}]}`,
		`{"sessionId": "s", "output": "7", "checks": [{"id": "c", "type": "expr", "expr": "states_number(output, 7.0)"}]}`,
		`{"sessionId": "s", "checks": "no"}`,
		`{"sessionId": "s", "checks": [{"id": "c", "type": "log", "asserts": [{"comparator": "eq", "value": []}]}]}`,
		`{"sessionId": "s", "final_state": "{\"events\": [` + strings.ReplaceAll(meeting, `"`, `\"`) + `]}", "checks": [{"id": "a", "type": "state", "table": "events", "required": false, "asserts": [{"comparator": "eq", "function": "count", "function_args": ["_result"], "value": 1}]}, {"id": "b", "type": "expr", "expr": "count(final.events) > 1"}]}`,
		`{"sessionId": "s", "final_state": {}, "checks": [{"id": "c", "type": "state", "table": "events", "asserts": [{"comparator": "equals", "value": 1}]}]}`,
	} {
		f.Add([]byte(seed))
	}
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := serveOnce(s, "POST", "/verifier", "application/json", body)
		checkFuzzResponse(t, rec)
		if rec.Code == 200 && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("response is not JSON: %q", rec.Body.String())
		}
		// The plain reading of the body.
		var m map[string]json.RawMessage
		if utf8.Valid(body) {
			m = firstMembers(bytes.TrimSpace(body))
		}
		var sid string
		sidOK := m != nil && json.Unmarshal(m["sessionId"], &sid) == nil && bytes.HasPrefix(bytes.TrimSpace(m["sessionId"]), []byte(`"`))
		checks, hasChecks := m["checks"]
		hasState := false
		for _, k := range []string{"final_state", "initial_state", "log", "output"} {
			if _, ok := m[k]; ok {
				hasState = true
			}
		}
		if !sidOK || !hasChecks {
			if rec.Code == 200 || rec.Code == 404 || rec.Code == 422 {
				t.Fatalf("a body without a string sessionId and checks answered %d %s", rec.Code, rec.Body.String())
			}
			return
		}
		if rec.Code == 400 && !hasState {
			t.Fatalf("a body with a sessionId and checks answered 400 %s", rec.Body.String())
		}
		if rec.Code == 400 {
			return // a state field the row decode refuses
		}
		// The same checks in a spec file.
		doc := []byte(`{"verifiers": [{"id": "V", "task": "T", "name": "n", "checks": ` + string(checks) + `}]}`)
		vs, err := spec.Parse("f.json", doc)
		if (err == nil) != (rec.Code != 422) {
			t.Fatalf("spec.Parse of the checks: %v; /verifier answered %d %s", err, rec.Code, rec.Body.String())
		}
		if rec.Code != 200 {
			if rec.Code == 404 && hasState {
				t.Fatalf("a body with state answered 404 %s", rec.Body.String())
			}
			return
		}
		if len(vs) != 1 {
			t.Fatalf("spec.Parse gave %d verifiers, want 1", len(vs))
		}
		r := verifiers.Rollout{ID: sid, Output: plainOutput(m["output"])}
		var docs [3]jsonview.Doc
		r.Final = plainState(t, &docs[0], m["final_state"])
		r.Initial = plainState(t, &docs[1], m["initial_state"])
		r.Log = plainState(t, &docs[2], m["log"])
		var c verifiers.Checks
		gradeErr := vs[0].Grade(&r, &c)
		want := verifiers.Score(c.List(), gradeErr).Outcome

		var got struct {
			Success   any `json:"success"`
			Verifiers []struct {
				ID       string `json:"id"`
				Success  any    `json:"success"`
				Optional bool   `json:"optional"`
			} `json:"verifiers"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if gs, ws := fmt.Sprint(got.Success), gymSuccess(want); gs != ws {
			t.Fatalf("success %s, the spec verifier's outcome %s: %s", gs, ws, rec.Body.String())
		}
		if gradeErr != nil {
			return // the checks are not listed
		}
		list := c.List()
		if len(got.Verifiers) != len(list) {
			t.Fatalf("%d checks answered, the spec verifier grades %d: %s", len(got.Verifiers), len(list), rec.Body.String())
		}
		for i, ch := range list {
			g := got.Verifiers[i]
			ws := "false"
			switch ch.Status {
			case verifiers.Pass:
				ws = "true"
			case verifiers.Pending:
				ws = "PENDING"
			}
			if g.ID != ch.ID || fmt.Sprint(g.Success) != ws || (ch.Status != verifiers.Pending && g.Optional == ch.Required) {
				t.Fatalf("check %d: id %q success %v optional %v; the spec verifier's: id %q status %v required %v (%s)",
					i, g.ID, g.Success, g.Optional, ch.ID, ch.Status, ch.Required, ch.Detail)
			}
		}
	})
}

// gymSuccess is an outcome as the gym API's success prints it.
func gymSuccess(o verifiers.Outcome) string {
	switch o {
	case verifiers.Passed:
		return "true"
	case verifiers.PendingOutcome:
		return "PENDING"
	}
	return "false"
}

// plainState reads a state field as a JSON Lines row has it: absent or
// null is no state, a string holds JSON text, any other value is the state.
func plainState(t *testing.T, d *jsonview.Doc, raw json.RawMessage) jsonview.Value {
	t.Helper()
	if isNullRaw(raw) {
		return jsonview.Value{}
	}
	text := []byte(raw)
	var s string
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) {
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		text = []byte(s)
	}
	v, err := d.Parse(text)
	if err != nil {
		t.Fatalf("state %s answered 200, but it is not JSON: %v", raw, err)
	}
	if v.Kind() == jsonview.Null {
		return jsonview.Value{}
	}
	return v
}

// plainOutput is the output field's text ("" when absent or null).
func plainOutput(raw json.RawMessage) string {
	var s string
	json.Unmarshal(raw, &s)
	return s
}

func isNullRaw(raw json.RawMessage) bool {
	return raw == nil || string(bytes.TrimSpace(raw)) == "null"
}

func checkFuzzResponse(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	switch rec.Code {
	case 200:
	case 400, 404, 413, 422:
		var e errorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" || e.Hint == "" {
			t.Fatalf("%d with body %q, want {error, hint}", rec.Code, rec.Body.String())
		}
	default:
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
}

// TestArrayErrorOffsets: an error inside an element of a JSON array body
// names the byte of the body where it is, counting the bracket, the commas
// and the spaces between elements, in the first batch of rollouts and after
// it (the stream then ends with the error line).
func TestArrayErrorOffsets(t *testing.T) {
	_, ts := newServer(t, Config{})
	el := `{"task_id":"TASK-C01"}`
	long := "[" + strings.Repeat(el+",", 600) + `{"a": }]`
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"packed", `[{"a":1},{"a":2},{"a":3},{"a": }]`, 400, "invalid JSON at byte 31:"},
		{"spaced", "[ {\"a\":1} ,\n {\"a\": }]", 400, "invalid JSON at byte 19:"},
		{"first element", `[{"a" 1}]`, 400, "invalid JSON at byte 6:"},
		{"after a batch", long, 200, fmt.Sprintf("invalid JSON at byte %d:", 1+600*(len(el)+1)+6)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, ts, "POST", "/v1/grade", "", tc.body)
			if r.code != tc.code || !strings.Contains(r.body, tc.want) {
				t.Errorf("POST /v1/grade = %d %s, want %d holding %q", r.code, lastLine(r.body), tc.code, tc.want)
			}
		})
	}
}

// lastLine returns the last line of a response body.
func lastLine(body string) string {
	body = strings.TrimSuffix(body, "\n")
	return body[strings.LastIndexByte(body, '\n')+1:]
}
