package testkit

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/acv/acv/internal/localenv"
)

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
