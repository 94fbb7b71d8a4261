// Package call is the discipline gavel keeps when it asks a server for
// something that decides a row: the judge's chat completions and remote
// verifiers' answers alike. One mechanism, used by both:
//
//   - Queue bounds the requests in flight to one server, granting its
//     slots in the order they were asked for;
//   - Policy sends a request again after a failure it may retry (429,
//     5xx, a reset connection), waiting what the server's Retry-After
//     asks or an exponential backoff with full jitter, a bounded number
//     of times, and never longer than MaxRetryAfter;
//   - Cache keeps answers on disk, durable across a kill -9, so that a
//     run asked again (a rerun, --resume) asks only what was not answered;
//   - Budget spends a run's request budget in input order, so the same
//     rows are asked whatever the number of workers;
//   - Counters count probes, requests, cache hits, retries and failures
//     for the summary and /metrics.
//
// A failure is an error, never an answer: what a failure means for a row
// is the caller's decision.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package call

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Retryable is an error that says whether the request that failed may be
// sent again, and how long the server asked to wait first (0: it did not
// say).
type Retryable interface {
	error
	Retry() (ok bool, after time.Duration)
}

// Policy says how often and after how long a failed request is sent again.
type Policy struct {
	// MaxRetries is how many times a request is sent again at most.
	MaxRetries int
	// Backoff is the base of the exponential backoff: before retry n
	// (from 0) the caller waits a uniformly random time in
	// [0, min(MaxBackoff, Backoff*2^n)) ("full jitter"), unless the
	// server's Retry-After asks for a wait.
	Backoff, MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After waited; a server asking
	// for more ends the request with its error (Outcome.TooLong).
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx ends (nil: a timer); Jitter returns a
	// uniform number in [0, 1). Tests replace them.
	Sleep  func(ctx context.Context, d time.Duration) error
	Jitter func() float64
}

// The retry defaults of the judge and remote verifiers.
const (
	DefaultMaxRetries = 4
	DefaultBackoff    = 500 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
)

// WithDefaults returns p with its defaults: MaxRetries 0 is
// DefaultMaxRetries and a negative one none; Backoff and MaxBackoff not
// positive are DefaultBackoff and DefaultMaxBackoff.
func (p Policy) WithDefaults() Policy {
	switch {
	case p.MaxRetries == 0:
		p.MaxRetries = DefaultMaxRetries
	case p.MaxRetries < 0:
		p.MaxRetries = 0
	}
	if p.Backoff <= 0 {
		p.Backoff = DefaultBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = DefaultMaxBackoff
	}
	return p
}

// Outcome says how a request's retries went.
type Outcome struct {
	// Retries is the number of times the request was sent again.
	Retries int
	// TooLong is the wait the server asked for when it was more than
	// MaxRetryAfter (then the request was given up), else 0.
	TooLong time.Duration
}

// Do calls attempt until it returns nil or an error that is not retried:
// one that is not Retryable, or says no, or the last retry's, or one
// whose Retry-After is too long. onRetry, if set, is called before each
// retry. When ctx ends, Do returns ctx's error.
func (p *Policy) Do(ctx context.Context, attempt func() error, onRetry func()) (Outcome, error) {
	var out Outcome
	for {
		err := attempt()
		if err == nil {
			return out, nil
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		var r Retryable
		if !errors.As(err, &r) {
			return out, err
		}
		ok, wait := r.Retry()
		if !ok || out.Retries >= p.MaxRetries {
			return out, err
		}
		if p.MaxRetryAfter > 0 && wait > p.MaxRetryAfter {
			out.TooLong = wait
			return out, err
		}
		if wait <= 0 {
			jitter := p.Jitter
			if jitter == nil {
				jitter = defaultJitter
			}
			wait = time.Duration(jitter() * float64(min(p.MaxBackoff, p.Backoff<<min(out.Retries, 30))))
		}
		out.Retries++
		if onRetry != nil {
			onRetry()
		}
		sleep := p.Sleep
		if sleep == nil {
			sleep = SleepCtx
		}
		if err := sleep(ctx, wait); err != nil {
			return out, err
		}
	}
}

// SleepCtx waits d or until ctx ends.
func SleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Counters count the work of one kind of caller (a run's judge, its remote
// verifiers); safe for concurrent use.
type Counters struct {
	// Probes: probes of a server, successful or not; Requests does not
	// count them.
	Probes atomic.Int64
	// Requests: requests sent, retries included.
	Requests atomic.Int64
	// CacheHits: answers found in the cache.
	CacheHits atomic.Int64
	// Retries: requests sent again.
	Retries atomic.Int64
	// Failures: requests that ended in an error (a cancelled context is
	// not one).
	Failures atomic.Int64
}

// Budget is a run's request budget, spent by the one goroutine that sees
// rows in input order (so the same rows are asked whatever the number of
// workers). Once a row's requests do not fit, no later row's are made:
// the budget goes in order, and the rows it leaves are counted as pending.
type Budget struct {
	left    int64 // < 0: no limit
	pending int64
}

// NewBudget returns a budget of n requests; n <= 0 is no limit.
func NewBudget(n int64) Budget {
	if n <= 0 {
		return Budget{left: -1}
	}
	return Budget{left: n}
}

// Take spends n requests, or, when fewer than n are left, spends the rest
// of the budget, counts one pending row and reports false.
func (b *Budget) Take(n int) bool {
	if b.left < 0 {
		return true
	}
	if b.left < int64(n) {
		b.left = 0
		b.pending++
		return false
	}
	b.left -= int64(n)
	return true
}

// Pending returns the number of rows the budget left.
func (b *Budget) Pending() int64 { return b.pending }

// RetryAfter returns the wait a response asks for in its retry-after-ms or
// Retry-After header (seconds or an HTTP date), or 0.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// RedactURL returns a URL without user information, query or fragment, as
// it may be shown or recorded: "(invalid URL)" when it does not parse.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.ForceQuery = false
	u.Fragment = ""
	u.RawFragment = ""
	return u.String()
}

// Redactor removes a secret from text.
type Redactor string

// Redact returns s with every occurrence of the secret replaced.
func (r Redactor) Redact(s string) string {
	if r == "" {
		return s
	}
	return strings.ReplaceAll(s, string(r), "[redacted]")
}

// Quote shortens s to 300 bytes and quotes it.
func Quote(s string) string {
	const max = 300
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}

func defaultJitter() float64 { return rand.Float64() }

// CacheDir returns the directory of a cache: dir, or, when it is "", sub
// under gavel's directory of the user's cache (os.UserCacheDir).
func CacheDir(dir, sub string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("%w (set a cache directory, or off)", err)
	}
	return filepath.Join(base, "gavel", sub), nil
}

// Transport describes a request's transport failure err (no response):
// "connection refused", "connection reset" (which may be retried),
// "cannot resolve NAME", or "request failed: CAUSE" (a url.Error's cause
// only: its text holds the full URL). ok is false for an error that is
// none of these, whose text the caller words itself; the caller removes
// secrets from what.
func Transport(err error) (what string, retry, ok bool) {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", false, true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection reset", true, true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "cannot resolve " + Quote(dns.Name), false, true
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return "request failed: " + ue.Err.Error(), false, true
	}
	return "", false, false
}

// FailureText returns msg followed by " (HTTP STATUS)" when there was a
// response and " after N retries" when there were retries: how the judge
// and remote verifiers end the text of a failure.
func FailureText(msg string, status, retries int) string {
	if status != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", status)
	}
	if retries > 0 {
		msg += fmt.Sprintf(" after %d retries", retries)
	}
	return msg
}

// ProbeError is returned, wrapped, when a server's probe failed: it is
// unreachable, refuses the key or token, or does not know the model or
// the route. A run stops on it.
type ProbeError struct {
	Err error
}

func (e *ProbeError) Error() string { return e.Err.Error() }
func (e *ProbeError) Unwrap() error { return e.Err }
