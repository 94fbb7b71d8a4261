package jsonview

import (
	"bytes"
	"encoding/json"
	"testing"
)

// parse indexes s with a fresh Doc, failing the test on error.
func parse(t testing.TB, s string) Value {
	t.Helper()
	var d Doc
	v, err := d.Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse(%q) error: %v", s, err)
	}
	return v
}

// generic walks a view into the value encoding/json decodes the same text
// to with UseNumber: map[string]any (a repeated key's last value wins, as
// in encoding/json), []any, string, json.Number, bool or nil. Missing
// reads as the string "<missing>".
func generic(v Value) any {
	switch v.Kind() {
	case Null:
		return nil
	case True, False:
		b, _ := v.Bool()
		return b
	case Number:
		return json.Number(v.Raw())
	case String:
		s, _ := v.Str()
		return string(s)
	case Array:
		out := []any{}
		for c := v.First(); c.Exists(); c = c.Next() {
			out = append(out, generic(c))
		}
		return out
	case Object:
		out := map[string]any{}
		for c := v.First(); c.Exists(); c = c.Next() {
			out[string(c.Key())] = generic(c)
		}
		return out
	}
	return "<missing>"
}

// decodeStd decodes data with encoding/json, numbers as json.Number.
func decodeStd(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}
