package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gavelhq/gavel/judge/call"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// ask sends r until it gets a verdict or a failure that is not retried
// (call.Policy), and returns the verdict and the index of the mode that
// produced it. A 400 naming response_format moves an auto judge's mode down
// and sends r again at once, which is not a retry.
func (j *Judge) ask(ctx context.Context, r *Request) (Verdict, int, error) {
	c := j.c
	mode := int(c.mode.Load())
	p := call.Policy{MaxRetries: c.maxRetries, Backoff: c.backoff, MaxBackoff: c.maxBackoff, MaxRetryAfter: MaxRetryAfter,
		Sleep: c.sleep, Jitter: c.jitter}
	var v Verdict
	out, err := p.Do(ctx, func() error {
		for {
			var err error
			v, err = j.attempt(ctx, r, mode)
			var e *Error
			if err != nil && c.auto && errors.As(err, &e) && e.formatRejected && mode < len(modes)-1 {
				mode = c.downgrade(mode)
				continue
			}
			return err
		}
	}, func() { c.Retries.Add(1) })
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Retries = out.Retries
			if out.TooLong > 0 {
				e.Msg += fmt.Sprintf("; the server asks to retry after %v, more than %v", out.TooLong, MaxRetryAfter)
			}
		}
		return Verdict{}, mode, err
	}
	return v, mode, nil
}

// downgrade moves the judge's mode below from (unless another request
// already moved it further) and returns the mode to use next.
func (c *core) downgrade(from int) int {
	next := int32(from + 1)
	for {
		cur := c.mode.Load()
		if cur >= next {
			return int(cur)
		}
		if c.mode.CompareAndSwap(cur, next) {
			return int(next)
		}
	}
}

// attempt sends r once in modes[mode].
func (j *Judge) attempt(ctx context.Context, r *Request, mode int) (Verdict, error) {
	c := j.c
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	params := openai.ChatCompletionNewParams{
		Model: j.model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(r.system),
			openai.UserMessage(r.user),
		},
		Temperature: openai.Float(r.temperature),
		Seed:        openai.Int(r.seed),
	}
	name, schema, parse := "verdict", verdictSchema, ParseVerdict
	if r.pair {
		name, schema, parse = "preference", pairSchema, ParsePreference
	}
	switch modes[mode] {
	case ModeSchema:
		params.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   name,
				Strict: openai.Bool(true),
				Schema: schema,
			},
		}
	case ModeJSON:
		params.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
	}
	c.Requests.Add(1)
	resp, err := c.client.Chat.Completions.New(actx, params)
	if err != nil {
		return Verdict{}, j.classify(ctx, actx, err)
	}
	c.promptTokens.Add(resp.Usage.PromptTokens)
	c.completionTokens.Add(resp.Usage.CompletionTokens)
	if len(resp.Choices) == 0 {
		return Verdict{}, j.fail(KindEmpty, http.StatusOK, "reply has no choices")
	}
	ch := resp.Choices[0]
	if ch.Message.Refusal != "" {
		return Verdict{}, j.fail(KindRefusal, http.StatusOK, "model refused to grade: "+call.Quote(c.red.Redact(ch.Message.Refusal)))
	}
	if strings.TrimSpace(ch.Message.Content) == "" {
		return Verdict{}, j.fail(KindEmpty, http.StatusOK, "reply has no content (finish_reason "+call.Quote(ch.FinishReason)+")")
	}
	v, err := parse([]byte(ch.Message.Content))
	if err != nil {
		msg := fmt.Sprintf("reply is not a verdict (%s mode): %v", modes[mode], err)
		if ch.FinishReason == "length" {
			msg += " (reply cut at the token limit)"
		}
		return Verdict{}, j.fail(KindInvalid, http.StatusOK, c.red.Redact(msg))
	}
	return v, nil
}

// fail returns an *Error whose message names the model and server.
func (j *Judge) fail(kind Kind, status int, what string) *Error {
	return &Error{Kind: kind, HTTPStatus: status, Msg: fmt.Sprintf("model %s at %s: %s", j.model, j.c.server, what)}
}

// classify turns a request's error into an *Error, or returns ctx's error
// when the caller's context ended.
func (j *Judge) classify(ctx, actx context.Context, err error) error {
	c := j.c
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var api *openai.Error
	if errors.As(err, &api) {
		return j.statusError(api)
	}
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return j.fail(KindTimeout, 0, fmt.Sprintf("no reply within %v", c.timeout))
	}
	if what, retry, ok := call.Transport(err); ok {
		e := j.fail(KindConnection, 0, c.red.Redact(what))
		e.retry = retry
		return e
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) || strings.Contains(err.Error(), "unmarshal") || strings.Contains(err.Error(), "JSON") {
		return j.fail(KindInvalid, http.StatusOK, "reply is not a chat completion: "+c.red.Redact(err.Error()))
	}
	return j.fail(KindConnection, 0, "request failed: "+c.red.Redact(err.Error()))
}

// statusError classifies an HTTP error response.
func (j *Judge) statusError(api *openai.Error) *Error {
	c := j.c
	status := api.StatusCode
	detail := strings.TrimSpace(api.Message)
	if detail == "" {
		detail = http.StatusText(status)
	}
	detail = call.Quote(c.red.Redact(detail))
	lower := strings.ToLower(api.Message + " " + api.Code + " " + api.Param)
	var e *Error
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e = j.fail(KindAuth, status, fmt.Sprintf("not authorized (check the key in $%s): %s", c.keyEnv, detail))
	case status == http.StatusNotFound:
		e = j.fail(KindNotFound, status, "not found (is the model name right?): "+detail)
	case status == http.StatusTooManyRequests:
		e = j.fail(KindRateLimit, status, "rate limited: "+detail)
		e.retry = true
	case status >= 500:
		e = j.fail(KindServer, status, "server error: "+detail)
		e.retry = true
	case status == http.StatusRequestTimeout:
		e = j.fail(KindTimeout, status, "server timed out: "+detail)
		e.retry = true
	case status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge || status == http.StatusUnprocessableEntity:
		if strings.Contains(lower, "context_length") || strings.Contains(lower, "context length") ||
			strings.Contains(lower, "maximum context") || status == http.StatusRequestEntityTooLarge {
			e = j.fail(KindContextLength, status, "prompt too long for the model's context: "+detail)
		} else {
			e = j.fail(KindBadRequest, status, "bad request: "+detail)
			e.formatRejected = strings.Contains(lower, "response_format") || strings.Contains(lower, "json_schema")
		}
	default:
		e = j.fail(KindStatus, status, "unexpected status: "+detail)
	}
	if api.Response != nil {
		e.retryAfter = call.RetryAfter(api.Response.Header, c.now())
	}
	return e
}

// Probe checks that the server is reachable, accepts the key and knows
// the model, with one cheap request: GET /models/{model}, or, when the
// server does not serve that route (404 or 405), a one-token chat
// completion. It returns an *Error naming the cause: KindConnection for an
// unreachable server, KindAuth for a bad key, KindNotFound for an unknown
// model. Probes are not retried; Stats counts them apart from the
// requests.
func (j *Judge) Probe(ctx context.Context) error {
	c := j.c
	c.Probes.Add(1)
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	_, err := c.client.Models.Get(actx, j.model)
	if err == nil {
		return nil
	}
	var api *openai.Error
	if !errors.As(err, &api) || (api.StatusCode != http.StatusNotFound && api.StatusCode != http.StatusMethodNotAllowed) {
		return j.probeError(j.classify(ctx, actx, err))
	}
	actx2, cancel2 := context.WithTimeout(ctx, c.timeout)
	defer cancel2()
	_, err = c.client.Chat.Completions.New(actx2, openai.ChatCompletionNewParams{
		Model:       j.model,
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Reply with OK.")},
		MaxTokens:   openai.Int(1),
		Temperature: openai.Float(0),
	})
	if err == nil {
		return nil
	}
	return j.probeError(j.classify(ctx, actx2, err))
}

// probeError prefixes a probe's error message.
func (j *Judge) probeError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		e.Msg = "probe: " + e.Msg
		if e.Kind == KindNotFound {
			e.Msg = fmt.Sprintf("probe: model %s at %s: unknown model (or not an OpenAI-compatible API root)", j.model, j.c.server)
		}
	}
	return err
}
