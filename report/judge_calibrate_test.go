package report

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/gavelhq/gavel/stats"
)

// calibRun is a run's checks: a rubric check tone on r0 to r10, a rubric
// check facts on r0 to r5, and a code check format (no score) on every
// rollout. Each row: rollout, check, status, score (NaN: null).
var calibRun = []struct {
	rollout, check, status string
	score                  float64
}{
	{"r0", "tone", "pass", .9}, {"r0", "facts", "pass", .9},
	{"r1", "tone", "pass", .8}, {"r1", "facts", "pass", .8},
	{"r2", "tone", "pass", .7}, {"r2", "facts", "pass", .7},
	{"r3", "tone", "pass", .6}, {"r3", "facts", "pass", .6},
	{"r4", "tone", "pass", .55}, {"r4", "facts", "fail", .2},
	{"r5", "tone", "fail", .3}, {"r5", "facts", "fail", .1},
	{"r6", "tone", "pass", .65},
	{"r7", "tone", "fail", .2},
	{"r8", "tone", "fail", .1},
	{"r9", "tone", "error", math.NaN()},
	{"r10", "tone", "pass", .9},
}

// writeCalibRun writes calibRun as the checks table of a result directory
// (JSON Lines), with a format check before each rollout's rubric checks.
func writeCalibRun(t *testing.T, dir string) {
	t.Helper()
	for _, sub := range []string{"rewards", "checks"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	last := ""
	for _, r := range calibRun {
		if r.rollout != last {
			fmt.Fprintf(&b, `{"rollout_id":%q,"task_id":"T","verifier_id":"V","check_index":0,"check_id":"format","label":"format","required":true,"status":"pass","detail":"","actual":null,"expected":null,"score":null,"issues":null,"suggestion":null}`+"\n", r.rollout)
			last = r.rollout
		}
		score := "null"
		if !math.IsNaN(r.score) {
			score = fmt.Sprint(r.score)
		}
		fmt.Fprintf(&b, `{"rollout_id":%q,"task_id":"T","verifier_id":"V","check_index":1,"check_id":%q,"label":"","required":true,"status":%q,"detail":"","actual":null,"expected":null,"score":%s,"issues":[],"suggestion":null}`+"\n",
			r.rollout, r.check, r.status, score)
	}
	if err := os.WriteFile(filepath.Join(dir, "checks", "part-00000.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// calibLabels are human labels of calibRun: tone with its check id on r0
// to r5, for the whole rollout on r6 to r9 (their one judged check), facts
// on r0 to r5, and one rollout the run does not have. Confusion counts:
//
//	tone:  TP 5 (r0-r4)  FN 1 (r5)  FP 1 (r6)  TN 2 (r7 r8)  no verdict r9  unlabeled r10
//	facts: TP 2 (r0 r1)  FN 0       FP 2 (r2 r3)  TN 2 (r4 r5)
const calibLabels = `{"rollout_id":"r0","check_id":"tone","label":"pass"}
{"rollout_id":"r1","check_id":"tone","label":true}
{"rollout_id":"r2","check_id":"tone","label":"PASS"}
{"rollout_id":"r3","check_id":"tone","label":1}
{"rollout_id":"r4","check_id":"tone","label":0.5}
{"rollout_id":"r5","check_id":"tone","label":"true"}
{"rollout_id":"r6","label":"fail"}
{"rollout_id":"r7","check_id":null,"label":false}
{"rollout_id":"r8","label":0.49}
{"rollout_id":"r9","label":"pass"}
{"rollout_id":"r0","check_id":"facts","label":"pass"}
{"rollout_id":"r1","check_id":"facts","label":"pass"}
{"rollout_id":"r2","check_id":"facts","label":"fail"}
{"rollout_id":"r3","check_id":"facts","label":"fail"}
{"rollout_id":"r4","check_id":"facts","label":"fail"}
{"rollout_id":"r5","check_id":"facts","label":0}
{"rollout_id":"r99","check_id":"tone","label":"fail"}
{"rollout_id":"r10","check_id":"tone","label":null}
`

func TestCalibration(t *testing.T) {
	dir := t.TempDir()
	writeCalibRun(t, dir)
	labels := filepath.Join(dir, "labels.jsonl")
	if err := os.WriteFile(labels, []byte(calibLabels), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := BuildCalibration(dir, CalibrationConfig{Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	checkCalibration(t, c)
}

func checkCalibration(t *testing.T, c *Calibration) {
	t.Helper()
	if len(c.Checks) != 2 || c.Checks[0].Check != "tone" || c.Checks[1].Check != "facts" {
		t.Fatalf("checks %+v, want tone and facts", c.Checks)
	}
	if c.UnmatchedLabels != 1 {
		t.Errorf("unmatched labels %d, want 1 (r99)", c.UnmatchedLabels)
	}
	type counts struct{ n, tp, fn, fp, tn, unlabeled, noVerdict int64 }
	for _, tt := range []struct {
		row  *CalibrationRow
		want counts
		// κ by hand. tone: pp 5, judge-only 1, human-only 1, ff 2; po
		// 7/9, both pass 6/9, pe 5/9, κ = (2/9)/(4/9) = .5. All: pp 7,
		// judge-only 3, human-only 1, ff 4; po 11/15, judge passes
		// 10/15, humans 8/15, pe (80+35)/225, κ = (50/225)/(110/225).
		// facts: pp 2, judge-only 2, ff 2; po 4/6, judge passes 4/6,
		// humans 2/6, pe 16/36, κ = (2/9)/(5/9) = .4.
		kappa float64
	}{
		{&c.Overall, counts{15, 7, 1, 3, 4, 1, 1}, 50.0 / 110},
		{&c.Checks[0], counts{9, 5, 1, 1, 2, 1, 1}, 0.5},
		{&c.Checks[1], counts{6, 2, 0, 2, 2, 0, 0}, 0.4},
	} {
		r := tt.row
		got := counts{r.N, r.TP, r.FN, r.FP, r.TN, r.Unlabeled, r.NoVerdict}
		if got != tt.want {
			t.Errorf("%s: counts %+v, want %+v", rowName(r.Check), got, tt.want)
		}
		if r.Kappa.Value == nil || math.Abs(*r.Kappa.Value-tt.kappa) > 1e-12 {
			t.Errorf("%s: kappa %v, want %v", rowName(r.Check), r.Kappa, tt.kappa)
		}
		for _, rt := range []struct {
			name string
			rate Rate
			k, n int64
		}{{"accuracy", r.Accuracy, tt.want.tp + tt.want.tn, tt.want.n}, {"TPR", r.TPR, tt.want.tp, tt.want.tp + tt.want.fn},
			{"TNR", r.TNR, tt.want.tn, tt.want.tn + tt.want.fp}} {
			iv, _ := stats.Wilson(rt.k, rt.n, stats.Z95)
			if rt.rate.K != rt.k || rt.rate.N != rt.n || rt.rate.Value == nil || *rt.rate.Value != float64(rt.k)/float64(rt.n) || *rt.rate.CI != iv {
				t.Errorf("%s: %s = %+v, want %d/%d with Wilson %+v", rowName(r.Check), rt.name, rt.rate, rt.k, rt.n, iv)
			}
		}
	}
	// tone's scored, labelled checks: P .9 .8 .7 .6 .55 .3, F .65 .2 .1.
	// At .3 every pass is above and one fail of three: BA (1+2/3)/2.
	want := Sweep{Threshold: .3, BalancedAccuracy: (1 + 2.0/3) / 2, TPR: 1, TNR: 2.0 / 3}
	if s := c.Checks[0].Sweep; s == nil || s.Threshold != want.Threshold || math.Abs(s.BalancedAccuracy-want.BalancedAccuracy) > 1e-12 ||
		s.TPR != want.TPR || s.TNR != want.TNR {
		t.Errorf("tone sweep %+v, want %+v", s, want)
	}
}

// TestCalibrationParquetLabels reads the same labels from Parquet, with
// other column names and numeric labels.
func TestCalibrationParquetLabels(t *testing.T) {
	type labelRow struct {
		Item   string  `parquet:"item"`
		Rubric *string `parquet:"rubric,optional"`
		Human  float64 `parquet:"human"`
	}
	var rows []labelRow
	for _, line := range strings.Split(strings.TrimSpace(calibLabels), "\n") {
		var id, check string
		fmt.Sscanf(strings.SplitN(line, `"rollout_id":"`, 2)[1], "%s", &id)
		id = id[:strings.Index(id, `"`)]
		r := labelRow{Item: id}
		if i := strings.Index(line, `"check_id":"`); i >= 0 {
			check = line[i+len(`"check_id":"`):]
			check = check[:strings.Index(check, `"`)]
			r.Rubric = &check
		}
		switch {
		case strings.Contains(line, `"label":null`):
			continue
		case strings.Contains(line, `"label":"pass"`), strings.Contains(line, `"label":true`), strings.Contains(line, `"label":"PASS"`),
			strings.Contains(line, `"label":1`), strings.Contains(line, `"label":0.5`), strings.Contains(line, `"label":"true"`):
			r.Human = 0.7
		default:
			r.Human = 0.3
		}
		rows = append(rows, r)
	}
	dir := t.TempDir()
	writeCalibRun(t, dir)
	labels := filepath.Join(dir, "labels.parquet")
	writeFixtureRows(t, labels, "parquet", rows)
	c, err := BuildCalibration(dir, CalibrationConfig{Labels: labels, RolloutColumn: "item", CheckColumn: "rubric", LabelColumn: "human", LabelThreshold: 0.6})
	if err != nil {
		t.Fatal(err)
	}
	checkCalibration(t, c)
}

// TestCalibrationJudge calibrates one judge's sample-0 verdicts from the
// judgements table: judge a of twoJudges against labels.
func TestCalibrationJudge(t *testing.T) {
	dir := t.TempDir()
	writeJudgements(t, dir, "jsonl", 100, twoJudges())
	// a's sample 0 on c1: r1 pass, r2 pass, r3 fail, r4 fail, r5 pass,
	// r6 fail; on c2 r1 pass. Humans: c1 r1-r3 pass, r4-r6 fail; c2 r1
	// fail. TP r1 r2, FN r3, FP r5 + r1/c2, TN r4 r6.
	labels := filepath.Join(dir, "labels.jsonl")
	var b strings.Builder
	for i, l := range []string{"pass", "pass", "pass", "fail", "fail", "fail"} {
		fmt.Fprintf(&b, `{"rollout_id":"r%d","check_id":"c1","label":%q}`+"\n", i+1, l)
	}
	b.WriteString(`{"rollout_id":"r1","check_id":"c2","label":"fail"}` + "\n")
	os.WriteFile(labels, []byte(b.String()), 0o644)
	c, err := BuildCalibration(dir, CalibrationConfig{Labels: labels, Judge: "a"})
	if err != nil {
		t.Fatal(err)
	}
	o := c.Overall
	if o.N != 7 || o.TP != 2 || o.FN != 1 || o.FP != 2 || o.TN != 2 {
		t.Errorf("judge a: n %d tp %d fn %d fp %d tn %d, want 7 2 1 2 2", o.N, o.TP, o.FN, o.FP, o.TN)
	}
	// Judge b: r6 failed, counted apart.
	c, err = BuildCalibration(dir, CalibrationConfig{Labels: labels, Judge: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Overall.NoVerdict != 1 || c.Overall.N != 6 {
		t.Errorf("judge b: n %d, no verdict %d, want 6 and 1", c.Overall.N, c.Overall.NoVerdict)
	}
	if _, err := BuildCalibration(dir, CalibrationConfig{Labels: labels, Judge: "z"}); err == nil || !strings.Contains(err.Error(), `judge "z" judged nothing`) || !strings.Contains(err.Error(), "a, b") {
		t.Errorf("unknown judge: %v", err)
	}

	// A labelled c1 the request budget left pending has no judgement rows:
	// it is no verdict, not a label matching no check.
	pending := `{"rollout_id":"r7","task_id":"T-r7","verifier_id":"V","check_index":0,"check_id":"c1","label":"","required":true,"status":"pending","detail":"not judged","actual":null,"expected":null,"score":null,"issues":null,"suggestion":null}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "checks", "part-00000.jsonl"), []byte(pending), 0o644); err != nil {
		t.Fatal(err)
	}
	b.WriteString(`{"rollout_id":"r7","check_id":"c1","label":"pass"}` + "\n")
	os.WriteFile(labels, []byte(b.String()), 0o644)
	c, err = BuildCalibration(dir, CalibrationConfig{Labels: labels, Judge: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Overall.NoVerdict != 1 || c.UnmatchedLabels != 0 || c.Overall.N != 7 {
		t.Errorf("judge a with a pending check: n %d, no verdict %d, unmatched labels %d; want 7, 1, 0", c.Overall.N, c.Overall.NoVerdict, c.UnmatchedLabels)
	}
}

func TestCalibrationErrors(t *testing.T) {
	dir := t.TempDir()
	writeCalibRun(t, dir)
	tests := []struct {
		name, labels, want string
	}{
		{"rollout label, two judged checks", `{"rollout_id":"r1","label":"pass"}` + "\n" + `{"rollout_id":"r0","label":"pass"}`,
			"labels.jsonl row 0: rollout r1 has 2 judged checks: the labels need a check id column (check_id)"},
		{"bad label", `{"rollout_id":"r1","check_id":"tone","label":"maybe"}`,
			`labels.jsonl row 0: label: "maybe": want pass, fail, true, false or a number`},
		{"twice", `{"rollout_id":"r1","check_id":"tone","label":"pass"}` + "\n" + `{"rollout_id":"r1","check_id":"tone","label":"fail"}`,
			`labels.jsonl row 1: rollout r1 check "tone" labelled again (first at row 0)`},
		{"no id", `{"id":"r1","label":"pass"}`, "labels.jsonl row 0: rollout_id is null"},
		{"no label column", `{"rollout_id":"r1","verdict":"pass"}`, "labels.jsonl: no value in column label"},
	}
	// A run with no judged check: nothing to calibrate.
	t.Run("nothing judged", func(t *testing.T) {
		run := writeRun(t, sampleRun())
		labels := filepath.Join(t.TempDir(), "labels.jsonl")
		os.WriteFile(labels, []byte(calibLabels), 0o644)
		if _, err := BuildCalibration(run, CalibrationConfig{Labels: labels}); !errors.Is(err, errNothingJudged) {
			t.Errorf("BuildCalibration of a run without a judge = %v, want errNothingJudged", err)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			labels := filepath.Join(t.TempDir(), "labels.jsonl")
			os.WriteFile(labels, []byte(tt.labels+"\n"), 0o644)
			_, err := BuildCalibration(dir, CalibrationConfig{Labels: labels})
			if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
				t.Errorf("BuildCalibration = %v, want an error ending %q", err, tt.want)
			}
		})
	}
}

func TestCalibrationRequire(t *testing.T) {
	dir := t.TempDir()
	writeCalibRun(t, dir)
	labels := filepath.Join(dir, "labels.jsonl")
	os.WriteFile(labels, []byte(calibLabels), 0o644)
	lo := func(k, n int64) float64 { iv, _ := stats.Wilson(k, n, stats.Z95); return iv.Lo }
	// Overall TPR 7/8, TNR 4/7; tone 5/6, 2/3; facts 2/2, 2/4.
	tests := []struct {
		name      string
		tpr, tnr  float64
		perCheck  bool
		certified bool
		failures  int
	}{
		{"overall, both at their bounds", lo(7, 8), lo(4, 7), false, true, 0},
		{"overall, TNR just above", lo(7, 8), lo(4, 7) + 1e-9, false, false, 1},
		{"overall, both above", lo(7, 8) + 1e-9, lo(4, 7) + 1e-9, false, false, 2},
		{"per check, at facts' TNR", min(lo(5, 6), lo(2, 2)), min(lo(2, 3), lo(2, 4)), true, true, 0},
		{"per check, above facts' TNR", 0, lo(2, 4) + 1e-9, true, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := BuildCalibration(dir, CalibrationConfig{Labels: labels, RequireTPR: tt.tpr, RequireTNR: tt.tnr, PerCheck: tt.perCheck})
			if err != nil {
				t.Fatal(err)
			}
			if c.Require == nil || c.Require.Certified != tt.certified || len(c.Require.Failures) != tt.failures {
				t.Errorf("require %+v, want certified %v with %d failures", c.Require, tt.certified, tt.failures)
			}
		})
	}
}

// TestCalibrationDeterministic: the same run and labels give
// byte-identical output in every format, run after run.
func TestCalibrationDeterministic(t *testing.T) {
	dir := t.TempDir()
	writeCalibRun(t, dir)
	labels := filepath.Join(dir, "labels.jsonl")
	os.WriteFile(labels, []byte(calibLabels), 0o644)
	var outs []string
	for range 3 {
		c, err := BuildCalibration(dir, CalibrationConfig{Labels: labels, RequireTPR: 0.9, PerCheck: true})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		c.WriteJSON(&b)
		c.WriteText(&b)
		c.WriteMarkdown(&b)
		outs = append(outs, b.String())
	}
	if outs[0] != outs[1] || outs[0] != outs[2] {
		t.Errorf("outputs differ:\n%s\n---\n%s", outs[0], outs[1])
	}
}

// TestCalibrationArrowLabels reads boolean labels from an Arrow IPC file.
func TestCalibrationArrowLabels(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "rollout_id", Type: arrow.BinaryTypes.String},
		{Name: "check_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "label", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	// tone on r0 to r8 as in calibLabels: humans pass r0-r5, fail r6-r8;
	// r6-r8 labelled for the whole rollout.
	for i := range 9 {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("r%d", i))
		if i < 6 {
			b.Field(1).(*array.StringBuilder).Append("tone")
		} else {
			b.Field(1).AppendNull()
		}
		b.Field(2).(*array.BooleanBuilder).Append(i < 6)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	dir := t.TempDir()
	writeCalibRun(t, dir)
	labels := filepath.Join(dir, "labels.arrow")
	f, err := os.Create(labels)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c, err := BuildCalibration(dir, CalibrationConfig{Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	// tone: TP 5, FN 1, FP 1, TN 2; facts all unlabelled (6), r9 and
	// r10 unlabelled.
	tone := c.Checks[0]
	if tone.N != 9 || tone.TP != 5 || tone.FN != 1 || tone.FP != 1 || tone.TN != 2 || tone.Unlabeled != 2 || c.Checks[1].Unlabeled != 6 {
		t.Errorf("tone %+v, facts %+v", tone, c.Checks[1])
	}
}
