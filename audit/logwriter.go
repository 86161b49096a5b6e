package audit

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/acv/acv/api/contract"
)

// logWriter is the last step of both pipelines (Consumer, SinkPublisher): it decodes messages
// and stores them with one Sink.ApplyEvents call. A message that is no event is skipped, logged
// and counted: one bad message must not stop the pipeline.
type logWriter struct {
	name    string // the process part the logs name: "audit consumer", "audit direct write"
	sink    Sink
	log     *slog.Logger
	metrics *Metrics
	tracer  trace.TracerProvider
}

// decode reads the events msgs carry, skipping (and logging, and counting) what is none.
func (w *logWriter) decode(msgs []kafka.Message) []contract.Event {
	events := make([]contract.Event, 0, len(msgs))
	for _, m := range msgs {
		ev, err := decodeEvent(m.Value)
		if err != nil {
			w.metrics.consumerErrors.WithLabelValues("decode").Inc()
			w.log.Error(w.name+": skip message that is not an event",
				"topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "err", err)
			continue
		}
		events = append(events, ev)
	}
	return events
}

// store writes events, decoded from msgs, in one Sink.ApplyEvents call, under a write span per
// traced message, and records the write; a failure is counted and returned.
func (w *logWriter) store(ctx context.Context, events []contract.Event, msgs []kafka.Message) error {
	spans := startSpans(w.tracer, "postgres write verification logs", trace.SpanKindConsumer, msgs, false)
	wctx := ctx
	if len(spans) > 0 {
		// The batch's queries are traced under its first traced event.
		wctx = trace.ContextWithSpan(ctx, spans[0])
	}
	start := time.Now()
	inserted, err := w.sink.ApplyEvents(wctx, events)
	endSpans(spans, err)
	if err != nil {
		w.metrics.consumerErrors.WithLabelValues("write").Inc()
		return fmt.Errorf("store %d events: %w", len(events), err)
	}
	now := time.Now()
	w.metrics.writeLatency.Observe(now.Sub(start).Seconds())
	w.metrics.applied.Add(float64(inserted))
	w.metrics.duplicates.Add(float64(len(events) - inserted))
	nowMs := now.UnixMilli()
	for _, e := range events { // the delay from each verify (unix ms) to now
		if d := nowMs - e.TS; d >= 0 {
			w.metrics.delay.Observe(float64(d) / 1000)
		}
	}
	return nil
}

// SinkPublisher is the Publisher of a deployment without Kafka: it stores the relay's batch as
// the Consumer would, returning only once the Sink committed it, and records the consumer's series.
type SinkPublisher struct {
	// Sink stores the events; required.
	Sink Sink
	// Logger receives skipped messages. Default slog.Default().
	Logger *slog.Logger
	// Metrics receives the write's series; nil records nothing.
	Metrics *Metrics
	// Tracer makes a write span per traced event, under the relay's span; nil makes none.
	Tracer trace.TracerProvider
}

// WriteMessages stores the events msgs carry and returns once the Sink committed them, or the
// Sink's error (the relay retries the whole batch).
func (p *SinkPublisher) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	w := &logWriter{name: "audit direct write", sink: p.Sink, log: cmp.Or(p.Logger, slog.Default()), metrics: p.Metrics.orNone(), tracer: p.Tracer}
	events := w.decode(msgs)
	if len(events) == 0 {
		return nil
	}
	if err := w.store(ctx, events, msgs); err != nil {
		return err
	}
	w.metrics.lastCommit.Set(unixSeconds(time.Now()))
	return nil
}

// publishSpanName names the relay's span of a batch handed to pub: no Kafka is involved in a
// SinkPublisher's.
func publishSpanName(pub Publisher) string {
	if _, ok := pub.(*SinkPublisher); ok {
		return "relay deliver verification logs"
	}
	return "kafka publish " + Topic
}

const tracerName = "github.com/acv/acv/audit"

// startSpans opens one span per message carrying a sampled trace context, as a child of the
// request that produced the event, and with rewrite points the header at the new span so the
// next hop hangs under it. Other messages get none: a batch is not a trace of its own.
func startSpans(tp trace.TracerProvider, name string, kind trace.SpanKind, msgs []kafka.Message, rewrite bool) []trace.Span {
	if tp == nil {
		return nil
	}
	tr := tp.Tracer(tracerName)
	prop := propagation.TraceContext{}
	var spans []trace.Span
	for i := range msgs {
		m := &msgs[i]
		if len(m.Headers) == 0 {
			continue // no trace context: skip the extraction's allocations
		}
		c := headerCarrier{m}
		parent := prop.Extract(context.Background(), c)
		if !trace.SpanContextFromContext(parent).IsSampled() {
			continue
		}
		ctx, span := tr.Start(parent, name, trace.WithSpanKind(kind))
		if rewrite {
			prop.Inject(ctx, c)
		}
		spans = append(spans, span)
	}
	return spans
}

func endSpans(spans []trace.Span, err error) {
	for _, s := range spans {
		if err != nil {
			s.RecordError(err)
		}
		s.End()
	}
}

// headerCarrier reads and writes W3C trace context in a Kafka message's headers in place, with
// no map built per message on the pipeline's path.
type headerCarrier struct{ m *kafka.Message }

func (h headerCarrier) Get(key string) string {
	for _, hd := range h.m.Headers {
		if hd.Key == key {
			return string(hd.Value)
		}
	}
	return ""
}

func (h headerCarrier) Set(key, value string) {
	for i, hd := range h.m.Headers {
		if hd.Key == key {
			h.m.Headers[i].Value = []byte(value)
			return
		}
	}
	h.m.Headers = append(h.m.Headers, kafka.Header{Key: key, Value: []byte(value)})
}

func (h headerCarrier) Keys() []string {
	out := make([]string, len(h.m.Headers))
	for i, hd := range h.m.Headers {
		out[i] = hd.Key
	}
	return out
}
