package spec

import (
	"strings"
	"testing"

	"github.com/gavelhq/gavel/columnar/jsonview"
	"github.com/gavelhq/gavel/verifiers"
)

// mustParse loads a spec text that must be valid.
func mustParse(t testing.TB, text string) []*verifiers.Verifier {
	t.Helper()
	vs, err := Parse("test.yaml", []byte(text))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return vs
}

// state parses JSON text for a rollout field ("" is missing).
func state(t testing.TB, text string) jsonview.Value {
	t.Helper()
	if text == "" {
		return jsonview.Value{}
	}
	var d jsonview.Doc
	v, err := d.Parse([]byte(text))
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	return v
}

// ro is a rollout written as JSON texts.
type ro struct {
	final, initial, log, output, task, meta string
}

func (r ro) rollout(t testing.TB) *verifiers.Rollout {
	return &verifiers.Rollout{
		ID: "r", TaskID: "T",
		Final: state(t, r.final), Initial: state(t, r.initial), Log: state(t, r.log),
		Output: r.output, Task: state(t, r.task), Meta: state(t, r.meta),
	}
}

// grade runs the first verifier of the spec on a rollout.
func grade(t testing.TB, spec string, r ro) []verifiers.Check {
	t.Helper()
	v := mustParse(t, spec)[0]
	var c verifiers.Checks
	if err := v.Grade(r.rollout(t), &c); err != nil {
		t.Fatalf("Grade: %v", err)
	}
	return append([]verifiers.Check(nil), c.List()...)
}

// oneCheck wraps check YAML (indented as a list item under checks) into a
// spec with one verifier.
func oneCheck(check string) string {
	return "verifiers:\n  - id: V\n    task: T\n    name: test\n    checks:\n" + indent(check, "      ")
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pre + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// stateAssert is a state check of table "events" with one assert.
func stateAssert(assert string) string {
	return oneCheck("- id: c\n  type: state\n  table: events\n  asserts:\n" + indent("- "+assert, "    "))
}
