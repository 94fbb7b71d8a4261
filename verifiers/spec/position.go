package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Positions in spec files. A problem found in the node tree has the node's
// line and column. Two kinds of problem lie inside a node, and are located
// here: a file that does not parse, and a CEL expression that does not
// compile.

// syntaxError locates the error err of parsing data (parseYAML) and
// returns its 1-based line and column and its message without the
// parser's own "yaml: line N:" prefix.
//
// A file that reads as JSON (its first character is { or [) is located by
// encoding/json, exactly: the offending character. Otherwise the YAML
// parser names only a line, sometimes that of the enclosing collection,
// and never a column; the position is then found by parsing prefixes of
// the file: the shortest prefix, starting on or after that line, that
// fails with the same error ends with the character at fault. Parsing is
// a streaming scan, so a prefix that stops before that character fails
// differently or not at all; a binary search needs a few dozen parses of
// a file of a few kilobytes.
func syntaxError(data []byte, err error) (line, col int, msg string) {
	full := err.Error()
	msg = strings.TrimPrefix(full, "yaml: ")
	reported := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if v, err := strconv.Atoi(n); err == nil {
				reported, msg = v, after
			}
		}
	}
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		var se *json.SyntaxError
		text, skip := data, 0
		if bytes.HasPrefix(text, bom) { // YAML skips it; encoding/json does not
			text, skip = text[len(bom):], len(bom)
		}
		if err := json.Unmarshal(text, new(json.RawMessage)); errors.As(err, &se) {
			at := skip + int(se.Offset) - 1 // Offset counts the offending byte
			if at < 0 {
				at = 0
			}
			line, col = lineColumn(data, at)
			return line, col, se.Error()
		}
	}
	lo := lineStart(data, reported) // the error is on or after the line named
	hi := len(data)
	fails := func(n int) bool {
		var doc yaml.Node
		err := yaml.Unmarshal(data[:n], &doc)
		return err != nil && err.Error() == full
	}
	if !fails(hi) { // cannot happen: data is the file that failed
		return reported, 0, msg
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	at := hi - 1 // the last byte of the shortest failing prefix
	if at < 0 {
		at = 0
	}
	line, col = lineColumn(data, at)
	return line, col, msg
}

// bom is the UTF-8 byte order mark.
var bom = []byte("\ufeff")

// lineStart returns the offset of the start of the 1-based line (0 for
// line 1 and below; len(data) past the end).
func lineStart(data []byte, line int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return len(data)
		}
		off += i + 1
	}
	return off
}

// lineColumn returns the 1-based line and column (counted in characters,
// as the YAML parser counts node columns) of the byte at offset at.
func lineColumn(data []byte, at int) (line, col int) {
	if at > len(data) {
		at = len(data)
	}
	before := data[:at]
	line = 1 + bytes.Count(before, []byte{'\n'})
	start := bytes.LastIndexByte(before, '\n') + 1
	if start == 0 && bytes.HasPrefix(before, bom) { // editors do not show it
		start = len(bom)
	}
	return line, 1 + utf8.RuneCount(before[start:])
}

// exprPosition returns the position in the spec file of the character at
// 1-based line and 0-based column (as CEL reports them) of the expression
// held by the string node n: exactly when the expression is written as it
// reads (on one line, plain or quoted without escapes, or in a literal
// block scalar); otherwise the node's own position.
func (l *loader) exprPosition(n *yaml.Node, line, col int) (int, int) {
	if line < 1 || col < 0 {
		return n.Line, n.Column
	}
	if n.Style == yaml.LiteralStyle {
		// The text starts on the line after the indicator, every line
		// indented as its first (CEL counts columns after that).
		first := lineStart(l.data, n.Line+1)
		text := l.data[first:]
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			text = text[:i]
		}
		indent := len(text) - len(bytes.TrimLeft(text, " "))
		if first < len(l.data) && indent > 0 {
			return n.Line + line, 1 + indent + col
		}
		return n.Line, n.Column
	}
	quote := 0
	if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
		quote = 1
	}
	// The expression as written must be the node's value, character for
	// character, on the node's line.
	start := lineStart(l.data, n.Line)
	text := l.data[start:]
	if i := bytes.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	written := []rune(string(text))
	from := n.Column - 1 + quote
	value := []rune(n.Value)
	if line == 1 && from >= 0 && from+len(value) <= len(written) && string(written[from:from+len(value)]) == n.Value {
		return n.Line, n.Column + quote + col
	}
	return n.Line, n.Column
}
