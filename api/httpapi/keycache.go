package httpapi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/acv/acv/api/contract"
)

// maxCachedKeys bounds each of the two halves of the key cache. Keys that exist and ids that
// name no key are kept apart, so a flood of made-up ids evicts only other made-up ids, never
// the keys in use.
const maxCachedKeys = 100_000

// keyCache keeps API-key lookups in process for a few seconds (the TTL), so authentication
// costs no store query per request while revocation and project disable still take effect
// within the TTL. When a refresh fails (the stores are unreachable) a lookup up to staleFor old
// is served instead of failing every request; a revocation written to the key mirror is seen at
// the first refresh that succeeds.
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

// keyEntry is one cached lookup, with a pool of signature verifiers for the key's secret.
type keyEntry struct {
	key       contract.APIKey
	found     bool
	fetched   time.Time
	verifiers sync.Pool
}

// verify checks a signature with the key's secret.
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

// cached is the newest lookup of id held in either half.
func (k *keyCache) cached(id string) (*keyEntry, bool) {
	if e, ok := k.known.Get(id); ok {
		return e, true
	}
	return k.unknown.Get(id)
}

// get returns the lookup of a key id; its found tells whether the key exists.
func (k *keyCache) get(ctx context.Context, id string) (*keyEntry, error) {
	prev, ok := k.cached(id)
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
		if e.found {
			k.known.Add(id, e)
			k.unknown.Remove(id)
		} else {
			k.unknown.Add(id, e)
			k.known.Remove(id)
		}
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
