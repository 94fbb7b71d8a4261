package columnar

// NullString is a string column value that may be null.
type NullString struct {
	S     string
	Valid bool
}

// Str returns a valid NullString.
func Str(s string) NullString { return NullString{S: s, Valid: true} }

// RewardRow is one row of rewards/part-NNNNN (SPEC section 6), one per
// rollout. Columns are written in field order, then Keep.
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
	// Keep holds the kept metadata values, aligned with the part's keep
	// column names (all written as nullable strings).
	Keep []NullString
}

// CheckRow is one row of checks/part-NNNNN, one per check.
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
}

// Formats of result parts.
const (
	FormatParquet = "parquet"
	FormatArrow   = "arrow"
	FormatJSONL   = "jsonl"
)
