package columnar

import (
	"bufio"
	"math"
	"strconv"

	"github.com/gavelhq/gavel/columnar/jsonview"
)

// JSON Lines parts hold one JSON object per line with every column as a
// key, in column order; a null is written as null. Rows are encoded by hand
// into the buffered writer's free space, with no reflection.
//
// Strings are escaped as encoding/json does without HTML escaping: '"',
// '\\' and control characters are escaped, as are U+2028 and U+2029 (so a
// line is also valid JavaScript); invalid UTF-8 bytes are replaced by
// U+FFFD, so the output is always valid UTF-8. A reward is written in the
// shortest form that reads back as the same float64 (strconv 'g', -1):
// 1 as 1, 0.5 as 0.5; a non-finite reward, which scoring never produces,
// is written as null because JSON has no spelling for it.

// jsonlRewards encodes rewards rows as JSON Lines.
type jsonlRewards struct {
	w    *bufio.Writer
	keys []string // `,"name":` for each keep column
}

func newJSONLRewards(w *bufio.Writer, keep []string) *jsonlRewards {
	j := &jsonlRewards{w: w}
	for _, k := range keep {
		b := append([]byte(`,`), jsonview.AppendJSONString(nil, k)...)
		j.keys = append(j.keys, string(append(b, ':')))
	}
	return j
}

func (j *jsonlRewards) writeRewards(rows []RewardRow) error {
	for i := range rows {
		if _, err := j.w.Write(j.appendRow(j.w.AvailableBuffer(), &rows[i])); err != nil {
			return err
		}
	}
	return nil
}

func (j *jsonlRewards) appendRow(b []byte, r *RewardRow) []byte {
	b = append(b, `{"rollout_id":`...)
	b = jsonview.AppendJSONString(b, r.RolloutID)
	b = append(b, `,"task_id":`...)
	b = jsonview.AppendJSONString(b, r.TaskID)
	b = append(b, `,"verifier_id":`...)
	b = appendJSONNullString(b, r.VerifierID)
	b = append(b, `,"status":`...)
	b = jsonview.AppendJSONString(b, r.Status)
	b = append(b, `,"passed":`...)
	switch {
	case !r.PassedValid:
		b = append(b, "null"...)
	default:
		b = strconv.AppendBool(b, r.Passed)
	}
	b = append(b, `,"reward":`...)
	if r.RewardValid && !math.IsNaN(r.Reward) && !math.IsInf(r.Reward, 0) {
		b = strconv.AppendFloat(b, r.Reward, 'g', -1, 64)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"checks_total":`...)
	b = strconv.AppendInt(b, int64(r.ChecksTotal), 10)
	b = append(b, `,"checks_passed":`...)
	b = strconv.AppendInt(b, int64(r.ChecksPassed), 10)
	b = append(b, `,"required_total":`...)
	b = strconv.AppendInt(b, int64(r.RequiredTotal), 10)
	b = append(b, `,"required_passed":`...)
	b = strconv.AppendInt(b, int64(r.RequiredPassed), 10)
	b = append(b, `,"error_kind":`...)
	b = appendJSONNullString(b, r.ErrorKind)
	b = append(b, `,"error":`...)
	b = appendJSONNullString(b, r.Error)
	b = append(b, `,"source_file":`...)
	b = jsonview.AppendJSONString(b, r.SourceFile)
	b = append(b, `,"source_row":`...)
	b = strconv.AppendInt(b, r.SourceRow, 10)
	for i, k := range j.keys {
		b = append(b, k...)
		if i < len(r.Keep) {
			b = appendJSONNullString(b, r.Keep[i])
		} else {
			b = append(b, "null"...)
		}
	}
	return append(b, "}\n"...)
}

// finish has nothing to add: the partFile flushes the writer.
func (j *jsonlRewards) finish() error { return nil }
func (j *jsonlRewards) release()      {}

// jsonlChecks encodes checks rows as JSON Lines.
type jsonlChecks struct {
	w *bufio.Writer
}

func newJSONLChecks(w *bufio.Writer) *jsonlChecks { return &jsonlChecks{w: w} }

func (j *jsonlChecks) writeChecks(rows []CheckRow) error {
	for i := range rows {
		if _, err := j.w.Write(appendCheckJSON(j.w.AvailableBuffer(), &rows[i])); err != nil {
			return err
		}
	}
	return nil
}

func appendCheckJSON(b []byte, r *CheckRow) []byte {
	b = append(b, `{"rollout_id":`...)
	b = jsonview.AppendJSONString(b, r.RolloutID)
	b = append(b, `,"task_id":`...)
	b = jsonview.AppendJSONString(b, r.TaskID)
	b = append(b, `,"verifier_id":`...)
	b = appendJSONNullString(b, r.VerifierID)
	b = append(b, `,"check_index":`...)
	b = strconv.AppendInt(b, int64(r.CheckIndex), 10)
	b = append(b, `,"check_id":`...)
	b = jsonview.AppendJSONString(b, r.CheckID)
	b = append(b, `,"label":`...)
	b = jsonview.AppendJSONString(b, r.Label)
	b = append(b, `,"required":`...)
	b = strconv.AppendBool(b, r.Required)
	b = append(b, `,"status":`...)
	b = jsonview.AppendJSONString(b, r.Status)
	b = append(b, `,"detail":`...)
	b = jsonview.AppendJSONString(b, r.Detail)
	b = append(b, `,"actual":`...)
	b = appendJSONNullString(b, r.Actual)
	b = append(b, `,"expected":`...)
	b = appendJSONNullString(b, r.Expected)
	return append(b, "}\n"...)
}

func (j *jsonlChecks) finish() error { return nil }
func (j *jsonlChecks) release()      {}

func appendJSONNullString(b []byte, s NullString) []byte {
	if !s.Valid {
		return append(b, "null"...)
	}
	return jsonview.AppendJSONString(b, s.S)
}
