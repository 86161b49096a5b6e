package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/singleflight"
)

// Context keys the middleware and handlers set.
const (
	ctxKey         = "acv.key"
	ctxBody        = "acv.body"
	ctxReplay      = "acv.replay"
	ctxBodyH       = "acv.bodyhash"
	ctxAuthFailure = "acv.authfail"
	ctxOutcome     = "acv.outcome"
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
	for _, m := range [...][2]string{{"X-API-Key", keyID}, {"X-Timestamp", ts}, {"X-Signature", sig}} {
		if m[1] == "" {
			return unauthorized(AuthMissing, "Missing "+m[0]+" header")
		}
	}
	tsVal, err := contract.ParseTimestamp(ts)
	if err != nil {
		return unauthorized(AuthMalformed, "X-Timestamp must be Unix seconds")
	}
	if _, present := h["X-Nonce"]; present && !contract.ValidNonce(nonce) {
		return unauthorized(AuthMalformed, "X-Nonce must be 16 to 64 characters of A-Z, a-z, 0-9, _ and -")
	}
	method := c.Request.Method
	rawPath, rawQuery := splitRequestURI(c.Request)
	bodyHash := contract.BodySHA256(body)
	// An unknown key id and a bad signature are answered alike, from the request alone: telling
	// them apart would tell an attacker which key ids exist (metrics and the access log keep the
	// difference). Clients match the sentence's start, so it stays.
	refuseCredentials := func(why AuthFailure) error {
		return unauthorized(why, "Invalid API key or signature: "+contract.ExplainSignature(method, rawPath, rawQuery, bodyHash, ts, nonce))
	}
	var entry *keyEntry
	if contract.ValidID(keyID) {
		if entry, err = s.keys.get(c.Request.Context(), keyID); err != nil {
			return err
		}
	}
	if entry == nil || !entry.found {
		return refuseCredentials(AuthUnknownKey)
	}
	key := entry.key
	if !entry.verify(sig, method, rawPath, rawQuery, bodyHash, ts, nonce) {
		return refuseCredentials(AuthBadSignature)
	}
	if key.Revoked {
		return unauthorized(AuthRevoked, "API key has been revoked")
	}
	now := s.now().Unix()
	if d := now - tsVal; d > contract.SignatureWindow || d < -contract.SignatureWindow {
		return unauthorized(AuthSkew, "Request timestamp is outside the allowed window of 300 seconds; server time is "+strconv.FormatInt(now, 10))
	}
	replay := contract.ReplayIdentity(sig, nonce)
	if s.cfg.KeyUses != nil {
		s.cfg.KeyUses.Used(key.ID, s.now())
	}
	c.Set(ctxKey, key)
	c.Set(ctxBody, body)
	c.Set(ctxBodyH, bodyHash)
	c.Set(ctxReplay, replay)

	isPost := method == http.MethodPost
	if pid, err := pathValue(c, "project_id"); err != nil || pid != key.ProjectID {
		// Still refuse a replay with 401 before telling the caller it has the wrong project.
		if err := s.admit(c, key, isPost || nonce != ""); err != nil {
			return err
		}
		return &contract.Error{Kind: contract.KindForbidden, Message: "API key is not valid for this project"}
	}
	// Verify and reactivate are admitted in the hot path; the reads once validated (admitRead).
	if !isPost && !key.ProjectEnabled {
		return unauthorized(AuthProjectDisabled, "Project is disabled")
	}
	return nil
}

// admitRead runs the replay check (when X-Nonce is sent) and the token bucket of a read, after
// validation, so a malformed request spends neither its nonce nor a token.
func (s *Server) admitRead(c *gin.Context) error {
	return s.admit(c, keyOf(c), c.GetHeader("X-Nonce") != "")
}

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
// turns its refusals into the contract's answers.
func (s *Server) bucketAnswered(c *gin.Context, key contract.APIKey, rs contract.RateState, err error) error {
	refused := errors.Is(err, contract.ErrReplayed) || errors.Is(err, contract.ErrRateLimited) ||
		errors.Is(err, contract.ErrIdempotencyConflict)
	if err != nil && !refused {
		return err
	}
	setRateHeaders(c, key, rs)
	switch {
	case errors.Is(err, contract.ErrReplayed):
		// Without X-Nonce the detail says how to send an identical request on purpose.
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
	l, remaining, reset := key.Limit(), 0, 0
	if l.Rate > 0 {
		remaining = max(rs.Remaining, 0)
		reset = int(math.Ceil(float64(l.Burst-remaining) / l.Rate))
	}
	c.Header("X-RateLimit-Limit", strconv.Itoa(l.Burst))
	c.Header("X-RateLimit-Remaining", strconv.Itoa(remaining))
	c.Header("X-RateLimit-Reset", strconv.Itoa(reset))
}

var errTooLarge = &contract.Error{Kind: contract.KindTooLarge, Message: "Request body is larger than 64 KiB"}

func readBody(c *gin.Context) ([]byte, error) {
	if c.Request.ContentLength > contract.MaxBodyBytes {
		return nil, errTooLarge
	}
	if c.Request.Body == nil || c.Request.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, contract.MaxBodyBytes+1))
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

// maxCachedKeys bounds each half of the key cache: ids that name no key are kept apart, so a
// flood of made-up ids evicts only other made-up ids.
const maxCachedKeys = 100_000

// keyCache keeps API-key lookups for ttl, so authentication costs no store query per request
// while revocation takes effect within ttl; a lookup up to staleFor old covers a failed refresh.
type keyCache struct {
	records interface {
		APIKey(ctx context.Context, id string) (contract.APIKey, error)
	}
	ttl, staleFor time.Duration
	now           func() time.Time
	group         singleflight.Group
	lookups       *prometheus.CounterVec
	known         *lru.Cache[string, *keyEntry]
	unknown       *lru.Cache[string, *keyEntry]
}

type keyEntry struct {
	key       contract.APIKey
	found     bool
	fetched   time.Time
	verifiers sync.Pool
}

func (e *keyEntry) verify(signature, method, rawPath, rawQuery, bodySHA256Hex, timestamp, nonce string) bool {
	v, _ := e.verifiers.Get().(*contract.Verifier)
	if v == nil {
		v = contract.NewVerifier(e.key.Secret)
	}
	ok := v.Verify(signature, method, rawPath, rawQuery, bodySHA256Hex, timestamp, nonce)
	e.verifiers.Put(v)
	return ok
}

func newKeyCache(r Records, ttl, staleFor time.Duration, now func() time.Time, lookups *prometheus.CounterVec) *keyCache {
	known, _ := lru.New[string, *keyEntry](maxCachedKeys)
	unknown, _ := lru.New[string, *keyEntry](maxCachedKeys)
	return &keyCache{records: r, ttl: ttl, staleFor: staleFor, now: now, lookups: lookups, known: known, unknown: unknown}
}

func (k *keyCache) get(ctx context.Context, id string) (*keyEntry, error) {
	prev, ok := k.known.Get(id)
	if !ok {
		prev, ok = k.unknown.Get(id)
	}
	if ok && k.now().Sub(prev.fetched) < k.ttl {
		k.lookups.WithLabelValues("hit").Inc()
		return prev, nil
	}
	k.lookups.WithLabelValues("miss").Inc()
	v, err, _ := k.group.Do(id, func() (interface{}, error) {
		key, err := k.records.APIKey(ctx, id)
		if err != nil && !errors.Is(err, contract.ErrNotFound) {
			return nil, fmt.Errorf("look up api key: %w", err)
		}
		e := &keyEntry{key: key, found: err == nil, fetched: k.now()}
		in, out := k.known, k.unknown
		if !e.found {
			in, out = out, in
		}
		in.Add(id, e)
		out.Remove(id)
		return e, nil
	})
	if err != nil {
		if ok && k.now().Sub(prev.fetched) < k.staleFor {
			k.lookups.WithLabelValues("stale").Inc()
			return prev, nil
		}
		return nil, err
	}
	return v.(*keyEntry), nil
}

// KeyUseSink keeps when each API key last authenticated a request (store.TouchAPIKeys).
type KeyUseSink interface {
	TouchAPIKeys(ctx context.Context, ids []string, at []time.Time) error
}

// KeyUses remembers when each API key last authenticated a request and flushes that to
// PostgreSQL every interval (Run): a write per request would put PostgreSQL back on the
// verify path. Each replica flushes its own and the UPDATE keeps the newest.
type KeyUses struct {
	sink KeyUseSink
	log  *slog.Logger
	// used maps a key id to its last use since the last flush, in unix ns: a compare-and-swap
	// per request, no lock for every core to queue on.
	used sync.Map // string → *atomic.Int64
}

// NewKeyUses records into sink; log receives a failed flush.
func NewKeyUses(sink KeyUseSink, log *slog.Logger) *KeyUses {
	if log == nil {
		log = slog.Default()
	}
	return &KeyUses{sink: sink, log: log}
}

// Used notes that key id authenticated a request at t.
func (k *KeyUses) Used(id string, t time.Time) {
	v, ok := k.used.Load(id)
	if !ok {
		v, _ = k.used.LoadOrStore(id, new(atomic.Int64))
	}
	last, ns := v.(*atomic.Int64), t.UnixNano()
	for {
		cur := last.Load()
		if cur >= ns || last.CompareAndSwap(cur, ns) {
			return
		}
	}
}

// Flush writes the uses noted since the last flush; on failure they are kept for the next one.
func (k *KeyUses) Flush(ctx context.Context) error {
	batch := make(map[string]time.Time)
	k.used.Range(func(id, v any) bool {
		if ns := v.(*atomic.Int64).Swap(0); ns != 0 {
			batch[id.(string)] = time.Unix(0, ns)
		}
		return true
	})
	if len(batch) == 0 {
		return nil
	}
	// In id order, so two replicas flushing at once lock the rows in the same order.
	ids := slices.Sorted(maps.Keys(batch))
	at := make([]time.Time, len(ids))
	for i, id := range ids {
		at[i] = batch[id]
	}
	if err := k.sink.TouchAPIKeys(ctx, ids, at); err != nil {
		for i, id := range ids {
			k.Used(id, at[i])
		}
		return err
	}
	return nil
}

// Run flushes every interval until ctx ends, then once more, so a drained process loses none.
func (k *KeyUses) Run(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := k.Flush(fctx); err != nil {
				k.log.Warn("flush api key last use at shutdown", "err", err)
			}
			return nil
		case <-t.C:
			if err := k.Flush(ctx); err != nil && ctx.Err() == nil {
				k.log.Warn("flush api key last use; retried at the next flush", "err", err)
			}
		}
	}
}
