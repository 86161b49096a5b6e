// Package httpapi is the Gin HTTP layer of the contract: authentication, the endpoints under
// /api/v1, health and readiness, the OpenAPI document, and the error mapping. It holds no state
// of its own beyond a short-lived API-key cache, so any number of replicas can serve side by side.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/acv/acv/api"
	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Records is what the adapter reads from the system of record: keys, projects, statistics,
// lists and history. None of it is on the verify path.
type Records interface {
	APIKey(ctx context.Context, id string) (contract.APIKey, error)
	Project(ctx context.Context, id string) (contract.Project, error)
	Statistics(ctx context.Context, projectID string, now int64) (contract.Statistics, error)
	// ProjectStatistics reads, from one snapshot, the counts Statistics reads and up to limit
	// codes of the project currently used (verified and not disabled), newest verified_at
	// first: a code among the recent verifications is counted as used.
	ProjectStatistics(ctx context.Context, projectID string, now int64, limit int) (contract.Statistics, []contract.RecentVerification, error)
	CodeByValue(ctx context.Context, projectID, value string) (contract.CodeRecord, error)
	CodeByID(ctx context.Context, projectID, id string) (contract.CodeRecord, error)
	ListCodes(ctx context.Context, projectID string, q contract.ListQuery, now int64) ([]contract.CodeRecord, int64, error)
	Logs(ctx context.Context, codeID string, limit int) ([]contract.LogEntry, error)
}

// HotPath is what the adapter needs of the Redis hot path. Verify and Reactivate load what
// Redis misses themselves: a handler makes one call.
type HotPath interface {
	Verify(ctx context.Context, op contract.Operation) (contract.OperationResult, error)
	Reactivate(ctx context.Context, op contract.Operation) (contract.OperationResult, error)
	Admit(ctx context.Context, a contract.Admission) (contract.RateState, error)
	// LiveCode is the code's state as Redis holds it; found is false when Redis holds none.
	LiveCode(ctx context.Context, projectID, value string) (contract.CodeRecord, bool, error)
}

// Config wires a server. Records and HotPath are required.
type Config struct {
	Records Records
	HotPath HotPath
	// Ready answers /readyz; the wiring builds it from its dependency probes. Not served when nil.
	// Metrics and profiles are not served here: the public port shows neither (the wiring
	// serves them on the debug listener, ACV_DEBUG_ADDR).
	Ready http.Handler
	// Logger receives access and error logs; slog.Default() when nil.
	Logger *slog.Logger
	// KeyCacheTTL bounds how long a key's lookup is reused: revocation and project disable take
	// effect within it. Default 1 s.
	KeyCacheTTL time.Duration
	// KeyCacheStale is how old a key lookup may be served while the stores cannot be reached to
	// refresh it. Default 10 min.
	KeyCacheStale time.Duration
	// RequestTimeout bounds each request's work. Default 10 s.
	RequestTimeout time.Duration
	// TrustedProxies are the proxy addresses whose X-Forwarded-For is believed; none by default.
	TrustedProxies []string
	// LogsLimit is how many verification logs a single-code response shows, newest first. Default 100.
	LogsLimit int
	// Registerer receives the replica's metrics; a private registry when nil.
	Registerer prometheus.Registerer
	// Tracer makes the request and Lua-call spans; no spans when nil.
	Tracer trace.TracerProvider
	// KeyUses notes when each key last authenticated a request, for the console's key list;
	// not noted when nil. The wiring runs its flush (KeyUses.Run).
	KeyUses *KeyUses
}

func (c *Config) defaults() error {
	if c.Records == nil || c.HotPath == nil {
		return errors.New("server config: Records and HotPath are required")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.KeyCacheTTL <= 0 {
		c.KeyCacheTTL = time.Second
	}
	if c.KeyCacheStale <= 0 {
		c.KeyCacheStale = 10 * time.Minute
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.LogsLimit <= 0 {
		c.LogsLimit = 100
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	if c.Tracer == nil {
		c.Tracer = noop.NewTracerProvider()
	}
	return nil
}

// Server is one API replica.
type Server struct {
	cfg Config
	// now is the clock and newEventID makes verification-log ids: time.Now and contract.NewID,
	// which tests replace (export_test.go).
	now        func() time.Time
	newEventID func() string
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
	// Route on the path as sent so an encoded '/' in a code value stays inside its segment.
	// Path values stay encoded: gin would decode them with query rules, turning a '+' of a
	// code value into a space; the handlers decode them with path rules (pathValue).
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
		// A method gin knows no tree for lists, in Allow, the methods postOnly answers; on
		// those two paths the one method allowed is POST.
		if postOnlyPath(c.Request.URL.EscapedPath()) {
			return postOnly(c)
		}
		return errMethodNotAllowed
	}))
	e.GET("/healthz", healthz)
	// The API's own OpenAPI document, without authentication: clients and tools fetch it to
	// learn the API before they hold a key.
	doc := api.OpenAPI()
	e.GET("/openapi.yaml", func(c *gin.Context) { c.Data(http.StatusOK, api.OpenAPIContentType, doc) })
	if cfg.Ready != nil {
		e.GET("/readyz", gin.WrapH(cfg.Ready))
	}
	// Verify and reactivate answer POST only. Every other method is registered on their paths
	// before authentication, so GET …/codes/verify is a 405 like DELETE, rather than the
	// code-by-id endpoint asked for the id "verify".
	for _, path := range []string{"/api/v1/projects/:project_id/codes/verify", "/api/v1/projects/:project_id/codes/reactivate"} {
		for _, m := range notPost {
			e.Handle(m, path, s.handle(postOnly))
		}
	}
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

// notPost is every standard method but POST: the methods postOnly answers on the verify and
// reactivate paths.
var notPost = []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPatch, http.MethodDelete,
	http.MethodOptions, http.MethodConnect, http.MethodTrace}

// postOnly answers a method other than POST on the verify and reactivate paths: 405 with
// Allow: POST.
func postOnly(c *gin.Context) error {
	c.Header("Allow", http.MethodPost)
	return errMethodNotAllowed
}

// postOnlyPath tells whether a request path, as routed (escaped), names verify or reactivate:
// /api/v1/projects/<id>/codes/verify or …/reactivate, one segment for the id.
func postOnlyPath(path string) bool {
	rest, ok := strings.CutPrefix(path, "/api/v1/projects/")
	if !ok {
		return false
	}
	id, op, ok := strings.Cut(rest, "/codes/")
	return ok && id != "" && !strings.Contains(id, "/") && (op == "verify" || op == "reactivate")
}

// ServeHTTP answers one request; a Server is an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.engine.ServeHTTP(w, r) }

// maxHeaderBytes bounds a request's line and headers; past it net/http answers 431.
const maxHeaderBytes = 32 << 10

// Serve answers on ln until ctx ends, then stops accepting and drains in-flight requests for up
// to drain before returning.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	var unused unusedConns
	// No WriteTimeout: its clock starts when the request is read, so a handler scheduled late
	// would lose its answer to a silent close. RequestTimeout bounds the work, and each
	// response's write has its own budget from its first byte (writedeadline.go).
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
	// net/http's own answers to requests it cannot read become {"detail"} JSON too (rawerrors.go).
	l := &onceCloseListener{Listener: jsonErrorListener{writeDeadlineListener{Listener: ln, budget: responseWriteTimeout}}}
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	go func() {
		// Shutdown has stopped accepting and closes idle connections; the unused ones go too.
		_ = l.Close() // Shutdown closes it too; whichever is first, the other gets its result
		unused.closeAll()
	}()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("drain http: %w", err)
	}
	return nil
}
