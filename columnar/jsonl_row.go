package columnar

// RowJSON encodes result rows one at a time as the JSON objects of a JSON
// Lines part (the same bytes as a part's line, without its newline), for
// callers that embed rows in their own JSON, such as an HTTP response.
type RowJSON struct {
	rewards *jsonlTable[RewardRow]
	checks  *jsonlTable[CheckRow]
	judged  *jsonlTable[JudgementRow]
}

// NewRowJSON returns an encoder for rewards rows whose kept metadata
// columns are keep, in that order, with the columns of a run with flags
// when flags is set (PartOptions.Flags).
func NewRowJSON(keep []string, flags, turns bool) *RowJSON {
	return &RowJSON{rewards: newJSONLTable(nil, rewardsTable(keep, flags, turns)), checks: newJSONLTable(nil, checksTable(flags, turns)),
		judged: newJSONLTable(nil, judgementColumns)}
}

// AppendReward appends r as one JSON object to b.
func (e *RowJSON) AppendReward(b []byte, r *RewardRow) []byte {
	b = e.rewards.appendRow(b, r)
	return b[:len(b)-1] // the line's newline
}

// AppendJudgement appends r as one JSON object to b.
func (e *RowJSON) AppendJudgement(b []byte, r *JudgementRow) []byte {
	b = e.judged.appendRow(b, r)
	return b[:len(b)-1]
}

// AppendCheck appends r as one JSON object to b.
func (e *RowJSON) AppendCheck(b []byte, r *CheckRow) []byte {
	b = e.checks.appendRow(b, r)
	return b[:len(b)-1]
}
