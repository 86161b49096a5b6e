package testkit

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/settings"
)

// Redis Cluster in tests. Starting a 3-master cluster takes about 2.5 s on the 2-core test
// machine (with a replica each, about 9 s: the replicas' first sync), a fresh redis-server 50
// ms. So a cluster without replicas is started once per test binary and options, and lent to
// one test at a time: the test holds it exclusively until it ends, and finds it emptied
// (FLUSHALL on every master; the loaded scripts stay). A cluster with replicas — a test that
// kills nodes — is the test's own, started for it and stopped after it.

// sharedCluster is one cluster lent to one test at a time.
type sharedCluster struct {
	lease  sync.Mutex
	once   sync.Once
	c      *localenv.RedisCluster
	err    error
	holder atomic.Value // name of the test holding the lease
}

var clusters struct {
	mu     sync.Mutex
	shared map[localenv.ClusterOptions]*sharedCluster
	own    []*localenv.RedisCluster
	// onCluster holds the names of the tests whose stacks and Redis clients use a cluster.
	onCluster sync.Map
}

// RedisCluster returns a running Redis Cluster on loopback for one test, emptied: the shared
// cluster of its options when it has no replicas (held by this test alone until it ends), else
// one started for the test and stopped when it ends. A subtest of the test holding a shared
// cluster gets it as it is, not emptied; a second call from the holder itself too.
func RedisCluster(tb testing.TB, o localenv.ClusterOptions) *localenv.RedisCluster {
	tb.Helper()
	if err := suite.init(); err != nil {
		tb.Fatalf("prepare test dir: %v", err)
	}
	if o.Replicas > 0 {
		dir, err := os.MkdirTemp(suite.dir, "redis-cluster-")
		if err != nil {
			tb.Fatalf("redis cluster dir: %v", err)
		}
		c, err := localenv.StartRedisCluster(dir, o)
		if err != nil {
			tb.Fatalf("start redis cluster: %v", err)
		}
		clusters.mu.Lock()
		clusters.own = append(clusters.own, c)
		clusters.mu.Unlock()
		tb.Cleanup(c.Close)
		return c
	}
	clusters.mu.Lock()
	if clusters.shared == nil {
		clusters.shared = map[localenv.ClusterOptions]*sharedCluster{}
	}
	sc := clusters.shared[o]
	if sc == nil {
		sc = &sharedCluster{}
		clusters.shared[o] = sc
	}
	clusters.mu.Unlock()
	if h, _ := sc.holder.Load().(string); h != "" && (tb.Name() == h || strings.HasPrefix(tb.Name(), h+"/")) {
		return sc.c
	}
	sc.lease.Lock()
	sc.holder.Store(tb.Name())
	tb.Cleanup(func() {
		sc.holder.Store("")
		sc.lease.Unlock()
	})
	sc.once.Do(func() {
		dir, err := os.MkdirTemp(suite.dir, "redis-cluster-")
		if err != nil {
			sc.err = err
			return
		}
		sc.c, sc.err = localenv.StartRedisCluster(dir, o)
	})
	if sc.err != nil {
		tb.Fatalf("start redis cluster: %v", sc.err)
	}
	if err := sc.c.WaitOK(30 * time.Second); err != nil {
		tb.Fatalf("shared redis cluster: %v", err)
	}
	if err := sc.c.FlushAll(); err != nil {
		tb.Fatalf("empty the shared redis cluster: %v", err)
	}
	return sc.c
}

// stopRedisClusters stops every cluster the test binary started; Main calls it.
func stopRedisClusters() {
	clusters.mu.Lock()
	defer clusters.mu.Unlock()
	for _, sc := range clusters.shared {
		if sc.c != nil {
			sc.c.Close()
		}
	}
	for _, c := range clusters.own {
		c.Close()
	}
}

// UseRedisCluster makes the test, and its subtests, run on a 3-master Redis Cluster wherever
// they ask testkit for Redis: the Stacks they build (NewStack) and RedisClient. A test written
// for one Redis then runs on the cluster unchanged:
//
//	func TestContractOnRedisCluster(t *testing.T) { testkit.UseRedisCluster(t); TestContract(t) }
//
// ACV_TEST_REDIS=cluster in the environment does the same for every test of the run.
func UseRedisCluster(tb testing.TB) {
	clusters.onCluster.Store(tb.Name(), true)
	tb.Cleanup(func() { clusters.onCluster.Delete(tb.Name()) })
}

// OnEachRedis runs fn twice, as the subtests "redis" (one redis-server) and "cluster" (a
// 3-master Redis Cluster, UseRedisCluster).
func OnEachRedis(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	t.Run("redis", fn)
	t.Run("cluster", func(t *testing.T) {
		UseRedisCluster(t)
		fn(t)
	})
}

// OnRedisCluster tells whether tb runs on a Redis Cluster (UseRedisCluster, or
// ACV_TEST_REDIS=cluster).
func OnRedisCluster(tb testing.TB) bool {
	if settings.Get("ACV_TEST_REDIS") == "cluster" {
		return true
	}
	name := tb.Name()
	found := false
	clusters.onCluster.Range(func(k, _ any) bool {
		n := k.(string)
		found = name == n || strings.HasPrefix(name, n+"/")
		return !found
	})
	return found
}

// RedisClient is a client of an empty Redis for one test: a fresh redis-server, or on a
// Redis Cluster (OnRedisCluster) the shared cluster, held by the test until it ends. It is
// closed when the test ends.
func RedisClient(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	var rdb redis.UniversalClient
	if OnRedisCluster(tb) {
		c := RedisCluster(tb, localenv.ClusterOptions{})
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolSize: 64})
	} else {
		r := RedisServer(tb, localenv.RedisOptions{})
		rdb = redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: 64})
	}
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

// stackRedis starts the Redis of a Stack: one redis-server with its append-only file (and
// DEBUG from loopback, so a test can make it reload: LoadRedis), or the shared 3-master
// cluster, with append-only files, when asked or when the test runs on one; or it takes the
// caller's own cluster (StackOptions.OwnRedisCluster) as it is. It returns the server or the
// cluster and the URL the service is configured with.
func stackRedis(t *testing.T, o StackOptions) (*localenv.Redis, *localenv.RedisCluster, string) {
	t.Helper()
	if c := o.OwnRedisCluster; c != nil {
		return nil, c, c.URL()
	}
	if o.RedisCluster || OnRedisCluster(t) {
		c := RedisCluster(t, localenv.ClusterOptions{AOF: true})
		return nil, c, c.URL()
	}
	r := RedisServer(t, localenv.RedisOptions{AOF: true, Debug: true})
	return r, nil, "redis://" + r.Addr + "/0"
}
