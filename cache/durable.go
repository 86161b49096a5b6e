package cache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/redisscript"
)

// Durability: by default a verify is acknowledged once the Redis master applied it, and its
// append-only file reaches the disk within a second (appendfsync everysec): a process crash
// loses nothing, a host crash or a failover to a replica can lose up to about a second of
// acknowledged redemptions. WithReplicaWait closes the failover gap: every hot-path write is
// followed, on the same connection, by WAIT, and the call succeeds only when enough replicas
// hold it. (appendfsync always, a setting of the Redis server, closes the host-crash gap.)

// replicaWait is the WAIT that follows hot-path writes; zero replicas means none.
type replicaWait struct {
	replicas int
	timeout  time.Duration
}

// WithReplicaWait makes Verify, Reactivate and Admit answer only once replicas replicas hold
// their writes (WAIT), waiting at most timeout. When fewer acknowledge in time, the call fails
// with a contract.KindUnavailable error: the change is on the master and may or may not
// survive a failover, and a client retrying with the same Idempotency-Key learns its outcome.
func WithReplicaWait(replicas int, timeout time.Duration) Option {
	return func(c *Cache) {
		if replicas > 0 {
			c.wait = replicaWait{replicas: replicas, timeout: max(timeout, time.Millisecond)}
		}
	}
}

// errNotReplicated is the shortfall of a WAIT.
func errNotReplicated(got, want int64) error {
	return contract.Unavailable(fmt.Errorf("write acknowledged by %d of %d redis replicas in time", got, want))
}

// sendBatch runs calls in one pipeline and, when w asks for replicas, a WAIT after them on the
// same connection (redisscript.Send, which also loads a script a node lacks and sends its calls
// again, with a WAIT of their own). Each call gets its own reply or error.
//
// On a cluster the batch is split by the master of each call's slot, and each master gets its
// calls (and its WAIT) in a pipeline of its own, on a connection to that node. WAIT counts the
// replicas of the node it is sent to, over the writes of its connection. And go-redis's own
// cluster pipeline is not safe for scripts while slots move: when the first command it sent a
// node is answered TRYAGAIN (a multi-key script in a slot being migrated) it sends that node's
// whole batch again, so the scripts of the batch that had run run a second time (a verify
// without Idempotency-Key is then refused as its own replay, though it redeemed the code). A
// call whose slot moved or is moving is answered MOVED, ASK or TRYAGAIN here and did not run;
// Cache.call sends it again.
func sendBatch(ctx context.Context, rdb Redis, batch []*redisscript.Call, w replicaWait) {
	if cl, ok := rdb.(cluster); ok {
		byMaster := map[*redis.Client][]*redisscript.Call{}
		for _, call := range batch {
			m, err := cl.MasterForKey(ctx, call.Keys[0])
			if err != nil {
				call.Err = err
				continue
			}
			byMaster[m] = append(byMaster[m], call)
		}
		var wg sync.WaitGroup
		for m, calls := range byMaster {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sendBatch(ctx, m, calls, w)
			}()
		}
		wg.Wait()
		return
	}
	redisscript.Send(ctx, rdb, batch, w.tail())
}

// tail is the WAIT that follows a pipeline of hot-path writes, or nil for none.
func (w replicaWait) tail() redisscript.Tail {
	if w.replicas == 0 {
		return nil
	}
	return func(ctx context.Context, p redis.Pipeliner) func() error {
		wait := p.Do(ctx, "WAIT", w.replicas, w.timeout.Milliseconds())
		return func() error {
			n, err := wait.Int64()
			if err != nil {
				return fmt.Errorf("wait for replicas: %w", err)
			}
			if n < int64(w.replicas) {
				return errNotReplicated(n, int64(w.replicas))
			}
			return nil
		}
	}
}
