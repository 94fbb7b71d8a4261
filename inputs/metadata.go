package inputs

import (
	"fmt"

	"github.com/gavelhq/gavel/columnar"
)

// Constant is one member of metadata that every row gets (a run's --set).
type Constant struct {
	Key, Value string
}

// CheckSet returns the constants of set, checked: each has a key that is
// not a rollout field and is set once.
func CheckSet(set []Constant, fields *columnar.FieldNames) ([]Constant, error) {
	var out []Constant
	seen := map[string]bool{}
	for _, c := range set {
		switch {
		case c.Key == "":
			return nil, &ConfigError{Field: "Set", Msg: "a constant needs a key"}
		case fields.Is(c.Key):
			return nil, &ConfigError{Field: "Set", Msg: fmt.Sprintf("%s is a rollout field, not metadata", c.Key)}
		case seen[c.Key]:
			return nil, &ConfigError{Field: "Set", Msg: fmt.Sprintf("%s is set twice", c.Key)}
		}
		seen[c.Key] = true
		out = append(out, c)
	}
	return out, nil
}

// DefaultKeep returns those of model, run_id and sample that any input
// has, by the inputs' descriptions: the columns of Parquet and Arrow
// files, the keys of the first object line of JSON Lines files, the
// members of the first rollout of a harness's log, and the keys of set.
// A harness's recorded_reward and recorded_scores follow, when one of its
// logs has them. Standard input is probed only as a harness's log (with
// Config.From) or an Arrow IPC stream (its schema), and a file that
// cannot be read is not: grading it fails later, as that unit's error.
func DefaultKeep(units []Unit, fields columnar.FieldNames, set []Constant) []string {
	want := []string{"model", "run_id", "sample", "recorded_reward", "recorded_scores"}
	found := map[string]bool{}
	for _, u := range units {
		if u.Described() == nil {
			continue
		}
		harness := columnar.IsHarnessFormat(u.Format)
		for _, n := range u.Described().Columns {
			if harness || (n != "recorded_reward" && n != "recorded_scores") {
				found[n] = true
			}
		}
	}
	for _, c := range set {
		found[c.Key] = true
	}
	keep := []string{}
	for _, w := range want {
		if found[w] && !fields.Is(w) {
			keep = append(keep, w)
		}
	}
	return keep
}
