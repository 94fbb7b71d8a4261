package remote

import (
	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/columnar/nemogym"
	"github.com/gavelhq/gavel/verifiers"
)

// The request bodies of the two protocols, built from a decoded rollout.

// gavelFields are the members of a gavel-protocol body that come from the
// rollout itself; metadata members of the same names are left out.
var gavelFields = []string{"rollout_id", "task_id", "initial_state", "final_state", "output", "log"}

// AppendGavelBody appends r as `gavel serve`'s POST /v1/grade reads a
// rollout: rollout_id, task_id, the states, output and log when present,
// then the rollout's metadata members (model, run_id, ground truth...) in
// the order written.
func AppendGavelBody(b []byte, r *verifiers.Rollout) []byte {
	b = append(b, `{"rollout_id":`...)
	b = jsonview.AppendJSONString(b, r.ID)
	b = append(b, `,"task_id":`...)
	b = jsonview.AppendJSONString(b, r.TaskID)
	b = appendValue(b, "initial_state", r.Initial)
	b = appendValue(b, "final_state", r.Final)
	b = append(b, `,"output":`...)
	b = jsonview.AppendJSONString(b, r.Output)
	b = appendValue(b, "log", r.Log)
	b = appendMembers(b, r.Meta, gavelFields)
	return append(b, '}')
}

// appendValue appends ,"name":<v's text> when v exists and is not null.
func appendValue(b []byte, name string, v jsonview.Value) []byte {
	if !v.Exists() || v.IsNull() {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return append(b, v.Raw()...)
}

// appendMembers appends the members of object o whose names are not in
// skip, each as ,"name":value.
func appendMembers(b []byte, o jsonview.Value, skip []string) []byte {
	if o.Kind() != jsonview.Object {
		return b
	}
outer:
	for m := o.First(); m.Exists(); m = m.Next() {
		for _, s := range skip {
			if m.KeyIs(s) {
				continue outer
			}
		}
		b = append(b, ',')
		b = jsonview.AppendJSONString(b, m.Key())
		b = append(b, ':')
		b = append(b, m.Raw()...)
	}
	return b
}

// nemoGymSkip are the metadata members a NeMo Gym body does not repeat at
// its top level: the two it builds and the fields of an answer.
var nemoGymSkip = append([]string{nemogym.FieldParams, nemogym.FieldResponse, "prompt"}, nemogym.AnswerFields...)

// AppendNemoGymBody appends r as NeMo Gym's rollout collection sends a
// verify request to a resources server (BaseVerifyRequest):
// responses_create_params, response, and the task's own fields at the top
// level. responses_create_params is the rollout's metadata member of that
// name when it has one (a rollout read from NeMo Gym's files), else
// {"input": meta.prompt} (the empty string without one); response is the
// metadata member when present, else a Responses API response whose one
// output item is an assistant message holding the rollout's output. The
// task's fields are the task row's members, then the metadata's (other
// than those above and the answer fields), each name once, the first
// kept.
func AppendNemoGymBody(b []byte, r *verifiers.Rollout) []byte {
	b = append(b, '{', '"')
	b = append(b, nemogym.FieldParams...)
	b = append(b, '"', ':')
	if p := r.Meta.Get(nemogym.FieldParams); p.Kind() == jsonview.Object {
		b = append(b, p.Raw()...)
	} else {
		b = append(b, `{"input":`...)
		prompt := r.Meta.Get("prompt")
		if s, ok := prompt.Str(); ok {
			b = jsonview.AppendJSONString(b, s)
		} else {
			b = append(b, `""`...)
		}
		b = append(b, '}')
	}
	b = append(b, `,"`...)
	b = append(b, nemogym.FieldResponse...)
	b = append(b, '"', ':')
	if resp := r.Meta.Get(nemogym.FieldResponse); resp.Kind() == jsonview.Object {
		b = append(b, resp.Raw()...)
	} else {
		b = appendResponse(b, r)
	}
	skip := nemoGymSkip
	if r.Task.Kind() == jsonview.Object {
		skip = append([]string(nil), nemoGymSkip...)
		skip = append(skip, "task_id", "initial_state")
		for m := r.Task.First(); m.Exists(); m = m.Next() {
			skip = append(skip, string(m.Key()))
		}
		b = appendMembers(b, r.Task, append(append([]string(nil), nemoGymSkip...), "task_id", "initial_state"))
	}
	b = appendMembers(b, r.Meta, skip)
	return append(b, '}')
}

// appendResponse appends a Responses API response (openai's Response, as
// NeMo Gym's NeMoGymResponse validates it) whose output is one completed
// assistant message with r's output as its text.
func appendResponse(b []byte, r *verifiers.Rollout) []byte {
	model := "unknown"
	if s, ok := r.Meta.Get("model").Str(); ok && len(s) > 0 {
		model = string(s)
	}
	b = append(b, `{"id":`...)
	b = jsonview.AppendJSONString(b, "resp_"+r.ID)
	b = append(b, `,"created_at":0,"model":`...)
	b = jsonview.AppendJSONString(b, model)
	b = append(b, `,"object":"response","output":[{"id":"msg_0","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","annotations":[],"text":`...)
	b = jsonview.AppendJSONString(b, r.Output)
	b = append(b, `}]}],"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}`...)
	return b
}
