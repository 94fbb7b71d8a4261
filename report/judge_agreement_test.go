package report

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelhq/gavel/stats"
)

// twoJudges is a run where judges a and b judge check c1 of six rollouts
// and check c2 of r1; a judges c1 twice on r1 to r4.
//
//	      a s0      a s1      b s0
//	r1    pass .9   pass .7   pass .8
//	r2    pass .7   fail .4   fail .3
//	r3    fail .2   fail .2   fail .1
//	r4    fail .4   error     pass .6
//	r5    pass 1               pass .9
//	r6    fail 0               error
//	r1/c2 pass .5              pass .5
func twoJudges() []judgementFixture {
	return []judgementFixture{
		jf("r1", 0, "c1", "a", 0, "pass", .9), jf("r1", 0, "c1", "a", 1, "pass", .7), jf("r1", 0, "c1", "b", 0, "pass", .8),
		jf("r1", 1, "c2", "a", 0, "pass", .5), jf("r1", 1, "c2", "b", 0, "pass", .5),
		jf("r2", 0, "c1", "a", 0, "pass", .7), jf("r2", 0, "c1", "a", 1, "fail", .4), jf("r2", 0, "c1", "b", 0, "fail", .3),
		jf("r3", 0, "c1", "a", 0, "fail", .2), jf("r3", 0, "c1", "a", 1, "fail", .2), jf("r3", 0, "c1", "b", 0, "fail", .1),
		jf("r4", 0, "c1", "a", 0, "fail", .4), jf("r4", 0, "c1", "a", 1, "error", 0), jf("r4", 0, "c1", "b", 0, "pass", .6),
		jf("r5", 0, "c1", "a", 0, "pass", 1), jf("r5", 0, "c1", "b", 0, "pass", .9),
		jf("r6", 0, "c1", "a", 0, "fail", 0), jf("r6", 0, "c1", "b", 0, "error", 0),
	}
}

func val(t *testing.T, name string, e Estimate) float64 {
	t.Helper()
	if e.Value == nil {
		t.Fatalf("%s undefined (%s)", name, e.Reason)
	}
	if e.CI == nil || e.CI.Lo > *e.Value+1e-12 && e.CI.Hi < *e.Value-1e-12 {
		t.Errorf("%s = %v with interval %+v", name, *e.Value, e.CI)
	}
	return *e.Value
}

func TestAgreementTwoJudges(t *testing.T) {
	dir := t.TempDir()
	writeJudgements(t, dir, "jsonl", 7, twoJudges())
	ag, err := BuildAgreement(dir, AgreementConfig{Bootstrap: stats.BootstrapConfig{Resamples: 200, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if ag.Judgements != 18 || ag.Failed != 2 || ag.Samples != 2 || ag.Kappa != "cohen" || len(ag.Checks) != 2 {
		t.Fatalf("judgements %d failed %d samples %d kappa %q checks %d, want 18 2 2 cohen 2",
			ag.Judgements, ag.Failed, ag.Samples, ag.Kappa, len(ag.Checks))
	}
	c1 := ag.Checks[0]
	if c1.Check != "c1" || c1.Units != 5 {
		t.Fatalf("first check %q with %d units, want c1 with 5", c1.Check, c1.Units)
	}
	// By hand, on c1, units r1 to r5 (r6 has one verdict):
	// Cohen: pp 2 (r1 r5), pf 1 (r2), fp 1 (r4), ff 1 (r3); po 3/5,
	// both pass 3/5, pe .36+.16 = .52, κ = .08/.48 = 1/6.
	// α nominal: 10 values, 6 pass 4 fail; r2 and r4 each 2 ordered
	// disagreeing pairs: Do = 4/10, De = (100-36-16)/90, α = 1 - .4/(48/90) = .25.
	// α interval: squared differences .01 .16 .01 .04 .01, Do = 2·.23/10;
	// Σx = 5.9, Σx² = 4.41, De = (20·4.41 - 2·5.9²)/90 = 18.58/90;
	// α = 1 - .046·90/18.58.
	// Mean abs diff: (.1+.4+.1+.2+.1)/5 = .18.
	// a's samples: r1 agree, r2 disagree, r3 agree (r4 has one good
	// sample): 2/3; SDs .2/√2, .3/√2, 0: mean .5/√2/3.
	want := []struct {
		name string
		got  Estimate
		want float64
	}{
		{"c1 kappa", c1.Kappa, 1.0 / 6},
		{"c1 alpha nominal", c1.AlphaNominal, 0.25},
		{"c1 alpha interval", c1.AlphaInterval, 1 - 0.046*90/18.58},
		{"c1 mean abs diff", c1.MeanAbsDiff, 0.18},
		{"c1 agree", c1.Agree, 0.6},
		{"c1 a all agree", c1.Self[0].AllAgree, 2.0 / 3},
		{"c1 a mean sd", c1.Self[0].MeanSD, 0.5 / math.Sqrt2 / 3},
		// Overall adds r1/c2 (pass, pass; .5, .5): pp 3, po 4/6, both
		// pass 4/6, pe 20/36, κ = (24/36-20/36)/(16/36) = .25.
		{"overall kappa", ag.Overall.Kappa, 0.25},
		// and to α nominal 2 pass values and no disagreement: n 12, 8
		// pass 4 fail, Do 4/12, De (144-64-16)/132, α = 1 - (1/3)/(64/132).
		{"overall alpha nominal", ag.Overall.AlphaNominal, 1 - (1.0/3)/(64.0/132)},
	}
	for _, w := range want {
		if got := val(t, w.name, w.got); math.Abs(got-w.want) > 1e-12 {
			t.Errorf("%s = %.15f, want %.15f", w.name, got, w.want)
		}
	}
	if e := c1.Self[1].AllAgree; e.Value != nil || e.Reason != "no check judged twice by this judge" {
		t.Errorf("b's self-consistency = %+v, want undefined: judged once", e)
	}
	// The independent implementations agree on c1's values.
	units := [][]float64{{1, 1}, {1, 0}, {0, 0}, {0, 1}, {1, 1}, {0, math.NaN()}}
	if got, want := *c1.AlphaNominal.Value, alphaRef(units, nominalDelta); math.Abs(got-want) > 1e-12 {
		t.Errorf("c1 alpha nominal = %v, coincidence matrix %v", got, want)
	}
	if got, want := *c1.Kappa.Value, cohenRef([]int{1, 1, 0, 0, 1}, []int{1, 0, 0, 1, 1}); math.Abs(got-want) > 1e-12 {
		t.Errorf("c1 kappa = %v, confusion matrix %v", got, want)
	}
}

func TestAgreementFleiss(t *testing.T) {
	// Three judges on five rollouts' check c; r5 has one failed
	// judgement and is left out of Fleiss' κ.
	verdicts := [][]string{
		{"pass", "pass", "pass"}, {"pass", "fail", "pass"}, {"fail", "fail", "pass"},
		{"fail", "fail", "fail"}, {"pass", "error", "fail"},
	}
	var rows []judgementFixture
	for u, vs := range verdicts {
		for j, v := range vs {
			score := 0.0
			if v == "pass" {
				score = 1
			}
			rows = append(rows, jf("r"+string(rune('1'+u)), 0, "c", string(rune('a'+j)), 0, v, score))
		}
	}
	dir := t.TempDir()
	writeJudgements(t, dir, "parquet", 6, rows)
	ag, err := BuildAgreement(dir, AgreementConfig{Bootstrap: stats.BootstrapConfig{Resamples: 100}})
	if err != nil {
		t.Fatal(err)
	}
	// By hand: units r1 to r4, P_i = 1, 1/3, 1/3, 1; P̄ = 2/3; pass share
	// 6/12, Pe = .5; κ = (2/3 - .5)/.5 = 1/3.
	ref := fleissRef([][]int{{1, 1, 0, 0}, {1, 0, 0, 0}, {1, 1, 1, 0}}, 2)
	got := val(t, "fleiss", ag.Overall.Kappa)
	if ag.Kappa != "fleiss" || math.Abs(got-1.0/3) > 1e-12 || math.Abs(got-ref) > 1e-12 {
		t.Errorf("Fleiss κ (%s) = %v, want 1/3 (pair counting: %v)", ag.Kappa, got, ref)
	}
	if ag.Overall.Kappa.N != 4 {
		t.Errorf("Fleiss κ on %d units, want 4", ag.Overall.Kappa.N)
	}
	if e := ag.Overall.Self[0].AllAgree; e.Reason != "one sample per judge" {
		t.Errorf("self-consistency with one sample: %+v", e)
	}
}

// TestAgreementDeterministic: the same table in JSON Lines and in
// Parquet, in one part or several, renders byte-identical output.
func TestAgreementDeterministic(t *testing.T) {
	var outs [][]byte
	for _, c := range []struct {
		format string
		per    int
	}{{"jsonl", 100}, {"jsonl", 4}, {"parquet", 100}, {"parquet", 5}} {
		dir := filepath.Join(t.TempDir(), "run")
		writeJudgements(t, dir, c.format, c.per, twoJudges())
		ag, err := BuildAgreement(dir, AgreementConfig{Bootstrap: stats.BootstrapConfig{Resamples: 300, Seed: 4}})
		if err != nil {
			t.Fatal(err)
		}
		ag.Dir = "run"
		var b bytes.Buffer
		for _, write := range []func(*Agreement, *bytes.Buffer) error{
			func(a *Agreement, b *bytes.Buffer) error { return a.WriteJSON(b) },
			func(a *Agreement, b *bytes.Buffer) error { return a.WriteText(b) },
			func(a *Agreement, b *bytes.Buffer) error { return a.WriteMarkdown(b) },
		} {
			if err := write(ag, &b); err != nil {
				t.Fatal(err)
			}
		}
		outs = append(outs, b.Bytes())
	}
	for i := 1; i < len(outs); i++ {
		if !bytes.Equal(outs[0], outs[i]) {
			t.Errorf("output %d differs from output 0:\n%s\n---\n%s", i, outs[i], outs[0])
		}
	}
}

func TestAgreementNoTable(t *testing.T) {
	_, err := BuildAgreement(t.TempDir(), AgreementConfig{})
	if !errors.Is(err, ErrNoJudgements) {
		t.Errorf("BuildAgreement without a judgements table: %v, want ErrNoJudgements", err)
	}
}

func TestAgreementBadRow(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"null judge", `{"rollout_id":"r2","check_index":0,"check_id":"c","judge_model":null,"sample":0,"score":1,"status":"pass"}`,
			"part-00000.jsonl row 1: judge_model is null"},
		{"bad sample", `{"rollout_id":"r2","check_index":0,"check_id":"c","judge_model":"a","sample":"first","score":1,"status":"pass"}`,
			`part-00000.jsonl row 1: sample "first": not a whole number from 0`},
		{"bad score", `{"rollout_id":"r2","check_index":0,"check_id":"c","judge_model":"a","sample":0,"score":"high","status":"pass"}`,
			`part-00000.jsonl row 1: score "high": not a number`},
		{"twice", `{"rollout_id":"r1","check_index":0,"check_id":"c","judge_model":"a","sample":0,"score":0,"status":"fail"}`,
			`part-00000.jsonl row 1: rollout r1 check 0 (c) judged again by a as sample 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeJudgements(t, dir, "jsonl", 1, nil)
			good := `{"rollout_id":"r1","check_index":0,"check_id":"c","judge_model":"a","sample":0,"score":1,"status":"pass"}`
			if err := os.WriteFile(filepath.Join(dir, Judgements, "part-00000.jsonl"), []byte(good+"\n"+tt.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := BuildAgreement(dir, AgreementConfig{})
			if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
				t.Errorf("BuildAgreement = %v, want an error ending %q", err, tt.want)
			}
		})
	}
}

// TestRunReportAgreement: gavel report shows the judges' agreement when
// the run has a judgements table, in HTML and Markdown, and nothing of
// it without one.
func TestRunReportAgreement(t *testing.T) {
	dir := writeRun(t, sampleRun())
	rep, err := BuildRunReport(dir, RunConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var html, md bytes.Buffer
	rep.WriteHTML(&html)
	rep.WriteMarkdown(&md)
	if rep.Agreement != nil || strings.Contains(html.String(), "Judge agreement") || strings.Contains(md.String(), "Judge agreement") {
		t.Fatal("a run without judgements reports judge agreement")
	}
	writeJudgements(t, dir, "jsonl", 100, twoJudges())
	rep, err = BuildRunReport(dir, RunConfig{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := BuildAgreement(dir, AgreementConfig{Bootstrap: stats.BootstrapConfig{Seed: 1, Resamples: 2000}})
	if err != nil {
		t.Fatal(err)
	}
	var wantMD bytes.Buffer
	want.WriteMarkdown(&wantMD)
	html.Reset()
	md.Reset()
	rep.WriteHTML(&html)
	rep.WriteMarkdown(&md)
	if !strings.Contains(md.String(), wantMD.String()) {
		t.Errorf("report Markdown lacks the agreement of gavel judge agreement:\n%s\nwant within:\n%s", md.String(), wantMD.String())
	}
	for _, s := range []string{`<section id="judge-agreement">`, "<td class=\"name\">" + want.Checks[0].Kappa.String() + "</td>", "Each judge across its samples"} {
		if !strings.Contains(html.String(), s) {
			t.Errorf("report HTML lacks %q", s)
		}
	}
}
