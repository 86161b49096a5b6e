package audit

import (
	"context"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

const tracerName = "github.com/acv/acv/audit"

// headerCarrier reads and writes W3C trace context in Kafka message headers.
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
		if len(msgs[i].Headers) == 0 {
			continue // no trace context: skip the extraction's allocations
		}
		c := headerCarrier{&msgs[i]}
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
