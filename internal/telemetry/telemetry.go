// Package telemetry sets up OpenTelemetry tracing from the standard OTEL_* settings and ties the
// trace id of a request into every log line written for it.
package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Propagator is the W3C trace-context propagator used on HTTP and in Kafka headers.
var Propagator = propagation.TraceContext{}

// Tracing is what the standard OTEL_* variables ask of tracing (internal/settings reads them;
// the exporter reads the rest of them itself).
type Tracing struct {
	Exporter       string // OTEL_TRACES_EXPORTER
	Endpoint       string // OTEL_EXPORTER_OTLP_ENDPOINT
	TracesEndpoint string // OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
	ServiceName    string // OTEL_SERVICE_NAME
}

// Enabled tells whether traces are asked for: an OTLP endpoint or an explicit exporter other
// than "none". Tracing is off otherwise, and costs nothing.
func (t Tracing) Enabled() bool {
	if t.Exporter != "" {
		return t.Exporter != "none"
	}
	return t.Endpoint != "" || t.TracesEndpoint != ""
}

// Setup returns the process's tracer provider and its shutdown (which flushes pending spans).
// With tracing off no span is recorded, but each request still gets a trace id (or keeps its
// caller's) for its log lines.
func Setup(ctx context.Context, t Tracing, instance string) (trace.TracerProvider, func(context.Context) error, error) {
	if !t.Enabled() {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
		return tp, tp.Shutdown, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("create span exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(t.ServiceName), semconv.ServiceInstanceID(instance)))
	if err != nil {
		return nil, nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}
