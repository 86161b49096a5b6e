package store

import (
	"context"
	"io/fs"
	"strings"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
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

// ExplainKeyset returns PostgreSQL's plan (EXPLAIN, text format) of ListCodesAfter's query, so
// a test can hold that a deep page is still an index seek.
func (s *Store) ExplainKeyset(ctx context.Context, projectID string, q contract.KeysetQuery, now int64) (string, error) {
	query, args, _, err := s.keysetSQL(ctx, projectID, q, now)
	if err != nil {
		return "", err
	}
	return s.explain(ctx, "keyset list", query, args...)
}

// explain returns PostgreSQL's plan (EXPLAIN, text format) of query, for the tests that hold a
// query to an index plan; what names the query in an error.
func (s *Store) explain(ctx context.Context, what, query string, args ...any) (string, error) {
	lines, err := collect(ctx, s.pool, "explain "+what, pgx.RowTo[string], "EXPLAIN "+query, args...)
	return strings.Join(lines, "\n"), err
}

// ExplainLogSearch is the plan PostgreSQL picks for a page of f, for the tests that check a
// search stays within its partitions and on an index.
func (s *Store) ExplainLogSearch(ctx context.Context, f contract.LogFilter) (string, error) {
	q, args, err := logQuery(f)
	if err != nil {
		return "", err
	}
	return s.explain(ctx, "log search", q+" LIMIT 100", args...)
}
