package columnar

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestResultDecoderRoundTrip writes rewards, checks and judgements parts
// in every format, reads them back with every column asked for, and
// decodes each row with the decoders the column definitions make: the
// rows must equal the ones written.
func TestResultDecoderRoundTrip(t *testing.T) {
	keep := []string{"model", "split"}
	rewards := []RewardRow{
		{RolloutID: "r1", TaskID: "T1", VerifierID: Str("V"), Status: "passed", Passed: true, PassedValid: true,
			Reward: 1, RewardValid: true, ChecksTotal: 2, ChecksPassed: 2, RequiredTotal: 1, RequiredPassed: 1,
			SourceFile: "in.jsonl", SourceRow: 0, InputHash: 0x0123456789abcdef, InputHashValid: true,
			Keep: []NullString{Str("m1"), {}}},
		{RolloutID: "r2", TaskID: "T2", Status: "error", ErrorKind: Str("input"), Error: Str("bad \"row\"\n"),
			SourceFile: "in.jsonl", SourceRow: 1, Keep: []NullString{Str(""), Str("dev")}},
		{RolloutID: "r3", TaskID: "T1", VerifierID: Str("V"), Status: "failed", PassedValid: true, Reward: 0.1 + 0.2, RewardValid: true,
			ChecksTotal: 1, SourceFile: "in.jsonl", SourceRow: math.MaxInt32 + 7, InputHash: math.MaxUint64, InputHashValid: true,
			Keep: []NullString{Str("m2"), Str("x")}},
	}
	checks := []CheckRow{
		{RolloutID: "r1", TaskID: "T1", VerifierID: Str("V"), CheckID: "a", Label: "A", Required: true, Status: "pass", Detail: "ok",
			Actual: Str("1"), Expected: Str("1")},
		{RolloutID: "r1", TaskID: "T1", VerifierID: Str("V"), CheckIndex: 1, CheckID: "b", Label: "B", Status: "pass", Detail: "judged",
			Score: 0.75, ScoreValid: true, Issues: []string{"x", "y \"z\""}, IssuesValid: true, Suggestion: Str("more")},
		{RolloutID: "r3", TaskID: "T1", VerifierID: Str("V"), CheckID: "a", Label: "A", Required: true, Status: "fail", Detail: "no",
			Issues: []string{}, IssuesValid: true},
	}
	judgements := []JudgementRow{
		{RolloutID: "r1", TaskID: "T1", VerifierID: Str("V"), CheckIndex: 1, CheckID: "b", JudgeModel: "m", Sample: 1, Seed: -3,
			Temperature: 0.7, Score: 0.75, ScoreValid: true, Status: "pass", Issues: Str("x\ny")},
		{RolloutID: "r1", TaskID: "T1", VerifierID: Str("V"), CheckIndex: 1, CheckID: "b", JudgeModel: "n", Status: "error",
			Error: Str("timeout")},
	}
	for _, format := range []string{FormatParquet, FormatArrow, FormatJSONL} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			p, err := CreatePart(dir, 0, PartOptions{Format: format, Keep: keep, Judgements: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.WriteRewards(rewards); err != nil {
				t.Fatal(err)
			}
			if err := p.WriteChecks(checks); err != nil {
				t.Fatal(err)
			}
			if err := p.WriteJudgements(judgements); err != nil {
				t.Fatal(err)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			strs := Interner{}
			rd, err := NewRewardDecoder(append(columnNames(rewardColumns), keep...), keep, strs)
			if err != nil {
				t.Fatal(err)
			}
			gotRewards := readDecoded(t, filepath.Join(dir, "rewards", PartName(0, format)), append(columnNames(rewardColumns), keep...), rd.Decode)
			if diff := cmp.Diff(rewards, gotRewards); diff != "" {
				t.Errorf("rewards (-want +got):\n%s", diff)
			}
			cd, err := NewCheckDecoder(columnNames(checkColumns), strs)
			if err != nil {
				t.Fatal(err)
			}
			gotChecks := readDecoded(t, filepath.Join(dir, "checks", PartName(0, format)), columnNames(checkColumns), cd.Decode)
			if diff := cmp.Diff(checks, gotChecks); diff != "" {
				t.Errorf("checks (-want +got):\n%s", diff)
			}
			jd, err := NewJudgementDecoder(columnNames(judgementColumns), strs)
			if err != nil {
				t.Fatal(err)
			}
			gotJudgements := readDecoded(t, filepath.Join(dir, "judgements", PartName(0, format)), columnNames(judgementColumns), jd.Decode)
			if diff := cmp.Diff(judgements, gotJudgements); diff != "" {
				t.Errorf("judgements (-want +got):\n%s", diff)
			}
		})
	}
}

// readDecoded reads every row of the part at path as cols and decodes it.
func readDecoded[R any](t *testing.T, path string, cols []string, decode func([]Cell, *R) error) []R {
	t.Helper()
	rr, err := OpenResult(path, cols)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	var out []R
	for {
		c, err := rr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var r R
		if err := decode(c, &r); err != nil {
			t.Fatalf("%s row %d: %v", path, len(out), err)
		}
		out = append(out, r)
	}
}

// TestResultDecoderErrors: a cell that does not decode names its column
// and value; a column the table lacks is refused when the decoder is made.
func TestResultDecoderErrors(t *testing.T) {
	if _, err := NewCheckDecoder([]string{"check_index", "nope"}, nil); err == nil {
		t.Error("NewCheckDecoder with an unknown column: nil error")
	}
	cd, err := NewCheckDecoder([]string{"check_index", "score"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var r CheckRow
	err = cd.Decode([]Cell{{Kind: CellNumber, Data: []byte("1")}, {Kind: CellString, Data: []byte("high")}}, &r)
	if want := `score "high": not a number`; err == nil || err.Error() != want {
		t.Errorf("Decode = %v, want %s", err, want)
	}
	rd, err := NewRewardDecoder([]string{"checks_total", ColumnInputHash}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rw RewardRow
	err = rd.Decode([]Cell{{Kind: CellString, Data: []byte("2x")}, {Kind: CellNull}}, &rw)
	if want := `checks_total "2x": not an integer`; err == nil || err.Error() != want {
		t.Errorf("Decode = %v, want %s", err, want)
	}
	err = rd.Decode([]Cell{{Kind: CellNumber, Data: []byte("2")}, {Kind: CellString, Data: []byte("abc")}}, &rw)
	if want := `input_hash "abc": not 16 hex digits`; err == nil || err.Error() != want {
		t.Errorf("Decode = %v, want %s", err, want)
	}
}

// TestResultDecoderRoundTripTurns: the columns of a run that scores turns
// read back as written, in every format: a list of turn rewards with
// unscored (null) turns, an empty list, a null list; a null turn count;
// a check's turn, and a trajectory check's null one.
func TestResultDecoderRoundTripTurns(t *testing.T) {
	rewards := []RewardRow{
		{RolloutID: "r1", TaskID: "T1", Status: "passed", PassedValid: true, Passed: true, Reward: 1, RewardValid: true,
			SourceFile: "in.jsonl", TurnRewards: []float64{1, math.NaN(), 0.25}, TurnRewardsValid: true, Turns: 3, TurnsValid: true},
		{RolloutID: "r2", TaskID: "T1", Status: "passed", PassedValid: true, Passed: true, Reward: 1, RewardValid: true,
			SourceFile: "in.jsonl", TurnRewards: []float64{}, TurnRewardsValid: true, TurnsValid: true},
		{RolloutID: "r3", TaskID: "T1", Status: "error", ErrorKind: Str("input"), Error: Str("bad"), SourceFile: "in.jsonl"},
	}
	checks := []CheckRow{
		{RolloutID: "r1", TaskID: "T1", CheckID: "a", Label: "a", Status: "pass", Kind: KindCheck},
		{RolloutID: "r1", TaskID: "T1", CheckIndex: 1, CheckID: "t", Label: "t", Status: "pass", Kind: KindCheck, Turn: 2, TurnValid: true},
	}
	for _, flags := range []bool{false, true} {
		for _, format := range []string{FormatParquet, FormatArrow, FormatJSONL} {
			t.Run(fmt.Sprintf("%s/flags=%v", format, flags), func(t *testing.T) {
				dir := t.TempDir()
				p, err := CreatePart(dir, 0, PartOptions{Format: format, Flags: flags, Turns: true})
				if err != nil {
					t.Fatal(err)
				}
				if err := p.WriteRewards(rewards); err != nil {
					t.Fatal(err)
				}
				if err := p.WriteChecks(checks); err != nil {
					t.Fatal(err)
				}
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
				rcols := columnNames(rewardsTable(nil, flags, true))
				if !slices.Contains(rcols, ColumnTurnRewards) || rcols[len(rcols)-1] != ColumnTurns {
					t.Fatalf("rewards columns %v", rcols)
				}
				rd, err := NewRewardDecoder(rcols, nil, Interner{})
				if err != nil {
					t.Fatal(err)
				}
				got := readDecoded(t, filepath.Join(dir, "rewards", PartName(0, format)), rcols, rd.Decode)
				want := slices.Clone(rewards)
				if flags {
					for i := range want {
						want[i].Flags = []string{}
					}
				}
				if diff := cmp.Diff(want, got, cmpopts.EquateNaNs(), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("rewards (-want +got):\n%s", diff)
				}
				if got[1].TurnRewards == nil || got[2].TurnRewardsValid {
					t.Errorf("an empty list read as %v (valid %v), a null one as valid %v", got[1].TurnRewards, got[1].TurnRewardsValid, got[2].TurnRewardsValid)
				}
				ccols := columnNames(checksTable(flags, true))
				if ccols[len(ccols)-1] != ColumnTurn {
					t.Fatalf("checks columns %v", ccols)
				}
				cd, err := NewCheckDecoder(ccols, Interner{})
				if err != nil {
					t.Fatal(err)
				}
				gotChecks := readDecoded(t, filepath.Join(dir, "checks", PartName(0, format)), ccols, cd.Decode)
				wantChecks := slices.Clone(checks)
				if !flags {
					for i := range wantChecks {
						wantChecks[i].Kind = ""
					}
				}
				if diff := cmp.Diff(wantChecks, gotChecks); diff != "" {
					t.Errorf("checks (-want +got):\n%s", diff)
				}
			})
		}
	}
}
