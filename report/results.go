package report

import (
	"fmt"
	"strconv"

	"github.com/gavelhq/gavel/join"
)

// value is one cell of a result row.
type value = join.Value

// scanTable reads every part file under dir/table (rewards or checks), in
// part order, and calls fn for each row with the values of cols, aligned.
// The values are valid only during the call.
func scanTable(dir, table string, cols []string, fn func(vals []value) error) error {
	return join.Scan(dir, table, cols, fn)
}

func parseReward(v value) (float64, bool, error) {
	if v.Null() {
		return 0, false, nil
	}
	f, err := strconv.ParseFloat(string(v.Data), 64)
	if err != nil {
		return 0, false, fmt.Errorf("reward %q: not a number", v.Data)
	}
	return f, true, nil
}
