package report

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/join"
	"github.com/gavelhq/gavel/results"
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

// scanDecoded reads the rows of dir/table as the columns cols, each
// decoded by dec (the table's column definitions, with Views) into one
// row reused from call to call: its plain strings are valid only during
// the call.
func scanDecoded[R any](dir, table string, cols []string, dec *columnar.ResultDecoder[R], fn func(r *R) error) error {
	var r R
	var cells []columnar.Cell
	return join.Scan(dir, table, cols, func(vals []value) error {
		cells = cells[:0]
		for _, v := range vals {
			cells = append(cells, columnar.Cell{Kind: v.Kind, Data: v.Data})
		}
		if err := dec.Decode(cells, &r); err != nil {
			return err
		}
		return fn(&r)
	})
}

// scanRewards reads the rewards rows of dir as the rewards columns cols,
// decoded (see scanDecoded); strs interns the categorical strings.
func scanRewards(dir string, cols []string, strs columnar.Interner, fn func(r *columnar.RewardRow) error) error {
	dec, err := columnar.NewRewardDecoder(cols, nil, strs)
	if err != nil {
		return err
	}
	return scanDecoded(dir, join.Rewards, cols, dec.Views(), fn)
}

// scanChecks reads the checks rows of dir as the checks columns cols,
// decoded (see scanDecoded); strs interns the categorical strings. The
// rows of flags are stepped over (join.Scan): fn sees checks only.
func scanChecks(dir string, cols []string, strs columnar.Interner, fn func(r *columnar.CheckRow) error) error {
	dec, err := columnar.NewCheckDecoder(cols, strs)
	if err != nil {
		return err
	}
	return scanDecoded(dir, join.Checks, cols, dec.Views(), fn)
}

// hasFlags reports whether the run of the result directory dir had flags
// (its manifest says so; a directory without a readable manifest has
// none).
func hasFlags(dir string) bool {
	m, err := results.ReadManifest(filepath.Join(dir, results.ManifestFile))
	return err == nil && m.Config.Flags
}

// scoresTurns reports whether the run of the result directory dir scored
// turns (its manifest says so; a directory without a readable manifest
// did not).
func scoresTurns(dir string) bool {
	m, err := results.ReadManifest(filepath.Join(dir, results.ManifestFile))
	return err == nil && m.Config.Turns
}

// scanJudgementRows reads the judgements rows of dir as the judgements
// columns cols, decoded (see scanDecoded); strs interns the categorical
// strings.
func scanJudgementRows(dir string, cols []string, strs columnar.Interner, fn func(r *columnar.JudgementRow) error) error {
	dec, err := columnar.NewJudgementDecoder(cols, strs)
	if err != nil {
		return err
	}
	return scanDecoded(dir, Judgements, cols, dec.Views(), fn)
}
