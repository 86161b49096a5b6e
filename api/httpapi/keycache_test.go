package httpapi

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/acv/acv/api/contract"
)

// countingKeys answers one keys key and counts every lookup; unreachable makes it fail.
type countingKeys struct {
	key         contract.APIKey
	lookups     atomic.Int64
	unreachable atomic.Bool
}

func (c *countingKeys) APIKey(_ context.Context, id string) (contract.APIKey, error) {
	c.lookups.Add(1)
	if c.unreachable.Load() {
		return contract.APIKey{}, errors.New("stores unreachable")
	}
	if id == c.key.ID {
		return c.key, nil
	}
	return contract.APIKey{}, fmt.Errorf("api key %s: %w", id, contract.ErrNotFound)
}

func newTestKeyCache(r *countingKeys, now func() time.Time) *keyCache {
	lookups := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lookups"}, []string{"result"})
	return newKeyCache(keysOnly{r}, 5*time.Second, time.Minute, now, lookups)
}

// keysOnly is a Records that answers only APIKey, all the key cache asks.
type keysOnly struct{ *countingKeys }

func (keysOnly) Project(context.Context, string) (contract.Project, error) { panic("unused") }
func (keysOnly) Statistics(context.Context, string, int64) (contract.Statistics, error) {
	panic("unused")
}
func (keysOnly) CodeByValue(context.Context, string, string) (contract.CodeRecord, error) {
	panic("unused")
}
func (keysOnly) CodeByID(context.Context, string, string) (contract.CodeRecord, error) {
	panic("unused")
}
func (keysOnly) ListCodes(context.Context, string, contract.ListQuery, int64) ([]contract.CodeRecord, int64, error) {
	panic("unused")
}
func (keysOnly) Logs(context.Context, string, int) ([]contract.LogEntry, error) { panic("unused") }
func (keysOnly) ProjectStatistics(context.Context, string, int64, int) (contract.Statistics, []contract.RecentVerification, error) {
	panic("unused")
}

// A flood of unknown key ids, more than the cache holds, never pushes out the key in use: it
// is still answered from process memory afterwards.
func TestUnknownKeysNeverEvictKnownOnes(t *testing.T) {
	keys := &countingKeys{key: contract.APIKey{ID: contract.NewKeyID(), Secret: "s"}}
	now := time.Unix(1_800_000_000, 0)
	k := newTestKeyCache(keys, func() time.Time { return now })
	ctx := context.Background()
	if e, err := k.get(ctx, keys.key.ID); err != nil || !e.found {
		t.Fatalf("keys key: %+v %v", e, err)
	}
	for i := 0; i < maxCachedKeys+5000; i++ {
		if e, err := k.get(ctx, contract.NewID()); err != nil || e.found {
			t.Fatalf("unknown id %d: %+v %v", i, e, err)
		}
	}
	before := keys.lookups.Load()
	if e, err := k.get(ctx, keys.key.ID); err != nil || !e.found {
		t.Fatalf("keys key after the flood: %+v %v", e, err)
	}
	if keys.lookups.Load() != before {
		t.Fatal("the flood evicted the key in use: it was looked up again")
	}
}

// While the stores cannot be reached, a lookup up to the stale bound is served; past it, the
// failure is the answer.
func TestStaleKeyWhileStoresAreDown(t *testing.T) {
	keys := &countingKeys{key: contract.APIKey{ID: contract.NewKeyID(), Secret: "s"}}
	now := time.Unix(1_800_000_000, 0)
	k := newTestKeyCache(keys, func() time.Time { return now })
	ctx := context.Background()
	if _, err := k.get(ctx, keys.key.ID); err != nil {
		t.Fatal(err)
	}
	keys.unreachable.Store(true)
	now = now.Add(30 * time.Second) // past the TTL, within the stale bound
	if e, err := k.get(ctx, keys.key.ID); err != nil || !e.found {
		t.Fatalf("within the stale bound: %+v %v", e, err)
	}
	now = now.Add(time.Minute) // past the stale bound
	if _, err := k.get(ctx, keys.key.ID); err == nil {
		t.Fatal("a lookup older than the stale bound was served")
	}
	keys.unreachable.Store(false)
	if e, err := k.get(ctx, keys.key.ID); err != nil || !e.found {
		t.Fatalf("after the stores came back: %+v %v", e, err)
	}
}
