package httpapi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
)

// maxCachedKeys bounds the key cache; the least recently used lookup leaves first, so a flood
// of unknown key ids cannot push the keys in use out all at once.
const maxCachedKeys = 100_000

// keyCache keeps API-key lookups in process for a few seconds, so authentication costs no
// Postgres query per request while revocation and project disable still take effect within
// the TTL. Unknown key ids are cached too, so guessing ids cannot load the database.
type keyCache struct {
	records interface {
		APIKey(ctx context.Context, id string) (contract.APIKey, error)
	}
	group   singleflight.Group
	lookups *prometheus.CounterVec
	entries *expirable.LRU[string, *keyEntry]
}

// keyEntry is one cached lookup, with a pool of signature verifiers for the key's secret.
type keyEntry struct {
	key       contract.APIKey
	found     bool
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

func newKeyCache(r Records, ttl time.Duration, lookups *prometheus.CounterVec) *keyCache {
	return &keyCache{records: r, lookups: lookups, entries: expirable.NewLRU[string, *keyEntry](maxCachedKeys, nil, ttl)}
}

// get returns the cached lookup of a key id; its found tells whether the key exists.
func (k *keyCache) get(ctx context.Context, id string) (*keyEntry, error) {
	if e, ok := k.entries.Get(id); ok {
		k.lookups.WithLabelValues("hit").Inc()
		return e, nil
	}
	k.lookups.WithLabelValues("miss").Inc()
	v, err, _ := k.group.Do(id, func() (interface{}, error) {
		key, err := k.records.APIKey(ctx, id)
		if err != nil && !errors.Is(err, contract.ErrNotFound) {
			return nil, fmt.Errorf("look up api key: %w", err)
		}
		e := &keyEntry{key: key, found: err == nil}
		k.entries.Add(id, e)
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*keyEntry), nil
}
