// Package remote asks verifiers that live elsewhere: HTTP services that
// grade a rollout (the gavel protocol) and NeMo Gym resources servers
// (POST /verify, GET /reverify_mode). Its requests keep the judge's
// discipline, through the same mechanism (package judge/call): a
// concurrency limit per verifier, retries of 429, 5xx and reset
// connections honouring Retry-After, a timeout per request, a durable cache
// of answers keyed by the verifier's id, URL (without secrets), declared
// version and the request body, and counters.
//
// A failure is an error, never a score: a request that fails fails its
// rollouts (the caller makes them rows with status error), and an answer
// that is not one of the protocol's shapes is the rollout's error naming
// the field.
//
// The package knows nothing of runs: the caller builds bodies, asks in
// the order and number it decides (budget, batches), and decides what a
// failure means.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gavelhq/gavel/judge/call"
	"github.com/gavelhq/gavel/verifiers"
)

// The protocols.
const (
	ProtocolGavel   = "gavel"
	ProtocolNemoGym = "nemo-gym"
)

// Defaults of a verifier's settings and of Config.
const (
	DefaultTimeout     = time.Minute
	DefaultConcurrency = 16
	// MaxRetryAfter is the longest Retry-After waited.
	MaxRetryAfter = 5 * time.Minute
	// maxAnswer bounds an answer's body.
	maxAnswer = 64 << 20
)

// Config configures a Caller.
type Config struct {
	// CacheDir is the answer cache's directory: "" for gavel/remote under
	// os.UserCacheDir(), "off" for none.
	CacheDir string
	// AllowImpure lets verifiers not declared stateless run; their answers
	// are not cached.
	AllowImpure bool
	// MaxRetries (0: 4, negative: none), Backoff and MaxBackoff as the
	// judge's (call.Policy.WithDefaults).
	MaxRetries          int
	Backoff, MaxBackoff time.Duration
	// HTTPClient, if set, makes the requests (tests inject one); ConnectTo
	// then does not apply.
	HTTPClient *http.Client
	// ConnectTo sends the requests of a URL whose host and port (the
	// scheme's default when it names none) are a key to the address its
	// value names instead, as curl's --connect-to does: "host:port" ->
	// "host:port". The URL, as written, stays the verifier's identity (its
	// fingerprint and its cache keys) and the requests' Host. nil reads
	// $GAVEL_REMOTE_CONNECT_TO (ParseConnectTo); gavel.grade in Python
	// names there the port, picked per run, of the service its functions
	// run in, behind a URL that is the same every run.
	ConnectTo map[string]string
}

// ConnectToEnv is the environment variable Config.ConnectTo is read from
// when nil.
const ConnectToEnv = "GAVEL_REMOTE_CONNECT_TO"

// ParseConnectTo reads a list of HOST:PORT=ADDR:PORT pairs separated by
// commas (Config.ConnectTo); "" is none.
func ParseConnectTo(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		from, to, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want HOST:PORT=ADDR:PORT", pair)
		}
		for _, hp := range []string{from, to} {
			host, port, err := net.SplitHostPort(hp)
			if err != nil || host == "" || port == "" {
				return nil, fmt.Errorf("%q: %q is not HOST:PORT", pair, hp)
			}
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("%q: port %q is not a number from 1 to 65535", pair, port)
			}
		}
		m[strings.ToLower(from)] = to
	}
	return m, nil
}

// Stats counts a Caller's work.
type Stats struct {
	Probes, Requests, CacheHits, Retries, Failures int64
}

// Caller asks a run's remote verifiers. It is safe for concurrent use.
type Caller struct {
	cfg     Config
	cache   *call.Cache[Answer] // nil when off
	n       call.Counters
	mu      sync.Mutex
	clients map[*verifiers.Verifier]*Client

	// Hooks, replaced by tests.
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func() float64
	now    func() time.Time
}

// cacheLayout names the answer cache's logs.
var cacheLayout = call.Layout{Name: "remote cache", Magic: "GVREMOT1", Prefix: "answers"}

// New returns a Caller. It opens the cache but makes no request.
func New(cfg Config) (*Caller, error) {
	pol := call.Policy{MaxRetries: cfg.MaxRetries, Backoff: cfg.Backoff, MaxBackoff: cfg.MaxBackoff}.WithDefaults()
	cfg.MaxRetries, cfg.Backoff, cfg.MaxBackoff = pol.MaxRetries, pol.Backoff, pol.MaxBackoff
	if cfg.ConnectTo == nil {
		m, err := ParseConnectTo(os.Getenv(ConnectToEnv))
		if err != nil {
			return nil, fmt.Errorf("$%s: %w", ConnectToEnv, err)
		}
		cfg.ConnectTo = m
	}
	c := &Caller{cfg: cfg, clients: map[*verifiers.Verifier]*Client{}, sleep: call.SleepCtx, jitter: rand.Float64, now: time.Now}
	if cfg.CacheDir != "off" {
		dir, err := call.CacheDir(cfg.CacheDir, "remote")
		if err != nil {
			return nil, fmt.Errorf("remote cache: %w", err)
		}
		ch, err := call.Open[Answer](dir, cacheLayout)
		if err != nil {
			return nil, err
		}
		c.cache = ch
	}
	return c, nil
}

// Stats returns the caller's counters.
func (c *Caller) Stats() Stats {
	return Stats{Probes: c.n.Probes.Load(), Requests: c.n.Requests.Load(), CacheHits: c.n.CacheHits.Load(),
		Retries: c.n.Retries.Load(), Failures: c.n.Failures.Load()}
}

// Sync makes the answers cached so far durable.
func (c *Caller) Sync() error {
	if c.cache == nil {
		return nil
	}
	return c.cache.Sync()
}

// Close syncs and closes the cache.
func (c *Caller) Close() error {
	if c.cache == nil {
		return nil
	}
	return c.cache.Close()
}

// CheckSettings validates a remote verifier's settings (without network).
func CheckSettings(s *verifiers.RemoteSettings) error {
	switch s.Protocol {
	case ProtocolGavel, ProtocolNemoGym:
	default:
		return fmt.Errorf("protocol %q: want gavel or nemo-gym", s.Protocol)
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %s: want an http:// or https:// URL", call.RedactURL(s.URL))
	}
	if s.Version == "" {
		return errors.New("no version: declare the service's version (version: 1), part of the fingerprint and the cache key")
	}
	if s.Batch > 1 && s.Protocol == ProtocolNemoGym {
		return errors.New("batch: a NeMo Gym resources server verifies one rollout per request")
	}
	if s.Pure && s.Protocol == ProtocolNemoGym {
		return errors.New("pure: a NeMo Gym resources server says itself whether it is stateless (GET /reverify_mode)")
	}
	return nil
}

// Client asks one remote verifier.
type Client struct {
	c       *Caller
	v       *verifiers.Verifier
	s       verifiers.RemoteSettings
	post    string // the URL requests are POSTed to, as written
	mode    string // nemo-gym: GET /reverify_mode's URL
	shown   string // post without credentials or query, for messages
	token   string
	red     call.Redactor
	lim     *call.Queue
	timeout time.Duration
	keyBase [32]byte
	hc      *http.Client
	impure  atomic.Bool // asked although not stateless (AllowImpure): nothing cached
	// unsure: a NeMo Gym server under AllowImpure, whose answers are not
	// read from the cache until its probe said it is stateless.
	unsure    bool
	stateless atomic.Bool
}

// For returns the client of remote verifier v, made on first use. A
// gavel-protocol verifier not declared pure is refused here unless the
// caller allows impure verifiers.
func (c *Caller) For(v *verifiers.Verifier) (*Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.clients[v]; cl != nil {
		return cl, nil
	}
	s := *v.Remote
	if err := CheckSettings(&s); err != nil {
		return nil, fmt.Errorf("remote verifier %s: %w", v.ID, err)
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Concurrency <= 0 {
		s.Concurrency = DefaultConcurrency
	}
	if s.Batch <= 0 {
		s.Batch = 1
	}
	if s.Threshold <= 0 {
		s.Threshold = 1
	}
	cl := &Client{c: c, v: v, s: s, post: s.URL, lim: call.NewQueue(s.Concurrency), timeout: s.Timeout}
	if s.Protocol == ProtocolNemoGym {
		cl.post = joinPath(s.URL, "verify")
		cl.mode = joinPath(s.URL, "reverify_mode")
	}
	cl.shown = call.RedactURL(cl.post)
	if s.TokenEnv != "" {
		cl.token = os.Getenv(s.TokenEnv)
		if cl.token == "" {
			return nil, fmt.Errorf("remote verifier %s: $%s is empty or unset (token_env names the variable holding the service's token)", v.ID, s.TokenEnv)
		}
		cl.red = call.Redactor(cl.token)
	}
	cl.unsure = s.Protocol == ProtocolNemoGym && c.cfg.AllowImpure
	if s.Protocol == ProtocolGavel && !s.Pure {
		if !c.cfg.AllowImpure {
			return nil, fmt.Errorf("remote verifier %s at %s is not declared pure: its answers may change when asked again; declare pure: true if the service's answer is a function of the rollout, or run with --allow-impure (its answers are then neither cached nor reused)", v.ID, cl.shown)
		}
		cl.impure.Store(true)
	}
	h := sha256.New()
	for _, x := range []string{"gavel-remote-key-1", v.ID, s.Protocol, call.RedactURL(s.URL), s.Version} {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(x)))
		h.Write(n[:])
		h.Write([]byte(x))
	}
	h.Sum(cl.keyBase[:0])
	cl.hc = c.cfg.HTTPClient
	if cl.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = s.Concurrency
		tr.MaxConnsPerHost = s.Concurrency
		if len(c.cfg.ConnectTo) > 0 {
			tr.DialContext = connectTo(c.cfg.ConnectTo)
			proxy := tr.Proxy
			tr.Proxy = func(r *http.Request) (*url.URL, error) {
				if _, ok := c.cfg.ConnectTo[strings.ToLower(canonicalAddr(r.URL))]; ok || proxy == nil {
					return nil, nil // the address named is where to connect, never through a proxy
				}
				return proxy(r)
			}
		}
		cl.hc = &http.Client{Transport: tr}
	}
	c.clients[v] = cl
	return cl, nil
}

// connectTo returns a dialer that connects to m[addr] instead of addr
// when there is one (Config.ConnectTo).
func connectTo(m map[string]string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := m[strings.ToLower(addr)]; ok {
			addr = to
		}
		return d.DialContext(ctx, network, addr)
	}
}

// canonicalAddr returns u's host:port, the port the scheme's default
// when u names none.
func canonicalAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// joinPath returns raw with "/"+p appended to its path, its query kept.
func joinPath(raw, p string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + p
	u.RawPath = ""
	return u.String()
}

// Settings returns the verifier's settings with defaults applied.
func (cl *Client) Settings() verifiers.RemoteSettings { return cl.s }

// Server returns the URL requests go to, without credentials or query.
func (cl *Client) Server() string { return cl.shown }

// Impure reports whether the verifier runs although not stateless.
func (cl *Client) Impure() bool { return cl.impure.Load() }

// AppendBody appends r's request body in the verifier's protocol.
func (cl *Client) AppendBody(b []byte, r *verifiers.Rollout) []byte {
	if cl.s.Protocol == ProtocolNemoGym {
		return AppendNemoGymBody(b, r)
	}
	return AppendGavelBody(b, r)
}

// Key returns the cache key of one rollout's body.
func (cl *Client) Key(body []byte) call.Key {
	h := sha256.New()
	h.Write(cl.keyBase[:])
	h.Write(body)
	var k call.Key
	h.Sum(k[:0])
	return k
}

// RepeatKey is the cache key of the k-th asking (from 1) of a rollout's
// body under --verify-repeats: the key of the body followed by the
// repeat's number. The first asking has the body's own key (Key), so that
// a run without repeats shares its answers.
func (cl *Client) RepeatKey(body []byte, k int) call.Key {
	b := append(slices.Clip(body), "\x00gavel verify repeat "...)
	return cl.Key(strconv.AppendInt(b, int64(k), 10))
}

// Cached returns the cached answer of key k (never for an impure verifier).
func (cl *Client) Cached(k call.Key) (Answer, bool) {
	c := cl.c
	if c.cache == nil || cl.impure.Load() || (cl.unsure && !cl.stateless.Load()) {
		return Answer{}, false
	}
	a, ok := c.cache.Get(k)
	if ok {
		c.n.CacheHits.Add(1)
	}
	return a, ok
}

// put caches the answers that are not failures.
func (cl *Client) put(keys []call.Key, as []Answer) {
	c := cl.c
	if c.cache == nil || cl.impure.Load() {
		return
	}
	for i := range as {
		if as[i].Err == "" {
			// A write error is kept by the cache and returned by Sync.
			_ = c.cache.Put(keys[i], as[i])
		}
	}
}

// Probe asks a NeMo Gym server's GET /reverify_mode and refuses a server
// that is not stateless (the answer compared without regard to case),
// unless impure verifiers are allowed; for the gavel protocol it does
// nothing (the first request is the probe). It returns an *Error.
func (cl *Client) Probe(ctx context.Context) error {
	if cl.s.Protocol != ProtocolNemoGym {
		return nil
	}
	c := cl.c
	c.n.Probes.Add(1)
	actx, cancel := context.WithTimeout(ctx, cl.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodGet, cl.mode, nil)
	if err != nil {
		return cl.fail(KindConnection, 0, "probe: "+err.Error())
	}
	cl.authorize(req)
	resp, err := cl.hc.Do(req)
	if err != nil {
		return cl.probeError(cl.classify(ctx, actx, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return cl.probeError(cl.classify(ctx, actx, err))
	}
	if resp.StatusCode != http.StatusOK {
		return cl.probeError(cl.statusError(resp, body))
	}
	var mode string
	if err := json.Unmarshal(body, &mode); err != nil {
		return cl.fail(KindInvalid, resp.StatusCode, "probe: GET /reverify_mode answered "+call.Quote(cl.red.Redact(string(body)))+", not a JSON string")
	}
	if !strings.EqualFold(mode, "stateless") {
		if !c.cfg.AllowImpure {
			e := cl.fail(KindImpure, resp.StatusCode, fmt.Sprintf("reverify_mode is %q, not stateless: its answers may change when asked again; run with --allow-impure to ask it anyway (its answers are then neither cached nor reused)", mode))
			return e
		}
		cl.impure.Store(true)
		return nil
	}
	cl.stateless.Store(true)
	return nil
}

// probeError prefixes a probe's error message.
func (cl *Client) probeError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		e.Msg = strings.Replace(e.Msg, ": ", ": probe: ", 1)
	}
	return err
}

// authorize adds the token, if any.
func (cl *Client) authorize(req *http.Request) {
	if cl.token != "" {
		req.Header.Set("Authorization", "Bearer "+cl.token)
	}
}

// Ask sends one request holding bodies (at most the verifier's batch)
// and returns one answer per body, in order: an answer's Err says that
// rollout failed (a refusal, a failure the service reported, an answer
// of the wrong shape). A request that failed as a whole (after retries)
// is an *Error; when ctx ends, ctx's error. Answers that are not failures
// are cached under keys.
func (cl *Client) Ask(ctx context.Context, bodies [][]byte, keys []call.Key) ([]Answer, error) {
	return cl.AskInTurn(ctx, cl.Enter(), bodies, keys)
}

// Enter takes the next place in the queue for the client's concurrency
// slots: requests asked with AskInTurn are sent in the order of their
// Enter, however their goroutines are scheduled.
func (cl *Client) Enter() *call.Ticket { return cl.lim.Enter() }

// AskInTurn is Ask waiting for the slot of t, a ticket of this client's
// Enter, which it gives back.
func (cl *Client) AskInTurn(ctx context.Context, t *call.Ticket, bodies [][]byte, keys []call.Key) ([]Answer, error) {
	c := cl.c
	if err := t.Wait(ctx); err != nil {
		return nil, err
	}
	defer t.Done()
	var payload []byte
	if cl.s.Batch > 1 {
		size := len(bodies) + 1
		for _, b := range bodies {
			size += len(b)
		}
		payload = make([]byte, 0, size)
		payload = append(payload, '[')
		for i, b := range bodies {
			if i > 0 {
				payload = append(payload, ',')
			}
			payload = append(payload, b...)
		}
		payload = append(payload, ']')
	} else {
		payload = bodies[0]
	}
	p := call.Policy{MaxRetries: c.cfg.MaxRetries, Backoff: c.cfg.Backoff, MaxBackoff: c.cfg.MaxBackoff, MaxRetryAfter: MaxRetryAfter,
		Sleep: c.sleep, Jitter: c.jitter}
	var as []Answer
	out, err := p.Do(ctx, func() error {
		var err error
		as, err = cl.attempt(ctx, payload, len(bodies))
		return err
	}, func() { c.n.Retries.Add(1) })
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Retries = out.Retries
			if out.TooLong > 0 {
				e.Msg += fmt.Sprintf("; the service asks to retry after %v, more than %v", out.TooLong, MaxRetryAfter)
			}
		}
		if ctx.Err() == nil {
			c.n.Failures.Add(1)
		}
		return nil, err
	}
	cl.put(keys, as)
	return as, nil
}

// attempt sends payload once.
func (cl *Client) attempt(ctx context.Context, payload []byte, n int) ([]Answer, error) {
	c := cl.c
	actx, cancel := context.WithTimeout(ctx, cl.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, cl.post, bytes.NewReader(payload))
	if err != nil {
		return nil, cl.fail(KindConnection, 0, "request: "+cl.red.Redact(err.Error()))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	cl.authorize(req)
	c.n.Requests.Add(1)
	resp, err := cl.hc.Do(req)
	if err != nil {
		return nil, cl.classify(ctx, actx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, cl.classify(ctx, actx, err)
	}
	if len(body) > maxAnswer {
		return nil, cl.fail(KindInvalid, resp.StatusCode, fmt.Sprintf("answer longer than %d bytes", maxAnswer))
	}
	if resp.StatusCode != http.StatusOK {
		e := cl.statusError(resp, body)
		if e.Kind == KindRefused {
			// The service refused the rollouts themselves: each is a row
			// error, not a failed request.
			as := make([]Answer, n)
			for i := range as {
				as[i].Err = e.Error()
			}
			return as, nil
		}
		return nil, e
	}
	var as []Answer
	if cl.s.Protocol == ProtocolNemoGym {
		as = []Answer{parseNemoGym(body, cl.s.Threshold)}
	} else {
		as = parseGavel(body, n, cl.s.Threshold)
	}
	for i := range as {
		if as[i].Err == "" && !cl.s.Flags && as[i].HasFlags() {
			as[i] = Answer{Err: "the answer holds flags (kind flag), which this verifier does not declare: add flags: true to its remote: settings"}
		}
		if as[i].Err != "" {
			as[i].Err = fmt.Sprintf("remote verifier %s at %s: %s", cl.v.ID, cl.shown, cl.red.Redact(as[i].Err))
		}
	}
	return as, nil
}

// Kind classifies why a request failed.
type Kind string

// The kinds of failure.
const (
	KindConnection Kind = "connection"
	KindTimeout    Kind = "timeout"
	KindRateLimit  Kind = "rate limited"
	KindServer     Kind = "server error"
	KindAuth       Kind = "not authorized"
	KindNotFound   Kind = "not found"
	KindRefused    Kind = "refused"
	KindStatus     Kind = "unexpected status"
	KindInvalid    Kind = "invalid answer"
	KindImpure     Kind = "not stateless"
)

// Error is a failed request or probe; its message names the verifier and
// the service (without credentials or query) and never holds the token.
type Error struct {
	Kind       Kind
	HTTPStatus int
	Msg        string
	Retries    int

	retry      bool
	retryAfter time.Duration
}

// Error returns "remote verifier ID at URL: MSG (HTTP STATUS) after N
// retries".
func (e *Error) Error() string { return call.FailureText(e.Msg, e.HTTPStatus, e.Retries) }

// Retry reports whether the request may be sent again (call.Retryable).
func (e *Error) Retry() (bool, time.Duration) { return e.retry, e.retryAfter }

func (cl *Client) fail(kind Kind, status int, what string) *Error {
	return &Error{Kind: kind, HTTPStatus: status, Msg: fmt.Sprintf("remote verifier %s at %s: %s", cl.v.ID, cl.shown, what)}
}

// classify turns a transport error into an *Error, or returns ctx's error.
func (cl *Client) classify(ctx, actx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return cl.fail(KindTimeout, 0, fmt.Sprintf("no answer within %v", cl.timeout))
	}
	if what, retry, ok := call.Transport(err); ok {
		e := cl.fail(KindConnection, 0, cl.red.Redact(what))
		e.retry = retry
		return e
	}
	return cl.fail(KindConnection, 0, "request failed: "+cl.red.Redact(err.Error()))
}

// statusError classifies a response other than 200.
func (cl *Client) statusError(resp *http.Response, body []byte) *Error {
	status := resp.StatusCode
	detail := errorText(body)
	if detail == "" {
		detail = http.StatusText(status)
	}
	detail = call.Quote(cl.red.Redact(detail))
	var e *Error
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		what := "not authorized"
		if cl.s.TokenEnv != "" {
			what += " (check the token in $" + cl.s.TokenEnv + ")"
		}
		e = cl.fail(KindAuth, status, what+": "+detail)
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		e = cl.fail(KindNotFound, status, "no such route (is the URL right?): "+detail)
	case status == http.StatusTooManyRequests:
		e = cl.fail(KindRateLimit, status, "rate limited: "+detail)
		e.retry = true
	case status == http.StatusRequestTimeout:
		e = cl.fail(KindTimeout, status, "service timed out: "+detail)
		e.retry = true
	case status >= 500:
		e = cl.fail(KindServer, status, "service error: "+detail)
		e.retry = true
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity || status == http.StatusRequestEntityTooLarge:
		e = cl.fail(KindRefused, status, "refused the rollout: "+detail)
	default:
		e = cl.fail(KindStatus, status, "unexpected status: "+detail)
	}
	e.retryAfter = call.RetryAfter(resp.Header, cl.c.now())
	return e
}

// errorText returns the "error" (or "detail") member of a JSON error
// body, else the body's text.
func errorText(body []byte) string {
	var m map[string]any
	if json.Unmarshal(body, &m) == nil {
		for _, k := range []string{"error", "detail", "message"} {
			switch x := m[k].(type) {
			case string:
				return x
			case nil:
			default:
				b, _ := json.Marshal(x)
				return string(b)
			}
		}
	}
	return strings.TrimSpace(string(body))
}

// formatScore writes a score as outputs do.
func formatScore(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
