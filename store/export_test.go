package store

import (
	"context"
	"io/fs"

	"github.com/acv/acv/api/contract"
)

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
func (s *Store) BulkSQL(ctx context.Context, projectID string, f contract.CodeFilter, now, afterSeq int64, limit int) (count string, countArgs []any, page string, pageArgs []any, err error) {
	where, args, err := s.bulkWhere(ctx, projectID, f, now)
	if err != nil {
		return "", nil, "", nil, err
	}
	pageArgs = append(append([]any{}, args...), afterSeq, limit)
	return countBulkSQL(where), args, bulkPageSQL(where, len(pageArgs)), pageArgs, nil
}
