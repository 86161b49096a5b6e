package audit

import (
	"testing"

	"github.com/segmentio/kafka-go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Only messages of a sampled trace get a span, and only theirs have the header rewritten to
// it: a message without trace context, or of a trace not sampled, passes on as it came.
func TestSpansOnlyForSampledTraces(t *testing.T) {
	const (
		sampled   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		unsampled = "00-5bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	msgs := []kafka.Message{
		{Value: []byte("a")},
		{Value: []byte("b"), Headers: []kafka.Header{{Key: "traceparent", Value: []byte(unsampled)}}},
		{Value: []byte("c"), Headers: []kafka.Header{{Key: "traceparent", Value: []byte(sampled)}}},
	}
	spans := startSpans(tp, "publish", 0, msgs, true)
	endSpans(spans, nil)
	if len(spans) != 1 || len(exp.GetSpans()) != 1 {
		t.Fatalf("%d spans started, %d recorded; want 1 (the sampled message's)", len(spans), len(exp.GetSpans()))
	}
	got := exp.GetSpans()[0]
	if got.Parent.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("span's parent %s, want the sampled message's trace", got.Parent.TraceID())
	}
	if len(msgs[0].Headers) != 0 {
		t.Errorf("message without trace context got headers %v", msgs[0].Headers)
	}
	if h := string(msgs[1].Headers[0].Value); h != unsampled {
		t.Errorf("unsampled message's header rewritten to %q", h)
	}
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + got.SpanContext.SpanID().String() + "-01"
	if h := string(msgs[2].Headers[0].Value); h != want {
		t.Errorf("sampled message's header %q, want the new span's %q", h, want)
	}
}
