// Package telemetry sets up OpenTelemetry tracing from the standard OTEL_* settings and ties the
// trace id of a request into every log line written for it.
package telemetry

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

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

// LogHandler adds trace_id and span_id to every record logged with a context that carries a
// span, so each log line of a request can be found from its trace and back.
type LogHandler struct {
	slog.Handler
}

// Handle implements slog.Handler.
func (h LogHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return LogHandler{h.Handler.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h LogHandler) WithGroup(name string) slog.Handler {
	return LogHandler{h.Handler.WithGroup(name)}
}

// LogWriter buffers log output and writes it out every interval or when the buffer fills, so
// an access line per request does not cost a system call per request. Close flushes.
type LogWriter struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

// NewLogWriter buffers writes to w, flushing at least every interval.
func NewLogWriter(w io.Writer, interval time.Duration) *LogWriter {
	l := &LogWriter{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				l.Flush()
			case <-l.stop:
				l.Flush()
				return
			}
		}
	}()
	return l
}

// Write buffers p; a log record is one Write, so records never interleave.
func (l *LogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Flush writes out what is buffered.
func (l *LogWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.w.Flush()
}

// Close stops the flusher after a last flush.
func (l *LogWriter) Close() {
	close(l.stop)
	<-l.done
}
