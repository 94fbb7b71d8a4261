package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exprCheck is a spec whose only check is an expr check written as expr
// (one or more lines, indented under the check).
func exprCheck(expr string) string {
	return oneCheck("- id: c\n  type: expr\n  expr: " + expr)
}

// TestProblemPositions checks that problems inside a node, or in a file
// that does not parse, point at the character at fault, not at the start
// of the node or of the line.
func TestProblemPositions(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       string // "line:col: message part" of the first problem
	}{
		{"unclosed flow list", "verifiers: [\n", "1:12: not valid YAML or JSON: did not find expected node content"},
		{"colon in a plain value", "verifiers:\n  - id: V\n    name: Team: meeting\n", "3:15: not valid YAML or JSON: mapping values are not allowed in this context"},
		{"json missing comma", "{\n  \"verifiers\": [\n    {\"id\": \"V\", \"task\": \"T\" \"name\": \"n\"}\n  ]\n}\n", "3:29: not valid YAML or JSON: invalid character '\"' after object key:value pair"},
		{"json after a byte order mark", "\ufeff{\"verifiers\": [{\"id\": \"V\" \"task\": \"T\"}]}", "1:27: not valid YAML or JSON: invalid character '\"' after object key:value pair"},
		{"json on one line", "{\"verifiers\": [{\"id\": \"V\" \"task\": \"T\"}]}", "1:27: not valid YAML or JSON: invalid character '\"' after object key:value pair"},
		{"CEL error in a plain expression", exprCheck(`final.events.size() > 0 && outptu == ""`), "8:42: CEL expression does not compile"},
		{"CEL error in a quoted expression", exprCheck(`"1 + true == 2"`), "8:18: CEL expression does not compile"},
		{"CEL error in a block", exprCheck("|\n    final.events.size() > 0 &&\n      outptu == \"\""), "10:13: CEL expression does not compile"},
		{"CEL error in a value expression", stateAssert("{comparator: eq, value: {expr: \"1 +\"}}"), "10:48: CEL expression does not compile"},
		{"reward weight not a number", rewardSpec("{weighted: {c: high}}"), "5:28: reward of verifier \"V\": weighted: weights must be"},
		{"reward weighs an unknown check", rewardSpec("{weighted: {c: 2, d: 1}}"), "5:31: reward of verifier \"V\" weighs unknown check \"d\""},
		{"reward expression", rewardSpec("{expr: 'checks.('}"), "5:20: reward of verifier \"V\": reward expression"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tc.spec))
			var ps Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("Parse = %v, want problems", err)
			}
			if got := ps[0].Error(); !strings.HasPrefix(got, "test.yaml:"+tc.want) {
				t.Errorf("problem = %q, want it to start with %q\nspec:\n%s", got, "test.yaml:"+tc.want, tc.spec)
			}
		})
	}
}

func TestDuplicateIDAcrossFilesPosition(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	b := filepath.Join(dir, "b.yaml")
	os.WriteFile(a, []byte("verifiers:\n  - {id: V1, task: T1, name: one, checks: [{id: c, type: expr, expr: 'true'}]}\n"), 0o644)
	os.WriteFile(b, []byte("# another file\nverifiers:\n    - {id: V1, task: T2, name: one, checks: [{id: c, type: expr, expr: 'true'}]}\n"), 0o644)
	_, err := Load([]string{a, b})
	if want := b + ":3:7: duplicate verifier id \"V1\" (also at " + a + ":2)"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Load = %v, want a problem starting with %q", err, want)
	}
}
