package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"

	"github.com/gavelhq/gavel/inputs"
	"github.com/gavelhq/gavel/internal/store"
	"github.com/gavelhq/gavel/rescore"
	"github.com/gavelhq/gavel/verifiers"
)

const rescoreExamples = `  gavel rescore gavel-out/ --reward rewards.yaml --out rescored/
  gavel rescore gavel-out/ --reward rewards.yaml --out rescored/ --limit 50
  gavel diff gavel-out/ rescored/                  # which rollouts the new formulas flip

rewards.yaml:
  VER-001: all
  VER-002: {weighted: {"Every open deal of the departed rep moved to the new owner": 3}}
  VER-C01: {expr: "checks.all(c, c.required ? c.passed : true) ? 1.0 : 0.5"}`

const rescoreSynopsis = `gavel rescore DIR --reward FILE --out NEW

Computes the rewards of a graded run (DIR, the --out of gavel grade) again with
other reward formulas, from its check rows, without running any verifier. FILE
(YAML or JSON) maps verifier ids to formulas: fraction (checks passed / checks,
the default), all (1 when every check passes, else 0), {weighted: {CHECK-ID:
WEIGHT, ...}} (a check not named weighs 1; negative weights are penalties) or
{expr: CEL} (over checks: id, label, index, required, status, passed, score,
detail). Verifiers FILE does not name keep the formulas DIR was graded with.

NEW gets DIR's checks parts as they are, new rewards parts, a manifest that
records the formulas, and a summary, as gavel grade would write them. The
output ends with how many rollouts' rewards changed and the first of them in
input order (--limit), each with its reward before and after. Statuses
never change with a formula, except that a formula that fails (an expression
outside [0, 1]) makes its rollout an error.

Exit status: 0 done; 1 an error; 2 usage error (unknown verifier or check id,
bad formula; nothing is written); 3 some rows have status error.`

func runRescore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("rescore", rescoreSynopsis, rescoreExamples, stdout)
	rewardFile := fs.String("reward", "", "the `FILE` (YAML or JSON) mapping verifier ids to reward formulas")
	out := fs.String("out", "", "the output `DIR` of the rescored run")
	limit := fs.Int("limit", 10, "list the first `N` rollouts whose reward changed, in input order (0: none)")
	prof := addProfileFlags(fs)
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("gavel rescore gavel-out/ --reward rewards.yaml --out rescored/", "rescore needs one result directory")
	}
	if *rewardFile == "" || *out == "" {
		return usagef("gavel rescore gavel-out/ --reward rewards.yaml --out rescored/", "rescore needs --reward and --out")
	}
	if *limit < 0 {
		return usagef("gavel rescore gavel-out/ --reward rewards.yaml --out rescored/ --limit 10", "--limit %d: want 0 or more", *limit)
	}
	if store.IsURL(fs.Arg(0)) || store.IsURL(*out) {
		return usagef("gavel rescore gavel-out/ --reward rewards.yaml --out rescored/", "rescore reads and writes local result directories, not URLs (not built yet)")
	}
	rewards, err := readRewardFile(*rewardFile)
	if err != nil {
		return usagef("gavel rescore --help", "--reward %s: %v", *rewardFile, err)
	}
	if err := prof.start(); err != nil {
		return err
	}
	res, err := rescore.Run(ctx, rescore.Config{Dir: fs.Arg(0), Out: *out, Rewards: rewards, Changes: *limit})
	if pErr := prof.stop(); pErr != nil {
		fmt.Fprintf(stderr, "gavel: %v\n", pErr)
	}
	if err != nil {
		var ce *inputs.ConfigError
		if errors.As(err, &ce) {
			return usagef("", "%s", ce.Msg)
		}
		return err
	}
	printSummary(stdout, "rescored", res.Summary, *out)
	if err := printRewardChanges(stdout, res, *limit); err != nil {
		return err
	}
	if res.ErrorRows > 0 {
		return &exitError{code: 3, msg: fmt.Sprintf("%d rows have status error (see error_kind and error in the rewards)", res.ErrorRows)}
	}
	return nil
}

// readRewardFile reads a mapping of verifier ids to reward formulas.
func readRewardFile(path string) (map[string]verifiers.Formula, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("not a YAML or JSON mapping of verifier ids to formulas: %w", err)
	}
	if len(m) == 0 {
		return nil, errors.New("names no verifier (want VERIFIER-ID: FORMULA, ...)")
	}
	out := make(map[string]verifiers.Formula, len(m))
	for id, v := range m {
		text, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		f, err := verifiers.ParseFormula(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		out[id] = f
	}
	return out, nil
}

// printRewardChanges says how many rollouts' rewards a rescore changed and
// lists the first limit of them, reward before and after.
func printRewardChanges(w io.Writer, res *rescore.Result, limit int) error {
	n := res.RewardsChanged
	switch {
	case n == 0:
		_, err := fmt.Fprintf(w, "\nno reward changed (%d rollouts)\n", res.Summary.Rollouts)
		return err
	case limit == 0:
		_, err := fmt.Fprintf(w, "\nreward changed for %d of %d rollouts (--limit N lists them)\n", n, res.Summary.Rollouts)
		return err
	case int64(len(res.RewardChanges)) < n:
		fmt.Fprintf(w, "\nreward changed for %d of %d rollouts; the first %d in input order (--limit N lists more):\n", n, res.Summary.Rollouts, len(res.RewardChanges))
	default:
		fmt.Fprintf(w, "\nreward changed for %d of %d rollouts:\n", n, res.Summary.Rollouts)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range res.RewardChanges {
		line := fmt.Sprintf("  %s\t%s\t%s -> %s", c.RolloutID, c.VerifierID, rewardText(c.Old), rewardText(c.New))
		if c.OldStatus != c.NewStatus {
			line += fmt.Sprintf(" (%s -> %s)", c.OldStatus, c.NewStatus)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// rewardText writes a reward as its shortest exact decimal, or null.
func rewardText(r *float64) string {
	if r == nil {
		return "null"
	}
	return strconv.FormatFloat(*r, 'g', -1, 64)
}
