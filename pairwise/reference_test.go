package pairwise

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gavelhq/gavel/columnar"
)

// referencePairs is the generated page of the pairs table.
var referencePairs = filepath.Join("..", "docs", "reference", "pairs.md")

// pairMeanings are what each column of the pairs table holds;
// TestReferencePairs fails on a column without one.
var pairMeanings = map[string]string{
	"task_id":      "the task both rollouts attempted",
	"sample":       "the rollouts' sample index on the task: a row's integer `sample` column, else its order among the group's rollouts of the task, from 0",
	"group_a":      "the group (`--by`, e.g. the model) of the first rollout",
	"group_b":      "the group of the second rollout",
	"rollout_id_a": "the first rollout's id",
	"rollout_id_b": "the second rollout's id",
	"verdict_ab":   "the judge's preference with A's output shown first, in terms of the groups: `a`, `b` or `tie`; null when not judged",
	"verdict_ba":   "the judge's preference with B's output shown first, in the same terms (`a` is still group A); null when not judged",
	"outcome":      "from group A's side: `win` or `loss` when both orders prefer the same output, `tie` when both say tie, `inconsistent` when they disagree (counted as a tie), `error` when a judgement failed, `pending` when the budget ran out (neither counted)",
	"error":        "the failed judgement's message; null unless the outcome is `error`",
}

// TestReferencePairs checks that docs/reference/pairs.md describes every
// column of the pairs table (gavel judge pairwise) as the code writes it;
// GAVEL_UPDATE_DOCS=1 (make docs) rewrites it.
func TestReferencePairs(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("# Pairs table reference\n\n" +
		"<!-- Generated from the code by `make docs`; do not edit. -->\n\n" +
		"`gavel judge pairwise` writes `pairs/part-00000` (Parquet, Arrow or JSON\n" +
		"Lines, as `--format` says), one row per pair of rollouts compared, in\n" +
		"the order of the pairs; [Trusting judges](../trusting-judges.md) shows it at\n" +
		"work. Every column is optional in the file's schema; `verdict_ab`,\n" +
		"`verdict_ba` and `error` are the ones that are null.\n\n" +
		"| column | type | meaning |\n| --- | --- | --- |\n")
	seen := map[string]bool{}
	for _, c := range Columns {
		m, ok := pairMeanings[c.Name]
		if !ok {
			t.Errorf("pairs.%s has no meaning in pairMeanings", c.Name)
		}
		seen[c.Name] = true
		typ := "string"
		if c.Type == columnar.DatasetInt64 {
			typ = "int64"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", c.Name, typ, m)
	}
	for k := range pairMeanings {
		if !seen[k] {
			t.Errorf("pairMeanings names %s, which the pairs table does not have", k)
		}
	}
	if os.Getenv("GAVEL_UPDATE_DOCS") != "" {
		if err := os.WriteFile(referencePairs, bytes.TrimRight(b.Bytes(), "\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(referencePairs)
	if err != nil || !bytes.Equal(have, bytes.TrimRight(b.Bytes(), "\n")) {
		t.Errorf("docs/reference/pairs.md is not generated from the code (%v): run make docs", err)
	}
}
