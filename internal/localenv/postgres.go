package localenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PGBin is where Debian installs the PostgreSQL 15 server binaries.
const PGBin = "/usr/lib/postgresql/15/bin"

// PostgresOptions shape a PostgreSQL server.
type PostgresOptions struct {
	// Fast trades durability for speed (fsync off): for throwaway test clusters only.
	Fast bool
	// Port to listen on; 0 picks a free one.
	Port int
	// Standby starts a standby that never leaves recovery and refuses every connection with
	// SQLSTATE 57P03, as a server starting up does.
	Standby bool
	// Password, when set, is the superuser's, asked of every connection (scram-sha-256);
	// without it every connection is trusted.
	Password string
}

// Postgres is a running PostgreSQL server whose superuser is "postgres".
type Postgres struct {
	*Process
	Port     int
	Dir      string
	password string
}

// URL is the connection string of database db, with the superuser's password when it has one.
func (p *Postgres) URL(db string) string {
	user := url.User("postgres")
	if p.password != "" {
		user = url.UserPassword("postgres", p.password)
	}
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", user, p.Port, db)
}

// pgCredential runs the server as the postgres user when we are root: initdb refuses root.
func pgCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs the postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func pgBinary(name string) (string, error) {
	if p, err := exec.LookPath(filepath.Join(PGBin, name)); err == nil {
		return p, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("PostgreSQL server binary %s not found (apt-get install postgresql-15)", name)
}

// StartPostgres initialises a cluster in dir (when it holds none yet) and starts it on loopback.
// dir's parent must be traversable by the postgres user when running as root.
func StartPostgres(ctx context.Context, dir string, o PostgresOptions) (*Postgres, error) {
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	if o.Password != "" {
		if err := checkPassword(o.Password); err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		if o.Standby {
			return nil, errors.New("postgres: a standby refuses every connection, so its password cannot be set: start it without one")
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		if err := initdb(dir, cred, o.Password); err != nil {
			return nil, err
		}
	}
	if o.Password != "" {
		// Until securePostgres has set the password, the Unix socket lets the superuser in.
		if err := writeFileAtomic(filepath.Join(dir, "pg_hba.conf"), []byte(pgHBA("local   all       postgres                 trust")), 0o600, cred); err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
	}
	port := o.Port
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	bin, err := pgBinary("postgres")
	if err != nil {
		return nil, err
	}
	args := []string{"-D", dir, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300",
		"-c", "shared_buffers=256MB", "-c", "logging_collector=off",
		// A write-heavy server's checkpoints (docs/capacity.md, "PostgreSQL"): spaced by time,
		// with compressed full-page images, so the WAL of a verify is mostly its row.
		"-c", "max_wal_size=4GB", "-c", "checkpoint_timeout=15min", "-c", "checkpoint_completion_target=0.9",
		"-c", "wal_compression=lz4"}
	if o.Fast {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	if o.Password != "" {
		// The socket itself is the server user's only, as its directory is.
		args = append(args, "-c", "unix_socket_permissions=0700", "-c", "password_encryption=scram-sha-256")
	}
	if o.Standby {
		if err := writeFileAtomic(filepath.Join(dir, "standby.signal"), nil, 0o600, cred); err != nil {
			return nil, fmt.Errorf("standby signal: %w", err)
		}
		args = append(args, "-c", "hot_standby=off")
	}
	// A server a run that died left on dir is stopped first (fast shutdown); its backends may
	// hold the shared memory or the lock file a little longer, so such a refusal is retried.
	if err := stopStale(filepath.Join(dir, "postmaster.pid"), "postgres", syscall.SIGINT, 20*time.Second); err != nil {
		return nil, err
	}
	isready, err := pgBinary("pg_isready")
	if err != nil {
		return nil, err
	}
	// Ready when it accepts connections or, for a standby, answers and refuses them (exit 1).
	ready := func() error {
		err := exec.CommandContext(ctx, isready, "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres").Run()
		var ee *exec.ExitError
		if o.Standby && errors.As(err, &ee) && ee.ExitCode() == 1 {
			return nil
		}
		return err
	}
	var pg *Postgres
	err = Poll(ctx, 30*time.Second, 250*time.Millisecond, func() error {
		p, err := startReady(ctx, "postgres", cred, 30*time.Second, ready, bin, args...)
		if err != nil {
			if !strings.Contains(err.Error(), "pre-existing shared memory block") &&
				!strings.Contains(err.Error(), `lock file "postmaster.pid" already exists`) {
				return giveUp{err}
			}
			return err
		}
		pg = &Postgres{Process: p, Port: port, Dir: dir, password: o.Password}
		if o.Password != "" {
			if err := securePostgres(ctx, pg, cred); err != nil {
				p.Kill()
				return giveUp{err}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return pg, nil
}

// initdb makes a new cluster in dir whose superuser is postgres: with password, asked for it
// (scram-sha-256) from the start; without, trusted.
func initdb(dir string, cred *syscall.Credential, password string) error {
	bin, err := pgBinary("initdb")
	if err != nil {
		return err
	}
	args := []string{"-D", dir, "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"}
	if password == "" {
		args = append(args, "--auth=trust")
	} else {
		// initdb reads the password from a file its user (postgres, when we are root) can
		// read, beside dir: StartPostgres' callers make dir's parent reachable for that user.
		pwfile := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".initdb-pw")
		if err := writeFileAtomic(pwfile, []byte(password+"\n"), 0o600, cred); err != nil {
			return fmt.Errorf("initdb %s: %w", dir, err)
		}
		defer os.Remove(pwfile)
		args = append(args, "--auth=scram-sha-256", "--pwfile="+pwfile)
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb %s: %w: %s", dir, err, out)
	}
	return nil
}

// Stop shuts the server down in "fast" mode (SIGINT), which rolls back open transactions and
// checkpoints, so the next start needs no recovery.
func (p *Postgres) Stop() {
	if p != nil {
		p.signal(syscall.SIGINT, 20*time.Second)
	}
}

// CreateDatabase creates database name unless it exists.
func (p *Postgres) CreateDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, p.URL("postgres"))
	if err != nil {
		return fmt.Errorf("connect postgres: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// pgHBA is the pg_hba.conf of a cluster started with a password, whose Unix socket line is
// local: every connection gives the password of its role. Until securePostgres has set it, the
// superuser comes in over the Unix socket (mode 0700, in the data directory) trusted.
func pgHBA(local string) string {
	return `# Written by acv (internal/localenv) on every start of a cluster with a password.
# TYPE  DATABASE  USER      ADDRESS        METHOD
` + local + `
host    all       all       127.0.0.1/32   scram-sha-256
host    all       all       ::1/128        scram-sha-256
`
}

// securePostgres sets the superuser's password over the socket the first pgHBA trusts, writes
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
	if err := writeFileAtomic(filepath.Join(pg.Dir, "pg_hba.conf"), []byte(pgHBA("local   all       all                      scram-sha-256")), 0o600, cred); err != nil {
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
