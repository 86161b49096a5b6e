// Package httpapi is the Gin HTTP layer of the contract: authentication, the endpoints under
// /api/v1, health, the OpenAPI document and the error mapping. Its only state is a short-lived
// API-key cache, so any number of replicas can serve side by side.
package httpapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api"
	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Records is what the adapter reads from the system of record; none of it is on the verify path.
type Records interface {
	APIKey(ctx context.Context, id string) (contract.APIKey, error)
	Project(ctx context.Context, id string) (contract.Project, error)
	Statistics(ctx context.Context, projectID string, now int64) (contract.Statistics, error)
	// ProjectStatistics reads, from one snapshot, Statistics and up to limit codes currently
	// used, newest verified_at first.
	ProjectStatistics(ctx context.Context, projectID string, now int64, limit int) (contract.Statistics, []contract.RecentVerification, error)
	CodeByValue(ctx context.Context, projectID, value string) (contract.CodeRecord, error)
	CodeByID(ctx context.Context, projectID, id string) (contract.CodeRecord, error)
	ListCodes(ctx context.Context, projectID string, q contract.ListQuery, now int64) ([]contract.CodeRecord, int64, error)
	Logs(ctx context.Context, codeID string, limit int) ([]contract.LogEntry, error)
}

// HotPath is what the adapter needs of the Redis hot path; a handler makes one call.
type HotPath interface {
	Verify(ctx context.Context, op contract.Operation) (contract.OperationResult, error)
	Reactivate(ctx context.Context, op contract.Operation) (contract.OperationResult, error)
	Admit(ctx context.Context, a contract.Admission) (contract.RateState, error)
	// LiveCode is the code's state as Redis holds it; found is false when Redis holds none.
	LiveCode(ctx context.Context, projectID, value string) (contract.CodeRecord, bool, error)
}

// Config wires a server. Records and HotPath are required.
type Config struct {
	Records        Records
	HotPath        HotPath
	Ready          http.Handler          // answers /readyz; not served when nil
	Logger         *slog.Logger          // access and error logs; slog.Default() when nil
	KeyCacheTTL    time.Duration         // how long a key's lookup is reused (revocation's delay); 1 s
	KeyCacheStale  time.Duration         // how old a lookup may serve while the stores are down; 10 min
	RequestTimeout time.Duration         // bounds each request's work; 10 s
	TrustedProxies []string              // proxies whose X-Forwarded-For is believed; none
	LogsLimit      int                   // verification logs a single-code response shows; 100
	Registerer     prometheus.Registerer // the replica's metrics; a private registry when nil
	Tracer         trace.TracerProvider  // request and Lua-call spans; none when nil
	KeyUses        *KeyUses              // notes each key's last use; not noted when nil
}

func (c *Config) defaults() error {
	if c.Records == nil || c.HotPath == nil {
		return errors.New("server config: Records and HotPath are required")
	}
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.KeyCacheTTL = positiveOr(c.KeyCacheTTL, time.Second)
	c.KeyCacheStale = positiveOr(c.KeyCacheStale, 10*time.Minute)
	c.RequestTimeout = positiveOr(c.RequestTimeout, 10*time.Second)
	c.LogsLimit = positiveOr(c.LogsLimit, 100)
	c.Registerer = cmp.Or[prometheus.Registerer](c.Registerer, prometheus.NewRegistry())
	c.Tracer = cmp.Or[trace.TracerProvider](c.Tracer, noop.NewTracerProvider())
	return nil
}

func positiveOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Server is one API replica.
type Server struct {
	cfg        Config
	now        func() time.Time // time.Now, which tests replace (export_test.go)
	newEventID func() string    // contract.NewID, which tests replace
	keys       *keyCache
	engine     *gin.Engine
	metrics    *metrics
	tracer     trace.Tracer
}

// New builds a replica's handler tree.
func New(cfg Config) (*Server, error) {
	return newServer(cfg, time.Now, contract.NewID)
}

func newServer(cfg Config, now func() time.Time, newEventID func() string) (*Server, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	gin.SetMode(gin.ReleaseMode)
	m := newMetrics(cfg.Registerer)
	s := &Server{cfg: cfg, now: now, newEventID: newEventID,
		keys: newKeyCache(cfg.Records, cfg.KeyCacheTTL, cfg.KeyCacheStale, now, m.keyCache), metrics: m,
		tracer: cfg.Tracer.Tracer("github.com/acv/acv/api/httpapi")}
	e := gin.New()
	// Route on the path as sent so an encoded '/' stays inside its segment; path values stay
	// encoded for pathValue to decode with path rules (gin's would turn '+' into a space).
	e.UseEscapedPath = true
	e.UnescapePathValues = false
	e.HandleMethodNotAllowed = true
	e.ContextWithFallback = true
	if err := e.SetTrustedProxies(cfg.TrustedProxies); err != nil {
		return nil, fmt.Errorf("trusted proxies: %w", err)
	}
	e.Use(s.recovery, s.accessLog)
	e.NoRoute(s.handle(func(*gin.Context) error { return contract.Errorf(contract.KindNotFound, "Not found") }))
	e.NoMethod(s.handle(func(c *gin.Context) error {
		if postOnlyPath(c.Request.URL.EscapedPath()) {
			return postOnly(c)
		}
		return errMethodNotAllowed
	}))
	e.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	// The OpenAPI document needs no key: clients fetch it before they hold one.
	doc := api.OpenAPI()
	e.GET("/openapi.yaml", func(c *gin.Context) { c.Data(http.StatusOK, api.OpenAPIContentType, doc) })
	if cfg.Ready != nil {
		e.GET("/readyz", gin.WrapH(cfg.Ready))
	}
	// GET …/codes/verify is a 405 before authentication, not the code-by-id endpoint asked for
	// the id "verify"; other methods on the POST-only paths reach NoMethod.
	e.GET("/api/v1/projects/:project_id/codes/verify", s.handle(postOnly))
	e.GET("/api/v1/projects/:project_id/codes/reactivate", s.handle(postOnly))
	p := e.Group("/api/v1/projects/:project_id", s.handle(s.authenticate), s.handle(s.requireUTF8))
	p.GET("", s.handle(s.getProject))
	p.GET("/statistics", s.handle(s.getStatistics))
	p.GET("/codes", s.handle(s.listCodes))
	p.GET("/codes/by-code/:code", s.handle(s.getCodeByValue))
	p.GET("/codes/:code_id", s.handle(s.getCodeByID))
	p.POST("/codes/verify", s.handle(s.verify))
	p.POST("/codes/reactivate", s.handle(s.reactivate))
	s.engine = e
	return s, nil
}

func postOnly(c *gin.Context) error {
	c.Header("Allow", http.MethodPost)
	return errMethodNotAllowed
}

func postOnlyPath(path string) bool {
	rest, ok := strings.CutPrefix(path, "/api/v1/projects/")
	if !ok {
		return false
	}
	id, op, ok := strings.Cut(rest, "/codes/")
	return ok && id != "" && !strings.Contains(id, "/") && (op == "verify" || op == "reactivate")
}

// ServeHTTP makes a Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.engine.ServeHTTP(w, r) }

// maxHeaderBytes bounds a request's line and headers; past it net/http answers 431.
const maxHeaderBytes = 32 << 10

// Serve answers on ln until ctx ends, then stops accepting and drains in-flight requests for up
// to drain before returning.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	unused := unusedConns{conns: map[net.Conn]struct{}{}}
	// No WriteTimeout: responseWriteTimeout (listener.go) says why.
	hs := &http.Server{
		ConnState:         unused.track,
		Handler:           s.engine,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	l := &listener{Listener: ln}
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	go func() {
		// Shutdown closes idle connections; the unused ones go too.
		_ = l.Close()
		unused.closeAll()
	}()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("drain http: %w", err)
	}
	return nil
}

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

// accessLog opens the request's span and deadline, counts it, and logs it: debug for a
// 1xx-3xx, info for a 4xx or 5xx. It never logs a secret, a signature or a body.
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
	level := slog.LevelDebug
	if c.Writer.Status() >= 400 {
		level = slog.LevelInfo
	}
	if !s.cfg.Logger.Enabled(c.Request.Context(), level) {
		return
	}
	attrs := []slog.Attr{slog.String("method", c.Request.Method), slog.String("route", route),
		slog.Int("status", c.Writer.Status()), slog.Duration("duration", elapsed)}
	if v, ok := c.Get(ctxKey); ok {
		attrs = append(attrs, slog.String("key_id", v.(contract.APIKey).ID))
	}
	if v, ok := c.Get(ctxAuthFailure); ok {
		attrs = append(attrs, slog.String("auth_failure", string(v.(AuthFailure))))
	}
	s.cfg.Logger.LogAttrs(c.Request.Context(), level, "request", attrs...)
}

// requireUTF8 refuses (400) a query or body that is not valid UTF-8 before any handler decodes
// it (encoding/json would turn two byte strings into one value): after authenticate, before
// the hot path spends a nonce or a token.
func (s *Server) requireUTF8(c *gin.Context) error {
	if err := contract.ValidateQueryUTF8(c.Request.URL.RawQuery); err != nil {
		return err
	}
	body, _ := c.Get(ctxBody)
	b, _ := body.([]byte)
	return contract.ValidateBodyUTF8(b)
}

var errMethodNotAllowed = &contract.Error{Kind: contract.KindMethodNotAllowed, Message: "Method not allowed"}

func (s *Server) handle(h func(*gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := h(c); err != nil {
			s.writeError(c, err)
		}
	}
}

func (s *Server) writeError(c *gin.Context, err error) {
	status, detail, retryAfter, internal := contract.Answer(err)
	if internal {
		s.cfg.Logger.ErrorContext(c.Request.Context(), "request failed", "err", err, "route", c.FullPath())
	}
	var af *authFailure
	if !internal && errors.As(err, &af) {
		c.Set(ctxAuthFailure, af.reason)
		s.metrics.authFailures.WithLabelValues(string(af.reason)).Inc()
	}
	if retryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(retryAfter))
	}
	c.AbortWithStatusJSON(status, contract.ErrorBody{Detail: detail})
}

func invalid(detail string) error {
	return &contract.Error{Kind: contract.KindInvalid, Message: detail}
}
