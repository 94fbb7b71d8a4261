package columnar

import (
	"path/filepath"
	"testing"
)

// TestResultReaderSkipsIssues reads a Parquet checks part, whose issues
// column is a list, without asking for it: no nested reader is made (one
// without columns would decode every column of the part), and the cells
// asked for read back.
func TestResultReaderSkipsIssues(t *testing.T) {
	dir := t.TempDir()
	p, err := CreatePart(dir, 0, PartOptions{Format: FormatParquet})
	if err != nil {
		t.Fatal(err)
	}
	rows := []CheckRow{
		{RolloutID: "r1", TaskID: "T", VerifierID: Str("V"), CheckID: "a", Label: "A", Required: true, Status: "pass", Detail: "ok"},
		{RolloutID: "r1", TaskID: "T", VerifierID: Str("V"), CheckIndex: 1, CheckID: "b", Label: "B", Status: "fail", Detail: "no",
			Issues: []string{"x"}, IssuesValid: true},
	}
	if err := p.WriteRewards([]RewardRow{{RolloutID: "r1", TaskID: "T", Status: "fail", ChecksTotal: 2}}); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteChecks(rows); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "checks", PartName(0, FormatParquet))
	rr, err := OpenResult(path, []string{"rollout_id", "check_id", "status", "detail"})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	if n := rr.r.(*ParquetReader).nested; n != nil {
		t.Errorf("a nested reader was made for %d columns, want none", len(n.cols))
	}
	for i, want := range rows {
		c, err := rr.Next()
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		got := []string{string(c[0].Data), string(c[1].Data), string(c[2].Data), string(c[3].Data)}
		if got[0] != want.RolloutID || got[1] != want.CheckID || got[2] != want.Status || got[3] != want.Detail {
			t.Errorf("row %d = %q, want %s %s %s %s", i, got, want.RolloutID, want.CheckID, want.Status, want.Detail)
		}
	}
}
