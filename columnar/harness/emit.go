package harness

import "github.com/gavelhq/gavel/columnar/jsonview"

// The functions below build a rollout's JSON text by appending to a byte
// slice. Values copied from the input are valid JSON (jsonview validated
// them) and are copied compacted, so that a rollout is one line of JSON
// Lines. Strings are copied as written, escapes included: joining the
// bodies of JSON strings with the two bytes `\n` gives a valid JSON
// string, so texts are never unescaped and escaped again.

// object appends the members of one JSON object. The zero value has
// written nothing; begin starts the object.
type object struct {
	b    []byte
	more bool
}

func (o *object) begin(b []byte) {
	o.b = append(b, '{')
	o.more = false
}

func (o *object) end() []byte {
	o.b = append(o.b, '}')
	return o.b
}

// key appends a member name (a Go string literal that needs no escapes).
func (o *object) key(k string) {
	if o.more {
		o.b = append(o.b, ',')
	}
	o.more = true
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

// raw appends a member whose value is the JSON text v, compacted.
func (o *object) raw(k string, v jsonview.Value) {
	o.key(k)
	o.b = appendCompact(o.b, v.Raw())
}

// rawIf is raw for a value that exists and is not null.
func (o *object) rawIf(k string, v jsonview.Value) {
	if !v.IsNull() {
		o.raw(k, v)
	}
}

// str appends a member whose value is the Go string s.
func (o *object) str(k, s string) {
	o.key(k)
	o.b = jsonview.AppendJSONString(o.b, s)
}

// member appends a member of an input object as written, compacted.
func (o *object) member(m jsonview.Value) {
	if o.more {
		o.b = append(o.b, ',')
	}
	o.more = true
	o.b = appendCompact(o.b, m.RawMember())
}

// appendCompact appends the valid JSON text raw without the whitespace
// outside its strings.
func appendCompact(b, raw []byte) []byte {
	start := 0 // raw[start:i] is still to be copied
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			b = append(b, raw[start:i]...)
			start = i + 1
		case '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		}
	}
	return append(b, raw[start:]...)
}

// body returns the text of a JSON string between its quotes, escapes as
// written, and whether v is a string.
func body(v jsonview.Value) ([]byte, bool) {
	if v.Kind() != jsonview.String {
		return nil, false
	}
	r := v.Raw()
	return r[1 : len(r)-1], true
}

// appendIDBody appends an id (a string, or a number in its text form) as
// the body of a JSON string. It reports false when v is neither.
func appendIDBody(b []byte, v jsonview.Value) ([]byte, bool) {
	switch v.Kind() {
	case jsonview.String:
		s, _ := body(v)
		return append(b, s...), true
	case jsonview.Number:
		return append(b, v.Raw()...), true
	}
	return b, false
}

// appendStringBody appends s escaped as the body of a JSON string (as
// jsonview.AppendJSONString escapes it, without the quotes).
func appendStringBody(b []byte, s string) []byte {
	n := len(b)
	b = jsonview.AppendJSONString(b, s)
	copy(b[n:], b[n+1:len(b)-1])
	return b[:len(b)-2]
}

// elems returns the first element of v, an array, to iterate with Next;
// Missing when v is not an array. The lists a rollout is mapped from
// (messages, content parts, tool calls) are arrays: the members of an
// object in their place are not read as a list's elements.
func elems(v jsonview.Value) jsonview.Value {
	if v.Kind() != jsonview.Array {
		return jsonview.Value{}
	}
	return v.First()
}

// appendText appends the text of a message's content as the body of a
// JSON string: a string content as it is; of a list of parts, the text of
// each part whose type is "text" (Inspect, OpenAI) or an OpenAI Responses
// "input_text" or "output_text", joined with a newline. sep is written
// before the first text when the content has any. It reports whether it
// wrote a text.
func appendText(b []byte, content jsonview.Value, sep string) ([]byte, bool) {
	if s, ok := body(content); ok {
		if len(s) == 0 {
			return b, false
		}
		return append(append(b, sep...), s...), true
	}
	wrote := false
	for p := elems(content); p.Exists(); p = p.Next() {
		t := p.Get("type")
		if !t.StrIs("text") && !t.StrIs("output_text") && !t.StrIs("input_text") {
			continue
		}
		s, ok := body(p.Get("text"))
		if !ok || len(s) == 0 {
			continue
		}
		if wrote {
			b = append(b, `\n`...)
		} else {
			b = append(b, sep...)
		}
		b = append(b, s...)
		wrote = true
	}
	return b, wrote
}
