package testkit

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/internal/localenv"
)

// LoadRedis makes the redis-server at addr (started with Debug) reload its dataset slowly, so
// that it answers LOADING for at least about d, as a Redis restarting with a large AOF does,
// and returns once it does. done waits until Redis serves again; it also runs at the test's end.
func LoadRedis(tb testing.TB, addr string, d time.Duration) (done func()) {
	tb.Helper()
	ctx := context.Background()
	// No retries and no read deadline: DEBUG RELOAD answers only once the reload is over.
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ReadTimeout: -1, PoolSize: 4})
	const perKey = 100 * time.Microsecond // key-load-delay: the pause after loading each key
	keys := int(d/perKey) + 1
	for _, cmd := range [][]any{
		{"DEBUG", "POPULATE", keys, "acv-test-filler", 8},
		{"CONFIG", "SET", "key-load-delay", strconv.Itoa(int(perKey / time.Microsecond))},
		// Answer other clients (with LOADING) every KiB loaded rather than every 2 MiB.
		{"CONFIG", "SET", "loading-process-events-interval-bytes", "1024"},
	} {
		if err := rdb.Do(ctx, cmd...).Err(); err != nil {
			rdb.Close()
			tb.Fatalf("prepare redis to load (%v): %v (is DEBUG enabled: localenv.RedisOptions{Debug: true}?)", cmd[:2], err)
		}
	}
	reloaded := make(chan error, 1)
	go func() { reloaded <- rdb.Do(ctx, "DEBUG", "RELOAD").Err() }()
	err := localenv.Poll(ctx, 10*time.Second, time.Millisecond, func() error {
		select {
		case err := <-reloaded:
			rdb.Close()
			tb.Fatalf("redis reloaded before it was seen loading (err %v): make d longer", err)
		default:
		}
		if err := rdb.Ping(ctx).Err(); !redis.IsLoadingError(err) {
			return fmt.Errorf("PING answers %v", err)
		}
		return nil
	})
	if err != nil {
		rdb.Close()
		tb.Fatalf("redis did not start loading: %v", err)
	}
	var finished bool
	done = func() {
		tb.Helper()
		if finished {
			return
		}
		finished = true
		defer rdb.Close()
		if err := <-reloaded; err != nil {
			tb.Errorf("DEBUG RELOAD: %v", err)
		}
		if err := rdb.Do(ctx, "CONFIG", "SET", "key-load-delay", "0").Err(); err != nil {
			tb.Errorf("reset key-load-delay: %v", err)
		}
		if err := rdb.Ping(ctx).Err(); err != nil {
			tb.Errorf("redis after the reload: ping: %v", err)
		}
	}
	tb.Cleanup(done)
	return done
}
