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

// logWriter is the last step of both pipelines: it decodes a batch of messages into events and
// stores them with one Sink.ApplyEvents call (one PostgreSQL transaction), recording the log
// writer's series. The Consumer runs it on each Kafka batch, the SinkPublisher on each relay
// batch of the direct pipeline. A message that is no event is skipped, logged and counted: one
// bad message must not stop the pipeline.
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
