package serve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gavelhq/gavel/gen"
)

// discardWriter is a reusable ResponseWriter that keeps nothing.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchHandler serves the same request b.N times through the handler and
// reports the process CPU time per request, a figure that holds on a
// machine shared with other work (wall time does not).
func benchHandler(b *testing.B, path, ctype string, bodies [][]byte) {
	s := New(Config{})
	if err := s.Reload(allVerifiers()); err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	req := httptest.NewRequest("POST", path, nil)
	req.Header.Set("Content-Type", ctype)
	w := &discardWriter{h: http.Header{}}
	rd := bytes.NewReader(nil)
	i := 0
	serve := func() {
		rd.Reset(bodies[i%len(bodies)])
		i++
		req.Body = io.NopCloser(rd)
		clear(w.h)
		w.code = 0
		h.ServeHTTP(w, req)
	}
	serve()
	if w.code != 0 && w.code != http.StatusOK {
		b.Fatalf("status %d", w.code)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for range b.N {
		serve()
	}
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/req")
}

// crmLines returns generated CRM rollouts, one JSON object each, as the
// load test sends them.
func crmLines(b *testing.B) [][]byte {
	path := filepath.Join(b.TempDir(), "crm.jsonl")
	if _, err := gen.Run(context.Background(), gen.Config{Out: path, Rollouts: 200, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}

// BenchmarkGradeOne is one single-rollout POST /v1/grade request.
func BenchmarkGradeOne(b *testing.B) {
	benchHandler(b, "/v1/grade", "application/json", crmLines(b))
}

// BenchmarkVerifier is one POST /verifier request with one state check on
// a CRM rollout's state.
func BenchmarkVerifier(b *testing.B) {
	lines := crmLines(b)
	for i, l := range lines {
		lines[i] = append([]byte(`{"sessionId": "load", "checks": [{"id": "acme-created", "type": "state", "table": "opportunities", "asserts": [{"comparator": "eq", "function": "object_contains", "function_args": ["_result[*]", {"name": "ACME Expansion", "status": "open"}], "value": true}]}],`), l[1:]...)
	}
	benchHandler(b, "/verifier", "application/json", lines)
}
