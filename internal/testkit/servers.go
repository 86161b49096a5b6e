package testkit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acv/acv/internal/localenv"
)

// shared holds the servers one test binary starts once and every test of it uses: starting
// PostgreSQL takes seconds, a database in it a few milliseconds.
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

// suiteDir is a new directory in the test binary's temporary directory, for a server of tb's.
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
