package httpapi

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/store"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
)

// keyCache keeps API-key lookups in process for a few seconds, so authentication costs no
// Postgres query per request while revocation and project disable still take effect within
// the TTL. Unknown key ids are cached too, so guessing ids cannot load the database.
type keyCache struct {
	records interface {
		APIKey(ctx context.Context, id string) (store.APIKey, error)
	}
	ttl     time.Duration
	now     func() time.Time
	group   singleflight.Group
	lookups *prometheus.CounterVec

	mu      sync.RWMutex
	entries map[string]*keyEntry
}

// keyEntry is one cached lookup, with a pool of signature verifiers for the key's secret.
type keyEntry struct {
	key       store.APIKey
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

const maxCachedKeys = 100_000

func newKeyCache(r Records, ttl time.Duration, now func() time.Time, lookups *prometheus.CounterVec) *keyCache {
	return &keyCache{records: r, ttl: ttl, now: now, lookups: lookups, entries: make(map[string]*keyEntry)}
}

// get returns the cached lookup of a key id; its found tells whether the key exists.
func (k *keyCache) get(ctx context.Context, id string) (*keyEntry, error) {
	now := k.now()
	k.mu.RLock()
	e, ok := k.entries[id]
	k.mu.RUnlock()
	if ok && now.Sub(e.fetched) < k.ttl {
		k.lookups.WithLabelValues("hit").Inc()
		return e, nil
	}
	k.lookups.WithLabelValues("miss").Inc()
	v, err, _ := k.group.Do(id, func() (interface{}, error) {
		key, err := k.records.APIKey(ctx, id)
		found := err == nil
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		e := &keyEntry{key: key, found: found, fetched: now}
		k.mu.Lock()
		if len(k.entries) >= maxCachedKeys {
			k.entries = make(map[string]*keyEntry)
		}
		k.entries[id] = e
		k.mu.Unlock()
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*keyEntry), nil
}
