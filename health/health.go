// Package health computes the health flags of a rollout: marks gavel
// raises on every rollout whose input could be read, from the rollout
// alone (its output, its log or messages, and its harness's record of how
// it ended), so that rollouts that never really ran are not mistaken for
// failures. A flag never moves a rollout's status or reward.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package health

import (
	"bytes"
	"strings"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// The health flags. They belong to the rollout, not to a verifier: they
// follow the verifier's flags in the rewards' flags list and are no rows
// of the checks table.
const (
	// EmptyOutput: the output is empty or white space.
	EmptyOutput = verifiers.HealthPrefix + "empty-output"
	// NoAgentTurn: the rollout has a log or a message list, and no turn
	// of the agent in it: no tool call, no message of the assistant (role
	// assistant, or an ATIF step of source agent), and no output.
	NoAgentTurn = verifiers.HealthPrefix + "no-agent-turn"
	// Truncated: the harness recorded an end for length, turns, time or
	// context (termination_reason, see truncatedReasons).
	Truncated = verifiers.HealthPrefix + "truncated"
	// HarnessError: the harness recorded an error for the rollout
	// (recorded_error, or a termination_reason of harnessErrorReasons).
	HarnessError = verifiers.HealthPrefix + "harness-error"
)

// truncatedReasons are the termination reasons that end a rollout for
// length, turns, time or context: Inspect's limit types message, token,
// context, time and working; tau2's max_steps; NeMo Gym's (Responses
// API) incomplete reasons max_output_tokens and max_tool_calls; and the
// common spellings max_turns, max_tokens and length.
var truncatedReasons = []string{"message", "token", "context", "time", "working", "max_steps", "max_turns", "max_tokens",
	"max_output_tokens", "max_tool_calls", "length"}

// harnessErrorReasons are the termination reasons that say the harness
// failed: tau2's too_many_errors, agent_error, user_error and
// infrastructure_error.
var harnessErrorReasons = []string{"too_many_errors", "agent_error", "user_error", "infrastructure_error"}

// Flags appends to dst the health flags r raises, in the order of the
// constants above.
func Flags(r *verifiers.Rollout, dst []string) []string {
	blank := strings.TrimSpace(r.Output) == ""
	if blank {
		dst = append(dst, EmptyOutput)
	}
	msgs := r.Meta.Get("messages")
	hasLog := r.Log.Exists() && !r.Log.IsNull()
	if blank && (hasLog || msgs.Kind() == jsonview.Array) && !agentTurn(r.Log) && !agentTurn(msgs) {
		dst = append(dst, NoAgentTurn)
	}
	reason, _ := r.Meta.Get("termination_reason").Str()
	if isAnyOf(reason, truncatedReasons) {
		dst = append(dst, Truncated)
	}
	if recordedError(r.Meta.Get("recorded_error")) || isAnyOf(reason, harnessErrorReasons) {
		dst = append(dst, HarnessError)
	}
	return dst
}

// agentTurn reports whether a log or message list holds a turn of the
// agent: a tool call event, an assistant's message, an agent's step.
func agentTurn(list jsonview.Value) bool {
	if list.Kind() != jsonview.Array {
		return false
	}
	for e := list.First(); e.Exists(); e = e.Next() {
		if e.Get("eventType").StrIs("tool_call") || e.Get("role").StrIs("assistant") || e.Get("source").StrIs("agent") ||
			e.Get("tool_calls").Len() > 0 {
			return true
		}
	}
	return false
}

// recordedError reports whether a recorded_error value says something:
// present, not null, not an empty or blank string.
func recordedError(v jsonview.Value) bool {
	switch v.Kind() {
	case jsonview.Missing, jsonview.Null:
		return false
	case jsonview.String:
		s, _ := v.Str()
		return len(bytes.TrimSpace(s)) > 0
	}
	return true
}

func isAnyOf(s []byte, list []string) bool {
	for _, x := range list {
		if string(s) == x {
			return true
		}
	}
	return false
}
