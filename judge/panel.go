package judge

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Panel says how many judgements a rubric check gets and how they
// make its verdict. Its zero value asks one judgement of one model, as
// runs always did.
type Panel struct {
	// Models are the judge models of the run, in order; the first is "the
	// first judge". Empty: Config.Model alone. A verifier's own
	// judge models replace them for its checks.
	Models []string
	// URLs holds the API root of the models not served at
	// Config.BaseURL.
	URLs map[string]string
	// Samples is the number of judgements asked of each model (0: 1).
	// Sample 0 is sent with temperature 0 and seed Seed, as a single
	// judgement is; samples 1 to Samples-1 with Temperature and seeds
	// SampleSeed(i).
	Samples int
	// Temperature is the temperature of samples 1 and later.
	Temperature float64
	// Aggregate turns the scores of a check's judgements into its score:
	// "mean" (the default), "median", "min" or "majority" (the share of
	// judgements that pass; the check passes when more than half do).
	Aggregate string
	// Partial, when set, aggregates the judgements that succeeded when
	// some of a check's failed (the detail says how many); by default a
	// check with a failed judgement is an error.
	Partial bool
}

// Aggregates lists the values of Panel.Aggregate.
var Aggregates = []string{"mean", "median", "min", "majority"}

// Aggregate returns the score of a check whose judgements scored scores
// (at least one): their mean, median, minimum, or, for majority, the
// share of them that reach threshold.
func Aggregate(how string, scores []float64, threshold float64) float64 {
	switch how {
	case "median":
		s := slices.Clone(scores)
		slices.Sort(s)
		if n := len(s); n%2 == 1 {
			return s[n/2]
		} else {
			return (s[n/2-1] + s[n/2]) / 2
		}
	case "min":
		return slices.Min(scores)
	case "majority":
		pass := 0
		for _, x := range scores {
			if x >= threshold {
				pass++
			}
		}
		return float64(pass) / float64(len(scores))
	}
	sum := 0.0
	for _, x := range scores {
		sum += x
	}
	return sum / float64(len(scores))
}

// Text describes the judgements of a check judged by js under the panel:
// models, samples, temperature, aggregate and the partial rule. It is
// part of a judged verifier's fingerprint in a run with several
// judgements per check.
func (p Panel) Text(js []*Judge) string {
	models := make([]string, len(js))
	for i, j := range js {
		models[i] = j.Model()
	}
	partial := "error"
	if p.Partial {
		partial = "ok"
	}
	return fmt.Sprintf("models=%s samples=%d temperature=%s aggregate=%s partial=%s", strings.Join(models, ","), p.Samples,
		strconv.FormatFloat(p.Temperature, 'g', -1, 64), p.Aggregate, partial)
}
