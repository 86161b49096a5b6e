package cache_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
)

// RedisClient is a client of an empty Redis for one test (a fresh redis-server, or the shared
// cluster when OnRedisCluster), closed when the test ends.
func RedisClient(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	var rdb redis.UniversalClient
	if testkit.OnRedisCluster(tb) {
		c := testkit.RedisCluster(tb, localenv.ClusterOptions{})
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), PoolSize: 64})
	} else {
		r := testkit.RedisServer(tb, localenv.RedisOptions{})
		rdb = redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: 64})
	}
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}
