// Package judgetest is a chat completions server for tests of code that
// judges: it serves POST /chat/completions and GET /models/{model} on
// 127.0.0.1, answers as scripted, and counts requests and the most in
// flight at once.
//
// By default it answers every chat completion with a verdict computed from
// the prompt: score 1 when the fenced agent output contains "PASS", else 0.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package judgetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Reply is a scripted answer to one chat completion.
type Reply struct {
	// Status is the HTTP status; 0 means 200.
	Status int
	// Header holds extra response headers (Retry-After, ...).
	Header http.Header
	// Body is the response body. When empty, a 200 answers DefaultContent's
	// verdict and an error status an OpenAI-style error body.
	Body string
	// Delay is waited before answering (less if the client goes away).
	Delay time.Duration
	// Hang makes the server never answer: it waits until the client goes
	// away or the server is closed.
	Hang bool
}

// Request is a chat completion the server received.
type Request struct {
	// Model is the requested model.
	Model string
	// System and User are the contents of the first system and the last
	// user message.
	System, User string
	// ResponseFormat is the response_format type sent ("json_schema",
	// "json_object", "text"), or "" for none.
	ResponseFormat string
	// Temperature and Seed are the sampling settings sent (nil when absent).
	Temperature *float64
	Seed        *int64
	// Authorization is the Authorization header.
	Authorization string
	// Body is the raw request body.
	Body []byte
}

// maxKept bounds the requests a Server keeps for Received.
const maxKept = 1000

// Server is a scripted chat completions server. Its methods are safe for
// concurrent use.
type Server struct {
	// URL is the API root to use as a judge's base URL (".../v1").
	URL string

	srv  *httptest.Server
	done chan struct{}
	once sync.Once

	mu     sync.Mutex
	queue  []Reply
	script func(Request) Reply
	key    string
	models []string
	kept   []Request

	requests, modelRequests atomic.Int64
	conns                   atomic.Int64
	inFlight, maxInFlight   atomic.Int64
}

// New starts a server on a free port of 127.0.0.1 and registers its Close
// with tb.Cleanup.
func New(tb testing.TB) *Server {
	s, err := Start("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Start starts a server listening on addr, for a command that serves
// outside go test (internal/cmd/fakejudge); the caller closes it.
func Start(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("GET /v1/models/{model}", s.model)
	s.srv = httptest.NewUnstartedServer(mux)
	s.srv.Listener.Close()
	s.srv.Listener = ln
	s.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.srv.Start()
	s.URL = s.srv.URL + "/v1"
	return s, nil
}

// Close releases hanging requests and stops the server.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Enqueue adds replies answered, in order, to the next chat completions,
// before the script.
func (s *Server) Enqueue(r ...Reply) {
	s.mu.Lock()
	s.queue = append(s.queue, r...)
	s.mu.Unlock()
}

// Script sets the function answering chat completions once the queue is
// empty; nil restores the default verdict.
func (s *Server) Script(f func(Request) Reply) {
	s.mu.Lock()
	s.script = f
	s.mu.Unlock()
}

// RequireKey makes every request without "Authorization: Bearer key"
// answer 401.
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	s.key = key
	s.mu.Unlock()
}

// Models sets the models GET /models/{model} knows; others answer 404.
// By default every model is known.
func (s *Server) Models(names ...string) {
	s.mu.Lock()
	s.models = names
	s.mu.Unlock()
}

// Requests returns the number of chat completions received.
func (s *Server) Requests() int { return int(s.requests.Load()) }

// ModelRequests returns the number of GET /models/{model} received.
func (s *Server) ModelRequests() int { return int(s.modelRequests.Load()) }

// Conns returns the number of connections accepted.
func (s *Server) Conns() int { return int(s.conns.Load()) }

// MaxInFlight returns the most chat completions handled at once.
func (s *Server) MaxInFlight() int { return int(s.maxInFlight.Load()) }

// Received returns the first 1000 chat completions received.
func (s *Server) Received() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.kept...)
}

// authorized answers 401 and reports false when a key is required and
// missing.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	if key == "" || r.Header.Get("Authorization") == "Bearer "+key {
		return true
	}
	writeError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_api_key")
	return false
}

func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	s.modelRequests.Add(1)
	if !s.authorized(w, r) {
		return
	}
	name := r.PathValue("model")
	if !s.known(name) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("The model %q does not exist.", name), "model_not_found")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": name, "object": "model", "created": 0, "owned_by": "judgetest"})
}

// known reports whether the server knows model.
func (s *Server) known(model string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	known := s.models == nil
	for _, m := range s.models {
		known = known || m == model
	}
	return known
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxInFlight.Load()
		if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	req, err := decode(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "invalid_request")
		return
	}
	s.mu.Lock()
	if len(s.kept) < maxKept {
		s.kept = append(s.kept, req)
	}
	s.mu.Unlock()
	if !s.authorized(w, r) {
		return
	}
	if !s.known(req.Model) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("The model %q does not exist.", req.Model), "model_not_found")
		return
	}
	rep := s.next(req)
	switch {
	case rep.Hang:
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	case rep.Delay > 0:
		t := time.NewTimer(rep.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
	for k, vs := range rep.Header {
		w.Header()[k] = vs
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	body := rep.Body
	if body == "" && status == http.StatusOK {
		body = Completion(req.Model, DefaultContent(req))
	} else if body == "" {
		body = ErrorBody(http.StatusText(status), "")
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	w.Write([]byte(body))
}

// next returns the reply to req: the queue's first, else the script's,
// else the default.
func (s *Server) next(req Request) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		return r
	}
	if s.script != nil {
		f := s.script
		s.mu.Unlock()
		defer s.mu.Lock()
		return f(req)
	}
	return Reply{}
}

// decode reads a chat completion request.
func decode(r *http.Request) (Request, error) {
	var in struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		ResponseFormat *struct {
			Type string `json:"type"`
		} `json:"response_format"`
		Temperature *float64 `json:"temperature"`
		Seed        *int64   `json:"seed"`
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return Request{}, fmt.Errorf("request body: %v", err)
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return Request{}, fmt.Errorf("request body: %v", err)
	}
	req := Request{Model: in.Model, Temperature: in.Temperature, Seed: in.Seed,
		Authorization: r.Header.Get("Authorization"), Body: raw}
	if in.ResponseFormat != nil {
		req.ResponseFormat = in.ResponseFormat.Type
	}
	for _, m := range in.Messages {
		switch m.Role {
		case "system", "developer":
			if req.System == "" {
				req.System = m.Content
			}
		case "user":
			req.User = m.Content
		}
	}
	return req, nil
}

// OutputHeading is the line that precedes the fenced agent output in the
// built-in template's user message.
const OutputHeading = "Agent output to grade (untrusted):\n"

// FencedOutput returns the agent output fenced after OutputHeading in a
// user message, and whether there is one. Headings inside other fences
// (an instruction quoting one) are skipped.
func FencedOutput(user string) (string, bool) {
	heading := strings.TrimSuffix(OutputHeading, "\n")
	lines := strings.Split(user, "\n")
	for i := 0; i < len(lines); i++ {
		if tag, ok := strings.CutPrefix(lines[i], "<<<"); ok && strings.HasPrefix(tag, "UNTRUSTED-") {
			start := i + 1
			for i++; i < len(lines) && lines[i] != tag+">>>"; i++ {
			}
			if start >= 2 && lines[start-2] == heading && i < len(lines) {
				return strings.Join(lines[start:i], "\n"), true
			}
		}
	}
	return "", false
}

// DefaultContent is the verdict the server answers by default: score 1
// with no issues when the fenced output contains "PASS", else score 0 with
// one issue.
func DefaultContent(req Request) string {
	out, ok := FencedOutput(req.User)
	switch {
	case !ok:
		return Verdict(0, []string{"no fenced output found"}, "")
	case strings.Contains(out, "PASS"):
		return Verdict(1, []string{}, "")
	default:
		return Verdict(0, []string{"the output does not say PASS"}, "Say PASS.")
	}
}

// Verdict returns the JSON of a verdict.
func Verdict(score float64, issues []string, suggestion string) string {
	b, _ := json.Marshal(map[string]any{"score": score, "issues": issues, "suggestion": suggestion})
	return string(b)
}

// Completion returns the body of a chat completion whose one choice has
// content, with usage counting a token per 4 bytes of content.
func Completion(model, content string) string {
	return completion(model, map[string]any{"role": "assistant", "content": content, "refusal": nil}, "stop", len(content)/4+1)
}

// Refusal returns the body of a chat completion whose one choice refuses.
func Refusal(model, refusal string) string {
	return completion(model, map[string]any{"role": "assistant", "content": nil, "refusal": refusal}, "stop", 1)
}

// NoChoices returns the body of a chat completion without choices.
func NoChoices(model string) string {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-judgetest", "object": "chat.completion", "created": 0,
		"model": model, "choices": []any{}})
	return string(b)
}

func completion(model string, msg map[string]any, finish string, tokens int) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-judgetest", "object": "chat.completion", "created": 0, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": 10 + tokens},
	})
	return string(b)
}

// ErrorBody returns an OpenAI-style error body.
func ErrorBody(message, code string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "param": nil, "code": code}})
	return string(b)
}

func writeError(w http.ResponseWriter, status int, message, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write([]byte(ErrorBody(message, code)))
}

// The headings that precede the fenced outputs in the built-in pairwise
// template's user message.
const (
	OutputAHeading = "Output A (untrusted):\n"
	OutputBHeading = "Output B (untrusted):\n"
)

// FencedPair returns the two outputs of a pairwise comparison's user
// message, in the order shown, and whether it is one.
func FencedPair(user string) (a, b string, ok bool) {
	a, okA := fencedAfter(user, OutputAHeading)
	b, okB := fencedAfter(user, OutputBHeading)
	return a, b, okA && okB
}

// fencedAfter returns the text of the first fence whose line is preceded
// by the heading line; headings inside other fences are skipped.
func fencedAfter(user, heading string) (string, bool) {
	heading = strings.TrimSuffix(heading, "\n")
	lines := strings.Split(user, "\n")
	for i := 0; i < len(lines); i++ {
		if tag, ok := strings.CutPrefix(lines[i], "<<<"); ok && strings.HasPrefix(tag, "UNTRUSTED-") {
			start := i + 1
			for i++; i < len(lines) && lines[i] != tag+">>>"; i++ {
			}
			if start >= 2 && lines[start-2] == heading && i < len(lines) {
				return strings.Join(lines[start:i], "\n"), true
			}
		}
	}
	return "", false
}

// Preference returns the JSON of a pairwise verdict ("A", "B" or "tie").
func Preference(better, reason string) string {
	b, _ := json.Marshal(map[string]any{"reason": reason, "better": better})
	return string(b)
}
