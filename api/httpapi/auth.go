package httpapi

import (
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
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

// authHeaders are the headers authentication reads; each must be sent at most once, so a
// request has one reading.
var authHeaders = [...]string{"X-Api-Key", "X-Timestamp", "X-Signature", "X-Nonce"}

// authFailure is a 401 that also tells metrics and the access log why.
type authFailure struct {
	reason AuthFailure
	err    *contract.Error
}

func (e *authFailure) Error() string { return e.err.Message }
func (e *authFailure) Unwrap() error { return e.err }

// badCredentials starts the one answer to an unknown or malformed key id and to a bad
// signature: telling them apart would tell an attacker which key ids exist. The access log and
// acv_auth_failures_total keep the difference (unknown_key, bad_signature). Clients match the
// sentence's start, so it stays.
const badCredentials = "Invalid API key or signature"

// refuseCredentials answers an unknown or malformed key id and a bad signature alike. The
// detail goes on to show the string to sign the server built from the request
// (contract.ExplainSignature), so a client whose signature is refused can see which line it
// signed differently; it is built from the request alone, with no secret and no MAC, so it is
// the same whether the key exists or not. It is built only here, on the refusal: the accepted
// path allocates nothing for it.
func refuseCredentials(why AuthFailure, r *http.Request, body []byte, ts, nonce string) error {
	rawPath, rawQuery := splitRequestURI(r)
	explained := contract.ExplainSignature(r.Method, rawPath, rawQuery, contract.BodySHA256(body), ts, nonce)
	return unauthorized(why, badCredentials+": "+explained)
}

func unauthorized(why AuthFailure, detail string) error {
	return &authFailure{reason: why, err: &contract.Error{Kind: contract.KindUnauthorized, Message: detail}}
}

// authenticate checks the contract's HMAC scheme, then the key's project against the path.
// 401 comes before 403: a bad signature on another project's path is a 401.
func (s *Server) authenticate(c *gin.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	h := c.Request.Header
	for _, name := range authHeaders {
		if len(h[name]) > 1 {
			return unauthorized(AuthMalformed, "Send "+name+" once")
		}
	}
	keyID, ts, sig, nonce := h.Get("X-API-Key"), h.Get("X-Timestamp"), h.Get("X-Signature"), h.Get("X-Nonce")
	switch {
	case keyID == "":
		return unauthorized(AuthMissing, "Missing X-API-Key header")
	case ts == "":
		return unauthorized(AuthMissing, "Missing X-Timestamp header")
	case sig == "":
		return unauthorized(AuthMissing, "Missing X-Signature header")
	}
	tsVal, err := contract.ParseTimestamp(ts)
	if err != nil {
		return unauthorized(AuthMalformed, "X-Timestamp must be Unix seconds")
	}
	if _, present := h["X-Nonce"]; present && !contract.ValidNonce(nonce) {
		return unauthorized(AuthMalformed, "X-Nonce must be 16 to 64 characters of A-Z, a-z, 0-9, _ and -")
	}
	if !contract.ValidID(keyID) {
		return refuseCredentials(AuthUnknownKey, c.Request, body, ts, nonce)
	}
	entry, err := s.keys.get(c.Request.Context(), keyID)
	if err != nil {
		return err
	}
	if !entry.found {
		return refuseCredentials(AuthUnknownKey, c.Request, body, ts, nonce)
	}
	key := entry.key
	rawPath, rawQuery := splitRequestURI(c.Request)
	bodyHash := contract.BodySHA256(body)
	if !entry.verify(sig, c.Request.Method, rawPath, rawQuery, bodyHash, ts, nonce) {
		return refuseCredentials(AuthBadSignature, c.Request, body, ts, nonce)
	}
	if key.Revoked {
		return unauthorized(AuthRevoked, "API key has been revoked")
	}
	now := s.now().Unix()
	if d := now - tsVal; d > contract.SignatureWindow || d < -contract.SignatureWindow {
		return unauthorized(AuthSkew, "Request timestamp is outside the allowed window of 300 seconds; server time is "+strconv.FormatInt(now, 10))
	}
	// The verifier accepts only the contract's spelling of each header, so the identity is
	// derived from what was signed, never from how a header was written.
	replay := contract.ReplayIdentity(sig, nonce)
	// The key proved itself (signature, not revoked, in the time window): that is a use, noted
	// in memory only (KeyUses says why).
	if s.cfg.KeyUses != nil {
		s.cfg.KeyUses.Used(key.ID, s.now())
	}
	c.Set(ctxKey, key)
	c.Set(ctxBody, body)
	c.Set(ctxBodyH, bodyHash)
	c.Set(ctxReplay, replay)

	isPost := c.Request.Method == http.MethodPost
	if pid, err := pathValue(c, "project_id"); err != nil || pid != key.ProjectID {
		// Still refuse a replay with 401 before telling the caller it has the wrong project.
		if err := s.admit(c, key, isPost || nonce != ""); err != nil {
			return err
		}
		return &contract.Error{Kind: contract.KindForbidden, Message: "API key is not valid for this project"}
	}
	if isPost {
		// Verify and reactivate run the replay check and the token bucket in their own script.
		return nil
	}
	if !key.ProjectEnabled {
		return unauthorized(AuthProjectDisabled, "Project is disabled")
	}
	// The read handlers admit the request themselves once it is validated (admitRead).
	return nil
}

// admitRead runs the replay check (when X-Nonce is sent) and the token bucket of a read. The
// read handlers call it after validating the request, so a request refused as malformed spends
// neither its nonce nor a token, as with verify and reactivate: the client can send the
// corrected request with the same nonce.
func (s *Server) admitRead(c *gin.Context) error {
	return s.admit(c, keyOf(c), c.GetHeader("X-Nonce") != "")
}

// admit runs the replay check and token bucket of a request outside verify/reactivate.
func (s *Server) admit(c *gin.Context, key contract.APIKey, checkReplay bool) error {
	if !checkReplay && key.Limit().Rate <= 0 {
		setRateHeaders(c, key, contract.RateState{Remaining: -1})
		return nil
	}
	start := time.Now()
	ctx, span := s.tracer.Start(c.Request.Context(), "redis admit.lua", trace.WithSpanKind(trace.SpanKindClient))
	rs, err := s.cfg.HotPath.Admit(ctx, contract.Admission{
		ProjectID: key.ProjectID, KeyID: key.ID, ReplayKey: c.GetString(ctxReplay),
		CheckReplay: checkReplay, Limit: key.Limit(), Now: s.now(),
	})
	span.End()
	s.metrics.script.WithLabelValues("admit").Observe(time.Since(start).Seconds())
	return s.bucketAnswered(c, key, rs, err)
}

// bucketAnswered sets the rate-limit headers after the hot path consulted the key's bucket and
// turns its refusals into the contract's answers: a replay is a 401, an empty bucket a 429 with
// Retry-After, an Idempotency-Key used with another request a 409.
func (s *Server) bucketAnswered(c *gin.Context, key contract.APIKey, rs contract.RateState, err error) error {
	refused := errors.Is(err, contract.ErrReplayed) || errors.Is(err, contract.ErrRateLimited) ||
		errors.Is(err, contract.ErrIdempotencyConflict)
	if err != nil && !refused {
		return err
	}
	setRateHeaders(c, key, rs)
	switch {
	case errors.Is(err, contract.ErrReplayed):
		// Without X-Nonce the replay identity is the signature, so an identical request sent on
		// purpose within the window is refused too: the detail says how to repeat one.
		if c.GetHeader("X-Nonce") == "" {
			return &authFailure{reason: AuthReplay, err: contract.ErrReplayedWithoutNonce}
		}
		return &authFailure{reason: AuthReplay, err: contract.ErrReplayed}
	case errors.Is(err, contract.ErrRateLimited):
		secs := max(1, int(math.Ceil(rs.Wait.Seconds())))
		c.Header("Retry-After", strconv.Itoa(secs))
		s.metrics.rateLimited.Inc()
		return contract.Errorf(contract.KindRateLimited, "Rate limit exceeded; retry after %d seconds", secs)
	case errors.Is(err, contract.ErrIdempotencyConflict):
		s.metrics.idemReplays.WithLabelValues("conflict").Inc()
	}
	return err
}

// setRateHeaders writes X-RateLimit-*: Limit is the bucket size, Remaining the whole tokens
// left, Reset the seconds until the bucket is full. An unlimited key shows 0 for all three.
func setRateHeaders(c *gin.Context, key contract.APIKey, rs contract.RateState) {
	l := key.Limit()
	if l.Rate <= 0 {
		c.Header("X-RateLimit-Limit", "0")
		c.Header("X-RateLimit-Remaining", "0")
		c.Header("X-RateLimit-Reset", "0")
		return
	}
	remaining := max(rs.Remaining, 0)
	reset := int(math.Ceil(float64(l.Burst-remaining) / l.Rate))
	c.Header("X-RateLimit-Limit", strconv.Itoa(l.Burst))
	c.Header("X-RateLimit-Remaining", strconv.Itoa(remaining))
	c.Header("X-RateLimit-Reset", strconv.Itoa(reset))
}

func (s *Server) countAuthFailure(c *gin.Context, why AuthFailure) {
	c.Set(ctxAuthFailure, why)
	s.metrics.authFailures.WithLabelValues(string(why)).Inc()
}

// errTooLarge answers a body past the contract's 64 KiB.
var errTooLarge = &contract.Error{Kind: contract.KindTooLarge, Message: "Request body is larger than 64 KiB"}

// readBody reads the body up to the contract's 64 KiB.
func readBody(c *gin.Context) ([]byte, error) {
	if c.Request.ContentLength > contract.MaxBodyBytes {
		return nil, errTooLarge
	}
	if c.Request.Body == nil || c.Request.Body == http.NoBody {
		return nil, nil
	}
	var body []byte
	var err error
	if n := c.Request.ContentLength; n > 0 {
		// The length is known and within bounds: one buffer of that size, instead of
		// io.ReadAll's growing ones. A body longer than announced is cut at the announced
		// length by net/http itself.
		body = make([]byte, n)
		_, err = io.ReadFull(c.Request.Body, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(c.Request.Body, contract.MaxBodyBytes+1))
	}
	if err != nil {
		return nil, invalid("Could not read the request body")
	}
	if len(body) > contract.MaxBodyBytes {
		return nil, errTooLarge
	}
	return body, nil
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
