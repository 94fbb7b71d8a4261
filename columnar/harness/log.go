package harness

import (
	"bytes"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// logWriter builds a rollout's log: one event per tool call and per tool
// result, in the order the trajectory has them.
//
//	{"eventType":"tool_call","name":N,"kwargs":{...},"id":I}
//	{"eventType":"tool_call","name":N,"kwargs_raw":"...","kwargs_error":"...","id":I}
//	{"eventType":"tool_result","name":N,"content":"...","id":I,"is_error":true,"error":"..."}
//
// id is the tool call's id when the format records one; is_error and
// error only appear for a failed call. A result that does not name its
// tool is given the name of the call with its id.
//
// The bytes of the last event written stay in b until reset, and their
// place is recorded, so that a turnWriter copies tool calls and results
// into the rollout's turns as the log has them.
type logWriter struct {
	b      []byte
	n      int
	calls  map[string]callRef // tool call id (the body of its JSON string) -> its call
	argDoc jsonview.Doc

	// turn is the agent turn the calls written now are made in (the
	// turnWriter sets it), or -1 for none.
	turn int
	// The last event is b[evStart:evEnd]; of a tool call, b[callStart:callEnd]
	// are its members after eventType, without the extra member.
	evStart, evEnd, callStart, callEnd int
}

// callRef is what a tool result needs of the call with its id.
type callRef struct {
	name []byte // the name's JSON text, or nil when it is not a string
	turn int    // the agent turn that made the call, or -1
}

func (l *logWriter) reset() {
	l.b = append(l.b[:0], '[')
	l.n = 0
	l.turn = -1
	clear(l.calls)
}

func (l *logWriter) done() []byte {
	l.argDoc.Reset()
	return append(l.b, ']')
}

func (l *logWriter) event(typ string) *object {
	if l.n > 0 {
		l.b = append(l.b, ',')
	}
	l.n++
	l.evStart = len(l.b)
	o := &object{}
	o.begin(l.b)
	o.str("eventType", typ)
	return o
}

// call appends a tool call. args is an object (Inspect, tau2), a string
// holding JSON text (OpenAI), or missing or null (no arguments).
// parseErr is a parse error the harness itself recorded, or Missing.
// extra, when it exists, is a member copied into the event as it is.
func (l *logWriter) call(name, id, args, parseErr, extra jsonview.Value) {
	if k, ok := body(id); ok && len(k) > 0 {
		if l.calls == nil {
			l.calls = make(map[string]callRef)
		}
		ref := l.calls[string(k)]
		if name.Kind() == jsonview.String {
			ref.name = name.Raw()
		}
		ref.turn = l.turn
		l.calls[string(k)] = ref
	}
	o := l.event("tool_call")
	l.callStart = len(o.b) + 1 // after the comma key writes
	o.key("name")
	o.b = appendNameOrNull(o.b, name)
	switch args.Kind() {
	case jsonview.Missing, jsonview.Null:
		o.key("kwargs")
		o.b = append(o.b, '{', '}')
	case jsonview.Object:
		o.raw("kwargs", args)
	case jsonview.String:
		l.stringArgs(o, args)
	default:
		o.key("kwargs_raw")
		o.b = append(o.b, '"')
		o.b = appendStringBody(o.b, string(args.Raw()))
		o.b = append(o.b, '"')
		o.str("kwargs_error", "arguments are "+args.Kind().String()+", not an object")
	}
	if !parseErr.IsNull() {
		o.raw("kwargs_error", parseErr)
	}
	if _, ok := body(id); ok {
		o.raw("id", id)
	}
	l.callEnd = len(o.b)
	if extra.Exists() {
		o.member(extra)
	}
	l.b = o.end()
	l.evEnd = len(l.b)
}

// stringArgs writes arguments given as a JSON string holding JSON text:
// the object as kwargs; an empty string as no arguments; anything else as
// kwargs_raw, the string, and kwargs_error, what is wrong with it.
func (l *logWriter) stringArgs(o *object, args jsonview.Value) {
	s, _ := args.Str()
	if len(bytes.TrimSpace(s)) == 0 {
		o.key("kwargs")
		o.b = append(o.b, '{', '}')
		return
	}
	v, err := l.argDoc.Parse(s)
	if err == nil && v.Kind() == jsonview.Object {
		o.key("kwargs")
		o.b = appendCompact(o.b, s)
		return
	}
	o.raw("kwargs_raw", args)
	if err != nil {
		o.str("kwargs_error", "arguments are not valid JSON: "+err.Error())
	} else {
		o.str("kwargs_error", "arguments are "+v.Kind().String()+", not an object")
	}
}

// result appends a tool result. name may be Missing: the name of the call
// with id is used. errMsg, when not null, is the error the harness
// recorded (a string, or an object with a "message"); isErr says the
// call failed without a message.
func (l *logWriter) result(name, id, content jsonview.Value, isErr bool, errMsg, extra jsonview.Value) {
	o := l.event("tool_result")
	o.key("name")
	switch {
	case name.Kind() == jsonview.String:
		o.b = append(o.b, name.Raw()...)
	default:
		k, _ := body(id)
		if c, ok := l.calls[string(k)]; ok && c.name != nil {
			o.b = append(o.b, c.name...)
		} else {
			o.b = append(o.b, "null"...)
		}
	}
	o.key("content")
	o.b = append(o.b, '"')
	o.b, _ = appendText(o.b, content, "")
	o.b = append(o.b, '"')
	if _, ok := body(id); ok {
		o.raw("id", id)
	}
	if m := errMsg.Get("message"); m.Exists() {
		errMsg = m
	}
	if isErr || !errMsg.IsNull() {
		o.key("is_error")
		o.b = append(o.b, "true"...)
	}
	if errMsg.Kind() == jsonview.String {
		o.raw("error", errMsg)
	}
	if extra.Exists() {
		o.member(extra)
	}
	l.b = o.end()
	l.evEnd = len(l.b)
}

func appendNameOrNull(b []byte, name jsonview.Value) []byte {
	if name.Kind() == jsonview.String {
		return append(b, name.Raw()...)
	}
	return append(b, "null"...)
}
