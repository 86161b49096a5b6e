package testkit

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/store"
)

// NewAdmin is the operator's Admin wired as in production on a fresh migrated database and a
// Redis of the test's own, with the database's URL and the Redis client; all closed at the end.
func NewAdmin(tb testing.TB) (a *admin.Admin, pgURL string, rdb *redis.Client) {
	tb.Helper()
	ctx := context.Background()
	pgURL = PostgresDB(tb)
	if err := store.Migrate(ctx, pgURL); err != nil {
		tb.Fatal(err)
	}
	st, err := store.Open(ctx, pgURL)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(st.Close)
	r := RedisServer(tb, localenv.RedisOptions{})
	rdb = redis.NewClient(&redis.Options{Addr: r.Addr})
	tb.Cleanup(func() { rdb.Close() })
	return &admin.Admin{Store: st, Cache: cache.New(rdb, cache.WithLoader(st)), Keys: MasterKeys(tb, "test")}, pgURL, rdb
}
