package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

const ctxAuthFailure = "acv.authfail"

// recovery turns a panic into a 500 with the contract's body and logs it.
func (s *Server) recovery(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.writeError(c, fmt.Errorf("panic: %v", r))
		}
	}()
	c.Next()
}

// accessLog opens the request's span and deadline, counts it, and writes one line per
// request: at debug level for a 1xx-3xx, at info for a 4xx or 5xx. It never logs a secret, a
// signature or a body.
func (s *Server) accessLog(c *gin.Context) {
	start := time.Now()
	s.metrics.inFlight.Inc()
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	ctx := propagation.TraceContext{}.Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header))
	ctx, span := s.tracer.Start(ctx, c.Request.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", c.Request.Method), attribute.String("http.route", route)))
	defer span.End()
	// The request's deadline bounds its work, so a stuck dependency answers 503, not never.
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
	s.metrics.inFlight.Dec()
	elapsed := time.Since(start)
	status := strconv.Itoa(c.Writer.Status())
	span.SetAttributes(attribute.Int("http.response.status_code", c.Writer.Status()))
	if c.Writer.Status() >= 500 {
		span.SetStatus(codes.Error, status)
	}
	s.metrics.requests.WithLabelValues(c.Request.Method, route, status).Inc()
	s.metrics.duration.WithLabelValues(c.Request.Method, route, status).Observe(elapsed.Seconds())
	// An answered request is a debug line, a refused or failed one (4xx, 5xx) an info line:
	// at the default level the log holds what needs looking at, and a verify at full rate does
	// not pay for a line nobody reads (a tenth of the API's CPU per request); the metrics
	// count every request by route and status either way.
	level := slog.LevelDebug
	if c.Writer.Status() >= 400 {
		level = slog.LevelInfo
	}
	if !s.cfg.Logger.Enabled(c.Request.Context(), level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", c.Request.Method),
		slog.String("route", route),
		slog.Int("status", c.Writer.Status()),
		slog.Duration("duration", elapsed),
	}
	if v, ok := c.Get(ctxKey); ok {
		attrs = append(attrs, slog.String("key_id", v.(contract.APIKey).ID))
	}
	if v, ok := c.Get(ctxAuthFailure); ok {
		attrs = append(attrs, slog.String("auth_failure", string(v.(AuthFailure))))
	}
	s.cfg.Logger.LogAttrs(c.Request.Context(), level, "request", attrs...)
}
