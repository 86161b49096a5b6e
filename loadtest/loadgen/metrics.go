package loadgen

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// latencyBuckets are the service's request-duration bounds (api/httpapi), so the load
// generator's view of a request and the service's can be compared bucket for bucket.
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Metrics are the load generator's own series: what it sent, how long each request took as
// the client saw it, and how each scenario is judged. cmd/acvload serves them on a /metrics of
// its own, so a load run shows on the same Prometheus as the service it loads.
type Metrics struct {
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	checks     *prometheus.CounterVec
	dropped    *prometheus.CounterVec
	unexpected *prometheus.CounterVec
	running    *prometheus.GaugeVec
	rate       *prometheus.GaugeVec
	thresholds *prometheus.GaugeVec
}

// NewMetrics registers the series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acv_loadtest_requests_total",
			Help: "Requests the load generator sent, by scenario, endpoint, phase (setup, load, teardown) and outcome: the HTTP status class (2xx, 4xx, 5xx) or error when no answer came.",
		}, []string{"scenario", "endpoint", "phase", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "acv_loadtest_request_duration_seconds",
			Help:    "Request duration as the load generator saw it (sending to the last byte of the answer), by scenario, endpoint and phase.",
			Buckets: latencyBuckets,
		}, []string{"scenario", "endpoint", "phase"}),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acv_loadtest_checks_total",
			Help: "Checks of the answers against the contract, by scenario and result (pass, fail).",
		}, []string{"scenario", "result"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acv_loadtest_dropped_iterations_total",
			Help: "Iterations an open-model scenario could not start on time for want of a free VU.",
		}, []string{"scenario"}),
		unexpected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acv_loadtest_unexpected_failures_total",
			Help: "Answers a correct service never gives in the scenario (its unexpected_failures).",
		}, []string{"scenario"}),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "acv_loadtest_scenario_running",
			Help: "1 while the scenario's load phase runs.",
		}, []string{"scenario"}),
		rate: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "acv_loadtest_target_rate_per_second",
			Help: "Iterations per second an open-model scenario starts (0 for a closed model).",
		}, []string{"scenario"}),
		thresholds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "acv_loadtest_thresholds",
			Help: "The thresholds of the scenario's last run, by result (pass, fail).",
		}, []string{"scenario", "result"}),
	}
	reg.MustRegister(m.requests, m.duration, m.checks, m.dropped, m.unexpected, m.running, m.rate, m.thresholds)
	return m
}

// outcome is a request's outcome label: its status class, or error without an answer.
func outcome(status int, err error) string {
	if err != nil || status == 0 {
		return "error"
	}
	return strconv.Itoa(status/100) + "xx"
}
