package serve

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gavelhq/gavel/results"
	"github.com/gavelhq/gavel/verifiers"
)

// metrics are the server's Prometheus metrics. With a judge configured,
// the judge's counters are added by judgeMetrics.
//
// The children of the labelled metrics are looked up once per label
// value and kept (routeMetrics, outcomes), not per request.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	rollouts *prometheus.CounterVec
	inflight prometheus.Gauge

	// outcomes holds the rollouts counter of each status.
	outcomes map[string]prometheus.Counter
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gavel_http_requests_total", Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gavel_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		rollouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gavel_rollouts_graded_total", Help: "Rollouts graded by /v1/grade and /verifier, by status.",
		}, []string{"status"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gavel_http_requests_in_flight", Help: "HTTP requests being served.",
		}),
		outcomes: map[string]prometheus.Counter{},
	}
	reg.MustRegister(m.requests, m.latency, m.rollouts, m.inflight)
	for _, o := range []verifiers.Outcome{verifiers.Passed, verifiers.Failed, verifiers.PendingOutcome, verifiers.Errored} {
		m.outcomes[o.String()] = m.rollouts.WithLabelValues(o.String())
	}
	return m
}

// graded counts n rollouts of a status.
func (m *metrics) graded(status string, n int) {
	c := m.outcomes[status] // read only once built
	if c == nil {
		c = m.rollouts.WithLabelValues(status)
	}
	c.Add(float64(n))
}

// routeMetrics are one route's metric children.
type routeMetrics struct {
	m       *metrics
	route   string
	latency prometheus.Observer
	codes   sync.Map // int status code: prometheus.Counter
}

func (m *metrics) route(route string) *routeMetrics {
	return &routeMetrics{m: m, route: route, latency: m.latency.WithLabelValues(route)}
}

func (rm *routeMetrics) observe(code int, d time.Duration) {
	c, ok := rm.codes.Load(code)
	if !ok {
		c, _ = rm.codes.LoadOrStore(code, rm.m.requests.WithLabelValues(rm.route, strconv.Itoa(code)))
	}
	c.(prometheus.Counter).Inc()
	rm.latency.Observe(d.Seconds())
}

func promhttpHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// judgeMetrics registers the judge's counters (requests sent, cache hits,
// retries, failures), read from the verifier set serving at scrape time.
func (s *Server) judgeMetrics(reg *prometheus.Registry) {
	counter := func(name, help string, get func(*results.JudgeSummary) int64) prometheus.CounterFunc {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 {
			set := s.set.Load()
			if set == nil {
				return 0
			}
			js := set.grader.JudgeSummary()
			if js == nil {
				return 0
			}
			return float64(get(js))
		})
	}
	reg.MustRegister(
		counter("gavel_judge_requests_total", "Requests sent to the judge (retries included) by the serving verifier set.", func(j *results.JudgeSummary) int64 { return j.Requests }),
		counter("gavel_judge_cache_hits_total", "Rubric checks answered from the judge's verdict cache.", func(j *results.JudgeSummary) int64 { return j.CacheHits }),
		counter("gavel_judge_retries_total", "Judge requests retried.", func(j *results.JudgeSummary) int64 { return j.Retries }),
		counter("gavel_judge_failures_total", "Judgements that failed (their checks have status error).", func(j *results.JudgeSummary) int64 { return j.Failures }),
	)
}

// remoteMetrics registers the counters of the remote verifiers (probes,
// requests sent, cache hits, retries, failures), read from the verifier
// set serving at scrape time; 0 while it has none.
func (s *Server) remoteMetrics(reg *prometheus.Registry) {
	counter := func(name, help string, get func(*results.RemoteSummary) int64) prometheus.CounterFunc {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 {
			set := s.set.Load()
			if set == nil {
				return 0
			}
			rs := set.grader.RemoteSummary()
			if rs == nil {
				return 0
			}
			return float64(get(rs))
		})
	}
	reg.MustRegister(
		counter("gavel_remote_probes_total", "Probes of remote verifiers' services (GET /reverify_mode).", func(r *results.RemoteSummary) int64 { return r.Probes }),
		counter("gavel_remote_requests_total", "Requests sent to remote verifiers (retries included) by the serving verifier set.", func(r *results.RemoteSummary) int64 { return r.Requests }),
		counter("gavel_remote_cache_hits_total", "Rollouts answered from the remote verifiers' answer cache.", func(r *results.RemoteSummary) int64 { return r.CacheHits }),
		counter("gavel_remote_retries_total", "Requests to remote verifiers retried.", func(r *results.RemoteSummary) int64 { return r.Retries }),
		counter("gavel_remote_failures_total", "Requests to remote verifiers that failed (their rollouts have status error).", func(r *results.RemoteSummary) int64 { return r.Failures }),
	)
}
