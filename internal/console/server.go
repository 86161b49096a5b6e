package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// APIPrefix is where the admin HTTP API lives.
const APIPrefix = "/admin/api/v1"

// ServerConfig configures the HTTP side of the console.
type ServerConfig struct {
	// TrustedProxies are the proxies whose forwarding headers are believed; none by default.
	TrustedProxies []string
	// MaxBodyBytes bounds a JSON body; 64 KiB when 0.
	MaxBodyBytes int64
	// MaxImportBytes bounds a CSV import's body; 64 MiB when 0.
	MaxImportBytes int64
	// Logger receives errors; the Service's when nil.
	Logger *slog.Logger
}

// Server is the console's HTTP adapter over a Service: the admin API and the pages. A read
// that the route's role already allows goes to the admin service (ops) or the record (st)
// directly; a change goes through the Service, which records it.
type Server struct {
	svc     *Service
	ops     Operations
	st      Store
	cfg     ServerConfig
	proxies proxies
	log     *slog.Logger
	engine  *gin.Engine
	pages   map[string]*template.Template
}

// NewServer builds the console's handler tree.
func NewServer(svc *Service, cfg ServerConfig) (*Server, error) {
	ps, err := parseProxies(cfg.TrustedProxies)
	if err != nil {
		return nil, err
	}
	if svc.admin == nil {
		return nil, errNoOperatorActions
	}
	cfg.MaxBodyBytes = orDefault(cfg.MaxBodyBytes, 64<<10)
	cfg.MaxImportBytes = orDefault(cfg.MaxImportBytes, 64<<20)
	cfg.Logger = cmp.Or(cfg.Logger, svc.log)
	gin.SetMode(gin.ReleaseMode)
	pg, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &Server{svc: svc, ops: svc.admin, st: svc.store, cfg: cfg, proxies: ps, log: cfg.Logger, pages: pg}
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
	e.NoMethod(func(c *gin.Context) { s.writeError(c, errMethodNotAllowed) })
	// The web pages, on the same listener and over the same Service.
	e.StaticFS("/static", staticFS())
	for _, r := range s.routes() {
		if r.api != nil {
			e.Handle(r.Method, APIPrefix+r.Path, s.gate(r, false))
		}
		if r.page != nil {
			e.Handle(r.Method, r.Path, s.gate(r, true))
		}
	}
	s.engine = e
	return s, nil
}

// ServeHTTP makes a Server an http.Handler.
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

// noStore keeps answers (account data, secrets, CSRF tokens) out of caches.
func noStore(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Next()
}

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

func (s *Server) now() int64 { return s.svc.now().Unix() }

// Service is the Service the Server answers over (for RunAuditRetention).
func (s *Server) Service() *Service { return s.svc }

var errMethodNotAllowed = &contract.Error{Kind: contract.KindMethodNotAllowed, Message: "Method not allowed"}

// refusal is how the API and the pages answer an error, by contract.Answer's table; it sets
// Retry-After itself.
func (s *Server) refusal(c *gin.Context, err error) (status int, detail string) {
	status, detail, retryAfter, internal := contract.Answer(err)
	if internal {
		s.log.ErrorContext(c.Request.Context(), "console: request failed", "err", err, "route", c.FullPath())
	}
	if retryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(retryAfter))
	}
	return status, capitalize(detail)
}

// refused: err is a refusal the caller is shown, not a fault of ours.
func refused(err error) bool {
	k := contract.KindOf(err)
	return k != contract.KindInternal && k != contract.KindUnavailable
}

func (s *Server) writeError(c *gin.Context, err error) {
	status, detail := s.refusal(c, err)
	c.AbortWithStatusJSON(status, contract.ErrorBody{Detail: detail})
}

// capitalize starts a message with a capital letter, as the API's details do.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// invalid is err as a 400.
func invalid(err error) error {
	return contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
}

// CookieName is the session cookie: the session token, HttpOnly (no script reads it),
// SameSite=Strict (no other site's page sends it), Secure when the browser came over HTTPS.
// It has no Max-Age: it ends with the browser, and the server ends the session in any case.
const CookieName = "acv_console_session"

func (s *Server) setSessionCookie(c *gin.Context, token string, clear bool) {
	ck := &http.Cookie{Name: CookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: s.proxies.secure(c.Request)}
	if clear {
		ck.MaxAge, ck.Expires = -1, time.Unix(1, 0)
	}
	http.SetCookie(c.Writer, ck)
}

// session is the request's valid session (bearer token or cookie), or errNoSession.
func (s *Server) session(c *gin.Context) (*Session, error) {
	if bearer, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer "); ok {
		return s.svc.SessionByAPIToken(c.Request.Context(), strings.TrimSpace(bearer))
	}
	ck, err := c.Request.Cookie(CookieName)
	if err != nil || ck.Value == "" {
		return nil, errNoSession
	}
	return s.svc.SessionByToken(c.Request.Context(), ck.Value)
}

func (s *Server) actor(c *gin.Context, se *Session) Actor {
	return se.Actor(s.proxies.clientIP(c.Request))
}

// staticFS is the embedded files, never a directory listing.
func staticFS() http.FileSystem {
	sub, err := fs.Sub(webFS, "web/static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return filesOnly{http.FS(sub)}
}

// filesOnly is a file system whose directories do not exist, so none is listed.
type filesOnly struct{ http.FileSystem }

func (f filesOnly) Open(name string) (http.File, error) {
	file, err := f.FileSystem.Open(name)
	if err != nil {
		return nil, err
	}
	if info, err := file.Stat(); err != nil || info.IsDir() {
		file.Close()
		return nil, fs.ErrNotExist
	}
	return file, nil
}

// proxies are the reverse proxies whose forwarding headers are believed (ACV_ADMIN_TRUSTED_PROXIES).
type proxies []netip.Prefix

func parseProxies(list []string) (proxies, error) {
	var ps proxies
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if a, aerr := netip.ParseAddr(s); aerr == nil {
			p, err = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
		}
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: %w", s, err)
		}
		ps = append(ps, p.Masked())
	}
	return ps, nil
}

func (ps proxies) trusted(a netip.Addr) bool {
	return slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Contains(a.Unmap()) })
}

func peer(r *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	return a.Unmap(), err == nil
}

// clientIP is the peer, or behind trusted proxies the nearest forwarded address that is none.
func (ps proxies) clientIP(r *http.Request) string {
	p, ok := peer(r)
	if !ok {
		return ""
	}
	if !ps.trusted(p) {
		return p.String()
	}
	client := p
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		client = a.Unmap()
		if !ps.trusted(client) {
			break
		}
	}
	return client.String()
}

// secure tells whether the browser came over HTTPS, by TLS or a trusted proxy's header.
func (ps proxies) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	p, ok := peer(r)
	if !ok || !ps.trusted(p) {
		return false
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}
