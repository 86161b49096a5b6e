package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// migrationsFS holds the versioned schema, compiled into the binary so `acv migrate` needs no
// files beside it.
//
//go:embed migrations/*.sql
var migrationsFS embed.FS

// Migrate brings the database at databaseURL to the newest schema version. It is idempotent
// (applied versions are recorded in goose_db_version) and takes a Postgres advisory lock, so
// several replicas may run it at once at start-up.
func Migrate(ctx context.Context, databaseURL string) error {
	return migrate(ctx, databaseURL, func(p *goose.Provider) error {
		_, err := p.Up(ctx)
		return err
	})
}

// migrate runs fn with a migration provider on databaseURL, under the advisory lock.
func migrate(ctx context.Context, databaseURL string, fn func(*goose.Provider) error) error {
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
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("migration locker: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return fmt.Errorf("migration provider: %w", err)
	}
	if err := fn(p); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}
