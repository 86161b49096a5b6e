package httpapi

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// KeyUseSink is where the last use of the API keys is kept (store.TouchAPIKeys): for each id,
// the time it last authenticated a request, moved only forward.
type KeyUseSink interface {
	TouchAPIKeys(ctx context.Context, ids []string, at []time.Time) error
}

// KeyUses remembers, in memory, when each API key last authenticated a request in this
// process, and flushes that to PostgreSQL in one statement every interval (Run).
//
// Why in memory and not on each request: the verify hot path reads no PostgreSQL at all
// (keys come from a cache, codes from Redis), and a write per request would put PostgreSQL
// back on it — thousands of UPDATEs a second to the same few rows, each a lock and a dead
// tuple. Why not Redis: it would be a write per request there instead, plus a job to copy it
// to PostgreSQL for the console to read; the map costs a lookup and an atomic compare-and-swap per request
// and a single UPDATE … FROM unnest per interval for every key used, whatever the traffic.
// The price is a last-used time up to one interval (10 s by default) old, and lost for the
// last interval of a process killed without a drain; the shown time is "last used at least
// then", which is what an operator rotating keys needs. With several API replicas each
// flushes its own; the UPDATE keeps the newest time, so the order of flushes does not matter.
type KeyUses struct {
	sink KeyUseSink
	log  *slog.Logger
	// used maps a key id to its last use since the last flush, in unix nanoseconds (0: none):
	// every request notes its key, so the common case (a key seen before) is a lookup and an
	// atomic compare-and-swap, with no lock that all of a replica's cores would queue on.
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

// Flush writes the uses noted since the last flush. On failure they are kept for the next
// one (unless a newer use of the same key came in meanwhile).
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
	ids := make([]string, 0, len(batch))
	for id := range batch {
		ids = append(ids, id)
	}
	slices.Sort(ids)
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

// Run flushes every interval until ctx ends, then once more, so a drained process loses no
// use.
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
