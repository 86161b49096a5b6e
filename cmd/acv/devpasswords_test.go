package main

import (
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/internal/localenv"
)

// `make run` must not make every user of the machine a superuser of its Redis and PostgreSQL:
// both ask for a password of the data directory's own (redis.password and pg.password, mode
// 0600), the URLs in .acv/env carry them, and a restart uses the same ones. A data directory
// of an earlier acv dev, whose servers trusted every loopback connection, gets passwords on
// its next start and keeps its data.
func TestDevServersAskForPasswords(t *testing.T) {
	if testing.Short() {
		t.Skip("builds acv and runs acv dev three times")
	}
	binDir := t.TempDir()
	bin := filepath.Join(binDir, "acv")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/acv: %v\n%s", err, out)
	}

	t.Run("new data directory", func(t *testing.T) {
		h := newDevHarness(t, bin, "acv-devpw-")
		dev := h.start()
		first := checkDevPasswords(t, h, dev)
		if code := h.stop(dev, syscall.SIGTERM); code != 0 {
			t.Errorf("acv dev exited with %d after SIGTERM", code)
		}
		dev = h.start()
		again := checkDevPasswords(t, h, dev)
		if again != first {
			t.Errorf("the restart changed the passwords")
		}
		if code := h.stop(dev, syscall.SIGTERM); code != 0 {
			t.Errorf("acv dev exited with %d after SIGTERM", code)
		}
	})

	t.Run("data directory of an earlier acv dev", func(t *testing.T) {
		h := newDevHarness(t, bin, "acv-devpw-old-")
		legacyDevData(t, h.data)
		dev := h.start()
		checkDevPasswords(t, h, dev)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dev.pgURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var kept string
		if err := conn.QueryRow(ctx, "SELECT note FROM upgrade_marker").Scan(&kept); err != nil || kept != "before" {
			t.Errorf("PostgreSQL's data after the upgrade: %q, %v", kept, err)
		}
		opt, err := redis.ParseURL(dev.redisURL)
		if err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(opt)
		defer rdb.Close()
		if v, err := rdb.Get(ctx, "upgrade-marker").Result(); err != nil || v != "before" {
			t.Errorf("Redis' data after the upgrade: %q, %v", v, err)
		}
		if code := h.stop(dev, syscall.SIGTERM); code != 0 {
			t.Errorf("acv dev exited with %d after SIGTERM", code)
		}
	})
}

// newDevHarness makes a work directory the postgres user can traverse (the server runs as it
// when we are root) for acv dev runs of bin on its data directory.
func newDevHarness(t *testing.T, bin, prefix string) *devHarness {
	t.Helper()
	work, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	h := &devHarness{t: t, work: work, data: filepath.Join(work, "data"), bin: bin}
	t.Cleanup(h.cleanup)
	return h
}

// legacyDevData makes in data what acv dev made before its servers had passwords: a PostgreSQL
// cluster that trusts every loopback connection (initdb --auth=trust) with the acv database,
// and a Redis append-only file, each holding a marker.
func legacyDevData(t *testing.T, data string) {
	t.Helper()
	ctx := context.Background()
	// As acv dev makes it: the postgres user must reach the cluster inside.
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	pgDir, err := localenv.PostgresDataDir(data)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := localenv.StartPostgres(ctx, pgDir, localenv.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop()
	if err := pg.CreateDatabase(ctx, "acv"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, pg.URL("acv"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE upgrade_marker (note text); INSERT INTO upgrade_marker VALUES ('before')"); err != nil {
		t.Fatal(err)
	}
	rds, err := localenv.StartRedis(filepath.Join(data, "redis"), localenv.RedisOptions{AOF: true, FsyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rds.Stop(10 * time.Second)
	rdb := redis.NewClient(&redis.Options{Addr: rds.Addr})
	defer rdb.Close()
	if err := rdb.Set(ctx, "upgrade-marker", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// devPasswords are the contents of a data directory's redis.password and pg.password.
type devPasswords struct{ redis, postgres string }

// checkDevPasswords checks that the running dev's servers refuse a client without the password
// (Redis over TCP, PostgreSQL over TCP and over its Unix socket), that the URLs of .acv/env
// carry the passwords of the files and work, and that the files are the owner's only. It
// returns the passwords.
func checkDevPasswords(t *testing.T, h *devHarness, dev *devProcess) devPasswords {
	t.Helper()
	ctx := context.Background()
	read := func(name string) string {
		path := filepath.Join(h.data, name)
		fi, err := os.Stat(path)
		if err != nil {
			// The servers' checks below still run: they say what a missing password allows.
			t.Errorf("the password file: %v", err)
			return ""
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pw := strings.TrimSpace(string(b))
		if len(pw) < 32 {
			t.Errorf("%s holds a password of %d characters", path, len(pw))
		}
		return pw
	}
	pws := devPasswords{redis: read("redis.password"), postgres: read("pg.password")}

	// Redis.
	opt, err := redis.ParseURL(dev.redisURL)
	if err != nil {
		t.Fatal(err)
	}
	if opt.Password != pws.redis {
		t.Errorf("ACV_REDIS_URL does not carry the password of redis.password")
	}
	withPassword := redis.NewClient(opt)
	defer withPassword.Close()
	if err := withPassword.Ping(ctx).Err(); err != nil {
		t.Errorf("PING with ACV_REDIS_URL: %v", err)
	}
	without := redis.NewClient(&redis.Options{Addr: opt.Addr, MaxRetries: -1})
	defer without.Close()
	if err := without.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("PING without a password answered %v, want NOAUTH", err)
	}

	// PostgreSQL.
	u, err := url.Parse(dev.pgURL)
	if err != nil {
		t.Fatal(err)
	}
	if pw, _ := u.User.Password(); pw != pws.postgres || u.User.Username() != "postgres" {
		t.Errorf("ACV_DATABASE_URL does not carry user postgres with the password of pg.password")
	}
	conn, err := pgx.Connect(ctx, dev.pgURL)
	if err != nil {
		t.Errorf("connect with ACV_DATABASE_URL: %v", err)
	} else {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM projects").Scan(&n); err != nil || n == 0 {
			t.Errorf("read the dev database with ACV_DATABASE_URL: %d projects, %v", n, err)
		}
		conn.Close(ctx)
	}
	pgDir := filepath.Join(h.data, "pg")
	if b, err := os.ReadFile(filepath.Join(h.data, "pg.location")); err == nil {
		pgDir = strings.TrimSpace(string(b))
	}
	for _, via := range []struct{ name, host string }{{"loopback TCP", u.Hostname()}, {"the Unix socket", pgDir}} {
		cfg, err := pgx.ParseConfig(dev.pgURL)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Host, cfg.Password, cfg.Fallbacks = via.host, "", nil
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			c.Close(ctx)
		}
		if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) || pe.Code != "28P01" {
			t.Errorf("PostgreSQL over %s without a password: %v, want password authentication failed (28P01)", via.name, err)
		}
	}
	return pws
}
