package columnar

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJudgementsReadBack writes a judgements table in each format and
// reads every column back, nulls included.
func TestJudgementsReadBack(t *testing.T) {
	rows := []JudgementRow{
		{RolloutID: "r1", TaskID: "t", VerifierID: Str("v"), CheckIndex: 2, CheckID: "c", JudgeModel: "m@1:x",
			Sample: 0, Seed: 1, Temperature: 0, Score: 0.25, ScoreValid: true, Status: "fail",
			Issues: Str("a\nb"), Suggestion: Str("s")},
		{RolloutID: "r1", TaskID: "t", CheckIndex: 2, CheckID: "c", JudgeModel: "m@1:x",
			Sample: 1, Seed: 2, Temperature: 0.7, Status: "error", Error: Str("model m at u: boom")},
	}
	want := [][]string{
		{"r1", "t", "v", "2", "c", "m@1:x", "0", "1", "0", "0.25", "fail", "a\nb", "s", "<null>"},
		{"r1", "t", "<null>", "2", "c", "m@1:x", "1", "2", "0.7", "<null>", "error", "<null>", "<null>", "model m at u: boom"},
	}
	for _, format := range []string{FormatParquet, FormatArrow, FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			p, err := CreatePart(dir, 3, PartOptions{Format: format, Judgements: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.WriteJudgements(rows); err != nil {
				t.Fatal(err)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "judgements", PartName(3, format))
			rr, err := OpenResult(path, JudgementColumns())
			if err != nil {
				t.Fatal(err)
			}
			defer rr.Close()
			for i := 0; ; i++ {
				cells, err := rr.Next()
				if errors.Is(err, io.EOF) {
					if i != len(want) {
						t.Errorf("read %d rows, want %d", i, len(want))
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, c := range cells {
					s := string(c.Data)
					if c.Kind == CellNull {
						s = "<null>"
					}
					// Parquet and Arrow give numbers in 'f' format.
					if c.Kind == CellNumber && strings.Contains(s, ".") {
						s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
					}
					got = append(got, s)
				}
				if strings.Join(got, "|") != strings.Join(want[i], "|") {
					t.Errorf("row %d = %q, want %q", i, got, want[i])
				}
			}
		})
	}
	t.Run("without", func(t *testing.T) {
		dir := t.TempDir()
		p, err := CreatePart(dir, 0, PartOptions{Format: FormatJSONL})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.WriteJudgements(rows); err == nil {
			t.Errorf("WriteJudgements without the table: no error")
		}
		p.Abort()
		if _, err := os.Stat(filepath.Join(dir, "judgements")); !os.IsNotExist(err) {
			t.Errorf("a part without judgements made the judgements directory: %v", err)
		}
	})
}
