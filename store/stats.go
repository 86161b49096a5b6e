package store

import (
	"context"
	"fmt"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
)

// Statistics counts a project's codes by derived state at now, exactly, from the code_counts rows
// the triggers maintain. contract.ErrNotFound when the project does not exist.
func (s *Store) Statistics(ctx context.Context, projectID string, now int64) (contract.Statistics, error) {
	return statistics(ctx, s.pool, projectID, now)
}

// ProjectStatistics reads a project's counts and its up to limit most recent verifications
// from one snapshot, so a consumer's commit between them cannot make the two disagree.
func (s *Store) ProjectStatistics(ctx context.Context, projectID string, now int64, limit int) (contract.Statistics, []contract.RecentVerification, error) {
	var (
		st     contract.Statistics
		recent []contract.RecentVerification
	)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if st, err = statistics(ctx, tx, projectID, now); err != nil {
			return err
		}
		recent, err = recentVerifications(ctx, tx, projectID, limit)
		return err
	})
	if err != nil {
		return contract.Statistics{}, nil, err
	}
	return st, recent, nil
}

func statistics(ctx context.Context, q querier, projectID string, now int64) (contract.Statistics, error) {
	if err := checkID("project", projectID); err != nil {
		return contract.Statistics{}, err
	}
	var st contract.Statistics
	err := q.QueryRow(ctx,
		`SELECT coalesce(sum(n) FILTER (WHERE k.kind = 2), 0),
		        coalesce(sum(n) FILTER (WHERE k.kind = 1), 0),
		        coalesce(sum(n) FILTER (WHERE k.kind = 0
		            AND coalesce(k.expires_at, p.expires_at) <= $2), 0),
		        coalesce(sum(n) FILTER (WHERE k.kind = 0
		            AND coalesce(k.expires_at, p.expires_at, 'infinity') > $2), 0)
		 FROM projects p LEFT JOIN code_counts k ON k.project_id = p.id
		 WHERE p.id = $1
		 GROUP BY p.id`,
		projectID, time.Unix(now, 0),
	).Scan(&st.DisabledCodes, &st.UsedCodes, &st.ExpiredCodes, &st.UnusedCodes)
	if err != nil {
		return contract.Statistics{}, fmt.Errorf("statistics of project %s: %w", projectID, translate(err))
	}
	st.TotalCodes = st.DisabledCodes + st.UsedCodes + st.ExpiredCodes + st.UnusedCodes
	return st, nil
}

// countOf picks the count of one state ("" = all) from statistics.
func countOf(st contract.Statistics, state contract.State) int64 {
	switch state {
	case contract.StateUnused:
		return st.UnusedCodes
	case contract.StateUsed:
		return st.UsedCodes
	case contract.StateDisabled:
		return st.DisabledCodes
	case contract.StateExpired:
		return st.ExpiredCodes
	}
	return st.TotalCodes
}

// recentVerificationsSQL lists up to $2 codes of project $1 currently used, newest verified_at
// first (then seq), walking code_used_recent_idx: $2 rows, whatever the project's size.
const recentVerificationsSQL = `SELECT c.code, u.verified_at, c.verified_by
	FROM ` + usedCodes + `
	WHERE u.project_id = $1
	ORDER BY u.verified_at DESC, u.seq DESC
	LIMIT $2`

// recentVerifications lists up to limit codes of the project currently used, newest
// verification first (recentVerificationsSQL). An unknown project simply has none.
func recentVerifications(ctx context.Context, q querier, projectID string, limit int) ([]contract.RecentVerification, error) {
	if err := checkID("project", projectID); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return []contract.RecentVerification{}, nil
	}
	return collect(ctx, q, "recent verifications of project "+projectID, func(r pgx.CollectableRow) (contract.RecentVerification, error) {
		var (
			v  contract.RecentVerification
			at time.Time
		)
		err := r.Scan(&v.Code, &at, &v.VerifiedBy)
		v.VerifiedAt = at.Unix()
		return v, err
	}, recentVerificationsSQL, projectID, limit)
}

// OutcomesByHour counts the verifies of one project (every project when projectID is "") per
// UTC hour in [from, to) by outcome, every hour present, from redemptions_hourly.
func (s *Store) OutcomesByHour(ctx context.Context, projectID string, from, to time.Time) ([]contract.HourOutcomes, error) {
	from, to = from.UTC().Truncate(time.Hour), to.UTC()
	return collect(ctx, s.pool, "count verify outcomes by hour", pgx.RowToStructByPos[contract.HourOutcomes], `SELECT h.at, coalesce(c.n, 0), coalesce(c.refused, 0)
		 FROM generate_series($1::timestamptz, $2::timestamptz - interval '1 microsecond', interval '1 hour') AS h(at)
		 LEFT JOIN (
		     SELECT hour AS at, sum(n)::bigint AS n, sum(refused)::bigint AS refused
		     FROM redemptions_hourly
		     WHERE hour >= $1 AND hour < $2 AND ($3 = '' OR project_id = nullif($3, '')::uuid)
		     GROUP BY 1) c ON c.at = h.at
		 ORDER BY h.at`, from, to, projectID)
}
