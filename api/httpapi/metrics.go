package httpapi

import (
	"github.com/acv/acv/api/contract"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// latencyBuckets span 100 µs to the request timeout; 5 ms and 50 ms are the latency objectives.
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

type metrics struct {
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	inFlight     prometheus.Gauge
	outcomes     *prometheus.CounterVec
	unknownCodes *prometheus.CounterVec
	idemReplays  *prometheus.CounterVec
	rateLimited  prometheus.Counter
	authFailures *prometheus.CounterVec
	script       *prometheus.HistogramVec
	keyCache     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return f.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return f.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: latencyBuckets}, labels)
	}
	m := &metrics{
		requests: counter("acv_http_requests_total", "HTTP requests by method, route template and status.", "method", "route", "status"),
		duration: histogram("acv_http_request_duration_seconds", "HTTP request duration by method, route template and status.", "method", "route", "status"),
		inFlight: f.NewGauge(prometheus.GaugeOpts{Name: "acv_http_requests_in_flight", Help: "HTTP requests being served."}),
		outcomes: counter("acv_code_operations_total", "Verify and reactivate outcomes: success or the error_code.", "action", "outcome"),
		unknownCodes: counter("acv_code_unknown_attempts_total",
			"Verify and reactivate attempts on values no code has (they leave no log).", "action"),
		idemReplays: counter("acv_idempotent_replays_total",
			"Requests answered from a stored Idempotency-Key result (replayed) or refused for another body (conflict).", "result"),
		rateLimited:  f.NewCounter(prometheus.CounterOpts{Name: "acv_rate_limited_total", Help: "Requests refused with 429 by a key's token bucket."}),
		authFailures: counter("acv_auth_failures_total", "Requests refused authentication, by reason.", "reason"),
		script:       histogram("acv_redis_script_duration_seconds", "Round trip of the hot-path Lua scripts.", "script"),
		keyCache: counter("acv_key_cache_lookups_total", "API-key lookups by result: hit (in process), miss (asked the key mirror), "+
			"stale (served an old lookup because the stores could not be reached).", "result"),
	}
	// Series that must exist before their first event, so rate() and absent() work from the start.
	for _, r := range []AuthFailure{AuthMissing, AuthMalformed, AuthUnknownKey, AuthRevoked, AuthBadSignature, AuthSkew, AuthReplay, AuthProjectDisabled} {
		m.authFailures.WithLabelValues(string(r))
	}
	for _, r := range []string{"hit", "miss", "stale"} {
		m.keyCache.WithLabelValues(r)
	}
	for _, r := range []string{"replayed", "conflict"} {
		m.idemReplays.WithLabelValues(r)
	}
	for _, a := range []contract.Action{contract.ActionVerify, contract.ActionReactivate} {
		m.unknownCodes.WithLabelValues(string(a))
		m.outcomes.WithLabelValues(string(a), "success")
	}
	return m
}
