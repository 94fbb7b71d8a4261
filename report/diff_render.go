package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the diff as indented JSON.
func (d *Diff) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

func (d *Diff) verdictLine() string {
	state := "ok"
	if d.Failed {
		state = "FAILED"
	}
	return fmt.Sprintf("regressions: %d of %d paired rollouts (%s) passed before and are failed or error now; --fail-on %s: %s",
		d.Regressions, d.Paired, pct(d.RegressionRate), d.FailOn, state)
}

func pct(r float64) string { return strconv.FormatFloat(100*r, 'f', 2, 64) + "%" }

// formatStatusChanges lists status changes, "from->to N", sorted.
func formatStatusChanges(m map[string]int64) string {
	return statusChanges(m, func(k string) string { return k })
}

// statusChanges lists status changes sorted by key, each key written by
// key, then its count.
func statusChanges(m map[string]int64, key func(string) string) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", key(k), m[k])
	}
	return strings.Join(parts, ", ")
}

func (v *VerifierDiff) causes() string {
	var parts []string
	for _, c := range []struct {
		name string
		n    int64
	}{{"verifier", v.ChangedVerifierOnly}, {"input", v.ChangedInputOnly}, {"both", v.ChangedBoth}, {"unexplained", v.ChangedUnexplained}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c.name, c.n))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// mdArrows writes the arrows gavel puts between two statuses ("->", in
// status change keys and a changed check's "ID: pass -> fail") as →, for
// Markdown, whose escaping would otherwise turn > into &gt;. Only the last
// arrow of s is gavel's own (statuses hold none); one in a check id before
// it is data, escaped as any.
func mdArrows(s string) string {
	for _, arrow := range []string{" -> ", "->"} {
		if i := strings.LastIndex(s, arrow); i >= 0 {
			return s[:i] + " → " + s[i+len(arrow):]
		}
	}
	return s
}

// mdStatusChanges is formatStatusChanges for Markdown.
func mdStatusChanges(m map[string]int64) string { return statusChanges(m, mdArrows) }

// mdChecks joins a changed rollout's changed checks for Markdown.
func mdChecks(checks []string) string {
	out := make([]string, len(checks))
	for i, c := range checks {
		out[i] = mdArrows(c)
	}
	return strings.Join(out, "; ")
}

func (v *VerifierDiff) row() []string {
	delta := "-"
	if v.MeanRewardDelta != nil {
		delta = strconv.FormatFloat(*v.MeanRewardDelta, 'f', 4, 64)
		if *v.MeanRewardDelta >= 0 {
			delta = "+" + delta
		}
	}
	fp := "same"
	if v.FingerprintChanged {
		fp = "changed"
	}
	name := v.Verifier
	if name == "" {
		name = "(none)"
	}
	return []string{name, itoa(v.Paired), itoa(v.BaseOnly), itoa(v.CurOnly), itoa(v.PassToFail), itoa(v.FailToPass),
		formatStatusChanges(v.StatusChanges), itoa(v.RewardChanged), delta, formatP(v.McNemarP), fp, v.causes()}
}

var verifierDiffHeader = []string{"verifier", "paired", "base only", "current only", "pass->fail", "fail->pass", "other status changes", "reward changed", "mean reward delta", "McNemar p", "fingerprint", "changes by cause"}

var checkDiffHeader = []string{"verifier", "check", "pass->fail", "fail->pass", "other status changes", "added", "removed"}

// mdHeader returns a table header with its arrows written →, for Markdown.
func mdHeader(h []string) []string {
	out := make([]string, len(h))
	for i, c := range h {
		out[i] = strings.ReplaceAll(c, "->", " → ")
	}
	return out
}

func (c *CheckDiff) row() []string {
	return []string{c.Verifier, c.Check, itoa(c.PassToFail), itoa(c.FailToPass), formatStatusChanges(c.StatusChanges), itoa(c.Added), itoa(c.Removed)}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// formatP prints a p-value with four significant digits.
func formatP(p float64) string {
	if p < 1e-4 {
		return strconv.FormatFloat(p, 'e', 2, 64)
	}
	return strconv.FormatFloat(p, 'f', 4, 64)
}

// header returns the lines above the tables; arrow is "->" in text and
// "→" in Markdown.
func (d *Diff) header(arrow string) []string {
	lines := []string{
		fmt.Sprintf("base %s (%d rollouts), current %s (%d rollouts)", d.Base, d.BaseRollouts, d.Current, d.CurRollouts),
		fmt.Sprintf("paired %d, base only %d, current only %d", d.Paired, d.BaseOnly, d.CurOnly),
	}
	if d.DuplicateIDs > 0 {
		lines = append(lines, fmt.Sprintf("duplicate rollout ids left out: %d", d.DuplicateIDs))
	}
	if d.BaseVersion != d.CurVersion {
		lines = append(lines, fmt.Sprintf("gavel version changed: %s %s %s", d.BaseVersion, arrow, d.CurVersion))
	}
	if l := d.turnsLine(); l != "" {
		lines = append(lines, l)
	}
	return append(lines, d.verdictLine())
}

// turnsLine says what the diff found of turn rewards: how many paired
// rollouts' changed when both runs score turns, that they were not
// compared when one does; "" when neither does.
func (d *Diff) turnsLine() string {
	switch {
	case d.TurnRewardsChanged != nil:
		return fmt.Sprintf("turn rewards changed: %d of %d paired rollouts", *d.TurnRewardsChanged, d.Paired)
	case d.TurnsOnly != "":
		return fmt.Sprintf("turn rewards: only the %s run scores turns; not compared", d.TurnsOnly)
	}
	return ""
}

const diffConventions = "McNemar p: exact two-sided binomial test on the rollouts that flipped between passed and failed. " +
	"Causes: verifier = its fingerprint in manifest.json changed; input = the rollout's input file has another size or row count; " +
	"unexplained = neither (a change in gavel itself, or nondeterminism)."

// WriteText writes the diff as terminal tables.
func (d *Diff) WriteText(w io.Writer) error {
	for _, l := range d.header("->") {
		fmt.Fprintln(w, l)
	}
	changedChecks := d.changedChecks()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, strings.Join(verifierDiffHeader, "\t"))
	for i := range d.Verifiers {
		fmt.Fprintln(tw, strings.Join(d.Verifiers[i].row(), "\t"))
	}
	if len(changedChecks) > 0 {
		fmt.Fprintln(tw, "\nchecks that changed")
		fmt.Fprintln(tw, strings.Join(checkDiffHeader, "\t"))
		for _, c := range changedChecks {
			fmt.Fprintln(tw, strings.Join(c.row(), "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.Examples) > 0 {
		fmt.Fprintln(w, "\nchanged rollouts (regressions first)")
		for _, c := range d.Examples {
			fmt.Fprintf(w, "  %s  %s  %s -> %s  (%s)", c.RolloutID, c.Verifier, c.From, c.To, c.Cause)
			if len(c.Checks) > 0 {
				fmt.Fprintf(w, ": %s", strings.Join(c.Checks, "; "))
			}
			fmt.Fprintln(w)
		}
	}
	if len(d.TurnExamples) > 0 {
		fmt.Fprintln(w, "\nturn rewards changed (base -> current)")
		for _, c := range d.TurnExamples {
			fmt.Fprintf(w, "  %s  %s  %s -> %s\n", c.RolloutID, nonEmpty(c.Verifier), c.Base, c.Current)
		}
	}
	if fs := d.changedFlags(); len(fs) > 0 {
		fmt.Fprintln(w, "\nflags raised or cleared")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "verifier\tflag\traised\tcleared")
		for _, f := range fs {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", nonEmpty(f.Verifier), f.Flag, f.Raised, f.Cleared)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, c := range d.FlagExamples {
			fmt.Fprintf(w, "  %s  %s  %s\n", c.RolloutID, nonEmpty(c.Verifier), c.flagsText())
		}
	}
	_, err := fmt.Fprintf(w, "\n%s\n", diffConventions)
	return err
}

// changedFlags returns the flags raised or cleared on some paired
// rollout.
func (d *Diff) changedFlags() []FlagDiff {
	var out []FlagDiff
	for _, f := range d.Flags {
		if f.Raised+f.Cleared > 0 {
			out = append(out, f)
		}
	}
	return out
}

// flagsText says which flags a rollout raised and cleared.
func (c *FlagChange) flagsText() string {
	var parts []string
	if len(c.Raised) > 0 {
		parts = append(parts, "raised "+strings.Join(c.Raised, ", "))
	}
	if len(c.Cleared) > 0 {
		parts = append(parts, "cleared "+strings.Join(c.Cleared, ", "))
	}
	return strings.Join(parts, "; ")
}

func (d *Diff) changedChecks() []*CheckDiff {
	var out []*CheckDiff
	for i := range d.Checks {
		c := &d.Checks[i]
		if c.PassToFail+c.FailToPass+c.Added+c.Removed > 0 || len(c.StatusChanges) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// WriteMarkdown writes the diff as GitHub-flavoured Markdown, for a CI
// comment.
func (d *Diff) WriteMarkdown(w io.Writer) error {
	title := "no regression over the limit"
	if d.Failed {
		title = "regressions over the limit"
	}
	fmt.Fprintf(w, "### gavel diff: %s\n\n", title)
	for _, l := range d.header("→") {
		fmt.Fprintf(w, "- %s\n", mdEscape(l))
	}
	fmt.Fprintln(w)
	writeMDTable(w, mdHeader(verifierDiffHeader), func(yield func([]string)) {
		for i := range d.Verifiers {
			r := d.Verifiers[i].row()
			r[6] = mdStatusChanges(d.Verifiers[i].StatusChanges)
			yield(r)
		}
	})
	if cs := d.changedChecks(); len(cs) > 0 {
		fmt.Fprintln(w, "\n#### Checks that changed")
		fmt.Fprintln(w)
		writeMDTable(w, mdHeader(checkDiffHeader), func(yield func([]string)) {
			for _, c := range cs {
				r := c.row()
				r[4] = mdStatusChanges(c.StatusChanges)
				yield(r)
			}
		})
	}
	if len(d.Examples) > 0 {
		fmt.Fprintln(w, "\n#### Changed rollouts (regressions first)")
		fmt.Fprintln(w)
		writeMDTable(w, []string{"rollout", "verifier", "from", "to", "cause", "checks"}, func(yield func([]string)) {
			for _, c := range d.Examples {
				yield([]string{c.RolloutID, c.Verifier, c.From, c.To, c.Cause, mdChecks(c.Checks)})
			}
		})
	}
	if len(d.TurnExamples) > 0 {
		fmt.Fprintln(w, "\n#### Turn rewards changed")
		fmt.Fprintln(w)
		writeMDTable(w, []string{"rollout", "verifier", "base", "current"}, func(yield func([]string)) {
			for _, c := range d.TurnExamples {
				yield([]string{c.RolloutID, nonEmpty(c.Verifier), c.Base.String(), c.Current.String()})
			}
		})
	}
	if fs := d.changedFlags(); len(fs) > 0 {
		fmt.Fprintln(w, "\n#### Flags raised or cleared")
		fmt.Fprintln(w)
		writeMDTable(w, []string{"verifier", "flag", "raised", "cleared"}, func(yield func([]string)) {
			for _, f := range fs {
				yield([]string{nonEmpty(f.Verifier), f.Flag, itoa(f.Raised), itoa(f.Cleared)})
			}
		})
		fmt.Fprintln(w)
		writeMDTable(w, []string{"rollout", "verifier", "flags"}, func(yield func([]string)) {
			for _, c := range d.FlagExamples {
				yield([]string{c.RolloutID, nonEmpty(c.Verifier), c.flagsText()})
			}
		})
	}
	_, err := fmt.Fprintf(w, "\n%s\n", mdEscape(diffConventions))
	return err
}

func writeMDTable(w io.Writer, header []string, rows func(yield func([]string))) {
	esc := func(cells []string) []string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = mdEscape(c)
		}
		return out
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(esc(header), " | "))
	fmt.Fprintf(w, "|%s\n", strings.Repeat(" --- |", len(header)))
	rows(func(r []string) {
		fmt.Fprintf(w, "| %s |\n", strings.Join(esc(r), " | "))
	})
}

var mdReplacer = strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "\\`")

// mdEscape makes text safe in a Markdown table cell.
func mdEscape(s string) string { return mdReplacer.Replace(s) }
