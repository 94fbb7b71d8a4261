package main

import (
	"flag"
	"time"

	"github.com/gavelhq/gavel/judge"
)

// gradeJudgeFlags are the flags of gavel grade that configure the judge of
// rubric checks.
type gradeJudgeFlags struct {
	model, url, keyEnv, cache string
	threshold                 float64
	concurrency               int
	timeout                   time.Duration
	maxRequests               int64
}

func judgeFlags(fs *flag.FlagSet) *gradeJudgeFlags {
	f := &gradeJudgeFlags{}
	fs.StringVar(&f.model, "judge-model", "", "judge rubric checks with this `MODEL` (without it, and without a spec's judge.model, they stay pending)")
	fs.StringVar(&f.url, "judge-url", judge.DefaultBaseURL, "the judge's OpenAI-compatible API root `URL` (vLLM, llama.cpp, Ollama: http://127.0.0.1:8080/v1)")
	fs.StringVar(&f.keyEnv, "judge-api-key-env", judge.DefaultAPIKeyEnv, "environment `VAR`iable holding the judge's API key (none needed by a local server)")
	fs.Float64Var(&f.threshold, "judge-threshold", judge.DefaultThreshold, "a rubric check passes when the judge's score is >= `T`")
	fs.IntVar(&f.concurrency, "judge-concurrency", judge.DefaultConcurrency, "judge requests in flight at once, at most `N`")
	fs.DurationVar(&f.timeout, "judge-timeout", judge.DefaultTimeout, "a judge request taking longer than `D` fails (the check is an error)")
	fs.Int64Var(&f.maxRequests, "judge-max-requests", 0, "send at most `N` judgements, in input order; the rubric checks beyond stay pending (0: no limit)")
	fs.StringVar(&f.cache, "judge-cache", "", "verdict cache `DIR`, or off (default: gavel/judge under the user cache directory)")
	return f
}

// config returns the judge configuration of the flags and the budget.
func (f *gradeJudgeFlags) config() (*judge.Config, int64, error) {
	switch {
	case !(f.threshold > 0 && f.threshold <= 1):
		return nil, 0, usagef("gavel grade --judge-threshold 0.8 ...", "--judge-threshold %v: want a score in (0, 1]", f.threshold)
	case f.concurrency <= 0:
		return nil, 0, usagef("gavel grade --judge-concurrency 16 ...", "--judge-concurrency %d: want a positive number", f.concurrency)
	case f.timeout <= 0:
		return nil, 0, usagef("gavel grade --judge-timeout 2m ...", "--judge-timeout %s: want a positive duration", f.timeout)
	case f.maxRequests < 0:
		return nil, 0, usagef("gavel grade --judge-max-requests 1000 ...", "--judge-max-requests %d: want 0 (no limit) or more", f.maxRequests)
	}
	return &judge.Config{
		Model:       f.model,
		BaseURL:     f.url,
		APIKeyEnv:   f.keyEnv,
		Threshold:   f.threshold,
		Concurrency: f.concurrency,
		Timeout:     f.timeout,
		CacheDir:    f.cache,
	}, f.maxRequests, nil
}
