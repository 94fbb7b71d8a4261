package judge

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gavelhq/gavel/judge/judgetest"
)

// BenchmarkAskConcurrency64 judges distinct outputs, 64 at a time, against
// a local server answering each in 50 ms, cache off. The ceiling is
// 64/0.05 s = 1280 judged/s.
func BenchmarkAskConcurrency64(b *testing.B) {
	const workers = 64
	srv := judgetest.New(b)
	srv.Script(func(judgetest.Request) judgetest.Reply { return judgetest.Reply{Delay: 50 * time.Millisecond} })
	j, err := New(Config{Model: "judge-model", BaseURL: srv.URL, APIKeyEnv: "GAVEL_BENCH_NO_KEY", CacheDir: "off", Concurrency: workers})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				r, err := j.Request(Prompt{Rubric: "Says PASS.", Instruction: "Say PASS.", Output: "PASS " + strconv.FormatInt(i, 10)})
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := j.Ask(context.Background(), r); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "judged/s")
	b.ReportMetric(float64(srv.Conns()), "conns")
	if got := srv.MaxInFlight(); got > workers {
		b.Errorf("%d requests in flight, want at most %d", got, workers)
	}
}
