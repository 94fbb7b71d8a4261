package cli

import (
	"flag"
	"slices"
	"strings"
	"time"

	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/pipeline"
)

// gradeJudgeFlags are the flags of gavel grade that configure the judge of
// rubric checks.
type gradeJudgeFlags struct {
	models                 listFlag
	urlFor                 listFlag
	url, keyEnv, cache     string
	aggregate, partial     string
	threshold, temperature float64
	concurrency, samples   int
	timeout                time.Duration
	maxRequests            int64
}

// defaultJudgeTemperature is the temperature of judge samples 1 and later.
const defaultJudgeTemperature = 0.7

func judgeFlags(fs *flag.FlagSet) *gradeJudgeFlags {
	f := &gradeJudgeFlags{}
	fs.Var(&f.models, "judge-model", "judge rubric checks with this `MODEL`; repeat it for several judges, the first being the first judge (without it, and without a spec's judge.model, they stay pending)")
	fs.Var(&f.urlFor, "judge-url-for", "`MODEL=URL`: ask this judge model at this API root instead of --judge-url (repeatable)")
	fs.StringVar(&f.url, "judge-url", judge.DefaultBaseURL, "the judge's OpenAI-compatible API root `URL` (vLLM, llama.cpp, Ollama: http://127.0.0.1:8080/v1)")
	fs.StringVar(&f.keyEnv, "judge-api-key-env", judge.DefaultAPIKeyEnv, "environment `VAR`iable holding the judge's API key (none needed by a local server)")
	fs.Float64Var(&f.threshold, "judge-threshold", judge.DefaultThreshold, "a rubric check passes when the judge's score is >= `T`")
	fs.IntVar(&f.samples, "judge-samples", 1, "ask each judge model `N` judgements of each rubric check (sample 0 at temperature 0, the others at --judge-temperature, each with its own seed)")
	fs.Float64Var(&f.temperature, "judge-temperature", defaultJudgeTemperature, "the temperature `T` of judge samples 1 and later")
	fs.StringVar(&f.aggregate, "judge-aggregate", "mean", "how a check's judgements make its score: `mean`, median, min or majority (the share that pass; a tie fails)")
	fs.StringVar(&f.partial, "judge-partial", "error", "when some judgements of a check fail: `error` (the check is an error) or ok (aggregate the others)")
	fs.IntVar(&f.concurrency, "judge-concurrency", judge.DefaultConcurrency, "judge requests in flight at once, at most `N` (per judge server)")
	fs.DurationVar(&f.timeout, "judge-timeout", judge.DefaultTimeout, "a judge request taking longer than `D` fails (the check is an error)")
	fs.Int64Var(&f.maxRequests, "judge-max-requests", 0, "send at most `N` judgements, in input order, all of a check's or none; the rubric checks beyond stay pending (0: no limit)")
	fs.StringVar(&f.cache, "judge-cache", "", "verdict cache `DIR`, or off (default: gavel/judge under the user cache directory)")
	return f
}

// config returns the judge configuration of the flags, the panel and the
// budget.
func (f *gradeJudgeFlags) config() (*judge.Config, pipeline.JudgePanel, int64, error) {
	var panel pipeline.JudgePanel
	fail := func(hint, format string, args ...any) (*judge.Config, pipeline.JudgePanel, int64, error) {
		return nil, panel, 0, usagef(hint, format, args...)
	}
	switch {
	case !(f.threshold > 0 && f.threshold <= 1):
		return fail("gavel grade --judge-threshold 0.8 ...", "--judge-threshold %v: want a score in (0, 1]", f.threshold)
	case f.concurrency <= 0:
		return fail("gavel grade --judge-concurrency 16 ...", "--judge-concurrency %d: want a positive number", f.concurrency)
	case f.timeout <= 0:
		return fail("gavel grade --judge-timeout 2m ...", "--judge-timeout %s: want a positive duration", f.timeout)
	case f.maxRequests < 0:
		return fail("gavel grade --judge-max-requests 1000 ...", "--judge-max-requests %d: want 0 (no limit) or more", f.maxRequests)
	case f.samples < 1:
		return fail("gavel grade --judge-samples 3 ...", "--judge-samples %d: want 1 or more", f.samples)
	case !(f.temperature >= 0 && f.temperature <= 2):
		return fail("gavel grade --judge-temperature 0.7 ...", "--judge-temperature %v: want a number in [0, 2]", f.temperature)
	case !slices.Contains(pipeline.Aggregates, f.aggregate):
		return fail("gavel grade --judge-aggregate median ...", "--judge-aggregate %q: want one of %s", f.aggregate, strings.Join(pipeline.Aggregates, ", "))
	case f.partial != "error" && f.partial != "ok":
		return fail("gavel grade --judge-partial ok ...", "--judge-partial %q: want error or ok", f.partial)
	}
	for i, m := range f.models {
		if m == "" || slices.Contains(f.models[:i], m) {
			return fail("gavel grade --judge-model gpt-4o-mini --judge-model qwen2.5-7b-instruct ...", "--judge-model %q: want distinct, non-empty model names", m)
		}
	}
	for _, kv := range f.urlFor {
		// A model name may hold @ or :, not =; a URL may hold = in its query.
		m, u, ok := strings.Cut(kv, "=")
		if !ok || m == "" || u == "" {
			return fail("gavel grade --judge-url-for qwen2.5-7b-instruct=http://127.0.0.1:8080/v1 ...", "--judge-url-for %q: want MODEL=URL", kv)
		}
		if _, dup := panel.URLs[m]; dup {
			return fail("gavel grade --judge-url-for M=URL ...", "--judge-url-for: model %q given twice", m)
		}
		if panel.URLs == nil {
			panel.URLs = map[string]string{}
		}
		panel.URLs[m] = u
	}
	if len(f.models) > 1 {
		panel.Models = f.models
	}
	panel.Samples, panel.Temperature, panel.Aggregate, panel.Partial = f.samples, f.temperature, f.aggregate, f.partial == "ok"
	model := ""
	if len(f.models) > 0 {
		model = f.models[0]
	}
	return &judge.Config{
		Model:       model,
		BaseURL:     f.url,
		APIKeyEnv:   f.keyEnv,
		Threshold:   f.threshold,
		Concurrency: f.concurrency,
		Timeout:     f.timeout,
		CacheDir:    f.cache,
	}, panel, f.maxRequests, nil
}
