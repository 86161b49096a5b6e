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

// SinkPublisher is the Publisher of the direct pipeline, for a deployment without Kafka (`acv
// dev` by default): instead of sending the relay's batch to a broker, WriteMessages decodes it
// into events and stores them with one Sink.ApplyEvents call (one PostgreSQL transaction),
// returning only after the Sink committed them. The relay removes outbox entries only after
// WriteMessages returned, so an entry leaves Redis only once its event is stored durably; a
// crash in between re-sends the batch and the Sink's dedup by event id absorbs it. A message
// that is no event is skipped and counted, as the Consumer skips it.
//
// It records the consumer's series (events written, duplicates, write latency, audit delay,
// last commit) as the Consumer would, since it does the consumer's job.
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
	events := make([]contract.Event, 0, len(msgs))
	for _, m := range msgs {
		ev, err := decodeEvent(m.Value)
		if err != nil {
			p.Metrics.consumerError("decode")
			log.Error("audit direct write: skip outbox entry that is not an event", "err", err)
			continue
		}
		events = append(events, ev)
	}
	if len(events) == 0 {
		return nil
	}
	spans := startSpans(p.Tracer, "postgres write verification logs", trace.SpanKindConsumer, msgs, false)
	wctx := ctx
	if len(spans) > 0 {
		wctx = trace.ContextWithSpan(ctx, spans[0])
	}
	start := time.Now()
	inserted, err := p.Sink.ApplyEvents(wctx, events)
	endSpans(spans, err)
	if err != nil {
		p.Metrics.consumerError("write")
		return fmt.Errorf("store %d events: %w", len(events), err)
	}
	now := time.Now()
	p.Metrics.wroteBatch(inserted, len(events)-inserted, now.Sub(start), events, now)
	p.Metrics.committed(now)
	return nil
}

// spanName names the relay's span of a batch it hands over: no Kafka is involved.
func (p *SinkPublisher) spanName() string { return "relay deliver verification logs" }

// publishSpanName is the name of the relay's span for a batch handed to pub: "kafka publish
// <topic>", or the publisher's own name when it is not Kafka.
func publishSpanName(pub Publisher) string {
	if n, ok := pub.(interface{ spanName() string }); ok {
		return n.spanName()
	}
	return "kafka publish " + Topic
}
