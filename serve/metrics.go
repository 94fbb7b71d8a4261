package serve

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics. A judge, once gavel has
// one, adds its request counter here (gavel_judge_requests_total).
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	rollouts *prometheus.CounterVec
	inflight prometheus.Gauge
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
	}
	reg.MustRegister(m.requests, m.latency, m.rollouts, m.inflight)
	return m
}

func (m *metrics) observe(route string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

func promhttpHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
