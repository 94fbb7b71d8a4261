// Package nemogym holds the shapes of NeMo Gym's resources-server protocol
// that gavel reads and writes, in one place: a verify request's response
// and prompt text, the fields gavel sets in a verify answer, and NeMo Gym's
// failure fields. `gavel serve`'s POST /verify, the remote verifiers of
// the NeMo Gym protocol and the reader of NeMo Gym's rollout logs use it.
//
// Not public API: gavel's public Go API is cli, verifiers,
// verifiers/verifiertest and columnar/jsonview; this package may change in
// any release.
package nemogym

import (
	"errors"
	"fmt"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// The fields of a verify request that are not the task row's own.
const (
	// FieldParams is the Responses API request the agent sent.
	FieldParams = "responses_create_params"
	// FieldResponse is the model's Responses API response.
	FieldResponse = "response"
)

// The fields of a verify answer gavel sets, and NeMo Gym's failure
// fields (nemo_gym/rollout_collection.py): a row with FailureClass set
// goes to the failures file instead of the rollouts, and one with
// FailureTerminal is never retried. FieldStepRewards is not yet NeMo
// Gym's: the reward of each agent turn, in the shape its issue 1298
// proposes (step_rewards: list[float], aligned with assistant turns),
// null for a turn not scored; gavel sets it only when its verifiers
// score turns, so it is not among AnswerFields.
const (
	FieldReward          = "reward"
	FieldComponents      = "reward_components"
	FieldStepRewards     = "step_rewards"
	FieldFailureClass    = "_ng_failure_class"
	FieldFailureTerminal = "_ng_failure_terminal"
	FieldError           = "error"
)

// AnswerFields are the fields of a verify answer that gavel sets; a stored
// rollout's earlier values of them are replaced.
var AnswerFields = []string{FieldReward, FieldComponents, FieldFailureClass, FieldFailureTerminal, FieldError}

// FailureClass is the failure class gavel gives a rollout it could not
// grade.
const FailureClass = "gavel_error"

// ReverifyStateless is GET /reverify_mode's answer for a server whose
// verification is a pure function of the request.
const ReverifyStateless = "stateless"

// ResponseText returns the text of a Responses API response's assistant
// messages: the output_text parts of its output items of type message, in
// order, joined by newlines. Other items (reasoning, function calls and
// their outputs) are not the answer.
func ResponseText(resp jsonview.Value) ([]byte, error) {
	items := resp.Get("output")
	if items.Kind() != jsonview.Array {
		return nil, errors.New("output: want a list of output items")
	}
	var out []byte
	n := 0
	for it := items.First(); it.Exists(); it = it.Next() {
		if typ, _ := it.Get("type").Str(); string(typ) != "message" {
			continue
		}
		if role, ok := it.Get("role").Str(); ok && string(role) != "assistant" {
			continue
		}
		content := it.Get("content")
		if content.Kind() != jsonview.Array {
			return nil, fmt.Errorf("output[%d].content: want a list of content parts", n)
		}
		for c := content.First(); c.Exists(); c = c.Next() {
			if typ, _ := c.Get("type").Str(); string(typ) != "output_text" {
				continue
			}
			text, ok := c.Get("text").Str()
			if !ok {
				return nil, fmt.Errorf("output[%d]: an output_text part without a text string", n)
			}
			if len(out) > 0 {
				out = append(out, '\n')
			}
			out = append(out, text...)
		}
		n++
	}
	return out, nil
}

// PromptText returns the prompt of a Responses API request's input: the
// input itself when it is a string, else the text of its last user
// message ("" when it has none).
func PromptText(input jsonview.Value) ([]byte, error) {
	switch input.Kind() {
	case jsonview.Missing, jsonview.Null:
		return nil, nil
	case jsonview.String:
		s, _ := input.Str()
		return s, nil
	case jsonview.Array:
	default:
		return nil, errors.New("want a string or a list of messages")
	}
	var last jsonview.Value
	for m := input.First(); m.Exists(); m = m.Next() {
		if role, _ := m.Get("role").Str(); string(role) == "user" {
			last = m
		}
	}
	if !last.Exists() {
		return nil, nil
	}
	content := last.Get("content")
	if s, ok := content.Str(); ok {
		return s, nil
	}
	if content.Kind() != jsonview.Array {
		return nil, errors.New("a user message's content: want a string or a list of parts")
	}
	var out []byte
	for c := content.First(); c.Exists(); c = c.Next() {
		if text, ok := c.Get("text").Str(); ok {
			if len(out) > 0 {
				out = append(out, '\n')
			}
			out = append(out, text...)
		}
	}
	return out, nil
}
