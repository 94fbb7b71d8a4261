package pipeline

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gavelhq/gavel/gen"
	"github.com/gavelhq/gavel/remote"
	"github.com/gavelhq/gavel/verifiers/spec"
)

// BenchmarkRemoteVerifier grades generated CRM rollouts (their states,
// output and log in every request body) with a remote verifier whose
// service answers each request after 20 ms, one rollout a request, 64 in
// flight: the ceiling is 64 / 0.02 s = 3,200 rollouts/s, and the benchmark
// reports the share of it reached ("of-ceiling"; the target is 0.8).
func BenchmarkRemoteVerifier(b *testing.B) {
	const latency = 20 * time.Millisecond
	const concurrency = 64
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(latency)
		served.Add(1)
		io.WriteString(w, `{"reward": 1}`)
	}))
	defer srv.Close()
	dir := b.TempDir()
	data := filepath.Join(dir, "rollouts.parquet")
	const rollouts = 8000
	if _, err := gen.Run(context.Background(), gen.Config{Out: data, Rollouts: rollouts, Seed: 5, UniqueWorlds: true}); err != nil {
		b.Fatal(err)
	}
	vs, err := spec.Parse("remote.yaml", []byte(`verifiers:
  - {id: VER-R, tasks: all, name: graded elsewhere, remote: {url: "`+srv.URL+`", version: 1, pure: true, concurrency: `+strconv.Itoa(concurrency)+`}}
`))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		cfg := Config{Inputs: []string{data}, Out: filepath.Join(dir, "out"+strconv.Itoa(i)), Verifiers: vs,
			Remote: &RemoteConfig{Config: remote.Config{CacheDir: "off"}}}
		start := time.Now()
		res, err := Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		if res.Summary.Passed != rollouts {
			b.Fatalf("passed %d of %d", res.Summary.Passed, rollouts)
		}
	}
	rate := float64(rollouts*b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "rollouts/s")
	b.ReportMetric(rate/(concurrency/latency.Seconds()), "of-ceiling")
}
