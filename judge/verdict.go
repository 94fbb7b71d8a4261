package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Verdict is a judge's grade of one output: a score in [0, 1], the specific
// issues found, and one concrete suggestion.
type Verdict struct {
	Score      float64  `json:"score"`
	Issues     []string `json:"issues"`
	Suggestion string   `json:"suggestion"`
	// Better is a pairwise verdict's preference (BetterFirst, BetterSecond
	// or BetterTie); "" in a rubric verdict.
	Better string `json:"better,omitempty"`
}

// Pass reports whether the verdict's score reaches threshold (score >= threshold).
func (v Verdict) Pass(threshold float64) bool { return v.Score >= threshold }

// verdictSchema is the JSON schema requested in schema mode. It is strict:
// every property is required and no other is allowed.
var verdictSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"score":      map[string]any{"type": "number", "minimum": 0, "maximum": 1},
		"issues":     map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"suggestion": map[string]any{"type": "string"},
	},
	"required":             []string{"score", "issues", "suggestion"},
	"additionalProperties": false,
}

// ParseVerdict reads a verdict from a judge's reply. The reply is either one
// JSON object or text containing one: the first balanced {...} in content
// that is valid JSON is used. The object must have a numeric "score" in
// [0, 1]; "issues", when present and not null, must be a list of strings, and
// "suggestion", when present and not null, a string. Other members are
// ignored. ParseVerdict never panics.
func ParseVerdict(content []byte) (Verdict, error) {
	obj, ok := firstObject(content)
	if !ok {
		return Verdict{}, errors.New("no JSON object in reply")
	}
	var raw struct {
		Score      json.RawMessage `json:"score"`
		Issues     json.RawMessage `json:"issues"`
		Suggestion json.RawMessage `json:"suggestion"`
	}
	if err := json.Unmarshal(obj, &raw); err != nil {
		return Verdict{}, fmt.Errorf("reply object: %v", err)
	}
	var v Verdict
	if len(raw.Score) == 0 || string(raw.Score) == "null" {
		return Verdict{}, errors.New("reply has no score")
	}
	if raw.Score[0] == '"' {
		return Verdict{}, fmt.Errorf("score %s is not a number", raw.Score)
	}
	if err := json.Unmarshal(raw.Score, &v.Score); err != nil {
		return Verdict{}, fmt.Errorf("score %.40s is not a number", raw.Score)
	}
	if math.IsNaN(v.Score) || v.Score < 0 || v.Score > 1 {
		return Verdict{}, fmt.Errorf("score %v is outside [0, 1]", v.Score)
	}
	if len(raw.Issues) > 0 && string(raw.Issues) != "null" {
		if err := json.Unmarshal(raw.Issues, &v.Issues); err != nil {
			return Verdict{}, errors.New("issues is not a list of strings")
		}
	}
	if len(raw.Suggestion) > 0 && string(raw.Suggestion) != "null" {
		if err := json.Unmarshal(raw.Suggestion, &v.Suggestion); err != nil {
			return Verdict{}, errors.New("suggestion is not a string")
		}
	}
	if v.Issues == nil {
		v.Issues = []string{}
	}
	return v, nil
}

// firstObject returns the first balanced JSON object in b that is valid
// JSON: the whole of b when it is one, else the first {...} found by
// matching braces outside strings.
func firstObject(b []byte) ([]byte, bool) {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return t, true
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '{' {
			continue
		}
		if end, ok := balanced(b[i:]); ok && json.Valid(b[i:i+end]) {
			return b[i : i+end], true
		}
	}
	return nil, false
}

// balanced returns the length of the brace-balanced prefix of b, which
// begins with '{', skipping braces inside JSON strings.
func balanced(b []byte) (int, bool) {
	depth, inString, escaped := 0, false, false
	for i, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}
