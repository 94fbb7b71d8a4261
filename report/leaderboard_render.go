package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gavelhq/gavel/stats"
)

// WriteJSON writes the leaderboard as indented JSON.
func (lb *Leaderboard) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(lb)
}

func f4(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 4, 64)
}

func ci(iv *stats.Interval) string {
	if iv == nil {
		return "-"
	}
	return fmt.Sprintf("[%.4f, %.4f]", iv.Lo, iv.Hi)
}

func (lb *Leaderboard) header() []string {
	h := []string{"rank"}
	h = append(h, lb.By...)
	h = append(h, "rollouts", "passed", "failed", "pending", "error", "pass rate", "95% CI (Wilson)", "mean reward", "95% CI (bootstrap over tasks)")
	if lb.TurnRewards {
		h = append(h, "mean turn reward")
	}
	h = append(h, "tasks")
	h = append(h, lb.flagHeader("flagged", "flagged share", "flag ")...)
	for _, k := range lb.K {
		h = append(h, fmt.Sprintf("pass@%d", k), fmt.Sprintf("pass^%d", k))
	}
	return h
}

func (lb *Leaderboard) row(e *Entry) []string {
	r := []string{strconv.Itoa(e.Rank)}
	for _, g := range e.Group {
		if g == "" {
			g = "(none)"
		}
		r = append(r, g)
	}
	rate := f4(e.PassRate)
	if lb.Coverage != nil && !lb.Coverage.Complete {
		rate += " (incomplete)"
	}
	r = append(r, itoa(e.Rollouts), itoa(e.Passed), itoa(e.Failed), itoa(e.Pending), itoa(e.Error),
		rate, ci(e.PassRateCI), f4(e.MeanReward), ci(e.MeanRewardCI))
	if lb.TurnRewards {
		r = append(r, f4(e.MeanTurnReward))
	}
	r = append(r, strconv.Itoa(e.Tasks))
	r = append(r, lb.flagCells(e, f4)...)
	for _, k := range e.AtK {
		r = append(r, f4(k.PassAtK), f4(k.PassHatK))
	}
	return r
}

// flagHeader returns the names of the flag columns: flagged and share
// when some directory has flags, then one per flag of --flags, named
// prefix and its id.
func (lb *Leaderboard) flagHeader(flagged, share, prefix string) []string {
	if !lb.HasFlags {
		return nil
	}
	h := []string{flagged, share}
	for _, f := range lb.Flags {
		h = append(h, prefix+f)
	}
	return h
}

// flagCells returns an entry's cells of the flag columns, the share
// formatted by num.
func (lb *Leaderboard) flagCells(e *Entry, num func(*float64) string) []string {
	if !lb.HasFlags {
		return nil
	}
	r := []string{itoa(*e.Flagged), num(e.FlaggedShare)}
	for _, f := range lb.Flags {
		r = append(r, itoa(e.FlagCounts[f]))
	}
	return r
}

// WriteText writes the leaderboard as a terminal table followed by its
// conventions.
func (lb *Leaderboard) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(lb.header(), "\t"))
	for i := range lb.Entries {
		fmt.Fprintln(tw, strings.Join(lb.row(&lb.Entries[i]), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nConventions:")
	for _, c := range lb.Conventions {
		fmt.Fprintf(w, "- %s\n", c)
	}
	return nil
}

// WriteMarkdown writes the leaderboard as a Markdown table followed by its
// conventions.
func (lb *Leaderboard) WriteMarkdown(w io.Writer) error {
	writeMDTable(w, lb.header(), func(yield func([]string)) {
		for i := range lb.Entries {
			yield(lb.row(&lb.Entries[i]))
		}
	})
	fmt.Fprintln(w, "\nConventions:")
	fmt.Fprintln(w)
	for _, c := range lb.Conventions {
		fmt.Fprintf(w, "- %s\n", mdEscape(c))
	}
	return nil
}

// WriteCSV writes the leaderboard as CSV, one row per group, with the
// interval bounds in columns of their own and empty cells for nulls.
func (lb *Leaderboard) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	h := []string{"rank"}
	h = append(h, lb.By...)
	h = append(h, "rollouts", "passed", "failed", "pending", "error", "pass_rate", "pass_rate_wilson95_lo", "pass_rate_wilson95_hi",
		"mean_reward", "mean_reward_bootstrap95_lo", "mean_reward_bootstrap95_hi")
	if lb.TurnRewards {
		h = append(h, "mean_turn_reward")
	}
	h = append(h, "tasks")
	h = append(h, lb.flagHeader("flagged", "flagged_share", "flag_")...)
	for _, k := range lb.K {
		h = append(h, fmt.Sprintf("pass_at_%d", k), fmt.Sprintf("pass_hat_%d", k), fmt.Sprintf("tasks_at_%d", k))
	}
	cw.Write(h)
	num := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	bounds := func(iv *stats.Interval) []string {
		if iv == nil {
			return []string{"", ""}
		}
		return []string{num(&iv.Lo), num(&iv.Hi)}
	}
	for _, e := range lb.Entries {
		r := []string{strconv.Itoa(e.Rank)}
		r = append(r, e.Group...)
		r = append(r, itoa(e.Rollouts), itoa(e.Passed), itoa(e.Failed), itoa(e.Pending), itoa(e.Error), num(e.PassRate))
		r = append(r, bounds(e.PassRateCI)...)
		r = append(r, num(e.MeanReward))
		r = append(r, bounds(e.MeanRewardCI)...)
		if lb.TurnRewards {
			r = append(r, num(e.MeanTurnReward))
		}
		r = append(r, strconv.Itoa(e.Tasks))
		r = append(r, lb.flagCells(&e, num)...)
		for _, k := range e.AtK {
			r = append(r, num(k.PassAtK), num(k.PassHatK), strconv.Itoa(k.Tasks))
		}
		cw.Write(r)
	}
	cw.Flush()
	return cw.Error()
}

// Geometry of the HTML charts, in SVG user units.
const (
	chartLabelW = 220
	chartPlotW  = 480
	chartBarH   = 22
	chartGap    = 10
	chartTop    = 10
	chartAxisH  = 30
)

type svgBar struct {
	Label, Short, Value           string
	Y, Width, MidY                float64
	HasCI                         bool
	CILo, CIHi, CapTop, CapBottom float64
	CIText                        string
}

type svgTick struct {
	X     float64
	Label string
}

type svgChart struct {
	ID, Title         string
	Width, Height     float64
	LabelW, PlotW     float64
	Bars              []svgBar
	Ticks             []svgTick
	AxisY, AxisLabelY float64
}

func (lb *Leaderboard) chart(id, title string, val func(*Entry) (*float64, *stats.Interval)) svgChart {
	c := svgChart{ID: id, Title: title, LabelW: chartLabelW, PlotW: chartPlotW, Width: chartLabelW + chartPlotW + 20}
	y := float64(chartTop)
	for i := range lb.Entries {
		e := &lb.Entries[i]
		v, iv := val(e)
		label := groupLabel(e)
		b := svgBar{Label: label, Short: shorten(label, chartLabelRunes), Y: y, MidY: y + chartBarH/2, Value: f4(v)}
		if v != nil {
			b.Width = chartPlotW * clamp01(*v)
		}
		if iv != nil {
			b.HasCI = true
			b.CILo = chartLabelW + chartPlotW*clamp01(iv.Lo)
			b.CIHi = chartLabelW + chartPlotW*clamp01(iv.Hi)
			b.CapTop, b.CapBottom = y+4, y+chartBarH-4
			b.CIText = ci(iv)
		}
		c.Bars = append(c.Bars, b)
		y += chartBarH + chartGap
	}
	c.AxisY = y
	c.AxisLabelY = y + 16
	for i := 0; i <= 4; i++ {
		x := float64(i) / 4
		c.Ticks = append(c.Ticks, svgTick{X: chartLabelW + chartPlotW*x, Label: strconv.FormatFloat(x, 'f', 2, 64)})
	}
	c.Height = y + chartAxisH
	return c
}

func clamp01(x float64) float64 { return max(0, min(1, x)) }

// chartLabelRunes is the longest group label drawn whole left of a bar;
// a longer one is cut, and shown whole in the bar's tooltip.
const chartLabelRunes = 30

// shorten cuts s to n runes, the last an ellipsis.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Geometry of the pass@k and pass^k charts, one per group, in SVG user
// units: small enough that four fit side by side in a 1280 px window.
const (
	atkW      = 270
	atkH      = 170
	atkLeft   = 40
	atkRight  = 14
	atkTop    = 12
	atkBottom = 30
	atkPlotW  = atkW - atkLeft - atkRight
	atkPlotH  = atkH - atkTop - atkBottom
)

// atkMark is one point of a pass@k or pass^k series.
type atkMark struct {
	K        int
	X, Y     float64
	Value    string
	Tasks    int
	Label    string  // "pass@2" or "pass^2"
	Sq0, Sq1 float64 // a square mark's corner: X-4, Y-4
}

// atkSeries is one series of a group's chart: its marks, and the
// polylines joining marks of consecutive k (a k with no task of k graded
// samples has no mark and breaks the line).
type atkSeries struct {
	Marks []atkMark
	Lines []string // SVG points lists
}

type atkTick struct {
	Pos   float64
	Label string
}

// atkChart is the pass@k and pass^k chart of one group.
type atkChart struct {
	Group         string
	Width, Height int
	Left, Top     float64
	Right, Bottom float64
	XTicks        []atkTick
	YTicks        []atkTick
	AtK, HatK     atkSeries
}

// round2 rounds a coordinate to two decimals, for short, stable output.
func round2(x float64) float64 { return math.Round(x*100) / 100 }

// atkCharts draws, for each group, pass@k and pass^k against k: the k of
// the leaderboard are spaced evenly along x, probabilities 0 to 1 along y.
func (lb *Leaderboard) atkCharts() []atkChart {
	n := len(lb.K)
	xOf := func(i int) float64 {
		if n == 1 {
			return atkLeft + atkPlotW/2
		}
		return round2(atkLeft + atkPlotW*float64(i)/float64(n-1))
	}
	yOf := func(v float64) float64 { return round2(atkTop + atkPlotH*(1-clamp01(v))) }
	var xTicks, yTicks []atkTick
	for i, k := range lb.K {
		xTicks = append(xTicks, atkTick{Pos: xOf(i), Label: strconv.Itoa(k)})
	}
	for i := 0; i <= 4; i++ {
		v := float64(i) / 4
		yTicks = append(yTicks, atkTick{Pos: yOf(v), Label: strconv.FormatFloat(v, 'f', 2, 64)})
	}
	series := func(e *Entry, name string, val func(*KStats) *float64) atkSeries {
		var s atkSeries
		var pts []string
		flush := func() {
			if len(pts) > 1 {
				s.Lines = append(s.Lines, strings.Join(pts, " "))
			}
			pts = pts[:0]
		}
		for i := range e.AtK {
			st := &e.AtK[i]
			v := val(st)
			if v == nil {
				flush()
				continue
			}
			m := atkMark{K: st.K, X: xOf(i), Y: yOf(*v), Value: f4(v), Tasks: st.Tasks, Label: fmt.Sprintf("%s%d", name, st.K)}
			m.Sq0, m.Sq1 = round2(m.X-4), round2(m.Y-4)
			s.Marks = append(s.Marks, m)
			pts = append(pts, strconv.FormatFloat(m.X, 'f', -1, 64)+","+strconv.FormatFloat(m.Y, 'f', -1, 64))
		}
		flush()
		return s
	}
	charts := make([]atkChart, len(lb.Entries))
	for i := range lb.Entries {
		e := &lb.Entries[i]
		charts[i] = atkChart{
			Group: groupLabel(e), Width: atkW, Height: atkH,
			Left: atkLeft, Top: atkTop, Right: atkLeft + atkPlotW, Bottom: atkTop + atkPlotH,
			XTicks: xTicks, YTicks: yTicks,
			AtK:  series(e, "pass@", func(s *KStats) *float64 { return s.PassAtK }),
			HatK: series(e, "pass^", func(s *KStats) *float64 { return s.PassHatK }),
		}
	}
	return charts
}

// groupLabel is a group's values joined, "(none)" for a null.
func groupLabel(e *Entry) string {
	parts := make([]string, len(e.Group))
	for i, g := range e.Group {
		if g == "" {
			g = "(none)"
		}
		parts[i] = g
	}
	return strings.Join(parts, " / ")
}

var htmlPage = template.Must(template.New("page").Funcs(template.FuncMap{
	"add": func(a, b float64) float64 { return a + b },
	"sub": func(a, b float64) float64 { return a - b },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gavel leaderboard</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
p, li, figcaption { overflow-wrap: anywhere; }
.scroll { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
td { white-space: nowrap; }
th { background: #f2f2f2; }
td.group { text-align: left; white-space: normal; overflow-wrap: anywhere; min-width: 6em; max-width: 20em; }
svg text { font-size: 12px; fill: #222; }
.bar { fill: #4a78b8; }
.whisker { stroke: #111; stroke-width: 1.5; }
.grid { stroke: #ddd; }
.atk-grid { display: flex; flex-wrap: wrap; gap: 16px 24px; }
.atk-grid figure { margin: 0; width: {{.AtKWidth}}px; }
.atk-grid figcaption { font-weight: 600; min-height: 2.6em; }
.pass-at-k { fill: #4a78b8; }
.pass-hat-k { fill: #c8553d; }
polyline.line { fill: none; stroke-width: 2; }
polyline.pass-at-k { stroke: #4a78b8; }
polyline.pass-hat-k { stroke: #c8553d; stroke-dasharray: 5 3; }
ul.conventions { max-width: 60em; }
</style>
</head>
<body>
<h1>gavel leaderboard</h1>
<p>Results: {{range $i, $d := .LB.Dirs}}{{if $i}}, {{end}}<code>{{$d}}</code>{{end}}. Grouped by {{range $i, $b := .LB.By}}{{if $i}}, {{end}}<code>{{$b}}</code>{{end}}.</p>
<div class="scroll">
<table id="leaderboard">
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr class="entry">{{range $i, $c := .}}<td{{if and (gt $i 0) (le $i $.NBy)}} class="group"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
</div>
{{if .KRows}}<h2>pass@k and pass^k</h2>
<div class="scroll">
<table id="pass-at-k">
<thead><tr>{{range .KHeader}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .KRows}}<tr class="k-entry">{{range $i, $c := .}}<td{{if and (gt $i 0) (le $i $.NBy)}} class="group"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
</div>
{{end}}{{range .Charts}}
<h2>{{.Title}}</h2>
<svg id="{{.ID}}" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="{{.Title}}">
{{$c := .}}{{range .Ticks}}<line class="grid" x1="{{.X}}" y1="0" x2="{{.X}}" y2="{{$c.AxisY}}"></line>
{{end}}{{range .Bars}}<g class="row">
<text x="{{sub $c.LabelW 8}}" y="{{.MidY}}" text-anchor="end" dominant-baseline="middle">{{.Short}}</text>
<rect class="bar" x="{{$c.LabelW}}" y="{{.Y}}" width="{{.Width}}" height="22" data-value="{{.Value}}"><title>{{.Label}}: {{.Value}} {{.CIText}}</title></rect>
{{if .HasCI}}<line class="whisker" x1="{{.CILo}}" y1="{{.MidY}}" x2="{{.CIHi}}" y2="{{.MidY}}" data-ci="{{.CIText}}"></line>
<line class="whisker cap" x1="{{.CILo}}" y1="{{.CapTop}}" x2="{{.CILo}}" y2="{{.CapBottom}}"></line>
<line class="whisker cap" x1="{{.CIHi}}" y1="{{.CapTop}}" x2="{{.CIHi}}" y2="{{.CapBottom}}"></line>
{{end}}</g>
{{end}}<line stroke="#222" x1="{{.LabelW}}" y1="{{.AxisY}}" x2="{{add .LabelW .PlotW}}" y2="{{.AxisY}}"></line>
{{range .Ticks}}<text x="{{.X}}" y="{{$c.AxisLabelY}}" text-anchor="middle">{{.Label}}</text>
{{end}}</svg>
{{end}}
{{if .AtK}}<h2>pass@k and pass^k by group</h2>
<p class="legend"><svg width="12" height="12" aria-hidden="true"><circle class="pass-at-k" cx="6" cy="6" r="4"></circle></svg> pass@k, some of k samples pass;
<svg width="12" height="12" aria-hidden="true"><rect class="pass-hat-k" x="2" y="2" width="8" height="8"></rect></svg> pass^k, all k samples pass.
k = {{range $i, $k := .LB.K}}{{if $i}}, {{end}}{{$k}}{{end}} along x, the probability along y; a k for which no task of the group has k graded samples has no mark.</p>
<div class="atk-grid">
{{range .AtK}}<figure>
<figcaption>{{.Group}}</figcaption>
<svg class="atk-chart" data-group="{{.Group}}" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="pass@k and pass^k of {{.Group}}">
{{$c := .}}{{range .YTicks}}<line class="grid" x1="{{$c.Left}}" y1="{{.Pos}}" x2="{{$c.Right}}" y2="{{.Pos}}"></line>
<text x="{{sub $c.Left 6}}" y="{{.Pos}}" text-anchor="end" dominant-baseline="middle">{{.Label}}</text>
{{end}}<line stroke="#222" x1="{{.Left}}" y1="{{.Bottom}}" x2="{{.Right}}" y2="{{.Bottom}}"></line>
{{range .XTicks}}<text x="{{.Pos}}" y="{{add $c.Bottom 18}}" text-anchor="middle">{{.Label}}</text>
{{end}}{{range .AtK.Lines}}<polyline class="line pass-at-k" points="{{.}}"></polyline>
{{end}}{{range .HatK.Lines}}<polyline class="line pass-hat-k" points="{{.}}"></polyline>
{{end}}{{range .AtK.Marks}}<circle class="mark pass-at-k" cx="{{.X}}" cy="{{.Y}}" r="4" data-k="{{.K}}" data-value="{{.Value}}"><title>{{.Label}} = {{.Value}} ({{.Tasks}} tasks)</title></circle>
{{end}}{{range .HatK.Marks}}<rect class="mark pass-hat-k" x="{{.Sq0}}" y="{{.Sq1}}" width="8" height="8" data-k="{{.K}}" data-value="{{.Value}}"><title>{{.Label}} = {{.Value}} ({{.Tasks}} tasks)</title></rect>
{{end}}</svg>
</figure>
{{end}}</div>
{{end}}
<h2>Conventions</h2>
<ul class="conventions">
{{range .LB.Conventions}}<li>{{.}}</li>
{{end}}</ul>
</body>
</html>
`))

// WriteHTML writes the leaderboard as a self-contained HTML page: the
// table, the table of pass@k and pass^k, SVG bar charts of the pass rate
// and the mean reward with their 95% intervals as whiskers, a chart of
// pass@k and pass^k against k for each group, then the conventions. It
// loads nothing from the network and needs no script, and fits a window
// 1280 px wide.
func (lb *Leaderboard) WriteHTML(w io.Writer) error {
	// The table of the terminal is cut in two: the pass@k and pass^k
	// pairs of many k would not fit a window beside the other columns.
	header := lb.header()
	split := 1 + len(lb.By) + 10 + len(lb.flagHeader("", "", "")) // rank, the groups, 10 columns up to tasks, the flags
	if lb.TurnRewards {
		split++ // mean turn reward
	}
	rows := make([][]string, len(lb.Entries))
	kRows := make([][]string, 0, len(lb.Entries))
	for i := range lb.Entries {
		r := lb.row(&lb.Entries[i])
		rows[i] = r[:split]
		if len(lb.K) > 0 {
			kRows = append(kRows, append(slices.Clone(r[:1+len(lb.By)]), r[split:]...))
		}
	}
	data := struct {
		LB       *Leaderboard
		Header   []string
		Rows     [][]string
		KHeader  []string
		KRows    [][]string
		NBy      int
		Charts   []svgChart
		AtK      []atkChart
		AtKWidth int
	}{
		LB: lb, Header: header[:split], Rows: rows, NBy: len(lb.By),
		KHeader: append(slices.Clone(header[:1+len(lb.By)]), header[split:]...), KRows: kRows,
		AtK: lb.atkCharts(), AtKWidth: atkW,
		Charts: []svgChart{
			lb.chart("pass-rate-chart", "Pass rate, with 95% Wilson intervals", func(e *Entry) (*float64, *stats.Interval) { return e.PassRate, e.PassRateCI }),
			lb.chart("mean-reward-chart", "Mean reward, with 95% bootstrap intervals over tasks", func(e *Entry) (*float64, *stats.Interval) { return e.MeanReward, e.MeanRewardCI }),
		},
	}
	return htmlPage.Execute(w, data)
}
