package localenv

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pgHBA is the pg_hba.conf of a cluster started with a password: every connection, over
// loopback TCP or the Unix socket, gives the password of its role.
const pgHBA = `# Written by acv (internal/localenv) on every start of a cluster with a password.
# TYPE  DATABASE  USER  ADDRESS        METHOD
local   all       all                  scram-sha-256
host    all       all   127.0.0.1/32   scram-sha-256
host    all       all   ::1/128        scram-sha-256
`

// pgHBAOpening is the pg_hba.conf until securePostgres has set the password: the superuser in
// over the Unix socket (mode 0700, in the data directory), TCP asked for it throughout.
const pgHBAOpening = `# Written by acv (internal/localenv) while it sets the superuser's password; replaced at once.
# TYPE  DATABASE  USER      ADDRESS        METHOD
local   all       postgres                 trust
host    all       all       127.0.0.1/32   scram-sha-256
host    all       all       ::1/128        scram-sha-256
`

// securePostgres sets the superuser's password over the socket pgHBAOpening trusts, writes
// pgHBA, reloads it and waits until it is in effect. It runs on every start, so a cluster gets
// there however it was left (trusting loopback, or another password).
func securePostgres(ctx context.Context, pg *Postgres, cred *syscall.Credential) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := connectSocket(ctx, pg)
	if err != nil {
		return fmt.Errorf("postgres: set the superuser's password: %w", err)
	}
	defer conn.Close(ctx)
	// The server's log (Process.Output, in error messages) must not show the statement, which
	// carries the password, even if it fails.
	if _, err := conn.Exec(ctx, "SET log_statement = 'none'; SET log_min_error_statement = 'panic'"); err != nil {
		return fmt.Errorf("postgres: set the superuser's password: %w", err)
	}
	// checkPassword admits no quote, so the literal needs no escaping.
	if _, err := conn.Exec(ctx, "ALTER ROLE postgres PASSWORD '"+pg.password+"'"); err != nil {
		return fmt.Errorf("postgres: set the superuser's password: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(pg.Dir, "pg_hba.conf"), []byte(pgHBA), 0o600, cred); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	var reloaded bool
	if err := conn.QueryRow(ctx, "SELECT pg_reload_conf()").Scan(&reloaded); err != nil || !reloaded {
		return fmt.Errorf("postgres: reload pg_hba.conf: %v %w", reloaded, err)
	}
	// The postmaster reads the file when it handles the signal: until then it lets us in.
	err = Poll(ctx, time.Minute, 20*time.Millisecond, func() error {
		c, err := connectSocket(ctx, pg)
		if err == nil {
			c.Close(ctx)
			return errors.New("pg_hba.conf not in effect after reloading it")
		}
		var pe *pgconn.PgError // SQLSTATE class 28: invalid authorization specification
		if errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28") {
			return nil
		}
		return giveUp{err}
	})
	if err != nil {
		return fmt.Errorf("postgres: after reloading pg_hba.conf: %w", err)
	}
	return nil
}

// connectSocket connects as the superuser without a password over the Unix socket in pg's
// data directory, ignoring the environment's PG* settings and ~/.pgpass.
func connectSocket(ctx context.Context, pg *Postgres) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig("sslmode=disable")
	if err != nil {
		return nil, err
	}
	cfg.Host, cfg.Port = pg.Dir, uint16(pg.Port)
	cfg.User, cfg.Password, cfg.Database = "postgres", "", "postgres"
	cfg.Fallbacks = nil
	return pgx.ConnectConfig(ctx, cfg)
}
