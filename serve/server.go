// Package serve is gavel's HTTP service: the Scale gym verifier API
// (POST /verifier, with sessions), online grading by the registered
// verifiers (POST /v1/grade), and the service routes (verifiers, health,
// readiness, Prometheus metrics). Rollouts are graded by pipeline's
// per-row code (pipeline.RowGrader), so a rollout gets the same verdict,
// checks and reward rows in a request as in `gavel grade`.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package serve

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/pipeline"
	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
)

// Config describes a server. Its zero value serves the verifiers set by
// Reload with the documented defaults.
type Config struct {
	// Tasks is the tasks table (inputs.LoadTasks), if any.
	Tasks inputs.Tasks
	// MaxBody bounds a request body, and each line of a JSON Lines body
	// (0: 16 MiB). A larger body is a 413.
	MaxBody int64
	// MaxInflight bounds the requests being served at once on the
	// grading and session routes (0: 4 per CPU); more are a 429.
	MaxInflight int
	// RequestTimeout bounds a request's whole life, from its first byte
	// to its last, streams included (0: 30s): past it the request is a
	// 503, or a stream ends with an error line.
	RequestTimeout time.Duration
	// Timeout bounds one verifier call, as grade's --timeout (0: 10s;
	// negative: no limit): the rollout gets status error, kind verifier,
	// "timed out after D". While MaxInflight calls are stuck past it, the
	// grading routes answer 503 and /readyz is not ready.
	Timeout time.Duration
	// Token, when set, is required as "Authorization: Bearer <token>" (the
	// scheme in any case) on every route but GET /healthz and /readyz:
	// without it, an unknown path or method is the same 401 as a
	// protected route.
	Token string
	// MaxMemory is the memory the server's requests, sessions and
	// compiled checks may hold (0: DefaultMaxMemory); see memory.go for
	// how it is shared out. `gavel serve` also sets the Go runtime's soft
	// limit from it.
	MaxMemory int64
	// MaxSessions and MaxSessionBytes bound the sessions stored with PUT
	// /sessions/{id} (0: 10,000 sessions, an eighth of MaxMemory); the
	// least recently used are evicted. A session counts the bytes it
	// holds.
	MaxSessions     int
	MaxSessionBytes int64
	// Logger receives one access log line per request (nil: none).
	Logger *slog.Logger
	// Registry receives the server's metrics (nil: a new registry, served
	// at /metrics).
	Registry *prometheus.Registry
	// Judge, when set, judges the rubric checks of /v1/grade as gavel
	// grade does (nil: they stay pending). Checks of /verifier requests
	// stay "PENDING", as the gym API documents.
	Judge *judge.Config
	// JudgePanel says how many judgements a rubric check gets and how
	// they make its verdict (pipeline.JudgePanel).
	JudgePanel pipeline.JudgePanel
	// Remote configures the remote verifiers of the specs served (cache,
	// --allow-impure); nil is the defaults.
	Remote *pipeline.RemoteConfig
	// Health computes the health flags of every rollout graded
	// (pipeline.Config.Health).
	Health bool
	// DefaultTask is the task of the rollouts of a trainer's request
	// (POST /get_reward, /verify) that names none and has no ?task= on
	// its URL ("": such a request is a 422).
	DefaultTask string
	// OnErrorReward, when set, is the reward /get_reward answers for a
	// rollout that could not be graded, instead of failing the request
	// (OpenRLHF has no "no score"; the value is the user's choice, not a
	// grade).
	OnErrorReward *float64
}

// Default limits.
const (
	DefaultMaxBody        = 16 << 20
	DefaultRequestTimeout = 30 * time.Second
)

// Server serves the routes. Create it with New, give it verifiers with
// Reload, and serve its Handler (or call Serve).
type Server struct {
	cfg      Config
	set      atomic.Pointer[verifierSet]
	inflight chan struct{}
	sessions *sessions
	metrics  *metrics
	mux      *http.ServeMux
	ready    atomic.Bool
	gyms     *gymCache
	mem      *memBudget        // request memory
	encoders [4]*encoders      // by bits: 1 the columns of flags, 2 those of turns
	tokenSum [sha256.Size]byte // of the token

	// Set by New to admitWait; tests wait longer.
	maxAdmitWait time.Duration
	// admitWaits counts the requests that found no place at once and
	// waited for one.
	admitWaits atomic.Int64
}

// verifierSet is one loaded set of verifiers, replaced whole by Reload.
type verifierSet struct {
	grader *pipeline.RowGrader
	list   []results.ManifestVerifier
	// turns holds the ids of the verifiers that score turns.
	turns map[string]bool
}

// New returns a server with cfg's defaults applied. It serves no verifier
// until Reload.
func New(cfg Config) *Server {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = 4 * runtime.NumCPU()
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 10000
	}
	if cfg.MaxMemory <= 0 {
		cfg.MaxMemory = DefaultMaxMemory
	}
	if cfg.MaxSessionBytes <= 0 {
		cfg.MaxSessionBytes = cfg.MaxMemory / 8
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	s := &Server{
		cfg:      cfg,
		inflight: make(chan struct{}, cfg.MaxInflight),
		sessions: newSessions(cfg.MaxSessions, cfg.MaxSessionBytes),
		metrics:  newMetrics(cfg.Registry),
		gyms:     newGymCache(cfg.MaxMemory / 16),
		mem:      newMemBudget(cfg.MaxMemory / 8),
		encoders: [4]*encoders{newEncoders(false, false), newEncoders(true, false), newEncoders(false, true), newEncoders(true, true)},

		maxAdmitWait: admitWait,
	}
	if cfg.Judge != nil {
		s.judgeMetrics(cfg.Registry)
	}
	s.remoteMetrics(cfg.Registry)
	s.tokenSum = sha256.Sum256([]byte(cfg.Token))
	s.routes()
	return s
}

// Reload replaces the verifiers for the requests that start after it
// returns; requests in flight finish with the set they started with. Two
// verifiers binding one task is a inputs.ConfigError, and the old set
// stays.
func (s *Server) Reload(vs []*verifiers.Verifier) error {
	g, err := pipeline.NewRowGrader(pipeline.RowConfig{Verifiers: vs, Tasks: s.cfg.Tasks, SourceFile: SourceFile, Timeout: s.cfg.Timeout, MaxStuck: s.cfg.MaxInflight, Judge: s.cfg.Judge,
		IndexPerByte: indexPerByte, IndexFloor: indexFloor, JudgePanel: s.cfg.JudgePanel, Remote: s.cfg.Remote, Health: s.cfg.Health})
	if err != nil {
		return err
	}
	set := &verifierSet{grader: g, list: g.Verifiers()}
	for _, v := range vs {
		if v.Turns {
			if set.turns == nil {
				set.turns = map[string]bool{}
			}
			set.turns[v.ID] = true
		}
	}
	s.set.Store(set)
	s.ready.Store(true)
	return nil
}

// Close makes the judge's verdicts durable and releases its cache, once
// Serve has returned. A set replaced by Reload keeps its cache open until
// the process ends, since requests may still use it.
func (s *Server) Close() error {
	if set := s.set.Load(); set != nil {
		return set.grader.Close()
	}
	return nil
}

// SourceFile is the source_file of the rows graded from requests, and the
// prefix of their default rollout ids (request#<index>).
const SourceFile = "request"

// Handler returns the server's routes.
func (s *Server) Handler() http.Handler { return s.mux }

// Serve serves on ln until ctx is done, then stops accepting, lets the
// requests in flight finish for at most drain, and returns. It returns
// after every connection is closed.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	hs := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: min(10*time.Second, s.cfg.RequestTimeout),
		// A request's whole life is bounded: its body must have arrived
		// within the request timeout (wrap bounds the rest).
		ReadTimeout:    s.cfg.RequestTimeout,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       nil,
		BaseContext:    func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.ready.Store(false)
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		hs.Close()
		err = fmt.Errorf("shutdown: requests still in flight after %s were cut", drain)
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.Handle("POST /verifier", s.wrap("/verifier", true, true, s.handleVerifier))
	m.Handle("PUT /sessions/{id}", s.wrap("/sessions", true, true, s.handlePutSession))
	m.Handle("DELETE /sessions/{id}", s.wrap("/sessions", true, false, s.handleDeleteSession))
	m.Handle("POST /v1/grade", s.wrap("/v1/grade", true, true, s.handleGrade))
	m.Handle("GET /v1/verifiers", s.wrap("/v1/verifiers", true, false, s.handleVerifiers))
	m.Handle("POST /get_reward", s.wrap("/get_reward", true, true, s.handleGetReward))
	m.Handle("POST /verify", s.wrap("/verify", true, true, s.handleVerify))
	m.Handle("GET /reverify_mode", s.wrap("/reverify_mode", true, false, s.handleReverifyMode))
	m.Handle("GET /healthz", s.wrap("/healthz", false, false, func(w http.ResponseWriter, r *http.Request, st *reqState) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}` + "\n"))
	}))
	m.Handle("GET /readyz", s.wrap("/readyz", false, false, func(w http.ResponseWriter, r *http.Request, st *reqState) {
		if !s.ready.Load() {
			writeError(w, http.StatusServiceUnavailable, "not ready", "the server is starting or shutting down")
			return
		}
		if n := s.set.Load().grader.Stuck(); n >= s.cfg.MaxInflight {
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("not ready: %d verifier calls are stuck past the timeout", n), "a verifier never returns: fix it, or restart the server")
			return
		}
		// Saturated: a new request would wait, then be a 429 or 503.
		if n := len(s.inflight); n >= s.cfg.MaxInflight {
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("not ready: saturated, %d of %d requests in flight", n, s.cfg.MaxInflight), "send to another replica, or raise --max-inflight")
			return
		}
		if used, waiting := s.mem.state(); waiting > 0 {
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("not ready: saturated, %d requests wait for request memory (%d MiB in use)", waiting, used>>20), "send to another replica, or raise --max-memory")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ready"}` + "\n"))
	}))
	promHandler := promhttpHandler(s.cfg.Registry)
	m.Handle("GET /metrics", s.wrap("/metrics", true, false, func(w http.ResponseWriter, r *http.Request, st *reqState) {
		promHandler.ServeHTTP(w, r)
	}))
	// The catch-all asks for the token like the protected routes: without
	// it, an unknown route and a known one answer the same 401, and
	// neither a 404's list of routes nor a 405's Allow tells a stranger
	// what the server serves.
	m.Handle("/", s.wrap("other", true, false, func(w http.ResponseWriter, r *http.Request, st *reqState) {
		if allow := allowed(r.URL.Path); allow != "" {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path, "use "+allow)
			return
		}
		writeError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path,
			"routes: POST /verifier, PUT|DELETE /sessions/{id}, POST /v1/grade, GET /v1/verifiers, POST /get_reward, POST /verify, GET /reverify_mode, /healthz, /readyz, /metrics")
	}))
	s.mux = m
}

// allowed returns the methods of a known route's path, for a 405's Allow
// header ("" for an unknown path).
func allowed(path string) string {
	switch path {
	case "/verifier", "/v1/grade", "/get_reward", "/verify":
		return "POST"
	case "/v1/verifiers", "/healthz", "/readyz", "/metrics", "/reverify_mode":
		return "GET, HEAD"
	}
	if id, ok := strings.CutPrefix(path, "/sessions/"); ok && id != "" && !strings.Contains(id, "/") {
		return "PUT, DELETE"
	}
	return ""
}

// reqState is one request's response writer and what its handler tells
// the access log. It is reused from request to request.
type reqState struct {
	w        statusWriter
	rollouts int64 // added to atomically: a stream grades on several goroutines
	// acct is the request's charge on the request memory (limited routes
	// only); its context ends at the request's deadline.
	acct memAccount
}

var reqStates = sync.Pool{New: func() any { return new(reqState) }}

// statusWriter records the status code and bytes written.
type statusWriter struct {
	http.ResponseWriter
	code  int
	bytes int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

var idPrefix = func() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

var reqSeq atomic.Uint64

// maxClientID bounds the length of a client's X-Request-Id in the log.
const maxClientID = 64

// clientRequestID returns a client's X-Request-Id as the access log keeps
// it: at most maxClientID bytes, each byte outside printable ASCII (control
// characters, spaces, the bytes of non-ASCII text) replaced by '_'.
func clientRequestID(v string) string {
	if len(v) > maxClientID {
		v = v[:maxClientID]
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c > '~' {
			b := []byte(v)
			for j := i; j < len(b); j++ {
				if b[j] <= ' ' || b[j] > '~' {
					b[j] = '_'
				}
			}
			return string(b)
		}
	}
	return v
}

// admitWait is how long a request waits for a place among the
// MaxInflight before it is a 429: long enough to ride out a burst (or a
// pause of the process), short against a client's timeout.
const admitWait = 100 * time.Millisecond

// wrap adds to a handler: the token check (auth), the in-flight limit
// (limited), panic recovery, metrics and the access log. The route's
// metric children and log attributes are made here, once.
func (s *Server) wrap(route string, auth, limited bool, h func(http.ResponseWriter, *http.Request, *reqState)) http.Handler {
	rm := s.metrics.route(route)
	var log *slog.Logger
	if s.cfg.Logger != nil {
		log = s.cfg.Logger.With(slog.String("route", route))
	}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		st := reqStates.Get().(*reqState)
		*st = reqState{w: statusWriter{ResponseWriter: rw}}
		w := &st.w
		// The server's own id names the request in the log, the response
		// header and bug hints; a client's X-Request-Id is logged beside
		// it, never in its place, so a client cannot forge or collide with
		// the ids of other requests.
		var b [40]byte
		id := string(strconv.AppendUint(append(append(b[:0], idPrefix...), '-'), reqSeq.Add(1), 10))
		w.Header()["X-Request-Id"] = []string{id}
		clientID := clientRequestID(r.Header.Get("X-Request-Id"))
		s.metrics.inflight.Inc()
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				if w.code == 0 {
					writeError(w, http.StatusInternalServerError, fmt.Sprintf("internal error: %v", p), bugHint(w))
				}
			}
			s.metrics.inflight.Dec()
			code := w.code
			if code == 0 {
				code = http.StatusOK
			}
			d := time.Since(start)
			rm.observe(code, d)
			if log != nil {
				attrs := []slog.Attr{slog.String("request_id", id), slog.String("method", r.Method),
					slog.Int("status", code), slog.Int64("rollouts", st.rollouts), slog.Int64("bytes", w.bytes),
					slog.Float64("duration_ms", float64(d.Microseconds())/1000), slog.String("remote", r.RemoteAddr)}
				if clientID != "" {
					attrs = append(attrs, slog.String("client_request_id", clientID))
				}
				log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
			}
			*st = reqState{}
			reqStates.Put(st)
		}()
		if auth && s.cfg.Token != "" && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gavel"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token", "send Authorization: Bearer <token>")
			return
		}
		if limited {
			if !s.admit(r) {
				w.Header().Set("Retry-After", "1")
				writeError(w, http.StatusTooManyRequests, fmt.Sprintf("more than %d requests in flight", s.cfg.MaxInflight), "retry after a second, or raise --max-inflight")
				return
			}
			defer func() { <-s.inflight }()
			// The request's whole life, waiting included, is bounded:
			// reading its body, grading and writing stop at the
			// deadline, or when its client goes (the account's reads
			// check both).
			st.acct = s.mem.open(r.Context(), start.Add(s.cfg.RequestTimeout))
			defer st.acct.close()
		}
		h(w, r, st)
	})
}

// admit takes a place among the requests in flight, waiting at most
// admitWait for one.
func (s *Server) admit(r *http.Request) bool {
	select {
	case s.inflight <- struct{}{}:
		return true
	default:
	}
	s.admitWaits.Add(1)
	t := time.NewTimer(s.maxAdmitWait)
	defer t.Stop()
	select {
	case s.inflight <- struct{}{}:
		return true
	case <-t.C:
	case <-r.Context().Done():
	}
	return false
}

// authorized reports whether r carries the token as "Authorization:
// Bearer <token>". The scheme is case-insensitive (RFC 9110 section
// 11.1); the token is not. The SHA-256 sums of the token sent and of the
// expected one are compared in constant time: the time taken depends on
// neither the token nor its length.
func (s *Server) authorized(r *http.Request) bool {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	got := sha256.Sum256([]byte(strings.TrimLeft(token, " ")))
	ok := subtle.ConstantTimeCompare(got[:], s.tokenSum[:]) == 1
	return ok && strings.EqualFold(scheme, "Bearer")
}

// errorBody is every error response, and the last line of a stream cut
// by an error. Hint is never empty: it says what to do next.
type errorBody struct {
	Error string `json:"error"`
	Hint  string `json:"hint"`
}

// bodyHint is the hint of a request body /v1/grade cannot read.
const bodyHint = `one rollout {"task_id": ...}, a JSON array of them, or JSON Lines with Content-Type: application/x-ndjson`

// bugHint is the hint of an error only a bug can cause; it names the
// request's id, which the access log holds too.
func bugHint(w http.ResponseWriter) string {
	return "a bug in gavel: report it with the request id " + w.Header().Get("X-Request-Id") + " and the server's log"
}

func writeError(w http.ResponseWriter, code int, msg, hint string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	b, _ := json.Marshal(errorBody{Error: msg, Hint: hint})
	w.Write(append(b, '\n'))
}

func (s *Server) handleVerifiers(w http.ResponseWriter, r *http.Request, st *reqState) {
	set := s.set.Load()
	list := []results.ManifestVerifier{}
	if set != nil {
		list = set.list
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(struct {
		Verifiers []results.ManifestVerifier `json:"verifiers"`
	}{list})
}

// bufPool holds response buffers.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}
