package report

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// segment is one status's part of a bar: its count and its width in
// percent of the bar's track (the longest bar of a table fills it).
type segment struct {
	Class string
	Count int64
	Width float64
}

// bar splits counts into segments whose widths are proportional to the
// counts, the track being scale results wide.
func bar(c OutcomeCounts, scale int64) []segment {
	var segs []segment
	for _, s := range []segment{{"pass", c.Pass, 0}, {"fail", c.Fail, 0}, {"pending", c.Pending, 0}, {"error", c.Error, 0}} {
		if s.Count == 0 || scale == 0 {
			continue
		}
		s.Width = 100 * float64(s.Count) / float64(scale)
		segs = append(segs, s)
	}
	return segs
}

func maxTotal[T any](xs []T, total func(*T) int64) int64 {
	var m int64
	for i := range xs {
		m = max(m, total(&xs[i]))
	}
	return m
}

// checkFlips returns the diff's checks that changed, those with most
// regressions (pass to fail) first.
func checkFlips(d *Diff) []CheckDiff {
	var out []CheckDiff
	for _, c := range d.Checks {
		if c.PassToFail+c.FailToPass+c.Added+c.Removed > 0 || len(c.StatusChanges) > 0 {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b CheckDiff) int {
		return cmp.Or(cmp.Compare(b.PassToFail, a.PassToFail), cmp.Compare(b.FailToPass, a.FailToPass))
	})
	return out
}

func rate(p *float64) string { return f4(p) }

func nonEmpty(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

var runFuncs = template.FuncMap{
	"width": func(w float64) template.CSS {
		return template.CSS("width: " + strconv.FormatFloat(w, 'f', 4, 64) + "%")
	},
	"rate":          rate,
	"none":          nonEmpty,
	"statuses":      formatStatusChanges,
	"turnsHeading":  turnsHeading,
	"turnsSentence": turnsSentence,
	"join":          strings.Join,
	"pct":           pct,
	"turnReward":    turnReward,
	"turnCheck":     turnCheck,
}

// turnReward writes a turn's reward, or "not scored".
func turnReward(r *float64) string {
	if r == nil {
		return "not scored"
	}
	return f4(r)
}

// turnCheck writes a check of a turn: its id, status and detail.
func turnCheck(c TurnCheck) string {
	s := c.Check + ": " + c.Status
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	}
	return s
}

// turnChecks joins the checks of a turn for a Markdown cell.
func turnChecks(cs []TurnCheck) string {
	if len(cs) == 0 {
		return "(none)"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = turnCheck(c)
	}
	return strings.Join(parts, " / ")
}

// turnsSentence is the diff's line on turn rewards as a sentence, "" when
// neither run scores turns.
func turnsSentence(d *Diff) string {
	l := d.turnsLine()
	if l == "" {
		return ""
	}
	return strings.ToUpper(l[:1]) + l[1:] + "."
}

// turnsHeading is the sentence under a rollout's turns heading.
func turnsHeading(t *TurnsReport) string {
	turns := "turns"
	if len(t.Turns) == 1 {
		turns = "turn"
	}
	s := fmt.Sprintf("Verifier %s, status %s, reward %s; %d agent %s.", nonEmpty(t.Verifier), t.Status, rate(t.Reward), len(t.Turns), turns)
	if !t.Scored {
		s += " Its turn rewards are null: its verifier scores no turns, or its status is error."
	}
	return s
}

var runPage = template.Must(template.New("run").Funcs(runFuncs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gavel report: {{.R.Dir}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 0; color: #222; }
main { box-sizing: border-box; max-width: 1200px; margin: 0 auto; padding: 1.5em 2em; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; font-variant-numeric: tabular-nums; margin-bottom: 1em; }
th, td { border: 1px solid #ccc; padding: 4px 6px; text-align: right; overflow-wrap: anywhere; vertical-align: top; }
th { background: #f2f2f2; }
td.name, th.name { text-align: left; }
col.name { width: 17%; } col.num { width: 8%; } col.bar { width: 26%; }
pre { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 12px; text-align: left; }
code { overflow-wrap: anywhere; }
.track { display: flex; width: 100%; height: 14px; background: #f4f4f4; }
.seg { display: block; flex: none; height: 100%; }
.pass { background: #3c8d4f; } .fail { background: #c8423b; } .pending { background: #d9a62b; } .error { background: #6b4fa0; }
.legend span.key { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 12px; }
p.note { max-width: 60em; }
</style>
</head>
<body>
<main>
<h1>gavel report</h1>
<p>Results <code>{{.R.Dir}}</code>{{if .R.Version}}, graded by gavel {{.R.Version}}{{end}}.</p>

<section id="summary">
<h2>Summary</h2>
<table>
<thead><tr><th>rollouts</th><th>passed</th><th>failed</th><th>pending</th><th>error</th><th>pass rate</th><th>mean reward</th><th>checks</th><th>checks passed</th></tr></thead>
<tbody><tr><td>{{.S.Total}}</td><td>{{.S.Pass}}</td><td>{{.S.Fail}}</td><td>{{.S.Pending}}</td><td>{{.S.Error}}</td><td>{{rate .S.PassRate}}</td><td>{{rate .S.MeanReward}}</td><td>{{.S.Checks}}</td><td>{{.S.ChecksPassed}}</td></tr></tbody>
</table>
<p class="note">The pass rate is passed / (passed + failed): pending and error rollouts are never in its denominator. The mean reward is over the rollouts that have one.</p>
</section>

<p class="legend">Bars:<span class="key pass"></span>pass<span class="key fail"></span>fail<span class="key pending"></span>pending<span class="key error"></span>error. In each table the longest bar holds the most results; every bar is drawn to that scale.</p>

<section id="verifiers">
<h2>Verifiers</h2>
<table class="counts">
<colgroup><col class="name"><col class="num"><col class="num"><col class="num"><col class="num"><col class="num"><col class="bar"></colgroup>
<thead><tr><th class="name">verifier</th><th>rollouts</th><th>passed</th><th>failed</th><th>pending</th><th>error</th><th class="name">outcomes</th></tr></thead>
<tbody>
{{range .Verifiers}}<tr class="counts-row"><td class="name">{{none .C.Name}}</td><td>{{.C.Total}}</td><td>{{.C.Pass}}</td><td>{{.C.Fail}}</td><td>{{.C.Pending}}</td><td>{{.C.Error}}</td>
<td class="bar-cell"><div class="track" data-max="{{$.VerifierMax}}">{{range .Bar}}<span class="seg {{.Class}}" data-count="{{.Count}}" style="{{width .Width}}" title="{{.Class}} {{.Count}}"></span>{{end}}</div></td></tr>
{{end}}</tbody>
</table>
</section>

<section id="checks">
<h2>Checks</h2>
<table class="counts">
<colgroup><col class="name"><col class="name"><col class="num"><col class="num"><col class="num"><col class="num"><col class="num"><col class="bar"></colgroup>
<thead><tr><th class="name">verifier</th><th class="name">check</th><th>results</th><th>pass</th><th>fail</th><th>pending</th><th>error</th><th class="name">outcomes</th></tr></thead>
<tbody>
{{range .Checks}}<tr class="counts-row"><td class="name">{{none .C.Verifier}}</td><td class="name">{{.C.Check}}{{if not .C.Required}} (optional){{end}}{{if .C.Unextracted}} ({{.C.Unextracted}} with no answer found){{end}}</td><td>{{.C.Total}}</td><td>{{.C.Pass}}</td><td>{{.C.Fail}}</td><td>{{.C.Pending}}</td><td>{{.C.Error}}</td>
<td class="bar-cell"><div class="track" data-max="{{$.CheckMax}}">{{range .Bar}}<span class="seg {{.Class}}" data-count="{{.Count}}" style="{{width .Width}}" title="{{.Class}} {{.Count}}"></span>{{end}}</div></td></tr>
{{end}}</tbody>
</table>
</section>

{{if .R.Judges}}<section id="judges">
<h2>Judges per check</h2>
<table>
<thead><tr><th class="name">verifier</th><th class="name">check</th><th class="name">judge</th><th>samples</th><th>judgements</th><th>pass</th><th>fail</th><th>error</th><th>mean score</th></tr></thead>
<tbody>
{{range .R.Judges}}<tr class="judge-row"><td class="name">{{none .Verifier}}</td><td class="name">{{.Check}}</td><td class="name">{{.Model}}</td><td>{{.Samples}}</td><td>{{.Total}}</td><td>{{.Pass}}</td><td>{{.Fail}}</td><td>{{.Error}}</td><td>{{rate .MeanScore}}</td></tr>
{{end}}</tbody>
</table>
<p class="note">Every single judgement of the run's rubric checks (the judgements table), by judge model. The mean score is over the judgements that succeeded.</p>
</section>
{{end}}
<section id="most-failed">
<h2>Most failed checks</h2>
{{if not .R.MostFailed}}<p>No check failed.</p>{{end}}
{{range .R.MostFailed}}<article class="failed-check">
<h3>{{none .Verifier}} / {{.Check}}: failed {{.Failed}} of {{.Total}}{{if not .Required}} (optional){{end}}</h3>
<table class="examples">
<colgroup><col style="width: 16%"><col style="width: 28%"><col style="width: 28%"><col style="width: 28%"></colgroup>
<thead><tr><th class="name">rollout</th><th class="name">detail</th><th class="name">actual</th><th class="name">expected</th></tr></thead>
<tbody>
{{range .Examples}}<tr class="example"><td class="name"><code>{{.RolloutID}}</code></td><td class="name">{{.Detail}}</td><td><pre>{{if .Actual}}{{.Actual}}{{else}}null{{end}}</pre></td><td><pre>{{if .Expected}}{{.Expected}}{{else}}null{{end}}</pre></td></tr>
{{end}}</tbody>
</table>
</article>
{{end}}</section>

<section id="errors">
<h2>Error kinds</h2>
{{if not .R.ErrorKinds}}<p>No rollout ended in error.</p>{{else}}
<table>
<colgroup><col style="width: 16%"><col style="width: 10%"><col style="width: 74%"></colgroup>
<thead><tr><th class="name">kind</th><th>rollouts</th><th class="name">examples</th></tr></thead>
<tbody>
{{range .R.ErrorKinds}}<tr class="error-kind"><td class="name">{{.Kind}}</td><td>{{.Count}}</td><td class="name">{{range .Examples}}<p><code>{{.RolloutID}}</code>: {{.Message}}</p>{{end}}</td></tr>
{{end}}</tbody>
</table>{{end}}
</section>

{{with .R.Flags}}<section id="flags">
<h2>Flags</h2>
<p>{{.Flagged}} rollouts raised a flag (a mark such as reward hacking; it never moves a reward).</p>
{{if .Counts}}<table>
<thead><tr><th class="name">verifier</th><th class="name">flag</th><th>rollouts</th></tr></thead>
<tbody>
{{range .Counts}}<tr class="flag-count"><td class="name">{{.Verifier}}</td><td class="name">{{.Flag}}</td><td>{{.Raised}}</td></tr>
{{end}}</tbody>
</table>
<table>
<thead><tr><th class="name">rollout</th><th class="name">verifier</th><th class="name">evidence</th></tr></thead>
<tbody>
{{range .Examples}}<tr class="flagged"><td class="name"><code>{{.RolloutID}}</code></td><td class="name">{{.Verifier}}</td><td class="name">{{range .Evidence}}<p>{{.Flag}}: {{.Detail}}</p>{{end}}</td></tr>
{{end}}</tbody>
</table>{{end}}
</section>

{{end}}{{range .R.Turns}}<section class="turns">
<h2>Turns of <code>{{.RolloutID}}</code></h2>
<p>{{turnsHeading .}}</p>
{{if .Turns}}<table>
<colgroup><col style="width: 8%"><col style="width: 12%"><col style="width: 80%"></colgroup>
<thead><tr><th>turn</th><th>reward</th><th class="name">checks credited to the turn</th></tr></thead>
<tbody>
{{range .Turns}}<tr class="turn"><td>{{.Turn}}</td><td>{{turnReward .Reward}}</td><td class="name">{{range .Checks}}<p>{{turnCheck .}}</p>{{else}}(none){{end}}</td></tr>
{{end}}</tbody>
</table>{{end}}
{{if .Uncredited}}<p>Credited to no turn:</p>
<ul>{{range .Uncredited}}<li>{{turnCheck .}}</li>{{end}}</ul>{{end}}
</section>

{{end}}{{with .Agreement}}<section id="judge-agreement">
<h2>Judge agreement</h2>
<p>{{.Heading}}.</p>
<h3>Between judges</h3>
<table>
<thead><tr>{{range index .Inter 0}}<th class="name">{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range slice .Inter 1}}<tr class="agreement">{{range .}}<td class="name">{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
<h3>Each judge across its samples</h3>
<table>
<thead><tr>{{range index .Self 0}}<th class="name">{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range slice .Self 1}}<tr class="self-consistency">{{range .}}<td class="name">{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
<ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>
</section>
{{end}}
{{with .R.Diff}}<section id="baseline">
<h2>Against the baseline</h2>
<p>Baseline <code>{{.Base}}</code> ({{.BaseRollouts}} rollouts), this run {{.CurRollouts}} rollouts: {{.Paired}} paired, {{.BaseOnly}} in the baseline only, {{.CurOnly}} in this run only. <strong>{{.Regressions}} regressions</strong> ({{pct .RegressionRate}} of the paired rollouts): passed in the baseline, failed or error now.{{with turnsSentence .}} {{.}}{{end}}</p>
<h3>Verifiers</h3>
<table>
<thead><tr><th class="name">verifier</th><th>paired</th><th>pass → fail</th><th>fail → pass</th><th>regressions</th><th class="name">other status changes</th><th>reward changed</th><th class="name">fingerprint</th></tr></thead>
<tbody>
{{range .Verifiers}}<tr class="diff-verifier"><td class="name">{{none .Verifier}}</td><td>{{.Paired}}</td><td>{{.PassToFail}}</td><td>{{.FailToPass}}</td><td>{{.Regressions}}</td><td class="name">{{statuses .StatusChanges}}</td><td>{{.RewardChanged}}</td><td class="name">{{if .FingerprintChanged}}changed{{else}}same{{end}}</td></tr>
{{end}}</tbody>
</table>
<h3>Flips per check, most regressions first</h3>
{{if not $.Flips}}<p>No check changed.</p>{{else}}
<table>
<thead><tr><th class="name">verifier</th><th class="name">check</th><th>pass → fail</th><th>fail → pass</th><th class="name">other status changes</th><th>added</th><th>removed</th></tr></thead>
<tbody>
{{range $.Flips}}<tr class="flip"><td class="name">{{none .Verifier}}</td><td class="name">{{.Check}}</td><td>{{.PassToFail}}</td><td>{{.FailToPass}}</td><td class="name">{{statuses .StatusChanges}}</td><td>{{.Added}}</td><td>{{.Removed}}</td></tr>
{{end}}</tbody>
</table>{{end}}
<h3>Changed rollouts, regressions first</h3>
{{if not .Examples}}<p>No rollout changed status.</p>{{else}}
<table>
<colgroup><col style="width: 14%"><col style="width: 10%"><col style="width: 10%"><col style="width: 14%"><col style="width: 14%"><col style="width: 38%"></colgroup>
<thead><tr><th class="name">rollout</th><th class="name">task</th><th class="name">verifier</th><th class="name">status</th><th class="name">cause</th><th class="name">checks changed</th></tr></thead>
<tbody>
{{range .Examples}}<tr class="changed{{if .Regression}} regression{{end}}"><td class="name"><code>{{.RolloutID}}</code></td><td class="name">{{.Task}}</td><td class="name">{{none .Verifier}}</td><td class="name">{{.From}} → {{.To}}{{if .Regression}} (regression){{end}}</td><td class="name">{{.Cause}}</td><td class="name">{{join .Checks "; "}}</td></tr>
{{end}}</tbody>
</table>{{end}}
</section>
{{end}}
</main>
</body>
</html>
`))

// agreementTables is the judge agreement section of the HTML page.
type agreementTables struct {
	Heading     string
	Inter, Self [][]string
	Notes       []string
}

type barRow[T any] struct {
	C   T
	Bar []segment
}

// WriteHTML writes the report as a self-contained HTML page (no script,
// nothing loaded from the network): the summary; per verifier and per
// check the counts by status with bars whose segments are as wide as
// their counts; the most failed checks with example rollouts and their
// actual and expected values; the error kinds with example messages;
// and, against a baseline, the verifiers' and checks' flips and the
// changed rollouts, regressions first.
func (rep *RunReport) WriteHTML(w io.Writer) error {
	vmax := maxTotal(rep.Verifiers, func(c *OutcomeCounts) int64 { return c.Total })
	cmax := maxTotal(rep.Checks, func(c *CheckCounts) int64 { return c.Total })
	data := struct {
		R                     *RunReport
		S                     *RunSummary
		Verifiers             []barRow[OutcomeCounts]
		Checks                []barRow[CheckCounts]
		VerifierMax, CheckMax int64
		Flips                 []CheckDiff
		Agreement             *agreementTables
	}{R: rep, S: &rep.Summary, VerifierMax: vmax, CheckMax: cmax}
	if ag := rep.Agreement; ag != nil {
		inter, self := ag.tables()
		data.Agreement = &agreementTables{Heading: ag.heading(), Inter: inter, Self: self, Notes: ag.Notes}
	}
	for _, v := range rep.Verifiers {
		data.Verifiers = append(data.Verifiers, barRow[OutcomeCounts]{v, bar(v, vmax)})
	}
	for _, c := range rep.Checks {
		data.Checks = append(data.Checks, barRow[CheckCounts]{c, bar(c.OutcomeCounts, cmax)})
	}
	if rep.Diff != nil {
		data.Flips = checkFlips(rep.Diff)
	}
	return runPage.Execute(w, data)
}

// textBarWidth is the number of characters of the longest Markdown bar.
const textBarWidth = 30

// textBar draws counts as characters, one kind per status, the longest
// bar of a table (scale results) textBarWidth wide; a count that is not 0
// gets at least one character.
func textBar(c OutcomeCounts, scale int64) string {
	var b strings.Builder
	for _, s := range []struct {
		n  int64
		ch string
	}{{c.Pass, "█"}, {c.Fail, "▓"}, {c.Pending, "▒"}, {c.Error, "░"}} {
		if s.n == 0 || scale == 0 {
			continue
		}
		n := max(1, int(math.Round(float64(s.n)*textBarWidth/float64(scale))))
		b.WriteString(strings.Repeat(s.ch, n))
	}
	return b.String()
}

// mdCode writes text as a Markdown code span in a table cell, or null.
func mdCode(s string) string {
	if s == "" {
		s = "null"
	}
	return "<code>" + htmlEscaper.Replace(s) + "</code>"
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "|", "&#124;", "\n", " ", "`", "&#96;", "*", "&#42;", "_", "&#95;", "\\", "&#92;")

// WriteMarkdown writes the report as GitHub-flavoured Markdown, with the
// same sections as WriteHTML and the bars drawn with characters.
func (rep *RunReport) WriteMarkdown(w io.Writer) error {
	s := &rep.Summary
	fmt.Fprintf(w, "# gavel report\n\nResults `%s`", rep.Dir)
	if rep.Version != "" {
		fmt.Fprintf(w, ", graded by gavel %s", rep.Version)
	}
	fmt.Fprint(w, ".\n\n## Summary\n\n")
	writeMDTable(w, []string{"rollouts", "passed", "failed", "pending", "error", "pass rate", "mean reward", "checks", "checks passed"}, func(yield func([]string)) {
		yield([]string{itoa(s.Total), itoa(s.Pass), itoa(s.Fail), itoa(s.Pending), itoa(s.Error), rate(s.PassRate), rate(s.MeanReward), itoa(s.Checks), itoa(s.ChecksPassed)})
	})
	fmt.Fprint(w, "\nThe pass rate is passed / (passed + failed): pending and error rollouts are never in its denominator.\n\n")
	fmt.Fprintf(w, "Bars: █ pass, ▓ fail, ▒ pending, ░ error; in each table the longest bar (the most results) is %d characters.\n\n", textBarWidth)

	fmt.Fprint(w, "## Verifiers\n\n")
	vmax := maxTotal(rep.Verifiers, func(c *OutcomeCounts) int64 { return c.Total })
	writeMDTable(w, []string{"verifier", "rollouts", "passed", "failed", "pending", "error", "outcomes"}, func(yield func([]string)) {
		for _, v := range rep.Verifiers {
			yield([]string{nonEmpty(v.Name), itoa(v.Total), itoa(v.Pass), itoa(v.Fail), itoa(v.Pending), itoa(v.Error), textBar(v, vmax)})
		}
	})

	fmt.Fprint(w, "\n## Checks\n\n")
	cmax := maxTotal(rep.Checks, func(c *CheckCounts) int64 { return c.Total })
	writeMDTable(w, []string{"verifier", "check", "results", "pass", "fail", "pending", "error", "outcomes"}, func(yield func([]string)) {
		for _, c := range rep.Checks {
			name := c.Check
			if !c.Required {
				name += " (optional)"
			}
			if c.Unextracted > 0 {
				name += " (" + itoa(c.Unextracted) + " with no answer found)"
			}
			yield([]string{nonEmpty(c.Verifier), name, itoa(c.Total), itoa(c.Pass), itoa(c.Fail), itoa(c.Pending), itoa(c.Error), textBar(c.OutcomeCounts, cmax)})
		}
	})

	if len(rep.Judges) > 0 {
		fmt.Fprint(w, "\n## Judges per check\n\n")
		writeMDTable(w, []string{"verifier", "check", "judge", "samples", "judgements", "pass", "fail", "error", "mean score"}, func(yield func([]string)) {
			for _, j := range rep.Judges {
				yield([]string{nonEmpty(j.Verifier), j.Check, j.Model, itoa(j.Samples), itoa(j.Total), itoa(j.Pass), itoa(j.Fail), itoa(j.Error), rate(j.MeanScore)})
			}
		})
	}

	fmt.Fprint(w, "\n## Most failed checks\n\n")
	if len(rep.MostFailed) == 0 {
		fmt.Fprint(w, "No check failed.\n")
	}
	for _, f := range rep.MostFailed {
		opt := ""
		if !f.Required {
			opt = " (optional)"
		}
		fmt.Fprintf(w, "### %s / %s: failed %d of %d%s\n\n", mdEscape(nonEmpty(f.Verifier)), mdEscape(f.Check), f.Failed, f.Total, opt)
		fmt.Fprint(w, "| rollout | detail | actual | expected |\n| --- | --- | --- | --- |\n")
		for _, e := range f.Examples {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", mdCode(e.RolloutID), mdEscape(e.Detail), mdCode(e.Actual), mdCode(e.Expected))
		}
		fmt.Fprintln(w)
	}

	fmt.Fprint(w, "\n## Error kinds\n\n")
	if len(rep.ErrorKinds) == 0 {
		fmt.Fprint(w, "No rollout ended in error.\n")
	} else {
		writeMDTable(w, []string{"kind", "rollouts", "examples"}, func(yield func([]string)) {
			for _, k := range rep.ErrorKinds {
				var ex []string
				for _, e := range k.Examples {
					ex = append(ex, e.RolloutID+": "+e.Message)
				}
				yield([]string{k.Kind, itoa(k.Count), strings.Join(ex, " / ")})
			}
		})
	}

	if f := rep.Flags; f != nil {
		fmt.Fprintf(w, "\n## Flags\n\n%d rollouts raised a flag (a mark such as reward hacking; it never moves a reward).\n", f.Flagged)
		if len(f.Counts) > 0 {
			fmt.Fprintln(w)
			writeMDTable(w, []string{"verifier", "flag", "rollouts"}, func(yield func([]string)) {
				for _, c := range f.Counts {
					yield([]string{c.Verifier, c.Flag, itoa(c.Raised)})
				}
			})
			fmt.Fprintln(w)
			writeMDTable(w, []string{"rollout", "verifier", "evidence"}, func(yield func([]string)) {
				for _, e := range f.Examples {
					var ev []string
					for _, x := range e.Evidence {
						ev = append(ev, x.Flag+": "+x.Detail)
					}
					yield([]string{e.RolloutID, e.Verifier, strings.Join(ev, " / ")})
				}
			})
		}
	}

	for i := range rep.Turns {
		t := &rep.Turns[i]
		fmt.Fprintf(w, "\n## Turns of %s\n\n%s\n", mdEscape(t.RolloutID), mdEscape(turnsHeading(t)))
		if len(t.Turns) > 0 {
			fmt.Fprintln(w)
			writeMDTable(w, []string{"turn", "reward", "checks credited to the turn"}, func(yield func([]string)) {
				for _, row := range t.Turns {
					yield([]string{strconv.Itoa(row.Turn), turnReward(row.Reward), turnChecks(row.Checks)})
				}
			})
		}
		if len(t.Uncredited) > 0 {
			fmt.Fprintf(w, "\nCredited to no turn: %s\n", mdEscape(turnChecks(t.Uncredited)))
		}
	}

	if rep.Agreement != nil {
		fmt.Fprintln(w)
		rep.Agreement.writeMarkdown(w, "##")
	}

	d := rep.Diff
	if d == nil {
		return nil
	}
	fmt.Fprint(w, "\n## Against the baseline\n\n")
	fmt.Fprintf(w, "Baseline `%s` (%d rollouts), this run %d rollouts: %d paired, %d in the baseline only, %d in this run only. **%d regressions** (%s of the paired rollouts): passed in the baseline, failed or error now.\n\n",
		d.Base, d.BaseRollouts, d.CurRollouts, d.Paired, d.BaseOnly, d.CurOnly, d.Regressions, pct(d.RegressionRate))
	if l := turnsSentence(d); l != "" {
		fmt.Fprintf(w, "%s\n\n", mdEscape(l))
	}
	fmt.Fprint(w, "### Verifiers\n\n")
	writeMDTable(w, []string{"verifier", "paired", "pass → fail", "fail → pass", "regressions", "other status changes", "reward changed", "fingerprint"}, func(yield func([]string)) {
		for _, v := range d.Verifiers {
			fp := "same"
			if v.FingerprintChanged {
				fp = "changed"
			}
			yield([]string{nonEmpty(v.Verifier), itoa(v.Paired), itoa(v.PassToFail), itoa(v.FailToPass), itoa(v.Regressions), mdStatusChanges(v.StatusChanges), itoa(v.RewardChanged), fp})
		}
	})
	fmt.Fprint(w, "\n### Flips per check, most regressions first\n\n")
	if flips := checkFlips(d); len(flips) == 0 {
		fmt.Fprint(w, "No check changed.\n")
	} else {
		writeMDTable(w, []string{"verifier", "check", "pass → fail", "fail → pass", "other status changes", "added", "removed"}, func(yield func([]string)) {
			for _, c := range flips {
				yield([]string{nonEmpty(c.Verifier), c.Check, itoa(c.PassToFail), itoa(c.FailToPass), mdStatusChanges(c.StatusChanges), itoa(c.Added), itoa(c.Removed)})
			}
		})
	}
	fmt.Fprint(w, "\n### Changed rollouts, regressions first\n\n")
	if len(d.Examples) == 0 {
		fmt.Fprint(w, "No rollout changed status.\n")
		return nil
	}
	writeMDTable(w, []string{"rollout", "task", "verifier", "status", "cause", "checks changed"}, func(yield func([]string)) {
		for _, c := range d.Examples {
			st := c.From + " → " + c.To
			if c.Regression {
				st += " (regression)"
			}
			yield([]string{c.RolloutID, c.Task, nonEmpty(c.Verifier), st, c.Cause, mdChecks(c.Checks)})
		}
	})
	return nil
}
