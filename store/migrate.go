package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// migrationsFS holds the versioned schema (00001_baseline.sql is 0.1.0's), compiled in.
//
//go:embed migrations/*.sql
var migrationsFS embed.FS

// Migrate brings the database to the newest schema version, idempotently and under an advisory
// lock, so several replicas may run it at once at start-up.
func Migrate(ctx context.Context, databaseURL string) error {
	return withProvider(ctx, databaseURL, true, func(p *goose.Provider) error {
		if _, err := p.Up(ctx); err != nil {
			return fmt.Errorf("apply migrations: %w", err)
		}
		return nil
	})
}

// CheckSchema refuses a database lacking a migration this binary carries, at start rather than
// with 500s later. A newer schema (a rolling deploy) is fine: migrations only add.
func CheckSchema(ctx context.Context, databaseURL string) error {
	// Without the migration lock: every replica reads this at start, at once, and goose retries
	// a lock it did not get only seconds later.
	return withProvider(ctx, databaseURL, false, func(p *goose.Provider) error {
		have, err := p.GetDBVersion(ctx)
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		var want int64
		for _, src := range p.ListSources() {
			want = max(want, src.Version)
		}
		if have < want {
			return fmt.Errorf("%w: the database is at version %d, this binary needs %d: run `acv migrate`", ErrSchemaBehind, have, want)
		}
		return nil
	})
}

// ErrSchemaBehind is CheckSchema's refusal.
var ErrSchemaBehind = errors.New("database schema is behind")

// withProvider runs fn with a migration provider on databaseURL; with locked, its migrations
// run under the advisory lock.
func withProvider(ctx context.Context, databaseURL string, locked bool, fn func(*goose.Provider) error) error {
	sub, err := fs.Sub(migrationsFS, "migrations")
	if err != nil {
		return fmt.Errorf("migrations fs: %w", err)
	}
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return fmt.Errorf("parse database url: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	if locked {
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return fmt.Errorf("migration locker: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, opts...)
	if err != nil {
		return fmt.Errorf("migration provider: %w", err)
	}
	return fn(p)
}
