package testkit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/store"
)

// shared is what one test binary starts once for all its tests: starting PostgreSQL takes
// seconds, a database in it a few milliseconds.
type shared struct {
	once sync.Once
	err  error
	dir  string
	pg   *localenv.Postgres
	dbs  atomic.Int64
}

var suite shared

// Main runs a package's tests and stops every server they started (the real Kafka brokers
// too), so a test binary leaves no process or data directory behind. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if !stopKafkas() && code == 0 {
		code = 1
	}
	stopRedisClusters()
	suite.pg.Stop()
	if suite.dir != "" {
		os.RemoveAll(suite.dir)
	}
	os.Exit(code)
}

func (s *shared) init() error {
	s.once.Do(func() {
		dir, err := os.MkdirTemp("", "acv-test-")
		if err != nil {
			s.err = err
			return
		}
		// The postgres user must reach its data directory inside ours.
		if err := os.Chmod(dir, 0o755); err != nil {
			s.err = err
			return
		}
		s.dir = dir
		s.pg, s.err = localenv.StartPostgres(context.Background(), filepath.Join(dir, "pg"), localenv.PostgresOptions{Fast: true})
	})
	return s.err
}

// PostgresDB creates a fresh database on the test binary's PostgreSQL server (started on first
// use, stopped by Main) and returns its URL.
func PostgresDB(tb testing.TB) string {
	tb.Helper()
	if err := suite.init(); err != nil {
		tb.Fatalf("start postgres: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), suite.dbs.Add(1))
	if err := suite.pg.CreateDatabase(ctx, name); err != nil {
		tb.Fatal(err)
	}
	return suite.pg.URL(name)
}

// MigratedStore migrates the database at url to the current schema and opens a store on it,
// closed when the test ends.
func MigratedStore(tb testing.TB, url string) *store.Store {
	tb.Helper()
	ctx := context.Background()
	if err := store.Migrate(ctx, url); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	s, err := store.Open(ctx, url)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// RedisServer starts a fresh redis-server for one test and stops it when the test ends: Redis
// has no cheap per-test namespace the Lua scripts' keys would respect.
func RedisServer(tb testing.TB, o localenv.RedisOptions) *localenv.Redis {
	tb.Helper()
	r, err := localenv.StartRedis(suiteDir(tb, "redis-"), o)
	if err != nil {
		tb.Fatalf("start redis: %v", err)
	}
	tb.Cleanup(func() { r.Stop(5 * time.Second) })
	return r
}

func suiteDir(tb testing.TB, prefix string) string {
	tb.Helper()
	if err := suite.init(); err != nil {
		tb.Fatalf("prepare test dir: %v", err)
	}
	dir, err := os.MkdirTemp(suite.dir, prefix)
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

// OwnPostgres is a PostgreSQL server of one test, which the test may stop and start again as
// an outage would, without disturbing the other tests of the binary.
type OwnPostgres struct {
	t   testing.TB
	dir string
	pg  *localenv.Postgres
}

// StartOwnPostgres starts a server of the test's own, with a database "acv", stopped when the
// test ends.
func StartOwnPostgres(t testing.TB) *OwnPostgres {
	t.Helper()
	// The server runs as the postgres user when the tests run as root: it must reach its data.
	dir := suiteDir(t, "pg-own-")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &OwnPostgres{t: t, dir: filepath.Join(dir, "data")}
	p.Start()
	if err := p.pg.CreateDatabase(context.Background(), "acv"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.pg != nil {
			p.pg.Stop()
		}
	})
	return p
}

// URL is the connection string of the "acv" database.
func (p *OwnPostgres) URL() string { return p.pg.URL("acv") }

// Kill stops the server at once, as `pg_ctl stop -m immediate` or a crash does: no shutdown
// checkpoint, every connection cut.
func (p *OwnPostgres) Kill() {
	p.pg.Kill()
}

// Start starts the server (again) on its data directory and port.
func (p *OwnPostgres) Start() {
	p.t.Helper()
	port := 0
	if p.pg != nil {
		port = p.pg.Port
	}
	// Durable settings: a killed server must keep every commit it acknowledged, as a real one
	// does (the tests' shared server trades that for speed).
	pg, err := localenv.StartPostgres(context.Background(), p.dir, localenv.PostgresOptions{Port: port})
	if err != nil {
		p.t.Fatalf("start postgres: %v", err)
	}
	p.pg = pg
}

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
