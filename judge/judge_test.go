package judge

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gavelhq/gavel/judge/judgetest"
)

// testKey is a distinctive API key that must never leave the package.
const testKey = "sk-gavel-SECRET-8c1f0e5a27d94b36"

// newJudge returns a judge for srvURL with no cache, the key in a test
// variable, no real sleeping (waits are recorded) and a fixed jitter.
func newJudge(t *testing.T, cfg Config) (*Judge, *[]time.Duration) {
	t.Helper()
	t.Setenv("GAVEL_TEST_JUDGE_KEY", testKey)
	if cfg.Model == "" {
		cfg.Model = "judge-model"
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = "off"
	}
	cfg.APIKeyEnv = "GAVEL_TEST_JUDGE_KEY"
	j, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	var mu sync.Mutex
	waits := new([]time.Duration)
	j.c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*waits = append(*waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	j.c.jitter = func() float64 { return 0.5 }
	return j, waits
}

func mustRequest(t testing.TB, j *Judge, p Prompt) *Request {
	t.Helper()
	r, err := j.Request(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAskVerdict(t *testing.T) {
	srv := judgetest.New(t)
	srv.RequireKey(testKey)
	j, _ := newJudge(t, Config{BaseURL: srv.URL})
	for _, tc := range []struct {
		output string
		want   float64
	}{{"all good: PASS", 1}, {"nope", 0}} {
		v, err := j.Ask(context.Background(), mustRequest(t, j, Prompt{Rubric: "Says PASS.", Instruction: "Say PASS.", Output: tc.output}))
		if err != nil {
			t.Fatalf("Ask(%q): %v", tc.output, err)
		}
		if v.Score != tc.want || v.Pass(j.Threshold()) != (tc.want == 1) {
			t.Errorf("Ask(%q) = %+v, want score %v", tc.output, v, tc.want)
		}
	}
	got := srv.Received()
	if len(got) != 2 {
		t.Fatalf("server received %d requests, want 2", len(got))
	}
	r := got[0]
	if r.Model != "judge-model" || r.ResponseFormat != "json_schema" || r.Temperature == nil || *r.Temperature != 0 ||
		r.Seed == nil || *r.Seed != Seed || !strings.Contains(r.System, "UNTRUSTED") {
		t.Errorf("request = model %q format %q temperature %v seed %v, want judge-model json_schema 0 %d", r.Model, r.ResponseFormat, r.Temperature, r.Seed, Seed)
	}
	st := j.Stats()
	if st.Requests != 2 || st.Failures != 0 || st.CompletionTokens == 0 || st.PromptTokens != 20 {
		t.Errorf("Stats() = %+v, want 2 requests, tokens counted", st)
	}
}

// closedURL returns the URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1"
}

// failureCases provokes every failure a judgement can end in. Servers that
// echo what they receive check that the key is not echoed into errors.
func failureCases() []struct {
	name       string
	replies    []judgetest.Reply
	kind       Kind
	status     int
	requests   int
	inMessage  string
	timeout    time.Duration
	unreachble bool
} {
	model := "judge-model"
	reply := func(status int, body string) judgetest.Reply { return judgetest.Reply{Status: status, Body: body} }
	echo := "Incorrect API key provided: " + testKey
	five := []judgetest.Reply{reply(500, ""), reply(502, ""), reply(503, ""), reply(500, ""), reply(504, judgetest.ErrorBody("down "+testKey, ""))}
	return []struct {
		name       string
		replies    []judgetest.Reply
		kind       Kind
		status     int
		requests   int
		inMessage  string
		timeout    time.Duration
		unreachble bool
	}{
		{name: "connection refused", kind: KindConnection, unreachble: true, inMessage: "connection refused"},
		{name: "timeout", replies: []judgetest.Reply{{Hang: true}}, kind: KindTimeout, timeout: 100 * time.Millisecond, requests: 1, inMessage: "no reply within 100ms"},
		{name: "5xx after retries", replies: five, kind: KindServer, status: 504, requests: 5, inMessage: "after 4 retries"},
		{name: "429 after retries", replies: []judgetest.Reply{reply(429, ""), reply(429, ""), reply(429, ""), reply(429, ""), reply(429, "")}, kind: KindRateLimit, status: 429, requests: 5},
		{name: "400", replies: []judgetest.Reply{reply(400, judgetest.ErrorBody("messages: bad "+testKey, ""))}, kind: KindBadRequest, status: 400, requests: 1, inMessage: "bad request"},
		{name: "400 context length", replies: []judgetest.Reply{reply(400, judgetest.ErrorBody("This model's maximum context length is 8192 tokens.", "context_length_exceeded"))}, kind: KindContextLength, status: 400, requests: 1, inMessage: "context"},
		{name: "401", replies: []judgetest.Reply{reply(401, judgetest.ErrorBody(echo, "invalid_api_key"))}, kind: KindAuth, status: 401, requests: 1, inMessage: "GAVEL_TEST_JUDGE_KEY"},
		{name: "403", replies: []judgetest.Reply{reply(403, judgetest.ErrorBody("forbidden for Bearer "+testKey, ""))}, kind: KindAuth, status: 403, requests: 1},
		{name: "404 model", replies: []judgetest.Reply{reply(404, judgetest.ErrorBody("The model does not exist", "model_not_found"))}, kind: KindNotFound, status: 404, requests: 1},
		{name: "refusal", replies: []judgetest.Reply{reply(200, judgetest.Refusal(model, "I won't grade this, "+testKey))}, kind: KindRefusal, status: 200, requests: 1, inMessage: "refused"},
		{name: "no choices", replies: []judgetest.Reply{reply(200, judgetest.NoChoices(model))}, kind: KindEmpty, status: 200, requests: 1, inMessage: "no choices"},
		{name: "empty content", replies: []judgetest.Reply{reply(200, judgetest.Completion(model, "  "))}, kind: KindEmpty, status: 200, requests: 1},
		{name: "not the schema", replies: []judgetest.Reply{reply(200, judgetest.Completion(model, `{"score": "high", "note": "`+testKey+`"}`))}, kind: KindInvalid, status: 200, requests: 1, inMessage: "not a number"},
		{name: "no JSON", replies: []judgetest.Reply{reply(200, judgetest.Completion(model, "looks fine to me "+testKey))}, kind: KindInvalid, status: 200, requests: 1},
		{name: "score above 1", replies: []judgetest.Reply{reply(200, judgetest.Completion(model, `{"score": 1.5, "issues": [], "suggestion": ""}`))}, kind: KindInvalid, status: 200, requests: 1, inMessage: "outside [0, 1]"},
		{name: "score below 0", replies: []judgetest.Reply{reply(200, judgetest.Completion(model, `{"score": -0.1, "issues": [], "suggestion": ""}`))}, kind: KindInvalid, status: 200, requests: 1},
		{name: "score NaN", replies: []judgetest.Reply{reply(200, judgetest.Completion(model, `{"score": NaN, "issues": [], "suggestion": ""}`))}, kind: KindInvalid, status: 200, requests: 1},
		{name: "body not JSON", replies: []judgetest.Reply{reply(200, "<html>"+testKey+"</html>")}, kind: KindInvalid, status: 200, requests: 1},
	}
}

func TestFailures(t *testing.T) {
	for _, tc := range failureCases() {
		t.Run(tc.name, func(t *testing.T) {
			srv := judgetest.New(t)
			srv.Enqueue(tc.replies...)
			url := srv.URL
			if tc.unreachble {
				url = closedURL(t)
			}
			j, _ := newJudge(t, Config{BaseURL: url, Timeout: tc.timeout})
			v, err := j.Ask(context.Background(), mustRequest(t, j, Prompt{Output: "PASS"}))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Ask = %+v, %v; want an *Error", v, err)
			}
			if e.Kind != tc.kind || e.HTTPStatus != tc.status {
				t.Errorf("Ask error = %v (kind %q, status %d), want kind %q, status %d", err, e.Kind, e.HTTPStatus, tc.kind, tc.status)
			}
			msg := err.Error()
			if tc.status != 0 && !strings.Contains(msg, "HTTP "+itoa(tc.status)) {
				t.Errorf("error %q does not name HTTP %d", msg, tc.status)
			}
			if !strings.Contains(msg, string(tc.kind)) && !strings.Contains(msg, tc.inMessage) {
				t.Errorf("error %q names neither %q nor %q", msg, tc.kind, tc.inMessage)
			}
			if tc.inMessage != "" && !strings.Contains(msg, tc.inMessage) {
				t.Errorf("error %q does not contain %q", msg, tc.inMessage)
			}
			if !strings.Contains(msg, "judge-model") {
				t.Errorf("error %q does not name the model", msg)
			}
			if got := srv.Requests(); got != tc.requests {
				t.Errorf("server got %d requests, want %d", got, tc.requests)
			}
			if st := j.Stats(); st.Failures != 1 {
				t.Errorf("Stats().Failures = %d, want 1", st.Failures)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func newHTTPServer(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSecrets provokes every failure (and the probe's) with servers that
// echo the key, and requires that no error text contains it, nor the base
// URL's user information or query.
func TestSecrets(t *testing.T) {
	check := func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("no error")
		}
		for _, secret := range []string{testKey, "hunter2", "token=", "sig-xyz"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q contains %q", err, secret)
			}
		}
	}
	for _, tc := range failureCases() {
		t.Run(tc.name, func(t *testing.T) {
			srv := judgetest.New(t)
			srv.Enqueue(tc.replies...)
			url := srv.URL
			if tc.unreachble {
				url = closedURL(t)
			}
			j, _ := newJudge(t, Config{BaseURL: url, Timeout: tc.timeout})
			_, err := j.Ask(context.Background(), mustRequest(t, j, Prompt{Output: "PASS"}))
			check(t, err)
		})
	}
	t.Run("url credentials", func(t *testing.T) {
		url := strings.Replace(closedURL(t), "http://", "http://user:hunter2@", 1) + "?token=sig-xyz"
		j, _ := newJudge(t, Config{BaseURL: url})
		_, err := j.Ask(context.Background(), mustRequest(t, j, Prompt{Output: "PASS"}))
		check(t, err)
		check(t, j.Probe(context.Background()))
	})
	t.Run("probe 401", func(t *testing.T) {
		srv := judgetest.New(t)
		srv.RequireKey("another key")
		j, _ := newJudge(t, Config{BaseURL: srv.URL})
		check(t, j.Probe(context.Background()))
	})
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		header http.Header
		want   []time.Duration
	}{
		{"seconds", http.Header{"Retry-After": {"7"}}, []time.Duration{7 * time.Second}},
		{"date", http.Header{"Retry-After": {now.Add(3 * time.Second).Format(http.TimeFormat)}}, []time.Duration{3 * time.Second}},
		{"milliseconds", http.Header{"Retry-After-Ms": {"250"}}, []time.Duration{250 * time.Millisecond}},
		{"none: full jitter", nil, []time.Duration{50 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := judgetest.New(t)
			srv.Enqueue(judgetest.Reply{Status: 429, Header: tc.header})
			j, waits := newJudge(t, Config{BaseURL: srv.URL, Backoff: 100 * time.Millisecond})
			j.c.now = func() time.Time { return now }
			v, err := j.Ask(context.Background(), mustRequest(t, j, Prompt{Output: "PASS"}))
			if err != nil || v.Score != 1 {
				t.Fatalf("Ask = %+v, %v; want score 1", v, err)
			}
			if got := *waits; !equal(got, tc.want) {
				t.Errorf("waits = %v, want %v", got, tc.want)
			}
			if st := j.Stats(); st.Retries != 1 || st.Requests != 2 {
				t.Errorf("Stats() = %+v, want 1 retry, 2 requests", st)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	srv := judgetest.New(t)
	srv.Enqueue(judgetest.Reply{Status: 503}, judgetest.Reply{Status: 500}, judgetest.Reply{Status: 502},
		judgetest.Reply{Status: 500})
	j, waits := newJudge(t, Config{BaseURL: srv.URL, Backoff: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
	if _, err := j.Ask(context.Background(), mustRequest(t, j, Prompt{Output: "PASS"})); err != nil {
		t.Fatal(err)
	}
	// Jitter is fixed at 0.5: half of 100, 200, 400 capped to 300, 800 capped.
	want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond, 150 * time.Millisecond}
	if got := *waits; !equal(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
}

func TestRetryAfterTooLong(t *testing.T) {
	srv := judgetest.New(t)
	srv.Enqueue(judgetest.Reply{Status: 429, Header: http.Header{"Retry-After": {"3600"}}})
	j, waits := newJudge(t, Config{BaseURL: srv.URL})
	_, err := j.Ask(context.Background(), mustRequest(t, j, Prompt{Output: "PASS"}))
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindRateLimit || len(*waits) != 0 {
		t.Errorf("Ask error = %v after waits %v, want rate limited without waiting", err, *waits)
	}
}

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestTimeoutHang(t *testing.T) {
	srv := judgetest.New(t)
	srv.Script(func(judgetest.Request) judgetest.Reply { return judgetest.Reply{Hang: true} })
	j, _ := newJudge(t, Config{BaseURL: srv.URL, Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := j.Ask(context.Background(), mustRequest(t, j, Prompt{Output: "PASS"}))
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindTimeout {
		t.Fatalf("Ask error = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Ask took %v, want about 200ms", d)
	}
	if srv.Requests() != 1 {
		t.Errorf("server got %d requests, want 1 (timeouts are not retried)", srv.Requests())
	}
}

func TestCancel(t *testing.T) {
	srv := judgetest.New(t)
	srv.Script(func(judgetest.Request) judgetest.Reply { return judgetest.Reply{Hang: true} })
	j, _ := newJudge(t, Config{BaseURL: srv.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := j.Ask(ctx, mustRequest(t, j, Prompt{Output: "PASS"}))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Ask error = %v, want the context's", err)
	}
	if st := j.Stats(); st.Failures != 0 {
		t.Errorf("Stats().Failures = %d, want 0 for a cancelled context", st.Failures)
	}
}

func TestConcurrency(t *testing.T) {
	const limit = 4
	srv := judgetest.New(t)
	srv.Script(func(r judgetest.Request) judgetest.Reply {
		return judgetest.Reply{Delay: 30 * time.Millisecond}
	})
	j, _ := newJudge(t, Config{BaseURL: srv.URL, Concurrency: limit})
	var wg sync.WaitGroup
	for i := range 6 * limit {
		wg.Go(func() {
			if _, err := j.Ask(context.Background(), mustRequest(t, j, Prompt{Output: "PASS " + itoa(i)})); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := srv.MaxInFlight(); got != limit {
		t.Errorf("server saw %d requests in flight at most, want %d", got, limit)
	}
}

func TestCache(t *testing.T) {
	dir := t.TempDir()
	srv := judgetest.New(t)
	p := Prompt{Rubric: "r", Output: "PASS"}
	j, _ := newJudge(t, Config{BaseURL: srv.URL, CacheDir: dir})
	r := mustRequest(t, j, p)
	if _, ok := j.Cached(r); ok {
		t.Fatal("Cached before any Ask")
	}
	if _, err := j.Ask(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	v, err := j.Ask(context.Background(), mustRequest(t, j, p))
	if err != nil || v.Score != 1 {
		t.Fatalf("second Ask = %+v, %v", v, err)
	}
	if srv.Requests() != 1 || j.Stats().CacheHits != 1 {
		t.Errorf("after two Asks: %d requests, %d hits; want 1 and 1", srv.Requests(), j.Stats().CacheHits)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	// A new judge on the same directory answers from the file; another
	// model, template or output is another key.
	j2, _ := newJudge(t, Config{BaseURL: srv.URL, CacheDir: dir})
	if v, err := j2.Ask(context.Background(), mustRequest(t, j2, p)); err != nil || v.Score != 1 || srv.Requests() != 1 {
		t.Errorf("Ask after reopening = %+v, %v with %d requests; want score 1 from the cache", v, err, srv.Requests())
	}
	other, err := j2.With(Override{Model: "other-model"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Request{mustRequest(t, other, p), mustRequest(t, j2, Prompt{Rubric: "r", Output: "PASS!"})} {
		if _, ok := j2.Cached(r); ok {
			t.Errorf("Cached(%s) hit, want a miss", r.Key())
		}
	}
}

func TestAutoDowngrade(t *testing.T) {
	srv := judgetest.New(t)
	srv.Script(func(r judgetest.Request) judgetest.Reply {
		if r.ResponseFormat == "json_schema" {
			return judgetest.Reply{Status: 400, Body: judgetest.ErrorBody("response_format json_schema is not supported", "")}
		}
		return judgetest.Reply{}
	})
	dir := t.TempDir()
	j, _ := newJudge(t, Config{BaseURL: srv.URL, CacheDir: dir})
	if v, err := j.Ask(context.Background(), mustRequest(t, j, Prompt{Output: "PASS"})); err != nil || v.Score != 1 {
		t.Fatalf("Ask = %+v, %v", v, err)
	}
	if _, err := j.Ask(context.Background(), mustRequest(t, j, Prompt{Output: "PASS 2"})); err != nil {
		t.Fatal(err)
	}
	var formats []string
	for _, r := range srv.Received() {
		formats = append(formats, r.ResponseFormat)
	}
	if got, want := strings.Join(formats, ","), "json_schema,json_object,json_object"; got != want || j.Mode() != ModeJSON {
		t.Errorf("formats sent = %s, mode %s; want %s, json", got, j.Mode(), want)
	}
	if st := j.Stats(); st.Retries != 0 || st.Failures != 0 {
		t.Errorf("Stats() = %+v, want no retries or failures", st)
	}
	j.Close()
	// A new auto judge starts in schema mode and finds the json verdict.
	j2, _ := newJudge(t, Config{BaseURL: srv.URL, CacheDir: dir})
	if _, ok := j2.Cached(mustRequest(t, j2, Prompt{Output: "PASS"})); !ok {
		t.Error("new auto judge misses the verdict cached in json mode")
	}
	j2.Close()
	// A judge fixed in schema mode does not downgrade, nor use it.
	j3, _ := newJudge(t, Config{BaseURL: srv.URL, CacheDir: dir, ResponseMode: ModeSchema})
	if _, ok := j3.Cached(mustRequest(t, j3, Prompt{Output: "PASS"})); ok {
		t.Error("schema judge uses the verdict cached in json mode")
	}
	_, err := j3.Ask(context.Background(), mustRequest(t, j3, Prompt{Output: "PASS"}))
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindBadRequest {
		t.Errorf("schema judge Ask = %v, want a bad request", err)
	}
}

func TestTextMode(t *testing.T) {
	srv := judgetest.New(t)
	srv.Enqueue(judgetest.Reply{Body: judgetest.Completion("m", "Thinking {about it}.\n```json\n{\"score\": 0.75, \"issues\": [\"a\"], \"suggestion\": \"b\"}\n```")})
	j, _ := newJudge(t, Config{BaseURL: srv.URL, ResponseMode: ModeText})
	v, err := j.Ask(context.Background(), mustRequest(t, j, Prompt{Output: "x"}))
	if err != nil || v.Score != 0.75 || len(v.Issues) != 1 || v.Suggestion != "b" {
		t.Errorf("Ask = %+v, %v; want 0.75 [a] b", v, err)
	}
	if f := srv.Received()[0].ResponseFormat; f != "" {
		t.Errorf("text mode sent response_format %q", f)
	}
}

func TestProbe(t *testing.T) {
	srv := judgetest.New(t)
	srv.RequireKey(testKey)
	srv.Models("judge-model")
	for _, tc := range []struct {
		name   string
		cfg    Config
		kind   Kind
		status int
	}{
		{"ok", Config{BaseURL: srv.URL}, "", 0},
		{"unknown model", Config{BaseURL: srv.URL, Model: "nope"}, KindNotFound, 404},
		{"unreachable", Config{BaseURL: closedURL(t)}, KindConnection, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, _ := newJudge(t, tc.cfg)
			err := j.Probe(context.Background())
			var e *Error
			if tc.kind == "" {
				if err != nil {
					t.Errorf("Probe() = %v, want nil", err)
				}
				return
			}
			if !errors.As(err, &e) || e.Kind != tc.kind || e.HTTPStatus != tc.status || !strings.Contains(err.Error(), "probe") {
				t.Errorf("Probe() = %v, want kind %q status %d", err, tc.kind, tc.status)
			}
		})
	}
	t.Run("wrong key", func(t *testing.T) {
		t.Setenv("OTHER_KEY", "sk-wrong")
		j, err := New(Config{Model: "judge-model", BaseURL: srv.URL, APIKeyEnv: "OTHER_KEY", CacheDir: "off"})
		if err != nil {
			t.Fatal(err)
		}
		err = j.Probe(context.Background())
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindAuth || e.HTTPStatus != 401 || !strings.Contains(err.Error(), "OTHER_KEY") {
			t.Errorf("Probe() = %v, want not authorized naming OTHER_KEY (HTTP 401)", err)
		}
	})
	if st := (&Judge{c: &core{counters: &counters{}}}).Stats(); st != (Stats{}) {
		t.Errorf("zero stats = %+v", st)
	}
}

// TestProbeFallback: a server without GET /models/{model} is probed with a
// one-token chat completion.
func TestProbeFallback(t *testing.T) {
	var chats int
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		chats++
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(judgetest.Completion("m", "OK")))
	})
	srv := newHTTPServer(t, mux)
	j, _ := newJudge(t, Config{BaseURL: srv + "/v1"})
	if err := j.Probe(context.Background()); err != nil || chats != 1 {
		t.Errorf("Probe() = %v after %d chat completions, want nil after 1", err, chats)
	}
}

func TestWithTemplate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.tmpl")
	text := `{{define "version"}}mine-v2{{end}}{{define "system"}}S{{end}}{{define "user"}}R={{.Rubric}} O={{.Output}}{{end}}`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := judgetest.New(t)
	j, _ := newJudge(t, Config{BaseURL: srv.URL})
	d, err := j.With(Override{Template: path, Threshold: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if d.Template().Version() != "mine-v2" || d.Template().Fingerprint() == j.Template().Fingerprint() || d.Threshold() != 0.5 {
		t.Errorf("With = version %q threshold %v, want mine-v2 0.5 and a new fingerprint", d.Template().Version(), d.Threshold())
	}
	p := Prompt{Rubric: "x", Output: "y"}
	sys, user := mustRequest(t, d, p).Messages()
	if sys != "S" || user != "R=x O="+Fence("y") {
		t.Errorf("Messages() = %q, %q", sys, user)
	}
	if mustRequest(t, d, p).Key() == mustRequest(t, j, p).Key() {
		t.Error("another template gives the same key")
	}
	if _, err := ParseTemplate(`{{define "version"}}v{{end}}{{define "system"}}S{{end}}`); err == nil {
		t.Error("ParseTemplate accepts a template without user")
	}
	if DefaultTemplate().Version() != DefaultVersion {
		t.Errorf("DefaultTemplate().Version() = %q, want %q", DefaultTemplate().Version(), DefaultVersion)
	}
}

// TestKeyFromConfiguredVariable: the key comes from APIKeyEnv only; the
// client library's own OPENAI_API_KEY is not sent in its place.
func TestKeyFromConfiguredVariable(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-the-default-variable")
	t.Setenv("GAVEL_EMPTY_KEY", "")
	srv := judgetest.New(t)
	j, err := New(Config{Model: "m", BaseURL: srv.URL, APIKeyEnv: "GAVEL_EMPTY_KEY", CacheDir: "off"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Ask(context.Background(), mustRequest(t, j, Prompt{Output: "PASS"})); err != nil {
		t.Fatal(err)
	}
	if got := srv.Received()[0].Authorization; strings.Contains(got, "sk-from") {
		t.Errorf("Authorization = %q, want no key", got)
	}
}
