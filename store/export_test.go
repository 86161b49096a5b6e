package store

import (
	"context"
	"io/fs"

	"github.com/acv/acv/api/contract"
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

// RecentVerifications is the recent-verifications read of ProjectStatistics alone, for the
// tests of its order, limit and index.
func (s *Store) RecentVerifications(ctx context.Context, projectID string, limit int) ([]contract.RecentVerification, error) {
	return recentVerifications(ctx, s.pool, projectID, limit)
}

// RecentVerificationsSQL is the query of RecentVerifications, for the test of its plan.
const RecentVerificationsSQL = recentVerificationsSQL

// BulkSQL returns the queries CountBulk and BulkPage run for f, with their arguments (BulkPage's
// from seq afterSeq, limit rows), for the tests of their plans.
func (s *Store) BulkSQL(ctx context.Context, projectID string, f CodeFilter, now, afterSeq int64, limit int) (count string, countArgs []any, page string, pageArgs []any, err error) {
	where, args, err := s.bulkWhere(ctx, projectID, f, now)
	if err != nil {
		return "", nil, "", nil, err
	}
	pageArgs = append(append([]any{}, args...), afterSeq, limit)
	return countBulkSQL(where), args, bulkPageSQL(where, len(pageArgs)), pageArgs, nil
}
