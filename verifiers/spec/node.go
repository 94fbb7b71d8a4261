package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// The spec files are read with go.yaml.in/yaml/v3 into its Node tree, which
// keeps the line and column of every node; JSON files are YAML too, so one
// loader reads both. Values that checks compare against (patterns, assert
// values, function arguments, steps) are turned into JSON text and parsed
// once into their own jsonview documents, so that grading compares state
// values with them exactly as Go verifiers compare state values with each
// other (jsonview.Equal).

// parseYAML parses data into its document's root node.
func parseYAML(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	return resolve(doc.Content[0]), nil
}

// resolve follows aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// kindName names a node's kind for messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "an object"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str", "!!timestamp", "!!binary":
			return "a string"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		}
	}
	return "a " + n.ShortTag()
}

// isString reports whether a scalar node reads as a string.
func isString(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	switch n.ShortTag() {
	case "!!str", "!!timestamp", "!!binary":
		return true
	}
	return false
}

// jsonText renders a node as compact JSON. With sortKeys, object keys are
// sorted (the canonical form); otherwise they keep document order. It fails
// on values JSON cannot hold (infinities, NaN).
func jsonText(n *yaml.Node, sortKeys bool) ([]byte, *yaml.Node, error) {
	var buf bytes.Buffer
	bad, err := appendJSON(&buf, n, sortKeys)
	return buf.Bytes(), bad, err
}

func appendJSON(buf *bytes.Buffer, n *yaml.Node, sortKeys bool) (*yaml.Node, error) {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		type member struct{ k, v *yaml.Node }
		ms := make([]member, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			ms = append(ms, member{resolve(n.Content[i]), n.Content[i+1]})
		}
		if sortKeys {
			sort.SliceStable(ms, func(i, j int) bool { return ms[i].k.Value < ms[j].k.Value })
		}
		buf.WriteByte('{')
		for i, m := range ms {
			if i > 0 {
				buf.WriteByte(',')
			}
			if m.k.Kind != yaml.ScalarNode {
				return m.k, fmt.Errorf("object keys must be scalars, not %s", kindName(m.k))
			}
			writeString(buf, m.k.Value)
			buf.WriteByte(':')
			if bad, err := appendJSON(buf, m.v, sortKeys); err != nil {
				return bad, err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if bad, err := appendJSON(buf, c, sortKeys); err != nil {
				return bad, err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			buf.WriteString("null")
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return n, err
			}
			buf.WriteString(strconv.FormatBool(b))
		case "!!int", "!!float":
			if json.Valid([]byte(n.Value)) {
				buf.WriteString(n.Value) // keep the number as written
				return nil, nil
			}
			var f float64
			if err := n.Decode(&f); err != nil {
				return n, err
			}
			if math.IsInf(f, 0) || math.IsNaN(f) {
				return n, fmt.Errorf("%s is not a JSON number", n.Value)
			}
			buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		default:
			writeString(buf, n.Value)
		}
	default:
		return n, fmt.Errorf("unsupported YAML node")
	}
	return nil, nil
}

func writeString(buf *bytes.Buffer, s string) {
	buf.Write(jsonview.AppendJSONString(buf.AvailableBuffer(), s))
}

// constant parses JSON text into a jsonview value kept for the life of the
// program; grading reads it from many goroutines at once, which jsonview
// allows.
func constant(text []byte) jsonview.Value {
	d := new(jsonview.Doc)
	v, err := d.Parse(text)
	if err != nil {
		panic("spec: constant is not JSON: " + err.Error()) // jsonText always writes JSON
	}
	return v
}

// Shared constants.
var (
	trueValue  = constant([]byte("true"))
	falseValue = constant([]byte("false"))
	nullValue  = constant([]byte("null"))
)

func boolValue(b bool) jsonview.Value {
	if b {
		return trueValue
	}
	return falseValue
}
