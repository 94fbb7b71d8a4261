package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
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

func ci(iv *Interval) string {
	if iv == nil {
		return "-"
	}
	return fmt.Sprintf("[%.4f, %.4f]", iv.Lo, iv.Hi)
}

func (lb *Leaderboard) header() []string {
	h := []string{"rank"}
	h = append(h, lb.By...)
	h = append(h, "rollouts", "passed", "failed", "pending", "error", "pass rate", "95% CI (Wilson)", "mean reward", "95% CI (bootstrap over tasks)", "tasks")
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
	r = append(r, itoa(e.Rollouts), itoa(e.Passed), itoa(e.Failed), itoa(e.Pending), itoa(e.Error),
		f4(e.PassRate), ci(e.PassRateCI), f4(e.MeanReward), ci(e.MeanRewardCI), strconv.Itoa(e.Tasks))
	for _, k := range e.AtK {
		r = append(r, f4(k.PassAtK), f4(k.PassHatK))
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
		"mean_reward", "mean_reward_bootstrap95_lo", "mean_reward_bootstrap95_hi", "tasks")
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
	bounds := func(iv *Interval) []string {
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
		r = append(r, strconv.Itoa(e.Tasks))
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
	Label, Value                  string
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

func (lb *Leaderboard) chart(id, title string, val func(*Entry) (*float64, *Interval)) svgChart {
	c := svgChart{ID: id, Title: title, LabelW: chartLabelW, PlotW: chartPlotW, Width: chartLabelW + chartPlotW + 20}
	y := float64(chartTop)
	for i := range lb.Entries {
		e := &lb.Entries[i]
		v, iv := val(e)
		label := strings.Join(e.Group, " / ")
		b := svgBar{Label: label, Y: y, MidY: y + chartBarH/2, Value: f4(v)}
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

var htmlPage = template.Must(template.New("page").Funcs(template.FuncMap{
	"add": func(a, b float64) float64 { return a + b },
	"sub": func(a, b float64) float64 { return a - b },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>gavel leaderboard</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
td { white-space: nowrap; }
th { background: #f2f2f2; }
td.group { text-align: left; }
svg text { font-size: 12px; fill: #222; }
.bar { fill: #4a78b8; }
.whisker { stroke: #111; stroke-width: 1.5; }
.grid { stroke: #ddd; }
ul.conventions { max-width: 60em; }
</style>
</head>
<body>
<h1>gavel leaderboard</h1>
<p>Results: {{range $i, $d := .LB.Dirs}}{{if $i}}, {{end}}<code>{{$d}}</code>{{end}}. Grouped by {{range $i, $b := .LB.By}}{{if $i}}, {{end}}<code>{{$b}}</code>{{end}}.</p>
<table id="leaderboard">
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr class="entry">{{range $i, $c := .}}<td{{if and (gt $i 0) (le $i $.NBy)}} class="group"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{range .Charts}}
<h2>{{.Title}}</h2>
<svg id="{{.ID}}" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="{{.Title}}">
{{$c := .}}{{range .Ticks}}<line class="grid" x1="{{.X}}" y1="0" x2="{{.X}}" y2="{{$c.AxisY}}"></line>
{{end}}{{range .Bars}}<g class="row">
<text x="{{sub $c.LabelW 8}}" y="{{.MidY}}" text-anchor="end" dominant-baseline="middle">{{.Label}}</text>
<rect class="bar" x="{{$c.LabelW}}" y="{{.Y}}" width="{{.Width}}" height="22" data-value="{{.Value}}"><title>{{.Label}}: {{.Value}} {{.CIText}}</title></rect>
{{if .HasCI}}<line class="whisker" x1="{{.CILo}}" y1="{{.MidY}}" x2="{{.CIHi}}" y2="{{.MidY}}" data-ci="{{.CIText}}"></line>
<line class="whisker cap" x1="{{.CILo}}" y1="{{.CapTop}}" x2="{{.CILo}}" y2="{{.CapBottom}}"></line>
<line class="whisker cap" x1="{{.CIHi}}" y1="{{.CapTop}}" x2="{{.CIHi}}" y2="{{.CapBottom}}"></line>
{{end}}</g>
{{end}}<line stroke="#222" x1="{{.LabelW}}" y1="{{.AxisY}}" x2="{{add .LabelW .PlotW}}" y2="{{.AxisY}}"></line>
{{range .Ticks}}<text x="{{.X}}" y="{{$c.AxisLabelY}}" text-anchor="middle">{{.Label}}</text>
{{end}}</svg>
{{end}}
<h2>Conventions</h2>
<ul class="conventions">
{{range .LB.Conventions}}<li>{{.}}</li>
{{end}}</ul>
</body>
</html>
`))

// WriteHTML writes the leaderboard as a self-contained HTML page: the
// table, then SVG bar charts of the pass rate and the mean reward with
// their 95% intervals as whiskers, then the conventions. It loads nothing
// from the network and needs no script.
func (lb *Leaderboard) WriteHTML(w io.Writer) error {
	rows := make([][]string, len(lb.Entries))
	for i := range lb.Entries {
		rows[i] = lb.row(&lb.Entries[i])
	}
	data := struct {
		LB     *Leaderboard
		Header []string
		Rows   [][]string
		NBy    int
		Charts []svgChart
	}{
		LB: lb, Header: lb.header(), Rows: rows, NBy: len(lb.By),
		Charts: []svgChart{
			lb.chart("pass-rate-chart", "Pass rate, with 95% Wilson intervals", func(e *Entry) (*float64, *Interval) { return e.PassRate, e.PassRateCI }),
			lb.chart("mean-reward-chart", "Mean reward, with 95% bootstrap intervals over tasks", func(e *Entry) (*float64, *Interval) { return e.MeanReward, e.MeanRewardCI }),
		},
	}
	return htmlPage.Execute(w, data)
}
