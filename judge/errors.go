package judge

import (
	"time"

	"github.com/gavelhq/gavel/judge/call"
)

// Kind classifies why a judgement failed. A failure is never a score: each
// kind is returned as an *Error.
type Kind string

// The kinds of failure.
const (
	// KindConnection: the server could not be reached (refused, reset,
	// DNS), after retries for resets.
	KindConnection Kind = "connection"
	// KindTimeout: a request took longer than Config.Timeout.
	KindTimeout Kind = "timeout"
	// KindRateLimit: HTTP 429 after every retry.
	KindRateLimit Kind = "rate limited"
	// KindServer: HTTP 5xx after every retry.
	KindServer Kind = "server error"
	// KindBadRequest: HTTP 400 (or 422) other than a context overflow.
	KindBadRequest Kind = "bad request"
	// KindContextLength: HTTP 400 because the prompt exceeds the model's context.
	KindContextLength Kind = "context length exceeded"
	// KindAuth: HTTP 401 or 403; the key is missing, wrong or not allowed.
	KindAuth Kind = "not authorized"
	// KindNotFound: HTTP 404, usually an unknown model.
	KindNotFound Kind = "not found"
	// KindStatus: any other unexpected HTTP status.
	KindStatus Kind = "unexpected status"
	// KindRefusal: the model refused to grade (message.refusal set).
	KindRefusal Kind = "refusal"
	// KindEmpty: the reply had no choices or no content.
	KindEmpty Kind = "empty reply"
	// KindInvalid: the reply is not a verdict: not JSON, not matching the
	// schema, or a score outside [0, 1].
	KindInvalid Kind = "invalid verdict"
)

// Error is a failed judgement or probe. Its message names the judge model,
// the server (without credentials or query), the cause and, when there was
// one, the HTTP status; it never contains the API key.
type Error struct {
	// Kind classifies the failure.
	Kind Kind
	// HTTPStatus is the status of the last response, 0 when there was none.
	HTTPStatus int
	// Msg describes the failure.
	Msg string
	// Retries is the number of retries made before giving up.
	Retries int

	retry          bool          // the request may be sent again
	retryAfter     time.Duration // what the server's Retry-After asks
	formatRejected bool          // a 400 naming response_format
}

// Error returns "judge: MSG (HTTP STATUS) after N retries".
func (e *Error) Error() string {
	return call.FailureText("judge: "+e.Msg, e.HTTPStatus, e.Retries)
}

// Retry reports whether the request may be sent again and the wait the
// server asked for (call.Retryable).
func (e *Error) Retry() (bool, time.Duration) { return e.retry, e.retryAfter }

// RedactURL returns a URL without user information, query or fragment, as
// it may be shown or recorded: "(invalid URL)" when it does not parse.
func RedactURL(raw string) string { return call.RedactURL(raw) }
