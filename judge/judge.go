// Package judge asks an LLM, through any OpenAI-compatible chat completions
// server, to grade an agent's output against a rubric, and returns a
// Verdict: a score in [0, 1], issues and a suggestion.
//
// A judgement that fails (unreachable server, timeout, HTTP error after
// retries, refusal, a reply that is not a verdict) is an *Error, never a
// score. Verdicts are cached on disk by everything that determines them
// (model, template, rendered messages, sampling settings, response mode), so
// grading the same output again makes no request.
//
// The package knows nothing of datasets or serving: the caller renders a
// Request from a Prompt, asks, and decides what a failure means for its row.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package judge

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gavelhq/gavel/judge/call"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// ResponseMode is how the verdict's JSON shape is asked of the server.
type ResponseMode string

// The response modes. In auto mode (the zero value) a judge starts with
// ModeSchema; a 400 response that names response_format (in its message or
// its param) moves the judge, for every later request, one step down,
// schema -> json -> text, and the request is sent again at once in the new
// mode (not counted as a retry). The mode only ever moves down, so a run
// against one server settles on the same mode every time.
const (
	// ModeAuto starts with ModeSchema and downgrades as described above.
	ModeAuto ResponseMode = "auto"
	// ModeSchema sends a strict JSON schema (response_format json_schema).
	ModeSchema ResponseMode = "schema"
	// ModeJSON sends response_format json_object.
	ModeJSON ResponseMode = "json"
	// ModeText sends no response_format; the verdict is the first JSON
	// object in the reply's text.
	ModeText ResponseMode = "text"
)

// modes lists the concrete modes, strongest first; a mode's index is what a
// judge stores.
var modes = [...]ResponseMode{ModeSchema, ModeJSON, ModeText}

// Seed is the sampling seed sent with every request, with temperature 0.
const Seed = 1

// Defaults of Config.
const (
	DefaultBaseURL     = "https://api.openai.com/v1"
	DefaultAPIKeyEnv   = "OPENAI_API_KEY"
	DefaultThreshold   = 0.8
	DefaultConcurrency = 16
	DefaultTimeout     = 2 * time.Minute
	DefaultMaxRetries  = call.DefaultMaxRetries
	DefaultBackoff     = call.DefaultBackoff
	DefaultMaxBackoff  = call.DefaultMaxBackoff
)

// MaxRetryAfter is the longest Retry-After a judge waits; a server asking
// for more ends the judgement with its error.
const MaxRetryAfter = 5 * time.Minute

// Config configures a Judge. Its zero value, with a Model, judges with the
// OpenAI API and the key in OPENAI_API_KEY.
type Config struct {
	// Model is the judge model's name on the server. Required.
	Model string
	// BaseURL is the server's API root; default DefaultBaseURL.
	BaseURL string
	// APIKeyEnv names the environment variable holding the API key; default
	// OPENAI_API_KEY. An empty key is sent as none (fine for local servers).
	APIKeyEnv string
	// Threshold is the score a verdict needs to pass (score >= threshold);
	// default 0.8.
	Threshold float64
	// Concurrency is the most requests in flight at once to one server
	// (judges derived for another, Override.URL, have their own); default 16.
	Concurrency int
	// Timeout bounds each request; default 2 minutes. A request that times
	// out is not retried.
	Timeout time.Duration
	// MaxRetries is how many times a request is retried after a 429, a 5xx
	// or a reset connection; default 4, negative for none.
	MaxRetries int
	// Backoff is the base of the exponential backoff between retries:
	// before retry n (from 0) a judge waits a uniformly random time in
	// [0, min(MaxBackoff, Backoff*2^n)) ("full jitter"), or what the
	// response's Retry-After asks. Default 500 ms.
	Backoff time.Duration
	// MaxBackoff caps the backoff; default 30 s.
	MaxBackoff time.Duration
	// CacheDir is the verdict cache's directory: "" for gavel/judge under
	// os.UserCacheDir(), "off" for no cache.
	CacheDir string
	// Template is the path of a template file replacing the built-in one
	// (see Template); "" for the built-in gavel-judge-v1.
	Template string
	// ResponseMode is how the verdict's shape is asked for; default ModeAuto.
	ResponseMode ResponseMode
	// HTTPClient, if set, makes the requests (tests inject one); by default
	// a client keeping Concurrency idle connections to the server.
	HTTPClient *http.Client
}

// Stats counts a judge's work since New.
type Stats struct {
	// Probes is the number of probes of the server (Probe calls),
	// successful or not; Requests does not count them.
	Probes int64
	// Requests is the number of chat completion requests sent, retries
	// included, probes not.
	Requests int64
	// CacheHits is the number of judgements answered from the cache.
	CacheHits int64
	// Retries is the number of requests sent again after a 429, 5xx or
	// reset connection.
	Retries int64
	// Failures is the number of judgements that ended in an error (a
	// cancelled context is not one).
	Failures int64
	// PromptTokens and CompletionTokens add up the usage servers reported.
	PromptTokens, CompletionTokens int64
}

// Judge grades prompts with one model and template. It is safe for
// concurrent use. Judges derived with With share the client, the
// concurrency limit, the cache, the stats and the response mode of the
// judge they come from.
type Judge struct {
	c         *core
	model     string
	tmpl      *Template
	threshold float64
}

// counters are the stats of every judge derived from one New, whatever
// its server.
type counters struct {
	call.Counters
	promptTokens, completionTokens atomic.Int64
}

// peers holds the cores of one New by server URL, so that judges derived
// for another server (Override.URL) share its client, concurrency limit and
// response mode, and every core shares the cache and the counters.
type peers struct {
	mu  sync.Mutex
	cfg Config // with defaults applied
	key string
	m   map[string]*core
	n   *counters
}

// core is what judges derived with With share.
type core struct {
	client     openai.Client
	server     string        // BaseURL without credentials, for messages
	keyEnv     string        // the key's variable, for messages
	red        call.Redactor // removes the key from any text leaving the package
	sem        *call.Queue
	cache      *call.Cache[Verdict] // nil when off
	auto       bool
	mode       atomic.Int32 // index in modes
	timeout    time.Duration
	maxRetries int
	backoff    time.Duration
	maxBackoff time.Duration

	*counters // shared by every core of one New
	peers     *peers

	// Hooks, replaced by tests.
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func() float64 // uniform in [0, 1)
	now    func() time.Time
}

// New returns a judge configured by cfg. It opens the cache (unless
// cfg.CacheDir is "off") and reads the template file, but makes no
// request: call Probe to check the server.
func New(cfg Config) (*Judge, error) {
	if cfg.Model == "" {
		return nil, errors.New("judge: no model")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = DefaultAPIKeyEnv
	}
	if cfg.Threshold == 0 {
		cfg.Threshold = DefaultThreshold
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	pol := call.Policy{MaxRetries: cfg.MaxRetries, Backoff: cfg.Backoff, MaxBackoff: cfg.MaxBackoff}.WithDefaults()
	cfg.MaxRetries, cfg.Backoff, cfg.MaxBackoff = pol.MaxRetries, pol.Backoff, pol.MaxBackoff
	mode := 0
	switch cfg.ResponseMode {
	case "", ModeAuto, ModeSchema:
	case ModeJSON:
		mode = 1
	case ModeText:
		mode = 2
	default:
		return nil, fmt.Errorf("judge: unknown response mode %q (want auto, schema, json or text)", cfg.ResponseMode)
	}
	tmpl := DefaultTemplate()
	if cfg.Template != "" {
		t, err := LoadTemplate(cfg.Template)
		if err != nil {
			return nil, err
		}
		tmpl = t
	}
	key := os.Getenv(cfg.APIKeyEnv)
	ps := &peers{cfg: cfg, key: key, m: map[string]*core{}, n: &counters{}}
	c := ps.newCore(cfg.BaseURL, mode)
	if cfg.CacheDir != "off" {
		dir, err := call.CacheDir(cfg.CacheDir, "judge")
		if err != nil {
			return nil, fmt.Errorf("judge cache: %w", err)
		}
		ch, err := call.Open[Verdict](dir, cacheLayout)
		if err != nil {
			return nil, err
		}
		c.cache = ch
	}
	ps.m[cfg.BaseURL] = c
	return &Judge{c: c, model: cfg.Model, tmpl: tmpl, threshold: cfg.Threshold}, nil
}

// newCore returns a core asking the server at url, with the peers' cache
// (set by New on the first core) and counters.
func (ps *peers) newCore(url string, mode int) *core {
	cfg := ps.cfg
	hc := cfg.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = cfg.Concurrency
		hc = &http.Client{Transport: tr}
	}
	c := &core{
		client: openai.NewClient(
			option.WithBaseURL(url),
			option.WithAPIKey(ps.key),
			option.WithHTTPClient(hc),
			option.WithMaxRetries(0),
		),
		server:     call.RedactURL(url),
		keyEnv:     cfg.APIKeyEnv,
		red:        call.Redactor(ps.key),
		sem:        call.NewQueue(cfg.Concurrency),
		auto:       cfg.ResponseMode == "" || cfg.ResponseMode == ModeAuto,
		timeout:    cfg.Timeout,
		maxRetries: cfg.MaxRetries,
		backoff:    cfg.Backoff,
		maxBackoff: cfg.MaxBackoff,
		counters:   ps.n,
		peers:      ps,
		sleep:      call.SleepCtx,
		jitter:     rand.Float64,
		now:        time.Now,
	}
	c.mode.Store(int32(mode))
	return c
}

// at returns the core asking the server at url, made like base (the
// core of New) on first use.
func (ps *peers) at(base *core, url string) *core {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if c := ps.m[url]; c != nil {
		return c
	}
	mode := 0
	if !base.auto {
		mode = int(base.mode.Load())
	}
	c := ps.newCore(url, mode)
	c.cache = base.cache
	c.sleep, c.jitter, c.now = base.sleep, base.jitter, base.now
	ps.m[url] = c
	return c
}

// Override changes some settings of a judge, for one verifier.
type Override struct {
	// Model, if set, replaces the judge model.
	Model string
	// Template, if set, is the path of a template file replacing the judge's.
	Template string
	// Threshold, if positive, replaces the pass threshold.
	Threshold float64
	// URL, if set, is the API root of the server asking the judge model
	// (for a model served elsewhere than Config.BaseURL). Judges of one
	// server share its client, concurrency limit and response mode.
	URL string
}

// With returns a judge sharing j's client, concurrency limit, cache and
// stats, with the settings o overrides.
func (j *Judge) With(o Override) (*Judge, error) {
	d := *j
	if o.Model != "" {
		d.model = o.Model
	}
	if o.Template != "" {
		t, err := LoadTemplate(o.Template)
		if err != nil {
			return nil, err
		}
		d.tmpl = t
	}
	if o.Threshold > 0 {
		d.threshold = o.Threshold
	}
	if o.URL != "" {
		d.c = j.c.peers.at(j.c, o.URL)
	}
	return &d, nil
}

// Model returns the judge model's name.
func (j *Judge) Model() string { return j.model }

// Threshold returns the score a verdict needs to pass.
func (j *Judge) Threshold() float64 { return j.threshold }

// Server returns the API root the judge asks, without credentials.
func (j *Judge) Server() string { return j.c.server }

// Template returns the judge's template; its Fingerprint identifies it.
func (j *Judge) Template() *Template { return j.tmpl }

// Mode returns the response mode requests are sent in now.
func (j *Judge) Mode() ResponseMode { return modes[j.c.mode.Load()] }

// Stats returns the judge's counters (shared with judges derived by With).
func (j *Judge) Stats() Stats {
	c := j.c
	return Stats{
		Probes:           c.Probes.Load(),
		Requests:         c.Requests.Load(),
		CacheHits:        c.CacheHits.Load(),
		Retries:          c.Retries.Load(),
		Failures:         c.Failures.Load(),
		PromptTokens:     c.promptTokens.Load(),
		CompletionTokens: c.completionTokens.Load(),
	}
}

// Sync makes the verdicts cached so far durable (fsync). Call it when the
// results that used them are acknowledged. It returns the cache's first
// write error, if any.
func (j *Judge) Sync() error {
	if j.c.cache == nil {
		return nil
	}
	return j.c.cache.Sync()
}

// Close syncs and closes the cache. Call it once, on the judge New
// returned, after every Ask has returned.
func (j *Judge) Close() error {
	if j.c.cache == nil {
		return nil
	}
	return j.c.cache.Close()
}

// Key identifies a judgement in the cache: the sha256 of the model, the
// template fingerprint, the rendered messages, the sampling settings and the
// response mode.
type Key = call.Key

// cacheLayout names the verdict cache's logs (verdicts-N.log) and their
// magic, unchanged since the first cache, so earlier verdicts stay valid.
var cacheLayout = call.Layout{Name: "judge cache", Magic: "GVJUDGE1", Prefix: "verdicts"}

// Request is a rendered judgement, ready to ask.
type Request struct {
	j            *Judge
	system, user string
	sample       int
	seed         int64
	temperature  float64
	base         [32]byte // the hash of everything in the key but the mode
	pair         bool     // a pairwise comparison (PairRequest): its reply is a preference
}

// SampleSeed returns the seed sent with sample i of a judgement: Seed for
// sample 0 (today's request), Seed+i for the others, so that every sample
// of a judgement has its own seed.
func SampleSeed(i int) int64 { return Seed + int64(i) }

// Request renders p with the judge's template, as sample 0: temperature 0
// and seed Seed.
func (j *Judge) Request(p Prompt) (*Request, error) {
	system, user, err := j.tmpl.Render(p)
	if err != nil {
		return nil, err
	}
	r := &Request{j: j, system: system, user: user, seed: Seed}
	r.hashBase()
	return r, nil
}

// Sample returns the request of sample i (i > 0) of r's judgement: the
// same messages sent with the given temperature and seed SampleSeed(i),
// both part of its cache key. Sample 0 is r itself.
func (r *Request) Sample(i int, temperature float64) *Request {
	if i == 0 {
		return r
	}
	s := &Request{j: r.j, system: r.system, user: r.user, sample: i, seed: SampleSeed(i), temperature: temperature}
	s.hashBase()
	return s
}

// hashBase computes r.base. Sample 0's sampling text is the one every
// cache entry had before samples existed, so those entries stay valid.
func (r *Request) hashBase() {
	sampling := fmt.Sprintf("temperature=0 seed=%d", Seed)
	if r.sample != 0 {
		sampling = "temperature=" + strconv.FormatFloat(r.temperature, 'g', -1, 64) + " seed=" + strconv.FormatInt(r.seed, 10)
	}
	h := sha256.New()
	for _, s := range []string{"gavel-judge-key-1", r.j.model, r.j.tmpl.Fingerprint(), sampling, r.system, r.user} {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	h.Sum(r.base[:0])
}

// SampleIndex returns the request's sample number (0 for Request's).
func (r *Request) SampleIndex() int { return r.sample }

// Seed returns the seed the request is sent with.
func (r *Request) Seed() int64 { return r.seed }

// Temperature returns the temperature the request is sent with.
func (r *Request) Temperature() float64 { return r.temperature }

// Messages returns the request's system and user messages.
func (r *Request) Messages() (system, user string) { return r.system, r.user }

// Key returns the request's cache key in the response mode the judge is in now.
func (r *Request) Key() Key { return r.key(int(r.j.c.mode.Load())) }

// key returns the request's cache key in modes[mode].
func (r *Request) key(mode int) Key {
	h := sha256.New()
	h.Write(r.base[:])
	h.Write([]byte(modes[mode]))
	var k Key
	h.Sum(k[:0])
	return k
}

// Cached returns the cached verdict of r, if any. With a fixed response
// mode only that mode's verdict counts; in auto mode a verdict cached in any
// mode does, the strongest first.
func (j *Judge) Cached(r *Request) (Verdict, bool) {
	c := j.c
	if c.cache == nil {
		return Verdict{}, false
	}
	lo, hi := int(c.mode.Load()), int(c.mode.Load())
	if c.auto {
		lo, hi = 0, len(modes)-1
	}
	for m := lo; m <= hi; m++ {
		if v, ok := c.cache.Get(r.key(m)); ok {
			c.CacheHits.Add(1)
			return v, true
		}
	}
	return Verdict{}, false
}

// Ask returns r's verdict: from the cache, or from the server, waiting for
// one of Config.Concurrency slots and retrying as Config says, and then
// cached. A failure is an *Error, or the context's error when ctx ended.
func (j *Judge) Ask(ctx context.Context, r *Request) (Verdict, error) {
	if v, ok := j.Cached(r); ok {
		return v, nil
	}
	return j.askInSlot(ctx, j.Enter(), r)
}

// Enter takes the next place in the queue for the server's slots:
// requests asked with AskInTurn are sent in the order of their Enter,
// however their goroutines are scheduled.
func (j *Judge) Enter() *call.Ticket { return j.c.sem.Enter() }

// AskInTurn is Ask waiting for the slot of t, a ticket of this judge's
// Enter, which it gives back (at once when the cache answers).
func (j *Judge) AskInTurn(ctx context.Context, t *call.Ticket, r *Request) (Verdict, error) {
	if v, ok := j.Cached(r); ok {
		t.Cancel()
		return v, nil
	}
	return j.askInSlot(ctx, t, r)
}

// askInSlot asks the server for r, not in the cache, in the slot of t,
// and caches the verdict.
func (j *Judge) askInSlot(ctx context.Context, t *call.Ticket, r *Request) (Verdict, error) {
	c := j.c
	if err := t.Wait(ctx); err != nil {
		return Verdict{}, err
	}
	defer t.Done()
	v, mode, err := j.ask(ctx, r)
	if err != nil {
		if ctx.Err() == nil {
			c.Failures.Add(1)
		}
		return Verdict{}, err
	}
	if c.cache != nil {
		// A write error is kept by the cache and returned by Sync and Close;
		// the verdict itself is good.
		_ = c.cache.Put(r.key(mode), v)
	}
	return v, nil
}
