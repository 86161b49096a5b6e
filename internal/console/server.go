package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// APIPrefix is where the admin HTTP API lives.
const APIPrefix = "/admin/api/v1"

// ServerConfig configures the HTTP side of the console.
type ServerConfig struct {
	// TrustedProxies are the reverse proxies (CIDRs or addresses) whose X-Forwarded-For and
	// X-Forwarded-Proto are believed (ACV_ADMIN_TRUSTED_PROXIES); none by default.
	TrustedProxies []string
	// MaxBodyBytes bounds a JSON body; 64 KiB when 0.
	MaxBodyBytes int64
	// MaxImportBytes bounds a CSV import's body; 64 MiB when 0.
	MaxImportBytes int64
	// Logger receives errors; the Service's when nil.
	Logger *slog.Logger
}

// Server is the console's HTTP adapter over a Service: the admin API under APIPrefix and the
// web pages (pages.go) beside it.
type Server struct {
	svc     *Service
	cfg     ServerConfig
	proxies proxies
	log     *slog.Logger
	engine  *gin.Engine
	pages   pages
}

// NewServer builds the console's handler tree.
func NewServer(svc *Service, cfg ServerConfig) (*Server, error) {
	ps, err := parseProxies(cfg.TrustedProxies)
	if err != nil {
		return nil, err
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 64 << 10
	}
	if cfg.MaxImportBytes <= 0 {
		cfg.MaxImportBytes = 64 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = svc.log
	}
	gin.SetMode(gin.ReleaseMode)
	pg, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &Server{svc: svc, cfg: cfg, proxies: ps, log: cfg.Logger, pages: pg}
	e := gin.New()
	// A code value may hold '/', '%' or '+': route on the path as sent and decode a value with
	// path rules (pathValue).
	e.UseEscapedPath = true
	e.UnescapePathValues = false
	e.HandleMethodNotAllowed = true
	e.ContextWithFallback = true
	// The client address comes from proxies.clientIP, never from gin's own reading of headers.
	if err := e.SetTrustedProxies(nil); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	e.Use(s.recovery, noStore)
	e.NoRoute(func(c *gin.Context) {
		err := contract.Errorf(contract.KindNotFound, "Not found")
		if strings.HasPrefix(c.Request.URL.Path, APIPrefix+"/") {
			s.writeError(c, err)
			return
		}
		// A page that does not exist is a page too.
		se, _ := s.session(c)
		s.renderError(c, se, err)
	})
	e.NoMethod(s.handle(func(*gin.Context) error { return errMethodNotAllowed }))
	for _, r := range s.routes() {
		e.Handle(r.Method, APIPrefix+r.Path, s.chain(r)...)
	}
	// The web pages, on the same listener and over the same Service.
	e.StaticFS("/static", staticFS())
	for _, r := range s.pageRoutes() {
		e.Handle(r.Method, r.Path, s.pageChain(r))
	}
	s.engine = e
	return s, nil
}

// ServeHTTP answers one request; a Server is an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.engine.ServeHTTP(w, r) }

// Serve answers on ln until ctx ends, then drains in-flight requests for up to drain and
// stops the generation batches still running here (they record that they were interrupted).
// There is no write timeout: an export streams as long as the project's codes last.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	defer s.svc.Close()
	hs := &http.Server{
		Handler:           s.engine,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       5 * time.Minute, // a large CSV import on a slow link
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve console: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("drain console: %w", err)
	}
	return nil
}

// noStore keeps every answer out of caches: they hold account data, secrets shown once and
// CSRF tokens.
func noStore(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Next()
}

// recovery answers a panic with a bare 500 and logs it.
func (s *Server) recovery(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.ErrorContext(c.Request.Context(), "console: panic", "panic", v, "route", c.FullPath())
			if !c.Writer.Written() {
				c.AbortWithStatusJSON(http.StatusInternalServerError, contract.ErrorBody{Detail: "Internal server error"})
			}
		}
	}()
	c.Next()
}

// Service is the Service the Server answers over, for the process that runs its scheduled
// jobs (RunAuditRetention).
func (s *Server) Service() *Service { return s.svc }
