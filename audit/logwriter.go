package audit

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/acv/acv/api/contract"
)

// logWriter is the last step of both pipelines (the Consumer's Kafka batches, the
// SinkPublisher's relay batches): it decodes messages into events and stores them with one
// Sink.ApplyEvents call, recording the writer's series. A message that is no event is skipped,
// logged and counted: one bad message must not stop the pipeline.
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
			w.metrics.consumerError("decode")
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
		w.metrics.consumerError("write")
		return fmt.Errorf("store %d events: %w", len(events), err)
	}
	now := time.Now()
	w.metrics.wroteBatch(inserted, len(events)-inserted, now.Sub(start), events, now)
	return nil
}

// SinkPublisher is the Publisher of the direct pipeline, for a deployment without Kafka: it
// writes the relay's batch with the log writer, as the Consumer would, returning only after
// the Sink committed it, so an outbox entry leaves Redis only once its event is stored. It
// records the consumer's series, since it does the consumer's job.
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
	log := p.Logger
	if log == nil {
		log = slog.Default()
	}
	w := &logWriter{name: "audit direct write", sink: p.Sink, log: log, metrics: p.Metrics, tracer: p.Tracer}
	events := w.decode(msgs)
	if len(events) == 0 {
		return nil
	}
	if err := w.store(ctx, events, msgs); err != nil {
		return err
	}
	p.Metrics.committed(time.Now())
	return nil
}

// spanName names the relay's span of a batch it hands over: no Kafka is involved.
func (p *SinkPublisher) spanName() string { return "relay deliver verification logs" }

// publishSpanName names the relay's span of a batch handed to pub.
func publishSpanName(pub Publisher) string {
	if n, ok := pub.(interface{ spanName() string }); ok {
		return n.spanName()
	}
	return "kafka publish " + Topic
}
