package health

import (
	"fmt"
	"testing"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

func TestFlags(t *testing.T) {
	parse := func(text string) jsonview.Value {
		if text == "" {
			return jsonview.Value{}
		}
		var d jsonview.Doc
		v, err := d.Parse([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name, output, log, meta string
		want                    []string
	}{
		{"answered", "42", `[]`, `{}`, nil},
		{"row of answers", "", ``, `{}`, []string{EmptyOutput}},
		{"blank with an empty log", " \n", `[]`, `{}`, []string{EmptyOutput, NoAgentTurn}},
		{"blank with a tool call", "", `[{"eventType": "tool_call"}]`, `{}`, []string{EmptyOutput}},
		{"blank with an agent step", "", `[{"source": "agent"}]`, `{}`, []string{EmptyOutput}},
		{"user-only messages", "", ``, `{"messages": [{"role": "user"}]}`, []string{EmptyOutput, NoAgentTurn}},
		{"assistant message", "", ``, `{"messages": [{"role": "assistant", "content": ""}]}`, []string{EmptyOutput}},
		{"inspect message limit", "x", `[]`, `{"termination_reason": "message"}`, []string{Truncated}},
		{"operator limit", "x", `[]`, `{"termination_reason": "operator"}`, nil},
		{"tau2 error", "x", `[]`, `{"termination_reason": "too_many_errors"}`, []string{HarnessError}},
		{"recorded error", "x", `[]`, `{"recorded_error": "boom"}`, []string{HarnessError}},
		{"blank recorded error", "x", `[]`, `{"recorded_error": " "}`, nil},
		{"null recorded error", "x", `[]`, `{"recorded_error": null}`, nil},
	} {
		r := verifiers.Rollout{Output: tc.output, Log: parse(tc.log), Meta: parse(tc.meta)}
		if got := Flags(&r, nil); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
