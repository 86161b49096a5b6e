package cache_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
)

// replicated starts a master with one replica that has synchronised, and returns a client of
// each.
func replicated(tb testing.TB, o localenv.RedisOptions) (master, replica *redis.Client) {
	tb.Helper()
	m := testkit.RedisServer(tb, o)
	ro := o
	ro.ReplicaOf = m.Addr
	r := testkit.RedisServer(tb, ro)
	master = redis.NewClient(&redis.Options{Addr: m.Addr, PoolSize: 64})
	replica = redis.NewClient(&redis.Options{Addr: r.Addr})
	tb.Cleanup(func() { master.Close(); replica.Close() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, _ := replica.Info(context.Background(), "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			return master, replica
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the replica did not synchronise: %s", info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// With WithReplicaWait, a verify succeeds only once a replica holds it: the replica shows the
// code used at the moment the master's answer arrives, for plain and coalesced calls alike.
// Without a replica to acknowledge, the verify is refused as unavailable, not acknowledged.
func TestReplicaWait(t *testing.T) {
	for _, co := range []bool{false, true} {
		t.Run(fmt.Sprintf("coalesced=%v", co), func(t *testing.T) {
			master, replica := replicated(t, localenv.RedisOptions{AOF: true})
			opts := []cache.Option{cache.WithReplicaWait(1, 2*time.Second)}
			if co {
				opts = append(opts, cache.WithCoalescing(2, 16))
			}
			f := newFixtureOn(t, master, opts...)
			onReplica := cache.New(replica)
			const n = 40
			for i := 0; i < n; i++ {
				f.code(fmt.Sprintf("W%d", i), contract.CodeRecord{})
			}
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				op := f.call(contract.ActionVerify, fmt.Sprintf("W%d", i))
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := f.c.Apply(context.Background(), op)
					if err != nil || !r.Outcome.Success() {
						t.Errorf("verify %s: %+v %v", op.Code, r, err)
						return
					}
					// Acknowledged: the replica already holds the redemption.
					live, found, err := onReplica.LiveCode(context.Background(), f.pid, op.Code)
					if err != nil || !found || live.VerifiedAtMs == 0 {
						t.Errorf("%s acknowledged but the replica shows %+v (found %v, %v)", op.Code, live, found, err)
					}
				}()
			}
			wg.Wait()
		})
	}
	t.Run("no replica", func(t *testing.T) {
		testkit.OnEachRedis(t, func(t *testing.T) {
			f := newFixture(t, cache.WithReplicaWait(1, 100*time.Millisecond))
			f.code("LONELY", contract.CodeRecord{})
			_, err := f.c.Apply(context.Background(), f.call(contract.ActionVerify, "LONELY"))
			if contract.KindOf(err) != contract.KindUnavailable {
				t.Fatalf("verify without a replica to acknowledge: %v, want unavailable", err)
			}
		})
	})
}

// On a cluster WAIT counts the replicas of the node it is sent to: each master gets its own
// calls followed by its own WAIT, and an acknowledged verify is on its master's replica,
// wherever its shard lives.
func TestReplicaWaitOnCluster(t *testing.T) {
	c := testkit.RedisCluster(t, localenv.ClusterOptions{Replicas: 1, AOF: true})
	master := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolSize: 64})
	// ReadOnly sends reads to a replica of the slot's master.
	replica := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ReadOnly: true})
	t.Cleanup(func() { master.Close(); replica.Close() })
	for _, co := range []bool{false, true} {
		t.Run(fmt.Sprintf("coalesced=%v", co), func(t *testing.T) {
			opts := []cache.Option{cache.WithReplicaWait(1, 2*time.Second)}
			if co {
				opts = append(opts, cache.WithCoalescing(2, 16))
			}
			f := newFixtureOn(t, master, opts...)
			onReplica := cache.New(replica)
			const n = 60
			masters := map[string]bool{}
			for i := 0; i < n; i++ {
				v := fmt.Sprintf("W%d", i)
				f.code(v, contract.CodeRecord{})
				m, err := master.MasterForKey(context.Background(), cache.ShardPrefix(cache.ShardOf(f.pid, v)))
				if err != nil {
					t.Fatal(err)
				}
				masters[m.Options().Addr] = true
			}
			if len(masters) != 3 {
				t.Fatalf("the codes live on %d masters, want all 3", len(masters))
			}
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				op := f.call(contract.ActionVerify, fmt.Sprintf("W%d", i))
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := f.c.Apply(context.Background(), op)
					if err != nil || !r.Outcome.Success() {
						t.Errorf("verify %s: %+v %v", op.Code, r, err)
						return
					}
					live, found, err := onReplica.LiveCode(context.Background(), f.pid, op.Code)
					if err != nil || !found || live.VerifiedAtMs == 0 {
						t.Errorf("%s acknowledged but its replica shows %+v (found %v, %v)", op.Code, live, found, err)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// BenchmarkVerifyDurability is the cost of each durability choice for one verify, against the
// default measured in the same run (AOF fsync every second): appendfsync always, and WAIT for
// one replica. 64 concurrent callers, one code each call.
func BenchmarkVerifyDurability(b *testing.B) {
	for _, tc := range []struct {
		name    string
		o       localenv.RedisOptions
		replica bool
	}{
		{"aof-everysec", localenv.RedisOptions{AOF: true}, false},
		{"aof-always", localenv.RedisOptions{AOF: true, FsyncAlways: true}, false},
		{"wait-1-replica", localenv.RedisOptions{AOF: true}, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var rdb *redis.Client
			var opts []cache.Option
			if tc.replica {
				rdb, _ = replicated(b, tc.o)
				opts = append(opts, cache.WithReplicaWait(1, time.Second))
			} else {
				srv := testkit.RedisServer(b, tc.o)
				rdb = redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 128})
				b.Cleanup(func() { rdb.Close() })
			}
			c := cache.New(rdb, opts...)
			ctx := context.Background()
			pid := contract.NewID()
			if err := c.PublishProject(ctx, contract.Project{ID: pid, Status: true}, 0); err != nil {
				b.Fatal(err)
			}
			recs := make([]contract.CodeRecord, b.N)
			for i := range recs {
				recs[i] = contract.CodeRecord{ID: contract.NewID(), Code: fmt.Sprintf("B%09d", i)}
			}
			if err := c.PutCodes(ctx, pid, recs); err != nil {
				b.Fatal(err)
			}
			var next sync.Mutex
			i := 0
			b.SetParallelism(32) // 64 callers on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					next.Lock()
					v := recs[i].Code
					i++
					next.Unlock()
					op := contract.Operation{Action: contract.ActionVerify, ProjectID: pid, KeyID: "bench", Code: v,
						IP: "127.0.0.1", ReplayKey: contract.NewID(), EventID: contract.NewID(), Now: time.Now()}
					if r, err := c.Verify(ctx, op); err != nil || !r.Outcome.Success() {
						b.Fatalf("verify %s: %+v %v", v, r, err)
					}
				}
			})
		})
	}
}
