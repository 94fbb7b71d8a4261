package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// judgementFixture is one row of a judgements table written by tests, in
// the table's schema.
type judgementFixture struct {
	RolloutID   string   `json:"rollout_id" parquet:"rollout_id"`
	TaskID      string   `json:"task_id" parquet:"task_id"`
	VerifierID  string   `json:"verifier_id" parquet:"verifier_id"`
	CheckIndex  int32    `json:"check_index" parquet:"check_index"`
	CheckID     string   `json:"check_id" parquet:"check_id"`
	JudgeModel  string   `json:"judge_model" parquet:"judge_model"`
	Sample      int32    `json:"sample" parquet:"sample"`
	Seed        int64    `json:"seed" parquet:"seed"`
	Temperature float64  `json:"temperature" parquet:"temperature"`
	Score       *float64 `json:"score" parquet:"score,optional"`
	Status      string   `json:"status" parquet:"status"`
	Issues      *string  `json:"issues" parquet:"issues,optional"`
	Suggestion  *string  `json:"suggestion" parquet:"suggestion,optional"`
	Error       *string  `json:"error" parquet:"error,optional"`
}

// jf builds a fixture row; status error leaves the score null.
func jf(rollout string, index int32, check, judge string, sample int32, status string, score float64) judgementFixture {
	r := judgementFixture{RolloutID: rollout, TaskID: "T-" + rollout, VerifierID: "V", CheckIndex: index, CheckID: check,
		JudgeModel: judge, Sample: sample, Seed: int64(100 + sample), Status: status}
	if sample > 0 {
		r.Temperature = 0.7
	}
	if status == "error" {
		msg := "judge: status 500"
		r.Error = &msg
	} else {
		r.Score = &score
	}
	return r
}

// writeJudgements writes a result directory holding rows as its
// judgements table, split into parts of per rows, in format (jsonl or
// parquet), with an empty rewards table.
func writeJudgements(t *testing.T, dir, format string, per int, rows []judgementFixture) {
	t.Helper()
	for _, sub := range []string{"rewards", "checks", Judgements} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p := 0; p*per < len(rows); p++ {
		part := rows[p*per : min(len(rows), (p+1)*per)]
		path := filepath.Join(dir, Judgements, "part-0000"+string(rune('0'+p))+"."+format)
		writeFixtureRows(t, path, format, part)
	}
}

func writeFixtureRows[T any](t *testing.T, path, format string, rows []T) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	switch format {
	case "jsonl":
		enc := json.NewEncoder(f)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				t.Fatal(err)
			}
		}
	case "parquet":
		w := parquet.NewGenericWriter[T](f)
		if _, err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("format %q", format)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
