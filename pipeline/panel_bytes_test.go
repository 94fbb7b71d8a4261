package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/judge/judgetest"
	"github.com/gavelhq/gavel/results"
)

// oneJudgeHashes are the sha256 of the parts a one-judge, one-sample run
// of testdata/judged wrote before a check could get several judgements:
// such a run must still write exactly these bytes, and no judgements part.
var oneJudgeHashes = map[string]string{
	"parquet/rewards": "99194e62aa2f3cc6bd748daf4027f6a4456e27098253525cae89abe6a4b72411",
	"parquet/checks":  "a44b9be2b38e99b7baf50d353bcfd7096cd042747c442ae15d1a108a51b68b91",
	"arrow/rewards":   "9cd8339f31fcb43c0a04d65ac8c95cee9805248a66f0dead6fd21a454ed053b0",
	"arrow/checks":    "a1de401747ef14ef52172acdd51e69eb445cb1e40a443f347f9d408632687741",
	"jsonl/rewards":   "87fd158e4e07b2ca83d441a423f833e43e49d59861a70f9a4046cd990e1f1e52",
	"jsonl/checks":    "71be1e2ccc7a0691d0dac25e58afd62091821f35d5b1d50ed49bf9151a779cd0",
	"fingerprint":     "3dfd7b3bf51b027f8b62b47397ced45d50815807a670c3e112618fb1fc573168",
}

func TestJudgeOneJudgeBytesUnchanged(t *testing.T) {
	srv := judgetest.New(t)
	cache := t.TempDir()
	for _, format := range []string{columnar.FormatParquet, columnar.FormatArrow, columnar.FormatJSONL} {
		out := filepath.Join(t.TempDir(), "out")
		grade(t, Config{Inputs: []string{filepath.Join("testdata", "judged", "input.jsonl")}, Out: out, Format: format,
			Verifiers: gaveltest.ParseSpec(t, gaveltest.JudgedSpec), Judge: gaveltest.JudgeConfig(srv, cache), Workers: 2, BatchSize: 3})
		for _, table := range []string{"rewards", "checks"} {
			b, err := os.ReadFile(filepath.Join(out, table, columnar.PartName(0, format)))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			if got, want := hex.EncodeToString(sum[:]), oneJudgeHashes[format+"/"+table]; got != want {
				t.Errorf("%s/%s: sha256 %s, want %s", format, table, got, want)
			}
		}
		if _, err := os.Stat(filepath.Join(out, "judgements")); !os.IsNotExist(err) {
			t.Errorf("%s: a one-judge run wrote a judgements directory (%v)", format, err)
		}
		if format == columnar.FormatJSONL {
			m, err := results.ReadManifest(filepath.Join(out, results.ManifestFile))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(m.Verifiers[0].Fingerprint + " " + m.Config.Judge.Template))
			if got, want := hex.EncodeToString(sum[:]), oneJudgeHashes["fingerprint"]; got != want {
				t.Errorf("fingerprint and template: sha256 %s, want %s", got, want)
			}
		}
	}
}
