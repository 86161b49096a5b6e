package audit

import (
	"context"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"
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

// publishSpanName is the name of the relay's span for a batch handed to pub: "kafka publish
// <topic>", or the publisher's own name when it is not Kafka.
func publishSpanName(pub Publisher) string {
	if n, ok := pub.(interface{ spanName() string }); ok {
		return n.spanName()
	}
	return "kafka publish " + Topic
}
