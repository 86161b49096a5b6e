package testkit

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/settings"
)

// sharedCluster is a cluster started once per test binary and options, lent to one test at a
// time.
type sharedCluster struct {
	lease  sync.Mutex
	start  func() (*localenv.RedisCluster, error)
	holder atomic.Value // name of the test holding the lease
}

var clusters struct {
	shared sync.Map // localenv.ClusterOptions → *sharedCluster
	// onCluster holds the names of the tests whose stacks and Redis clients use a cluster.
	onCluster sync.Map
}

// RedisCluster returns a running, emptied Redis Cluster for one test: without replicas the shared
// one of its options, held until the test ends (its subtests get it as it is), else its own.
func RedisCluster(tb testing.TB, o localenv.ClusterOptions) *localenv.RedisCluster {
	tb.Helper()
	if o.Replicas > 0 {
		c, err := localenv.StartRedisCluster(suiteDir(tb, "redis-cluster-"), o)
		if err != nil {
			tb.Fatalf("start redis cluster: %v", err)
		}
		tb.Cleanup(c.Close)
		return c
	}
	v, _ := clusters.shared.LoadOrStore(o, &sharedCluster{start: sync.OnceValues(func() (*localenv.RedisCluster, error) {
		if err := suite.init(); err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp(suite.dir, "redis-cluster-")
		if err != nil {
			return nil, err
		}
		return localenv.StartRedisCluster(dir, o)
	})})
	sc := v.(*sharedCluster)
	if h, _ := sc.holder.Load().(string); h != "" && (tb.Name() == h || strings.HasPrefix(tb.Name(), h+"/")) {
		c, _ := sc.start()
		return c
	}
	sc.lease.Lock()
	sc.holder.Store(tb.Name())
	tb.Cleanup(func() {
		sc.holder.Store("")
		sc.lease.Unlock()
	})
	c, err := sc.start()
	if err != nil {
		tb.Fatalf("start redis cluster: %v", err)
	}
	if err := c.WaitOK(30 * time.Second); err != nil {
		tb.Fatalf("shared redis cluster: %v", err)
	}
	if err := c.FlushAll(); err != nil {
		tb.Fatalf("empty the shared redis cluster: %v", err)
	}
	return c
}

// stopRedisClusters stops every cluster the test binary started; Main calls it.
func stopRedisClusters() {
	clusters.shared.Range(func(_, sc any) bool {
		if c, _ := sc.(*sharedCluster).start(); c != nil {
			c.Close()
		}
		return true
	})
}

// UseRedisCluster makes the test and its subtests run on a Redis Cluster wherever they ask
// for Redis (NewStack, cache's RedisClient), unchanged; ACV_TEST_REDIS=cluster does it for
// every test:
//
//	func TestContractOnRedisCluster(t *testing.T) { testkit.UseRedisCluster(t); TestContract(t) }
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

// stackRedis is a Stack's Redis and its URL: the caller's own cluster, the shared cluster, or
// a redis-server with AOF and DEBUG (for LoadRedis).
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
