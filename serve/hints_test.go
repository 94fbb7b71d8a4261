package serve

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// errorLine decodes the error of a response: its body, or for a stream
// cut by an error, its last line.
func errorLine(t *testing.T, body string) errorBody {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	var e errorBody
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil {
		t.Fatalf("error %q is not JSON {error, hint}: %v", body, err)
	}
	return e
}

// TestErrorHints walks the error answers a client can cause, on every
// route: each is JSON {error, hint} with both non-empty, and a message
// about a body that is not JSON Lines speaks of the body (or an element
// of the array), never of "the line".
func TestErrorHints(t *testing.T) {
	_, ts := newServer(t, Config{MaxBody: 4096})
	_, tokenTS := newServer(t, Config{Token: "s3cret"})
	_, roomyTS := newServer(t, Config{})
	notReady := httptest.NewServer(New(Config{}).Handler())
	defer notReady.Close()

	big := `{"task_id": "TASK-001", "output": "` + strings.Repeat("x", 5000) + `"}`
	checks := `"checks": [{"id": "c", "type": "log", "asserts": [{"comparator": "eq", "value": []}]}]`
	// An array whose first batch is graded and sent before its error.
	longArray := "[" + strings.Repeat(`{"task_id": "TASK-C01"},`, streamBatch+1) + "{"
	tests := []struct {
		name                string
		ts                  *httptest.Server
		method, path, ctype string
		body                string
		code                int
		want                string // in the error
		hdr                 []string
	}{
		{"no token", tokenTS, "GET", "/v1/verifiers", "", "", 401, "bearer token", nil},
		{"unknown route", ts, "GET", "/nope", "", "", 404, "no route", nil},
		{"wrong method", ts, "GET", "/verifier", "", "", 405, "not allowed", nil},
		{"not ready", notReady, "GET", "/readyz", "", "", 503, "not ready", nil},
		{"grade before reload", notReady, "POST", "/v1/grade", "", `{"task_id": "T"}`, 503, "no verifiers", nil},
		{"grade keep a rollout field", ts, "POST", "/v1/grade?keep=output", "", `{"task_id": "T"}`, 400, "rollout field", nil},
		{"grade keep input_hash", ts, "POST", "/v1/grade?keep=input_hash", "", `{"task_id": "T"}`, 400, "rewards column", nil},
		{"grade empty", ts, "POST", "/v1/grade", "", "  \n", 400, "empty request body", nil},
		{"grade not json", ts, "POST", "/v1/grade", "", "hello", 400, "at byte 0", nil},
		{"grade malformed object", ts, "POST", "/v1/grade", "application/json", `{"task_id": }`, 400, "request body: invalid JSON at byte 12", nil},
		{"grade malformed array", ts, "POST", "/v1/grade", "", `[{"task_id": "T"}, {`, 400, "request body: invalid JSON at byte", nil},
		{"grade array cut after lines", roomyTS, "POST", "/v1/grade", "", longArray, 200, "invalid JSON at byte", nil},
		{"grade data after the array", ts, "POST", "/v1/grade", "", `[{"task_id": "T"}] {}`, 400, "data after the array", nil},
		{"grade too large", ts, "POST", "/v1/grade", "application/json", big, 413, "over 4096 bytes", nil},
		{"grade array too large", ts, "POST", "/v1/grade", "", "[" + big + "]", 413, "over 4096 bytes", nil},
		{"grade unknown encoding", ts, "POST", "/v1/grade", "application/x-ndjson", "{}\n", 415, "Content-Encoding br", []string{"Content-Encoding", "br"}},
		{"grade not gzip", ts, "POST", "/v1/grade", "application/x-ndjson", "{}\n", 400, "request body", []string{"Content-Encoding", "gzip"}},
		{"verifier too large", ts, "POST", "/verifier", "", big, 413, "over 4096 bytes", nil},
		{"verifier malformed", ts, "POST", "/verifier", "", `{"sessionId": "s", ` + checks + `, "log": }`, 400, "request body: invalid JSON at byte", nil},
		{"verifier not an object", ts, "POST", "/verifier", "", `[1]`, 400, "request body: not a JSON object", nil},
		{"verifier no session id", ts, "POST", "/verifier", "", `{` + checks + `}`, 400, "sessionId", nil},
		{"verifier no checks", ts, "POST", "/verifier", "", `{"sessionId": "s"}`, 400, "checks: missing", nil},
		{"verifier checks not a list", ts, "POST", "/verifier", "", `{"sessionId": "s", "checks": {}}`, 422, "non-empty list", nil},
		{"verifier unknown check type", ts, "POST", "/verifier", "", `{"sessionId": "s", "final_state": {}, "checks": [{"id": "c", "type": "sql"}]}`, 422, "unknown check type", nil},
		{"verifier no state", ts, "POST", "/verifier", "", `{"sessionId": "nobody", ` + checks + `}`, 404, "no session nobody", nil},
		{"verifier bad state", ts, "POST", "/verifier", "", `{"sessionId": "s", "final_state": "{oops", ` + checks + `}`, 400, "final_state: invalid JSON", nil},
		{"verifier log not a list", ts, "POST", "/verifier", "", `{"sessionId": "s", "log": {}, ` + checks + `}`, 400, "log: not a JSON array", nil},
		{"verifier output not text", ts, "POST", "/verifier", "", `{"sessionId": "s", "output": 7, ` + checks + `}`, 400, "output: not a string", nil},
		{"put session malformed", ts, "PUT", "/sessions/s1", "", `{"final_state": `, 400, "request body: invalid JSON at byte", nil},
		{"put session not an object", ts, "PUT", "/sessions/s1", "", `"x"`, 400, "request body: not a JSON object", nil},
		{"put session too large", ts, "PUT", "/sessions/s1", "", big, 413, "over 4096 bytes", nil},
		{"delete unknown session", ts, "DELETE", "/sessions/nobody", "", "", 404, "no session nobody", nil},
	}
	// What some hints must say.
	hints := map[string]string{
		"grade empty":                 "JSON Lines",
		"grade malformed object":      `{"task_id": ...}`,
		"grade not gzip":              "gzip",
		"delete unknown session":      "PUT /sessions/{id}",
		"verifier no state":           "PUT /sessions/nobody",
		"grade array cut after lines": "a JSON array",
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := do(t, tt.ts, tt.method, tt.path, tt.ctype, tt.body, tt.hdr...)
			if got.code != tt.code {
				t.Fatalf("%s %s = %d %s, want %d", tt.method, tt.path, got.code, got.body, tt.code)
			}
			e := errorLine(t, got.body)
			if !strings.Contains(e.Error, tt.want) || e.Hint == "" {
				t.Errorf("%s %s error = %q, hint %q; want %q in the error and a hint", tt.method, tt.path, e.Error, e.Hint, tt.want)
			}
			if want := hints[tt.name]; !strings.Contains(e.Hint, want) {
				t.Errorf("%s %s hint = %q, want it to hold %q", tt.method, tt.path, e.Hint, want)
			}
			if !isJSONLines(tt.ctype) && strings.Contains(e.Error, "line") {
				t.Errorf("%s %s error = %q: the body is not JSON Lines", tt.method, tt.path, e.Error)
			}
		})
	}
}

// TestErrorHintsBeyondRequests covers the answers no well-formed client
// can cause: a handler's panic, a grading failure of no known kind, and a
// request that overruns --request-timeout or finds --max-inflight
// requests in flight.
func TestErrorHintsBeyondRequests(t *testing.T) {
	s, ts := newServer(t, Config{MaxInflight: 1, RequestTimeout: 2 * time.Second})
	check := func(name string, body string) {
		t.Helper()
		if e := errorLine(t, body); e.Error == "" || e.Hint == "" {
			t.Errorf("%s: error %q, hint %q; want both", name, e.Error, e.Hint)
		}
	}

	rec := httptest.NewRecorder()
	s.wrap("/test", false, false, func(http.ResponseWriter, *http.Request, *reqState) { panic("boom") }).
		ServeHTTP(rec, httptest.NewRequest("GET", "/test", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), rec.Header().Get("X-Request-Id")) {
		t.Errorf("panic = %d %s, want 500 naming the request id %s", rec.Code, rec.Body.String(), rec.Header().Get("X-Request-Id"))
	}
	check("panic", rec.Body.String())

	rec = httptest.NewRecorder()
	(&gradeReq{w: rec}).gradeFailed(errors.New("grader broke"))
	check("grading failure", rec.Body.String())

	release := make(chan struct{})
	done, cleanup := stalled(t, ts.URL, release)
	defer cleanup()
	deadline := time.Now().Add(5 * time.Second)
	for len(s.inflight) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	got := do(t, ts, "POST", "/v1/grade", "", `{"task_id": "TASK-C01"}`)
	if got.code != 429 {
		t.Errorf("second request = %d, want 429", got.code)
	}
	check("429", got.body)
	r := <-done // cut by the request timeout
	close(release)
	check("stalled stream", r.body)
}

// TestNoEmptyHint guards the answers no test reaches: no call in the
// package's code writes an error with an empty hint.
func TestNoEmptyHint(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			var name string
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			if name != "writeError" && name != "fail" {
				return true
			}
			if lit, ok := call.Args[len(call.Args)-1].(*ast.BasicLit); ok && lit.Kind == token.STRING && (lit.Value == `""` || lit.Value == "``") {
				t.Errorf("%s: %s with an empty hint", fset.Position(call.Pos()), name)
			}
			return true
		})
	}
}

// A rollout of a JSON array body that is not an object is a row with
// status error naming its element, not a line; of a JSON Lines body, its
// line.
func TestNotAnObjectNamesItsPlace(t *testing.T) {
	_, ts := newServer(t, Config{})
	for _, tt := range []struct {
		name, ctype, body, want string
	}{
		{"array", "", `[{"task_id": "TASK-C01"}, 7, "x"]`, "element 2 of the array: not a JSON object but a number"},
		{"array string", "", `[{"task_id": "TASK-C01"}, 7, "x"]`, "element 3 of the array: not a JSON object but a string"},
		{"json lines", "application/x-ndjson", "{\"task_id\": \"TASK-C01\"}\n7\n", "line 2: not a JSON object"},
	} {
		got := do(t, ts, "POST", "/v1/grade", tt.ctype, tt.body)
		if got.code != 200 || !strings.Contains(got.body, `"error_kind":"input","error":"`+tt.want) {
			t.Errorf("%s: POST /v1/grade = %d %s, want a row with error %q", tt.name, got.code, got.body, tt.want)
		}
	}
}
