package serve

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
)

// The Bearer scheme is case-insensitive (RFC 9110 section 11.1); the
// token is not.
func TestTokenSchemeCase(t *testing.T) {
	_, ts := newServer(t, Config{Token: "s3cret"})
	for _, auth := range []string{"Bearer s3cret", "bearer s3cret", "BEARER s3cret", "bEaReR s3cret"} {
		if got := do(t, ts, "GET", "/v1/verifiers", "", "", "Authorization", auth); got.code != 200 {
			t.Errorf("GET /v1/verifiers with %q = %d %s, want 200", auth, got.code, got.body)
		}
	}
	for _, auth := range []string{"Bearer S3CRET", "Basic s3cret", "Bearers3cret", "Bearer  s3cret x", "s3cret"} {
		if got := do(t, ts, "GET", "/v1/verifiers", "", "", "Authorization", auth); got.code != 401 {
			t.Errorf("GET /v1/verifiers with %q = %d, want 401", auth, got.code)
		}
	}
}

// A JSON Lines line of exactly --max-body bytes is graded; one byte more
// is a row with status error, like any longer line.
func TestJSONLinesLineLimitExact(t *testing.T) {
	const limit = 4096
	_, ts := newServer(t, Config{MaxBody: limit})
	line := func(n int) string {
		head, tail := `{"task_id": "TASK-C01", "output": "`, `"}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	for _, term := range []string{"\n", "\r\n"} {
		for _, tt := range []struct {
			n       int
			tooLong bool
		}{{limit, false}, {limit + 1, true}, {limit + 2, true}} {
			got := do(t, ts, "POST", "/v1/grade", "application/x-ndjson", line(tt.n)+term)
			var row struct {
				Rewards struct {
					Status string  `json:"status"`
					Error  *string `json:"error"`
				} `json:"rewards"`
			}
			if err := json.Unmarshal([]byte(got.body), &row); got.code != 200 || err != nil {
				t.Fatalf("line of %d bytes = %d %s (%v), want 200 and one row", tt.n, got.code, got.body, err)
			}
			r := row.Rewards
			tooLong := r.Status == "error" && r.Error != nil && strings.Contains(*r.Error, "longer than the limit of 4096 bytes")
			if tooLong != tt.tooLong || !tt.tooLong && r.Status == "error" {
				t.Errorf("line of %d bytes ending %q: status %q, error %v; want too long: %v", tt.n, term, r.Status, r.Error, tt.tooLong)
			}
		}
	}
}

// With a token required, a request without it learns nothing of the
// routes: an unknown route, or a known one asked with another method,
// gets the same 401 as a protected route, with no Allow and no list of
// routes. With the token, the 404 and 405 still help.
func TestUnauthenticatedNotFound(t *testing.T) {
	_, ts := newServer(t, Config{Token: "s3cret"})
	want := do(t, ts, "GET", "/v1/verifiers", "", "")
	if want.code != 401 {
		t.Fatalf("GET /v1/verifiers without the token = %d, want 401", want.code)
	}
	for _, tt := range []struct{ method, path string }{
		{"GET", "/nope"}, {"GET", "/v1/grade"}, {"POST", "/healthz"}, {"GET", "/sessions/s1"}, {"GET", "/sessions/a/b"}, {"DELETE", "/metrics"},
	} {
		for _, auth := range []string{"", "Bearer wrong"} {
			got := do(t, ts, tt.method, tt.path, "", "", "Authorization", auth)
			if got.code != 401 || got.body != want.body || got.header.Get("Allow") != "" || got.header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s with %q = %d, Allow %q, %s; want the 401 of any route: %s", tt.method, tt.path, auth, got.code, got.header.Get("Allow"), got.body, want.body)
			}
		}
	}
	if got := do(t, ts, "GET", "/nope", "", "", "Authorization", "Bearer s3cret"); got.code != 404 || !strings.Contains(got.body, "POST /v1/grade") {
		t.Errorf("GET /nope with the token = %d %s, want 404 listing the routes", got.code, got.body)
	}
	if got := do(t, ts, "GET", "/v1/grade", "", "", "Authorization", "Bearer s3cret"); got.code != 405 || got.header.Get("Allow") != "POST" {
		t.Errorf("GET /v1/grade with the token = %d, Allow %q, want 405 with POST", got.code, got.header.Get("Allow"))
	}
}

// The access log's request_id is always the server's, and the response's
// X-Request-Id names it; a client's X-Request-Id is logged beside it as
// client_request_id, printable and at most 64 bytes.
func TestClientRequestID(t *testing.T) {
	var logBuf bytes.Buffer
	s, _ := newServer(t, Config{Logger: slog.New(slog.NewJSONHandler(&logBuf, nil))})
	for _, tt := range []struct{ sent, logged string }{
		{"", ""},
		{"trace-1", "trace-1"},
		{"a b\n\x1b[31mc\té", "a_b__[31mc___"},
		{strings.Repeat("z", 100), strings.Repeat("z", 64)},
	} {
		logBuf.Reset()
		req := httptest.NewRequest("GET", "/healthz", nil)
		if tt.sent != "" {
			req.Header.Set("X-Request-Id", tt.sent)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		var line struct {
			RequestID       string  `json:"request_id"`
			ClientRequestID *string `json:"client_request_id"`
		}
		if err := json.Unmarshal(logBuf.Bytes(), &line); err != nil {
			t.Fatalf("log %q: %v", logBuf.String(), err)
		}
		id := rec.Header().Get("X-Request-Id")
		if id == "" || id == tt.sent || line.RequestID != id || !strings.HasPrefix(id, idPrefix+"-") {
			t.Errorf("sent %q: X-Request-Id %q, logged request_id %q; want the server's own id in both", tt.sent, id, line.RequestID)
		}
		switch {
		case tt.logged == "" && line.ClientRequestID != nil:
			t.Errorf("sent no id: logged client_request_id %q, want none", *line.ClientRequestID)
		case tt.logged != "" && (line.ClientRequestID == nil || *line.ClientRequestID != tt.logged):
			t.Errorf("sent %q: logged client_request_id %v, want %q", tt.sent, line.ClientRequestID, tt.logged)
		}
	}
}
