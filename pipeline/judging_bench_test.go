package pipeline

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gavelhq/gavel/columnar"
	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/internal/gaveltest"
	"github.com/gavelhq/gavel/judge"
	"github.com/gavelhq/gavel/judge/judgetest"
	"github.com/gavelhq/gavel/verifiers/crm"
)

// BenchmarkJudgeThroughput grades rows whose rubric checks a local server
// judges in 50 ms, 64 requests at a time, without a cache: the judged
// checks per second should reach 80% of 64 / 0.05 s = 1024.
func BenchmarkJudgeThroughput(b *testing.B) {
	const rows = 4096
	srv := judgetest.New(b)
	srv.Script(func(judgetest.Request) judgetest.Reply { return judgetest.Reply{Delay: 50 * time.Millisecond} })
	dir := b.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	gaveltest.WriteJudgedRows(b, in, 0, rows)
	vs := gaveltest.ParseSpec(b, gaveltest.JudgedSpec)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		_, err := Run(context.Background(), Config{Inputs: []string{in}, Out: filepath.Join(dir, "out"), Format: columnar.FormatJSONL,
			Verifiers: vs, Judge: &judge.Config{Model: "judge-1", BaseURL: srv.URL, CacheDir: "off", Concurrency: 64}})
		if err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(start).Seconds()
	b.ReportMetric(float64(rows*b.N)/el, "checks/s")
	b.ReportMetric(float64(srv.MaxInFlight()), "max-in-flight")
}

// BenchmarkNoRubricJudgeConfigured grades a generated CRM dataset without
// rubric checks with and without a judge configured, interleaved, and
// reports the CPU seconds (user + system) of each per run: configuring a
// judge must cost nothing when no verifier is judged.
func BenchmarkNoRubricJudgeConfigured(b *testing.B) {
	dir := b.TempDir()
	data := filepath.Join(dir, "rollouts.parquet")
	if _, err := gen.Run(context.Background(), gen.Config{Out: data, Rollouts: 20000, Seed: 3}); err != nil {
		b.Fatal(err)
	}
	srv := judgetest.New(b)
	cfg := Config{Inputs: []string{data}, Out: filepath.Join(dir, "out"), Verifiers: crm.Verifiers()}
	jcfg := cfg
	jcfg.Judge = &judge.Config{Model: "judge-1", BaseURL: srv.URL, CacheDir: filepath.Join(dir, "cache")}
	var cpu [2]float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, c := range []Config{cfg, jcfg} {
			before := cpuSeconds()
			if _, err := Run(context.Background(), c); err != nil {
				b.Fatal(err)
			}
			cpu[k] += cpuSeconds() - before
		}
	}
	if srv.Requests()+srv.ModelRequests() != 0 {
		b.Fatal("the judge was asked")
	}
	b.ReportMetric(cpu[0]/float64(b.N), "cpu-s/run-no-judge")
	b.ReportMetric(cpu[1]/float64(b.N), "cpu-s/run-judge")
	b.ReportMetric(cpu[1]/cpu[0], "ratio")
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
