package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// String formats an estimate as "0.400 [0.100, 0.700]", or "-" with its
// reason in parentheses when undefined.
func (e Estimate) String() string {
	if e.Value == nil {
		if e.Reason == "" {
			return "-"
		}
		return "- (" + e.Reason + ")"
	}
	s := strconv.FormatFloat(*e.Value, 'f', 3, 64)
	if e.CI != nil {
		s += fmt.Sprintf(" [%.3f, %.3f]", e.CI.Lo, e.CI.Hi)
	}
	return s
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteJSON writes the agreement as indented JSON.
func (ag *Agreement) WriteJSON(w io.Writer) error { return writeJSON(w, ag) }

func (ag *Agreement) rows() []*AgreementRow {
	rows := []*AgreementRow{&ag.Overall}
	for i := range ag.Checks {
		rows = append(rows, &ag.Checks[i])
	}
	return rows
}

func rowName(check string) string {
	if check == "" {
		return "(all)"
	}
	return check
}

func (ag *Agreement) kappaHeader() string {
	switch ag.Kappa {
	case "cohen":
		return "Cohen's kappa"
	case "fleiss":
		return "Fleiss' kappa"
	}
	return "kappa"
}

// tables returns the inter-judge table and the self-consistency table as
// rows of cells, headers first.
func (ag *Agreement) tables() (inter, self [][]string) {
	inter = [][]string{{"check", "units", "agree", ag.kappaHeader(), "alpha nominal", "alpha interval", "mean abs diff"}}
	self = [][]string{{"judge", "check", "checks", "samples all agree", "mean score sd"}}
	for _, r := range ag.rows() {
		inter = append(inter, []string{rowName(r.Check), strconv.FormatInt(r.Units, 10),
			r.Agree.String(), r.Kappa.String(), r.AlphaNominal.String(), r.AlphaInterval.String(), r.MeanAbsDiff.String()})
	}
	for j := range ag.Judges {
		for _, r := range ag.rows() {
			s := r.Self[j]
			self = append(self, []string{s.Judge, rowName(r.Check), strconv.FormatInt(s.AllAgree.N, 10),
				s.AllAgree.String(), s.MeanSD.String()})
		}
	}
	return inter, self
}

func (ag *Agreement) heading() string {
	return fmt.Sprintf("%d judgements (%d failed) by %d judges (%s), up to %d samples each",
		ag.Judgements, ag.Failed, len(ag.Judges), strings.Join(ag.Judges, ", "), ag.Samples)
}

// WriteText writes the agreement as terminal tables followed by their
// conventions.
func (ag *Agreement) WriteText(w io.Writer) error {
	inter, self := ag.tables()
	fmt.Fprintf(w, "%s\n\nBetween judges:\n", ag.heading())
	if err := writeTabs(w, inter); err != nil {
		return err
	}
	fmt.Fprint(w, "\nEach judge across its samples:\n")
	if err := writeTabs(w, self); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nConventions:")
	for _, n := range ag.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	return nil
}

// WriteMarkdown writes the agreement as Markdown tables.
func (ag *Agreement) WriteMarkdown(w io.Writer) error {
	ag.writeMarkdown(w, "##")
	return nil
}

// writeMarkdown writes the agreement as a Markdown section whose heading
// is at level (## or ###).
func (ag *Agreement) writeMarkdown(w io.Writer, level string) {
	inter, self := ag.tables()
	fmt.Fprintf(w, "%s Judge agreement\n\n%s.\n\n%s# Between judges\n\n", level, mdEscape(ag.heading()), level)
	writeMarkdownRows(w, inter)
	fmt.Fprintf(w, "\n%s# Each judge across its samples\n\n", level)
	writeMarkdownRows(w, self)
	fmt.Fprintln(w)
	for _, n := range ag.Notes {
		fmt.Fprintf(w, "- %s\n", mdEscape(n))
	}
}

func writeTabs(w io.Writer, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// writeMarkdownRows writes rows, headers first, as a Markdown table.
func writeMarkdownRows(w io.Writer, rows [][]string) {
	writeMDTable(w, rows[0], func(yield func([]string)) {
		for _, r := range rows[1:] {
			yield(r)
		}
	})
}

// String formats a rate as "0.800 (8/10) [0.490, 0.943]", or "-" with its
// reason when undefined.
func (r Rate) String() string {
	if r.Value == nil {
		return "- (" + r.Reason + ")"
	}
	return fmt.Sprintf("%.3f (%d/%d) [%.3f, %.3f]", *r.Value, r.K, r.N, r.CI.Lo, r.CI.Hi)
}

func (r *CalibrationRow) sweepString() string {
	if r.Sweep == nil {
		return "- (" + r.SweepReason + ")"
	}
	s := r.Sweep
	return fmt.Sprintf("%s: BA %.3f, TPR %.3f, TNR %.3f", strconv.FormatFloat(s.Threshold, 'g', -1, 64), s.BalancedAccuracy, s.TPR, s.TNR)
}

// WriteJSON writes the calibration as indented JSON.
func (c *Calibration) WriteJSON(w io.Writer) error { return writeJSON(w, c) }

func (c *Calibration) table() [][]string {
	t := [][]string{{"check", "n", "tp", "fn", "fp", "tn", "accuracy", "TPR", "TNR", "kappa", "best threshold", "unlabeled", "no verdict"}}
	rows := []*CalibrationRow{&c.Overall}
	for i := range c.Checks {
		rows = append(rows, &c.Checks[i])
	}
	for _, r := range rows {
		t = append(t, []string{rowName(r.Check), itoa(r.N), itoa(r.TP), itoa(r.FN), itoa(r.FP), itoa(r.TN),
			r.Accuracy.String(), r.TPR.String(), r.TNR.String(), r.Kappa.String(), r.sweepString(),
			itoa(r.Unlabeled), itoa(r.NoVerdict)})
	}
	return t
}

func (c *Calibration) heading() string {
	what := "the aggregate verdicts"
	if c.Judge != "" {
		what = "judge " + c.Judge + " (sample 0)"
	}
	return fmt.Sprintf("Calibration of %s of %s against %s; labels matching no judged check: %d", what, c.Dir, c.Labels, c.UnmatchedLabels)
}

func (c *Calibration) requirement() []string {
	q := c.Require
	if q == nil {
		return nil
	}
	scope := "overall"
	if q.PerCheck {
		scope = "for every check id"
	}
	var bars []string
	if q.TPR > 0 {
		bars = append(bars, fmt.Sprintf("TPR >= %g", q.TPR))
	}
	if q.TNR > 0 {
		bars = append(bars, fmt.Sprintf("TNR >= %g", q.TNR))
	}
	verdict := "certified"
	if !q.Certified {
		verdict = "NOT certified"
	}
	out := []string{fmt.Sprintf("%s: Wilson 95%% lower bounds of %s, %s", verdict, strings.Join(bars, " and "), scope)}
	for _, f := range q.Failures {
		out = append(out, "  "+f)
	}
	return out
}

// WriteText writes the calibration as a terminal table, the certification
// asked for and the conventions.
func (c *Calibration) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s\n\n", c.heading())
	if err := writeTabs(w, c.table()); err != nil {
		return err
	}
	if req := c.requirement(); req != nil {
		fmt.Fprintf(w, "\n%s\n", strings.Join(req, "\n"))
	}
	fmt.Fprintln(w, "\nConventions:")
	for _, n := range c.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	return nil
}

// WriteMarkdown writes the calibration as a Markdown table.
func (c *Calibration) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "## Judge calibration\n\n%s.\n\n", mdEscape(c.heading()))
	writeMarkdownRows(w, c.table())
	if req := c.requirement(); req != nil {
		fmt.Fprintf(w, "\n**%s**\n", mdEscape(req[0]))
		for _, f := range req[1:] {
			fmt.Fprintf(w, "\n- %s", mdEscape(strings.TrimSpace(f)))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for _, n := range c.Notes {
		fmt.Fprintf(w, "- %s\n", mdEscape(n))
	}
	return nil
}
