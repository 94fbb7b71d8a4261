package serve

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// referenceHTTP is the HTTP reference, generated from the routes the
// server registers.
const referenceHTTP = "../docs/reference/http.md"

// routeDoc documents one route: its request, its answer and the statuses
// of its own (those every route of its kind shares are the page's), with
// an example request that the test sends and whose status it checks.
type routeDoc struct {
	meaning, request, answer, statuses string
	example                            routeExample
}

// routeExample is a request to a route (path with its query, the route's
// {id} filled in) and the status it answers.
type routeExample struct {
	path, ctype, body string
	code              int
}

// routeDocs document the routes by mux pattern; TestReferenceHTTP fails
// on a route the server registers without one.
var routeDocs = map[string]routeDoc{
	"POST /verifier": {
		"the Scale gym verifier API: checks sent with the request, graded on a state sent with it or stored in a session",
		"a JSON object: `sessionId` (a string), `checks` (the checks of a spec, [Spec reference](spec.md#check)), and the state inline (`final_state`, `initial_state`, `log`, `output`, read as a JSON Lines row's) or none of them (then the session `sessionId` names)",
		"`200`, JSON: `session_id`, `success` (`true`, `false` or `\"PENDING\"`), `error` when the checks could not run, and `verifiers`: per check `id`, `operator`, `success`, `optional`, `error`, `asserts` (`actual_value`, `expected_value`, `comparator`, `success`, `matching_results`) and, when it did not pass, `all_results` (its rows, at most 100). Rubric checks are `\"PENDING\"`",
		"`400` a body or field that cannot be read, no `sessionId` or no `checks`; `404` no state inline and no such session; `422` checks a spec would refuse, worded as `gavel spec check` words them",
		routeExample{"/verifier", "", `{"sessionId": "s1", "final_state": {"events": [{"id": 1, "title": "Team Meeting"}]}, "checks": [{"id": "one-event", "type": "state", "table": "events", "asserts": [{"comparator": "eq", "function": "count", "function_args": ["_result"], "value": 1}]}]}`, 200},
	},
	"PUT /sessions/{id}": {
		"stores a session's state for `/verifier` requests that send none; the least recently used sessions are evicted past `--max-sessions` (or an eighth of `--max-memory`)",
		"a JSON object: `final_state`, `initial_state`, `log`, `output`",
		"`201` a new session, `200` one replaced: `{\"session_id\": ID}`",
		"`400` a body or field that cannot be read",
		routeExample{"/sessions/s1", "", `{"log": [{"eventType": "click", "clickId": "submit-button"}]}`, 201},
	},
	"DELETE /sessions/{id}": {
		"forgets a session",
		"none",
		"`204`",
		"`404` no such session",
		routeExample{"/sessions/s1", "", "", 204},
	},
	"POST /v1/grade": {
		"grades rollouts by the loaded verifiers, as `gavel grade` grades them: the same verdicts, checks and rewards",
		"one rollout (a JSON object with the [input fields](inputs.md#rollout-fields) and metadata), a JSON array of them, or JSON Lines (`Content-Type: application/x-ndjson`, optionally `Content-Encoding: gzip` or `zstd`). `?keep=COL,...` names the kept metadata (default: those of `model`, `run_id` and `sample` the first rollout has)",
		"`200`, JSON Lines (`application/x-ndjson`), one line per rollout in order: `{\"rewards\": {...}, \"checks\": [...]}`, the rows as `gavel grade --format jsonl` writes them ([Outputs reference](outputs.md)), `source_file` `request`, `source_row` the rollout's index, default `rollout_id` `request#INDEX`. A bad rollout is a row with status `error`, kind `input`. Arrays and JSON Lines stream: an error after the first line ends the answer with a line `{\"error\", \"hint\"}`",
		"`400` a body that cannot be read, `?keep=` naming a rollout field or `input_hash`; `413` an object or array over `--max-body` (a longer JSON Lines line is a row with status `error`); `415` another `Content-Encoding`; `502` the judge's or a remote verifier's service failed its probe; `503` no verifiers loaded yet, or verifier calls stuck past `--timeout`",
		routeExample{"/v1/grade?keep=model", "application/x-ndjson", `{"task_id": "TASK-C01", "final_state": {"events": []}, "model": "m1"}` + "\n" + `{"task_id": "TASK-004", "output": "$1,234.50"}` + "\n", 200},
	},
	"GET /v1/verifiers": {
		"lists the loaded verifiers",
		"none",
		"`200`, JSON: `{\"verifiers\": [...]}`, each with `id`, `name`, `tasks`, `source` and `fingerprint`, as in manifest.json",
		"none",
		routeExample{"/v1/verifiers", "", "", 200},
	},
	"POST /get_reward": {
		"OpenRLHF's remote reward model ([Trainers](../trainers.md))",
		"`{\"query\": [...], \"prompts\": [...], \"labels\": [...], \"task\": ...}`: each query is a prompt and its response, the response is the rollout's `output`; `prompts` and `labels` (lists as long as `query`) become metadata `prompt` and `label`; `task` is a string or a list as long as `query`, else `?task=`, else `--default-task`",
		"`200`, JSON: `rewards` and `scores` (both the rewards, in order) and `extra_logs` (`passed`, `checks_passed`, `checks_total`, and `error` with `--on-error-reward`)",
		"`400` a body that is not such a request; `422` a rollout with no task, a task no verifier binds, or a rollout without a reward (unless `--on-error-reward`); `502` and `503` as for `/v1/grade`",
		routeExample{"/get_reward", "", `{"query": ["Q: What was the total? A: $1,234.50"], "prompts": ["Q: What was the total? A:"], "task": "TASK-004"}`, 200},
	},
	"POST /verify": {
		"a NeMo Gym resources server's verify ([Trainers](../trainers.md))",
		"NeMo Gym's verify request: the task row's fields with `responses_create_params` and `response` (its assistant text is the rollout's `output`); the task is `task`, else `?task=`, else `--default-task`",
		"`200`, the request with `reward` and `reward_components` (each check's score), and `step_rewards` (a reward per agent turn, null when not scored) when the verifier scores turns; a rollout that could not be graded has `reward` 0.0, `_ng_failure_class` `gavel_error` and `error`",
		"`400` a body that is not such a request; `422` no task, or a task no verifier binds; `502` and `503` as for `/v1/grade`",
		routeExample{"/verify?task=TASK-004", "", `{"responses_create_params": {"input": "What was the total?"}, "response": {"output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "$1,234.50"}]}]}}`, 200},
	},
	"GET /reverify_mode": {
		"NeMo Gym's question whether stored rollouts may be verified again",
		"none",
		"`200`, `\"stateless\"`: gavel's verifiers are functions of the rollout",
		"none",
		routeExample{"/reverify_mode", "", "", 200},
	},
	"GET /healthz": {
		"liveness: answers while the process runs",
		"none",
		"`200`, `{\"status\":\"ok\"}`",
		"none",
		routeExample{"/healthz", "", "", 200},
	},
	"GET /readyz": {
		"readiness, for a load balancer",
		"none",
		"`200`, `{\"status\":\"ready\"}` once verifiers are loaded",
		"`503` starting or shutting down, `--max-inflight` verifier calls stuck, or saturated (every place of `--max-inflight` taken, or requests waiting for request memory)",
		routeExample{"/readyz", "", "", 200},
	},
	"GET /metrics": {
		"Prometheus metrics: `gavel_http_requests_total{route,code}`, `gavel_http_request_duration_seconds{route}`, `gavel_rollouts_graded_total{status}`, `gavel_http_requests_in_flight`, and the judge's and remote verifiers' counters",
		"none",
		"`200`, Prometheus text",
		"none",
		routeExample{"/metrics", "", "", 200},
	},
	"/": {
		"every other path, and a known path asked with another method",
		"any",
		"an error",
		"`404` no such route; `405` a known route with another method, its methods in `Allow`",
		routeExample{"/nope", "", "", 404},
	},
}

// route is one route the server registers: its mux pattern and what
// wrap adds to it.
type route struct {
	pattern       string
	auth, limited bool
	method, path  string
	wrapped       bool
}

// registeredRoutes returns the routes the package's code registers (its
// calls of Handle and HandleFunc with a pattern), in the order of the
// code.
func registeredRoutes(t *testing.T) []route {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var routes []route
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc" {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("%s: a route registered with a pattern that is not a literal", fset.Position(call.Pos()))
				return true
			}
			r := route{}
			r.pattern, _ = strconv.Unquote(lit.Value)
			r.method, r.path, _ = strings.Cut(r.pattern, " ")
			if r.path == "" {
				r.method, r.path = "", r.pattern
			}
			if w, ok := call.Args[1].(*ast.CallExpr); ok {
				if ws, ok := w.Fun.(*ast.SelectorExpr); ok && ws.Sel.Name == "wrap" && len(w.Args) == 4 {
					r.wrapped = true
					r.auth = isTrue(w.Args[1])
					r.limited = isTrue(w.Args[2])
				}
			}
			routes = append(routes, r)
			return true
		})
	}
	return routes
}

func isTrue(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "true"
}

// TestReferenceHTTP checks that docs/reference/http.md describes every
// route gavel serve registers (found in the package's code, and checked
// to be the server's), with whether it asks for the token and counts
// against --max-inflight, and that each route's example request answers
// the status the page gives; GAVEL_UPDATE_DOCS=1 (make docs) rewrites it.
func TestReferenceHTTP(t *testing.T) {
	routes := registeredRoutes(t)
	s, ts := newServer(t, Config{})
	var b bytes.Buffer
	b.WriteString("# HTTP reference\n\n" +
		"<!-- Generated from the code by `make docs`; do not edit. -->\n\n" +
		"Every route of `gavel serve`, with its request, its answer and its statuses.\n" +
		"[Serving over HTTP](../serving.md) shows them at work, with the flags that\n" +
		"bound them; [Trainers](../trainers.md) maps trainers' requests onto\n" +
		"rollouts.\n\n" +
		"| route | token | limited | what it is |\n| --- | --- | --- | --- |\n")
	var patterns []string
	for _, r := range routes {
		patterns = append(patterns, r.pattern)
		if !r.wrapped {
			t.Errorf("route %s is not wrapped: say whether it asks for the token and is limited", r.pattern)
		}
		// The pattern is the server's: a request of its method and path
		// reaches it.
		method, path := r.method, strings.ReplaceAll(r.path, "{id}", "x")
		if method == "" {
			method, path = "GET", "/nope"
		}
		if _, got := s.mux.Handler(httptest.NewRequest(method, path, nil)); got != r.pattern {
			t.Errorf("%s %s reaches %q, not the registered %q", method, path, got, r.pattern)
		}
		d, ok := routeDocs[r.pattern]
		if !ok {
			t.Errorf("route %s has no meaning in routeDocs", r.pattern)
			continue
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s |\n", r.pattern, anchor(title(r.pattern)), yesNo(r.auth), yesNo(r.limited), d.meaning)
	}
	for _, k := range slices.Sorted(maps.Keys(routeDocs)) {
		if !slices.Contains(patterns, k) {
			t.Errorf("routeDocs documents %s, which the server does not register", k)
		}
	}
	b.WriteString("\nA route with a GET pattern answers HEAD too. **token**: with `--token-env`, the\n" +
		"route asks for `Authorization: Bearer <token>` (the scheme in any case, the\n" +
		"token exact) and answers `401` with `WWW-Authenticate` without it; an unknown\n" +
		"route or method is the same `401`. **limited**: the route counts against\n" +
		"`--max-inflight` (one more request waits up to 100 ms for a place, then is a\n" +
		"`429` with `Retry-After`), its body against `--max-body` (`413`) and the request\n" +
		"memory (`503` with `Retry-After` when it stays in use by others), and the\n" +
		"request, body, grading and answer, against `--request-timeout` (`503`).\n\n" +
		"Every error is JSON, `{\"error\": ..., \"hint\": ...}`; the hint is never empty.\n" +
		"Every answer has an `X-Request-Id` header, the server's id of the request in\n" +
		"its access log. A panic is a `500` naming that id.\n\n")

	for _, r := range routes {
		d, ok := routeDocs[r.pattern]
		if !ok {
			continue
		}
		method := r.method
		if method == "" {
			method = "GET"
		}
		got := do(t, ts, method, d.example.path, d.example.ctype, d.example.body)
		if got.code != d.example.code {
			t.Errorf("the example of %s answers %d, not %d: %s", r.pattern, got.code, d.example.code, got.body)
		}
		fmt.Fprintf(&b, "## %s\n\n%s.\n\n- **Request:** %s.\n- **Answer:** %s.\n- **Statuses of its own:** %s.\n\n",
			title(r.pattern), upperFirst(d.meaning), d.request, d.answer, d.statuses)
		req := method + " " + d.example.path
		if d.example.ctype != "" {
			req += "\nContent-Type: " + d.example.ctype
		}
		if d.example.body != "" {
			req += "\n\n" + strings.TrimRight(d.example.body, "\n")
		}
		fmt.Fprintf(&b, "```text\n%s\n```\n\nanswers `%d`.\n\n", req, d.example.code)
	}

	page := append(bytes.TrimRight(b.Bytes(), "\n"), '\n')
	if os.Getenv("GAVEL_UPDATE_DOCS") != "" {
		if err := os.WriteFile(referenceHTTP, page, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(referenceHTTP)
	if err != nil || !bytes.Equal(have, page) {
		t.Errorf("%s is not generated from the code (%v): run make docs", filepath.Base(referenceHTTP), err)
	}
}

// anchor returns the anchor of the section titled pattern, as GitHub
// makes it: lowercase, spaces as dashes, other punctuation but - and _
// dropped.
func anchor(pattern string) string {
	var a strings.Builder
	for _, c := range strings.ToLower(pattern) {
		switch {
		case c == ' ':
			a.WriteByte('-')
		case c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			a.WriteRune(c)
		}
	}
	return a.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// title is the title of a route's section.
func title(pattern string) string {
	if pattern == "/" {
		return "Any other route"
	}
	return pattern
}
