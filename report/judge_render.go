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
	inter, self := ag.tables()
	fmt.Fprintf(w, "## Judge agreement\n\n%s.\n\n### Between judges\n\n", mdEscape(ag.heading()))
	writeMarkdownRows(w, inter)
	fmt.Fprint(w, "\n### Each judge across its samples\n\n")
	writeMarkdownRows(w, self)
	fmt.Fprintln(w)
	for _, n := range ag.Notes {
		fmt.Fprintf(w, "- %s\n", mdEscape(n))
	}
	return nil
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
