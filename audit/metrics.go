package audit

import (
	"cmp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the pipeline's series. A nil *Metrics records nothing, so tests and tools that do
// not serve metrics need not build one.
type Metrics struct {
	publishLatency *prometheus.HistogramVec
	batchSize      prometheus.Histogram
	relayErrors    *prometheus.CounterVec
	relayed        prometheus.Counter
	removed        prometheus.Counter
	trimsRefused   prometheus.Counter
	held           prometheus.Gauge
	relays         prometheus.Gauge
	lastPublish    prometheus.Gauge
	writeLatency   prometheus.Histogram
	delay          prometheus.Histogram
	applied        prometheus.Counter
	duplicates     prometheus.Counter
	consumerErrors *prometheus.CounterVec
	lastCommit     prometheus.Gauge
}

// NewMetrics registers the pipeline's series with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	histogram := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	}
	lat := []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	m := &Metrics{
		publishLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "acv_relay_publish_duration_seconds", Help: "Kafka write of one relay batch, until all replicas acknowledged.", Buckets: lat,
		}, []string{"source"}),
		batchSize: histogram("acv_relay_batch_size", "Outbox entries per relay batch.", prometheus.ExponentialBuckets(1, 2, 11)),
		relayErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acv_relay_errors_total", Help: "Relay failures by stage (publish, remove, read, lease, decode); all but decode (an outbox entry that is not a well-formed event) are retried.",
		}, []string{"stage"}),
		relayed:      counter("acv_relay_published_total", "Outbox entries published to Kafka (a re-publish after a crash counts again)."),
		removed:      counter("acv_relay_removed_total", "Outbox entries removed after Kafka acknowledged them."),
		trimsRefused: counter("acv_relay_trims_refused_total", "Published outbox prefixes not removed because the outbox changed under another relay (a lease handed over); they are read and published again."),
		held:         gauge("acv_relay_outboxes_held", "Outboxes whose lease this relay holds, as of its last lease round."),
		relays:       gauge("acv_relay_live_relays", "Live relays this relay saw at its last lease round; they share the outboxes."),
		lastPublish:  gauge("acv_relay_last_publish_timestamp_seconds", "When Kafka last acknowledged a relay batch."),
		writeLatency: histogram("acv_consumer_batch_write_duration_seconds", "Postgres transaction writing one consumer batch.", lat),
		delay:        histogram("acv_audit_delay_seconds", "From the verify or reactivate to its log row committed in Postgres.", lat),
		applied:      counter("acv_consumer_events_written_total", "Verification-log events newly written to Postgres."),
		duplicates:   counter("acv_consumer_duplicates_skipped_total", "Redelivered events Postgres already held, skipped by the event-id key."),
		consumerErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "acv_consumer_errors_total", Help: "Consumer failures by stage (fetch, write, commit, decode); all but decode (a message that is not an event, skipped) are retried.",
		}, []string{"stage"}),
		lastCommit: gauge("acv_consumer_last_commit_timestamp_seconds", "When the consumer last committed offsets: a batch that keeps failing stops it moving."),
	}
	reg.MustRegister(m.publishLatency, m.batchSize, m.relayErrors, m.relayed, m.removed, m.trimsRefused,
		m.held, m.relays, m.lastPublish, m.writeLatency, m.delay, m.applied, m.duplicates, m.consumerErrors, m.lastCommit)
	for _, s := range []string{"publish", "remove", "read", "lease", "decode"} {
		m.relayErrors.WithLabelValues(s)
	}
	for _, s := range []string{"fetch", "write", "commit", "decode"} {
		m.consumerErrors.WithLabelValues(s)
	}
	return m
}

// noMetrics stands in for a nil *Metrics: its series are registered nowhere that is served.
var noMetrics = NewMetrics(prometheus.NewRegistry())

// orNone is m, or noMetrics for nil.
func (m *Metrics) orNone() *Metrics { return cmp.Or(m, noMetrics) }

// unixSeconds is t as a timestamp gauge's value.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
