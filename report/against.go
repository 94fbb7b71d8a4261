package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/join"
	"github.com/gavelhq/gavel/stats"
	"github.com/gavelhq/gavel/verifiers"
)

// Against compares gavel's verdicts in one result directory with a
// recorded reward kept in a column of its rewards (a harness's
// recorded_reward), rollout by rollout.
//
// A rollout is compared when gavel passed or failed it and the column
// holds a recorded outcome (Recorded: numerically 1 or true passes, any
// other number or false fails). A disagreement is a compared rollout that
// one side passed and the other did not.
type Against struct {
	Dir    string `json:"dir"`
	Column string `json:"column"`
	// Rollouts counts the rows of the rewards.
	Rollouts int64 `json:"rollouts"`
	// Compared counts the rollouts both sides judged.
	Compared int64 `json:"compared"`
	// NoRecord counts the rollouts gavel judged whose column holds no
	// number or boolean; NotJudged those gavel left pending or in error.
	NoRecord  int64 `json:"no_record"`
	NotJudged int64 `json:"not_judged"`
	// GavelOnly counts the rollouts gavel passed and the record failed;
	// RecordOnly those the record passed and gavel failed.
	GavelOnly     int64 `json:"passed_by_gavel_only"`
	RecordOnly    int64 `json:"passed_by_record_only"`
	Disagreements int64 `json:"disagreements"`
	// DisagreementRate is Disagreements / Compared (0 when none is).
	DisagreementRate float64 `json:"disagreement_rate"`
	// McNemarP is the exact McNemar p-value on the paired outcomes.
	McNemarP float64 `json:"mcnemar_p"`
	FailOn   string  `json:"fail_on"`
	// Failed is true when the disagreements exceed FailOn.
	Failed    bool              `json:"failed"`
	Verifiers []AgainstVerifier `json:"verifiers"`
	// Examples lists disagreeing rollouts by id.
	Examples []Disagreement `json:"examples"`
}

// AgainstVerifier is the comparison of one verifier's rollouts ("" is no
// verifier).
type AgainstVerifier struct {
	Verifier      string  `json:"verifier"`
	Compared      int64   `json:"compared"`
	GavelOnly     int64   `json:"passed_by_gavel_only"`
	RecordOnly    int64   `json:"passed_by_record_only"`
	Disagreements int64   `json:"disagreements"`
	McNemarP      float64 `json:"mcnemar_p"`
}

// Disagreement is one rollout judged otherwise by gavel and the record,
// with the checks that decided gavel's verdict: its failed required checks
// when it failed the rollout, its required checks when it passed it.
type Disagreement struct {
	RolloutID string   `json:"rollout_id"`
	Task      string   `json:"task_id"`
	Verifier  string   `json:"verifier"`
	Gavel     string   `json:"gavel"`
	Recorded  string   `json:"recorded"`
	Checks    []string `json:"checks"`
}

// CompareColumn compares the verdicts of the result directory dir with
// the recorded outcomes in its rewards column column. cfg.FailOn limits
// the disagreements, as a count or a rate of the compared rollouts.
func CompareColumn(dir, column string, cfg DiffConfig) (*Against, error) {
	if _, err := join.Open(dir); err != nil {
		return nil, err
	}
	a := &Against{Dir: dir, Column: column, FailOn: cfg.FailOn.String()}
	examples := cfg.Examples
	if examples == 0 {
		examples = 10
	}
	examples = max(0, examples)
	byVerifier := map[string]*AgainstVerifier{}
	in := columnar.Interner{}
	found := false
	var list []Disagreement
	cols := []string{"rollout_id", "task_id", "verifier_id", "status", column}
	err := scanTable(dir, "rewards", cols, func(v []value) error {
		a.Rollouts++
		status := string(v[3].Data)
		if !v[4].Null() {
			found = true
		}
		gavelPassed := status == verifiers.StatusPassed
		if !gavelPassed && status != verifiers.StatusFailed {
			a.NotJudged++
			return nil
		}
		recPassed, _, ok := Recorded(v[4].Data)
		if v[4].Null() || !ok {
			a.NoRecord++
			return nil
		}
		vid := ""
		if !v[2].Null() {
			vid = in.Get(v[2].Data)
		}
		av := byVerifier[vid]
		if av == nil {
			av = &AgainstVerifier{Verifier: vid}
			byVerifier[vid] = av
		}
		a.Compared++
		av.Compared++
		if gavelPassed == recPassed {
			return nil
		}
		a.Disagreements++
		av.Disagreements++
		if gavelPassed {
			a.GavelOnly++
			av.GavelOnly++
		} else {
			a.RecordOnly++
			av.RecordOnly++
		}
		if examples > 0 {
			list = append(list, Disagreement{RolloutID: string(v[0].Data), Task: in.Get(v[1].Data), Verifier: vid, Gavel: status, Recorded: string(v[4].Data)})
			if len(list) >= 4*examples {
				// Keep memory bounded when most rollouts disagree.
				sortDisagreements(list)
				list = list[:examples]
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !found && a.Rollouts > 0 {
		return nil, fmt.Errorf("--against-column %s: no rollout has a value in column %s (kept columns: see --keep of gavel grade)", column, column)
	}
	sortDisagreements(list)
	list = list[:min(examples, len(list))]
	if err := a.decidingChecks(list); err != nil {
		return nil, err
	}
	a.Examples = list
	if a.Examples == nil {
		a.Examples = []Disagreement{}
	}
	if a.Compared > 0 {
		a.DisagreementRate = float64(a.Disagreements) / float64(a.Compared)
	}
	a.McNemarP = stats.McNemarExact(a.GavelOnly, a.RecordOnly)
	a.Failed = cfg.FailOn.exceeded(a.Disagreements, a.Compared)
	a.Verifiers = []AgainstVerifier{}
	for _, v := range byVerifier {
		v.McNemarP = stats.McNemarExact(v.GavelOnly, v.RecordOnly)
		a.Verifiers = append(a.Verifiers, *v)
	}
	slices.SortFunc(a.Verifiers, func(x, y AgainstVerifier) int { return strings.Compare(x.Verifier, y.Verifier) })
	return a, nil
}

// decidingChecks fills the checks of the listed disagreements from the
// checks table.
func (a *Against) decidingChecks(list []Disagreement) error {
	if len(list) == 0 {
		return nil
	}
	index := map[string]int{}
	for i := range list {
		index[list[i].RolloutID] = i
	}
	return scanChecks(a.Dir, []string{"rollout_id", "check_id", "status", "required"}, columnar.Interner{}, func(r *columnar.CheckRow) error {
		i, ok := index[r.RolloutID]
		if !ok || !r.Required {
			return nil
		}
		d := &list[i]
		if d.Gavel == verifiers.StatusFailed && r.Status == verifiers.CheckPass {
			return nil
		}
		d.Checks = append(d.Checks, r.CheckID+": "+r.Status)
		return nil
	})
}

func sortDisagreements(list []Disagreement) {
	slices.SortFunc(list, func(x, y Disagreement) int { return strings.Compare(x.RolloutID, y.RolloutID) })
}

// WriteJSON writes the comparison as indented JSON.
func (a *Against) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(a)
}

func (a *Against) header() []string {
	state := "ok"
	if a.Failed {
		state = "FAILED"
	}
	return []string{
		fmt.Sprintf("%s: gavel's verdicts against column %s (%d rollouts)", a.Dir, a.Column, a.Rollouts),
		fmt.Sprintf("compared %d, without a recorded outcome %d, pending or error in gavel %d", a.Compared, a.NoRecord, a.NotJudged),
		fmt.Sprintf("disagreements: %d of %d compared rollouts (%s): passed by gavel only %d, by the record only %d; McNemar p %s; --fail-on %s: %s",
			a.Disagreements, a.Compared, pct(a.DisagreementRate), a.GavelOnly, a.RecordOnly, formatP(a.McNemarP), a.FailOn, state),
	}
}

var againstHeader = []string{"verifier", "compared", "disagreements", "passed by gavel only", "passed by record only", "McNemar p"}

func (v *AgainstVerifier) row() []string {
	name := v.Verifier
	if name == "" {
		name = "(none)"
	}
	return []string{name, itoa(v.Compared), itoa(v.Disagreements), itoa(v.GavelOnly), itoa(v.RecordOnly), formatP(v.McNemarP)}
}

const againstConventions = "A recorded outcome passes when the value is numerically 1 or boolean true (1, 1.0, true) and fails for any other number or false. " +
	"Checks: the failed required checks of a rollout gavel failed, the required checks of one it passed. " +
	"McNemar p: exact two-sided binomial test on the disagreements."

// WriteText writes the comparison as terminal tables.
func (a *Against) WriteText(w io.Writer) error {
	for _, l := range a.header() {
		fmt.Fprintln(w, l)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, strings.Join(againstHeader, "\t"))
	for i := range a.Verifiers {
		fmt.Fprintln(tw, strings.Join(a.Verifiers[i].row(), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(a.Examples) > 0 {
		fmt.Fprintln(w, "\ndisagreeing rollouts")
		for _, d := range a.Examples {
			fmt.Fprintf(w, "  %s  %s  gavel %s, recorded %s", d.RolloutID, d.Verifier, d.Gavel, d.Recorded)
			if len(d.Checks) > 0 {
				fmt.Fprintf(w, ": %s", strings.Join(d.Checks, "; "))
			}
			fmt.Fprintln(w)
		}
	}
	_, err := fmt.Fprintf(w, "\n%s\n", againstConventions)
	return err
}

// WriteMarkdown writes the comparison as GitHub-flavoured Markdown.
func (a *Against) WriteMarkdown(w io.Writer) error {
	title := "no disagreement over the limit"
	if a.Failed {
		title = "disagreements over the limit"
	}
	fmt.Fprintf(w, "### gavel diff --against-column %s: %s\n\n", mdEscape(a.Column), title)
	for _, l := range a.header() {
		fmt.Fprintf(w, "- %s\n", mdEscape(l))
	}
	fmt.Fprintln(w)
	writeMDTable(w, againstHeader, func(yield func([]string)) {
		for i := range a.Verifiers {
			yield(a.Verifiers[i].row())
		}
	})
	if len(a.Examples) > 0 {
		fmt.Fprintln(w, "\n#### Disagreeing rollouts")
		fmt.Fprintln(w)
		writeMDTable(w, []string{"rollout", "verifier", "gavel", "recorded", "checks"}, func(yield func([]string)) {
			for _, d := range a.Examples {
				yield([]string{d.RolloutID, d.Verifier, d.Gavel, d.Recorded, strings.Join(d.Checks, "; ")})
			}
		})
	}
	_, err := fmt.Fprintf(w, "\n%s\n", mdEscape(againstConventions))
	return err
}
