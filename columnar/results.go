package columnar

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
)

// NullString is a string column value that may be null.
type NullString struct {
	S     string
	Valid bool
}

// Str returns a valid NullString.
func Str(s string) NullString { return NullString{S: s, Valid: true} }

// RewardRow is one row of rewards/part-NNNNN (docs/reference/outputs.md,
// "rewards"), one per rollout. Its columns are rewardColumns, then one per
// kept metadata value.
type RewardRow struct {
	RolloutID      string
	TaskID         string
	VerifierID     NullString
	Status         string
	Passed         bool
	PassedValid    bool // false: passed is null
	Reward         float64
	RewardValid    bool // false: reward is null
	ChecksTotal    int32
	ChecksPassed   int32
	RequiredTotal  int32
	RequiredPassed int32
	ErrorKind      NullString
	Error          NullString
	SourceFile     string
	SourceRow      int64
	// InputHash identifies the rollout's input (see the pipeline's input
	// hash); InputHashValid is false (input_hash null) when the row's
	// input could not be read.
	InputHash      uint64
	InputHashValid bool
	// Flags lists the ids of the flags raised on the rollout: its
	// verifier's, in their order, then the health flags; empty when none.
	// Written only in a run with flags (PartOptions.Flags).
	Flags []string
	// OutputHash identifies the rollout's output (XXH64 of its text),
	// written only in a run with flags, for patterns across rollouts (an
	// output given for every task); OutputHashValid is false (null) when
	// the row's input could not be read.
	OutputHash      uint64
	OutputHashValid bool
	// TurnRewards holds the reward of each agent turn, NaN (null) for a
	// turn not scored; the list is null (TurnRewardsValid false) for a
	// rollout whose verifier scores no turns or that has no reward. Turns
	// is the number of agent turns, null when the rollout has no
	// conversation. Both are written only in a run that scores turns
	// (PartOptions.Turns).
	TurnRewards      []float64
	TurnRewardsValid bool
	Turns            int32
	TurnsValid       bool
	// FlagRows is the number of flag rows (KindFlag) that follow the
	// rollout's ChecksTotal check rows in the checks table; not a column.
	// Writers of rows set it; a row read back from a part has 0.
	FlagRows int32
	// Keep holds the kept metadata values, aligned with the part's keep
	// column names (all written as nullable strings).
	Keep []NullString
}

// rewardColumns are the fixed columns of the rewards table, in order; the
// keep columns follow them (rewardsTable).
var rewardColumns = []column[RewardRow]{
	stringCol("rollout_id", pqPlain, func(r *RewardRow) *string { return &r.RolloutID }),
	stringCol("task_id", pqCategorical, func(r *RewardRow) *string { return &r.TaskID }),
	nullStringCol("verifier_id", pqCategorical, func(r *RewardRow) *NullString { return &r.VerifierID }),
	stringCol("status", pqCategorical, func(r *RewardRow) *string { return &r.Status }),
	nullBoolCol("passed", func(r *RewardRow) (*bool, *bool) { return &r.Passed, &r.PassedValid }),
	nullFloat64Col("reward", func(r *RewardRow) (*float64, *bool) { return &r.Reward, &r.RewardValid }),
	int32Col("checks_total", func(r *RewardRow) *int32 { return &r.ChecksTotal }),
	int32Col("checks_passed", func(r *RewardRow) *int32 { return &r.ChecksPassed }),
	int32Col("required_total", func(r *RewardRow) *int32 { return &r.RequiredTotal }),
	int32Col("required_passed", func(r *RewardRow) *int32 { return &r.RequiredPassed }),
	nullStringCol("error_kind", pqCategorical, func(r *RewardRow) *NullString { return &r.ErrorKind }),
	nullStringCol("error", pqPlain, func(r *RewardRow) *NullString { return &r.Error }),
	stringCol("source_file", pqCategorical, func(r *RewardRow) *string { return &r.SourceFile }),
	int64Col("source_row", func(r *RewardRow) *int64 { return &r.SourceRow }),
	nullHashCol(ColumnInputHash, func(r *RewardRow) (*uint64, *bool) { return &r.InputHash, &r.InputHashValid }),
}

// ColumnInputHash names the rewards column of the rollout's input hash; no
// kept metadata column may take its name.
const ColumnInputHash = "input_hash"

// CheckRows returns the number of rows of the checks table that belong
// to the rollout: its checks, then its flags.
func (r *RewardRow) CheckRows() int { return int(r.ChecksTotal) + int(r.FlagRows) }

// ColumnFlags, ColumnOutputHash and ColumnKind name the columns a run
// with flags adds: the rewards' list of flags raised and hash of the
// output, and the checks' kind of row (KindCheck or KindFlag).
const (
	ColumnFlags      = "flags"
	ColumnOutputHash = "output_hash"
	ColumnKind       = "kind"
)

// ColumnTurnRewards, ColumnTurns and ColumnTurn name the columns a run
// that scores turns adds: the rewards' reward of each agent turn and
// number of agent turns, and the checks' turn a check is credited to.
const (
	ColumnTurnRewards = "turn_rewards"
	ColumnTurns       = "turns"
	ColumnTurn        = "turn"
)

// Kinds of rows of the checks table, in its kind column.
const (
	KindCheck = "check"
	KindFlag  = "flag"
)

var (
	flagsColumn      = stringsCol(ColumnFlags, func(r *RewardRow) *[]string { return &r.Flags })
	outputHashColumn = nullHashCol(ColumnOutputHash, func(r *RewardRow) (*uint64, *bool) { return &r.OutputHash, &r.OutputHashValid })
	kindColumn       = stringColOr(ColumnKind, pqCategorical, KindCheck, func(r *CheckRow) *string { return &r.Kind })

	turnRewardsColumn = nullFloatsCol(ColumnTurnRewards, func(r *RewardRow) (*[]float64, *bool) { return &r.TurnRewards, &r.TurnRewardsValid })
	turnsColumn       = nullInt32Col(ColumnTurns, func(r *RewardRow) (*int32, *bool) { return &r.Turns, &r.TurnsValid })
	turnColumn        = nullInt32Col(ColumnTurn, func(r *CheckRow) (*int32, *bool) { return &r.Turn, &r.TurnValid })
)

// checksTable returns the columns of a checks part: checkColumns, then
// kind in a run with flags, then turn in a run that scores turns.
func checksTable(flags, turns bool) []column[CheckRow] {
	if !flags && !turns {
		return checkColumns
	}
	cols := slices.Clip(checkColumns)
	if flags {
		cols = append(cols, kindColumn)
	}
	if turns {
		cols = append(cols, turnColumn)
	}
	return cols
}

// noKeep is the null value of a kept column a row has no Keep value for.
var noKeep NullString

// rewardsTable returns the columns of a rewards part: rewardColumns, flags
// and output_hash in a run with flags, turn_rewards and turns in a run
// that scores turns, then a nullable string column for each kept
// metadata name. A row with fewer Keep values than keep columns has nulls
// in the rest.
func rewardsTable(keep []string, flags, turns bool) []column[RewardRow] {
	cols := slices.Clip(rewardColumns)
	if flags {
		cols = append(cols, flagsColumn, outputHashColumn)
	}
	if turns {
		cols = append(cols, turnRewardsColumn, turnsColumn)
	}
	for i, k := range keep {
		cols = append(cols, nullStringCol(k, pqDefault, func(r *RewardRow) *NullString {
			if i < len(r.Keep) {
				return &r.Keep[i]
			}
			return &noKeep // read only: a decoder gives Keep its length first
		}))
	}
	return cols
}

// CheckRow is one row of checks/part-NNNNN, one per check. Its columns
// are checkColumns.
type CheckRow struct {
	RolloutID  string
	TaskID     string
	VerifierID NullString
	CheckIndex int32
	CheckID    string
	Label      string
	Required   bool
	Status     string
	Detail     string
	Actual     NullString
	Expected   NullString
	// Score, Issues and Suggestion are a judge's verdict on a rubric
	// check; null (not Valid) for checks not judged.
	Score       float64
	ScoreValid  bool
	Issues      []string
	IssuesValid bool
	Suggestion  NullString
	// Kind is KindCheck ("" is written as it) or KindFlag, written only
	// in a run with flags (PartOptions.Flags); a row read from a part
	// without the column has "", a check.
	Kind string
	// Turn is the index of the agent turn the check is credited to, null
	// (not TurnValid) for a trajectory check credited to none; written
	// only in a run that scores turns (PartOptions.Turns).
	Turn      int32
	TurnValid bool
}

// checkColumns are the columns of the checks table, in order.
var checkColumns = []column[CheckRow]{
	stringCol("rollout_id", pqPlain, func(r *CheckRow) *string { return &r.RolloutID }),
	stringCol("task_id", pqCategorical, func(r *CheckRow) *string { return &r.TaskID }),
	nullStringCol("verifier_id", pqCategorical, func(r *CheckRow) *NullString { return &r.VerifierID }),
	int32Col("check_index", func(r *CheckRow) *int32 { return &r.CheckIndex }),
	stringCol("check_id", pqCategorical, func(r *CheckRow) *string { return &r.CheckID }),
	stringCol("label", pqCategorical, func(r *CheckRow) *string { return &r.Label }),
	boolCol("required", func(r *CheckRow) *bool { return &r.Required }),
	stringCol("status", pqCategorical, func(r *CheckRow) *string { return &r.Status }),
	stringCol("detail", pqPlain, func(r *CheckRow) *string { return &r.Detail }),
	nullStringCol("actual", pqPlain, func(r *CheckRow) *NullString { return &r.Actual }),
	nullStringCol("expected", pqPlain, func(r *CheckRow) *NullString { return &r.Expected }),
	nullFloat64Col("score", func(r *CheckRow) (*float64, *bool) { return &r.Score, &r.ScoreValid }),
	nullStringsCol("issues", func(r *CheckRow) (*[]string, *bool) { return &r.Issues, &r.IssuesValid }),
	nullStringCol("suggestion", pqPlain, func(r *CheckRow) *NullString { return &r.Suggestion }),
}

// JudgementRow is one row of judgements/part-NNNNN, one per single
// judgement of a rubric check (one judge model, one sample). Its columns
// are judgementColumns. The table is written only by runs where some check
// gets more than one judgement.
type JudgementRow struct {
	RolloutID   string
	TaskID      string
	VerifierID  NullString
	CheckIndex  int32
	CheckID     string
	JudgeModel  string
	Sample      int32
	Seed        int64
	Temperature float64
	// Score is null (not ScoreValid) when the judgement failed.
	Score      float64
	ScoreValid bool
	// Status is pass, fail or error.
	Status string
	// Issues are the judge's issues, one per line; null when none.
	Issues     NullString
	Suggestion NullString
	// Error is the failure's message; null unless Status is error.
	Error NullString
}

// judgementColumns are the columns of the judgements table, in order.
var judgementColumns = []column[JudgementRow]{
	stringCol("rollout_id", pqPlain, func(r *JudgementRow) *string { return &r.RolloutID }),
	stringCol("task_id", pqCategorical, func(r *JudgementRow) *string { return &r.TaskID }),
	nullStringCol("verifier_id", pqCategorical, func(r *JudgementRow) *NullString { return &r.VerifierID }),
	int32Col("check_index", func(r *JudgementRow) *int32 { return &r.CheckIndex }),
	stringCol("check_id", pqCategorical, func(r *JudgementRow) *string { return &r.CheckID }),
	stringCol("judge_model", pqCategorical, func(r *JudgementRow) *string { return &r.JudgeModel }),
	int32Col("sample", func(r *JudgementRow) *int32 { return &r.Sample }),
	int64Col("seed", func(r *JudgementRow) *int64 { return &r.Seed }),
	float64Col("temperature", func(r *JudgementRow) *float64 { return &r.Temperature }),
	nullFloat64Col("score", func(r *JudgementRow) (*float64, *bool) { return &r.Score, &r.ScoreValid }),
	stringCol("status", pqCategorical, func(r *JudgementRow) *string { return &r.Status }),
	nullStringCol("issues", pqPlain, func(r *JudgementRow) *NullString { return &r.Issues }),
	nullStringCol("suggestion", pqPlain, func(r *JudgementRow) *NullString { return &r.Suggestion }),
	nullStringCol("error", pqPlain, func(r *JudgementRow) *NullString { return &r.Error }),
}

// RewardColumns returns the names of the rewards table's own columns, in
// order (the kept metadata columns follow them in a part).
func RewardColumns() []string { return columnNames(rewardColumns) }

// CheckColumns returns the names of the checks table's columns, in order.
func CheckColumns() []string { return columnNames(checkColumns) }

// JudgementColumns returns the names of the judgements table's columns, in
// order.
func JudgementColumns() []string { return columnNames(judgementColumns) }

// Formats of result parts.
const (
	FormatParquet = "parquet"
	FormatArrow   = "arrow"
	FormatJSONL   = "jsonl"
)

// ColumnInfo describes a column of a result table: its name, its Arrow
// type (as Arrow writes it) and whether it may be null.
type ColumnInfo struct {
	Name     string
	Type     string
	Nullable bool
}

// TableColumns returns the columns of the result table named table
// (rewards, checks or judgements) of a run with flags or without, and
// that scores turns or not, the kept metadata columns aside.
func TableColumns(table string, flags, turns bool) []ColumnInfo {
	var out []ColumnInfo
	add := func(name string, typ arrow.DataType, nullable bool) {
		out = append(out, ColumnInfo{Name: name, Type: typ.String(), Nullable: nullable})
	}
	switch table {
	case "rewards":
		for _, c := range rewardsTable(nil, flags, turns) {
			add(c.name, c.typ, c.nullable)
		}
	case "checks":
		for _, c := range checksTable(flags, turns) {
			add(c.name, c.typ, c.nullable)
		}
	case "judgements":
		for _, c := range judgementColumns {
			add(c.name, c.typ, c.nullable)
		}
	}
	return out
}
