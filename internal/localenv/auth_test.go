package localenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
)

const (
	testRedisPassword = "redis-test-password-0123456789abcdef"
	testPGPassword    = "pg-test-password-0123456789abcdef"
)

// A redis-server started with a password refuses every command before AUTH, reads the password
// from auth.conf (mode 0600), not from its command line, and names it in its URL. A data directory
// of a server without a password keeps its data when the server gets one.
func TestRedisPassword(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open, err := StartRedis(dir, RedisOptions{AOF: true})
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: open.Addr})
	if err := rdb.Set(ctx, "kept", "yes", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.Close()
	open.Stop(10 * time.Second)

	r, err := StartRedis(dir, RedisOptions{AOF: true, Password: testRedisPassword})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop(10 * time.Second) })
	if want := "redis://:" + testRedisPassword + "@" + r.Addr + "/0"; r.URL() != want {
		t.Errorf("URL %q, want %q", r.URL(), want)
	}
	without := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
	defer without.Close()
	if err := without.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("PING without the password: %v, want NOAUTH", err)
	}
	opt, err := redis.ParseURL(r.URL())
	if err != nil {
		t.Fatal(err)
	}
	with := redis.NewClient(opt)
	defer with.Close()
	if v, err := with.Get(ctx, "kept").Result(); err != nil || v != "yes" {
		t.Errorf("GET with the URL: %q, %v; want the value written before the password", v, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "auth.conf")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("auth.conf: %v; want mode 0600", err)
	}
}

// A PostgreSQL cluster started with a password asks every connection for it, over loopback TCP
// and over its Unix socket: a new one from initdb on, and one made without a password (trust,
// as acv dev made them before) from the start that sets it on. Restarts keep it so.
func TestPostgresPassword(t *testing.T) {
	ctx := context.Background()
	t.Run("new cluster", func(t *testing.T) {
		dir := filepath.Join(pgTestDir(t), "pg")
		for start := 1; start <= 2; start++ {
			pg, err := StartPostgres(ctx, dir, PostgresOptions{Fast: true, Password: testPGPassword})
			if err != nil {
				t.Fatal(err)
			}
			checkPGPassword(t, pg)
			pg.Stop()
		}
	})
	t.Run("trust cluster", func(t *testing.T) {
		dir := filepath.Join(pgTestDir(t), "pg")
		pg, err := StartPostgres(ctx, dir, PostgresOptions{Fast: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := exec1(ctx, pg.URL("postgres"), "CREATE TABLE kept (x int)"); err != nil {
			t.Fatal(err)
		}
		pg.Stop()
		for start := 1; start <= 2; start++ {
			pg, err := StartPostgres(ctx, dir, PostgresOptions{Fast: true, Password: testPGPassword})
			if err != nil {
				t.Fatal(err)
			}
			checkPGPassword(t, pg)
			if _, err := exec1(ctx, pg.URL("postgres"), "SELECT count(*) FROM kept"); err != nil {
				t.Errorf("start %d: the cluster's data: %v", start, err)
			}
			pg.Stop()
		}
	})
}

// pgTestDir is a directory the postgres user can traverse (the server runs as it when we are
// root), removed after the test.
func pgTestDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "acv-localenv-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func checkPGPassword(t *testing.T, pg *Postgres) {
	t.Helper()
	ctx := context.Background()
	if !strings.Contains(pg.URL("acv"), "postgres:"+testPGPassword+"@") {
		t.Errorf("URL %q lacks the password", pg.URL("acv"))
	}
	if _, err := exec1(ctx, pg.URL("postgres"), "SELECT 1"); err != nil {
		t.Errorf("connect with the password: %v", err)
	}
	for _, host := range []string{"127.0.0.1", pg.Dir} {
		cfg, err := pgx.ParseConfig(pg.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Host, cfg.Password = host, ""
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			c.Close(ctx)
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "28P01" {
			t.Errorf("connect to %s without the password: %v; want 28P01", host, err)
		}
	}
}

func exec1(ctx context.Context, url, sql string) (pgconn.CommandTag, error) {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer c.Close(ctx)
	return c.Exec(ctx, sql)
}
