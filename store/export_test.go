package store

import (
	"context"
	"io/fs"

	"github.com/pressly/goose/v3"
)

// MigrateTo brings the database at databaseURL up to schema version (not beyond), so a test
// can write rows the way an older version did and then migrate over them.
func MigrateTo(ctx context.Context, databaseURL string, version int64) error {
	return withProvider(ctx, databaseURL, true, func(p *goose.Provider) error {
		_, err := p.UpTo(ctx, version)
		return err
	})
}

// MigrateDownTo rolls the database at databaseURL back to schema version.
func MigrateDownTo(ctx context.Context, databaseURL string, version int64) error {
	return withProvider(ctx, databaseURL, true, func(p *goose.Provider) error {
		_, err := p.DownTo(ctx, version)
		return err
	})
}

// MigrationCount is the number of migrations compiled in.
func MigrationCount() int {
	m, _ := fs.Glob(migrationsFS, "migrations/*.sql")
	return len(m)
}
