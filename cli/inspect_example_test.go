package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// inspectCase is an Inspect log whose answers differ from their targets
// only by case and surrounding white space ("spring10" for " Spring10\n",
// "CANCELLED" for ["Cancelled", " canceled"]).
var inspectCase = filepath.Join("..", "testdata", "inspect-case", "log.json")

// The Inspect example spec trims and case-folds the answer and the target:
// every answer of inspectCase passes. The expression the example had
// before, output.contains(task.target), passes none of them, which is
// what the fixture is for.
func TestInspectExampleFoldsCase(t *testing.T) {
	count := func(spec string) (passed, rows int) {
		t.Helper()
		out, code, stderr := gradeFrom(t, "--from", "inspect", "--spec", spec, inspectCase)
		if code != 0 {
			t.Fatalf("grade with %s: exit %d: %s", spec, code, stderr)
		}
		for _, row := range rewardRows(t, out) {
			rows++
			if row["status"] == "passed" {
				passed++
			}
		}
		return passed, rows
	}
	if passed, rows := count(filepath.Join(examples, "inspect.yaml")); rows != 5 || passed != rows {
		t.Errorf("examples/harness/inspect.yaml passed %d of %d rollouts, want all of 5", passed, rows)
	}

	old := filepath.Join(t.TempDir(), "old.yaml")
	if err := os.WriteFile(old, []byte(inspectAsFirstWritten), 0o644); err != nil {
		t.Fatal(err)
	}
	if passed, rows := count(old); rows != 5 || passed != 0 {
		t.Errorf("the expression as first written passed %d of %d rollouts, want none: the fixture no longer differs by case and white space only", passed, rows)
	}
}

// inspectAsFirstWritten is the example spec before it folded case: it
// failed every sample of a real log whose targets and answers differed
// in case or white space.
const inspectAsFirstWritten = `verifiers:
  - id: SHOP-TOTALS
    tasks: ["shop_totals/1", "shop_totals/q-2"]
    name: The answer holds the target, coupons checked
    checks:
      - id: target-in-output
        type: expr
        expr: 'type(task.target) == string ? output.contains(task.target) : task.target.exists(t, output.contains(t))'
`
