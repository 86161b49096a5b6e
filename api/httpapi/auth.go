package httpapi

import (
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/store"
	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/trace"
)

// Context keys set by authenticate for the handlers.
const (
	ctxKey    = "acv.key"
	ctxBody   = "acv.body"
	ctxReplay = "acv.replay"
	ctxBodyH  = "acv.bodyhash"
)

// AuthFailure names why a request was refused authentication; metrics count by it.
type AuthFailure string

// Reasons a request fails authentication.
const (
	AuthMissing         AuthFailure = "missing_headers"
	AuthMalformed       AuthFailure = "malformed_headers"
	AuthUnknownKey      AuthFailure = "unknown_key"
	AuthRevoked         AuthFailure = "revoked_key"
	AuthBadSignature    AuthFailure = "bad_signature"
	AuthSkew            AuthFailure = "timestamp_skew"
	AuthReplay          AuthFailure = "replay"
	AuthProjectDisabled AuthFailure = "project_disabled"
)

// authenticate checks the contract's HMAC scheme, then the key's project against the path.
// 401 comes before 403: a bad signature on another project's path is a 401.
func (s *Server) authenticate(c *gin.Context) {
	body, ok := s.readBody(c)
	if !ok {
		return
	}
	h := c.Request.Header
	keyID, ts, sig, nonce := h.Get("X-API-Key"), h.Get("X-Timestamp"), h.Get("X-Signature"), h.Get("X-Nonce")
	switch {
	case keyID == "":
		s.unauthorized(c, AuthMissing, "Missing X-API-Key header")
		return
	case ts == "":
		s.unauthorized(c, AuthMissing, "Missing X-Timestamp header")
		return
	case sig == "":
		s.unauthorized(c, AuthMissing, "Missing X-Signature header")
		return
	}
	tsVal, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		s.unauthorized(c, AuthMalformed, "X-Timestamp must be Unix seconds")
		return
	}
	if _, present := h["X-Nonce"]; present && !contract.ValidNonce(nonce) {
		s.unauthorized(c, AuthMalformed, "X-Nonce must be 16 to 64 characters of A-Z, a-z, 0-9, _ and -")
		return
	}
	if !contract.ValidID(keyID) {
		s.unauthorized(c, AuthUnknownKey, "Invalid API key")
		return
	}
	entry, err := s.keys.get(c.Request.Context(), keyID)
	if err != nil {
		s.fail(c, "look up api key", err)
		return
	}
	if !entry.found {
		s.unauthorized(c, AuthUnknownKey, "Invalid API key")
		return
	}
	key := entry.key
	rawPath, rawQuery := splitRequestURI(c.Request)
	bodyHash := contract.BodySHA256(body)
	if !entry.verify(sig, c.Request.Method, rawPath, rawQuery, bodyHash, ts, nonce) {
		s.unauthorized(c, AuthBadSignature, "Invalid signature")
		return
	}
	if key.Revoked {
		s.unauthorized(c, AuthRevoked, "API key has been revoked")
		return
	}
	now := s.cfg.Now().Unix()
	if d := now - tsVal; d > contract.SignatureWindow || d < -contract.SignatureWindow {
		s.unauthorized(c, AuthSkew, "Request timestamp is outside the allowed window of 300 seconds; server time is "+strconv.FormatInt(now, 10))
		return
	}
	replay := sig
	if nonce != "" {
		replay = nonce
	}
	c.Set(ctxKey, key)
	c.Set(ctxBody, body)
	c.Set(ctxBodyH, bodyHash)
	c.Set(ctxReplay, replay)

	isPost := c.Request.Method == http.MethodPost
	if pid, err := pathValue(c, "project_id"); err != nil || pid != key.ProjectID {
		// Still refuse a replay with 401 before telling the caller it has the wrong project.
		if s.admit(c, key, isPost || nonce != "") {
			abort(c, http.StatusForbidden, "API key is not valid for this project")
		}
		return
	}
	if isPost {
		// Verify and reactivate run the replay check and the token bucket in their own script.
		return
	}
	if !key.ProjectEnabled {
		s.unauthorized(c, AuthProjectDisabled, "Project is disabled")
		return
	}
	// The read handlers admit the request themselves once it is validated (admitRead).
	c.Next()
}

// admitRead runs the replay check (when X-Nonce is sent) and the token bucket of a read. The
// read handlers call it after validating the request, so a request refused as malformed spends
// neither its nonce nor a token, as with verify and reactivate: the client can send the
// corrected request with the same nonce. It answers the refusal itself and reports whether to go on.
func (s *Server) admitRead(c *gin.Context) bool {
	return s.admit(c, keyOf(c), c.GetHeader("X-Nonce") != "")
}

// admit runs the replay check and token bucket of a request outside verify/reactivate and
// answers 401 or 429 itself when it refuses.
func (s *Server) admit(c *gin.Context, key store.APIKey, checkReplay bool) bool {
	if !checkReplay && key.RatePerSec <= 0 {
		setRateHeaders(c, key, -1)
		return true
	}
	start := time.Now()
	ctx, span := s.tracer.Start(c.Request.Context(), "redis admit.lua", trace.WithSpanKind(trace.SpanKindClient))
	r, err := s.cfg.HotPath.Admit(ctx, cache.Admission{
		ProjectID: key.ProjectID, KeyID: key.ID, ReplayKey: c.GetString(ctxReplay),
		CheckReplay: checkReplay, Limit: limitOf(key), Now: s.cfg.Now(),
	})
	span.End()
	s.metrics.script.WithLabelValues("admit").Observe(time.Since(start).Seconds())
	if err != nil {
		s.fail(c, "admit request", err)
		return false
	}
	return s.admitted(c, key, r)
}

// admitted sets the rate-limit headers and answers a refusal; it reports whether to go on.
func (s *Server) admitted(c *gin.Context, key store.APIKey, r cache.Result) bool {
	setRateHeaders(c, key, r.Rate.Remaining)
	switch r.Status {
	case cache.StatusReplayed:
		s.unauthorized(c, AuthReplay, "Request replayed")
		return false
	case cache.StatusRateLimited:
		secs := int(math.Ceil(r.Rate.Wait.Seconds()))
		if secs < 1 {
			secs = 1
		}
		c.Header("Retry-After", strconv.Itoa(secs))
		s.metrics.rateLimited.Inc()
		abort(c, http.StatusTooManyRequests, "Rate limit exceeded; retry after "+strconv.Itoa(secs)+" seconds")
		return false
	}
	return true
}

func limitOf(k store.APIKey) cache.Limit {
	if k.RatePerSec <= 0 || k.Burst <= 0 {
		return cache.Limit{}
	}
	return cache.Limit{Rate: k.RatePerSec, Burst: k.Burst}
}

// setRateHeaders writes X-RateLimit-*: Limit is the bucket size, Remaining the whole tokens
// left, Reset the seconds until the bucket is full. An unlimited key shows 0 for all three.
func setRateHeaders(c *gin.Context, key store.APIKey, remaining int) {
	l := limitOf(key)
	if l.Rate <= 0 {
		c.Header("X-RateLimit-Limit", "0")
		c.Header("X-RateLimit-Remaining", "0")
		c.Header("X-RateLimit-Reset", "0")
		return
	}
	if remaining < 0 {
		remaining = 0
	}
	reset := int(math.Ceil(float64(l.Burst-remaining) / l.Rate))
	c.Header("X-RateLimit-Limit", strconv.Itoa(l.Burst))
	c.Header("X-RateLimit-Remaining", strconv.Itoa(remaining))
	c.Header("X-RateLimit-Reset", strconv.Itoa(reset))
}

func (s *Server) unauthorized(c *gin.Context, why AuthFailure, detail string) {
	c.Set(ctxAuthFailure, why)
	s.metrics.authFailures.WithLabelValues(string(why)).Inc()
	abort(c, http.StatusUnauthorized, detail)
}

// readBody reads the body up to the contract's 64 KiB and answers 413 past it.
func (s *Server) readBody(c *gin.Context) ([]byte, bool) {
	if c.Request.ContentLength > contract.MaxBodyBytes {
		abort(c, http.StatusRequestEntityTooLarge, "Request body is larger than 64 KiB")
		return nil, false
	}
	if c.Request.Body == nil || c.Request.Body == http.NoBody {
		return nil, true
	}
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, contract.MaxBodyBytes+1))
	if err != nil {
		abort(c, http.StatusBadRequest, "Could not read the request body")
		return nil, false
	}
	if len(body) > contract.MaxBodyBytes {
		abort(c, http.StatusRequestEntityTooLarge, "Request body is larger than 64 KiB")
		return nil, false
	}
	return body, true
}

// splitRequestURI returns the path exactly as sent (still percent-encoded) and the raw query.
func splitRequestURI(r *http.Request) (string, string) {
	uri := r.RequestURI
	if uri == "" || !strings.HasPrefix(uri, "/") {
		return r.URL.EscapedPath(), r.URL.RawQuery
	}
	path, query, _ := strings.Cut(uri, "?")
	return path, query
}
