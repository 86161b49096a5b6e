package store

import (
	"context"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
)

// OutcomesByHour counts the verifies of one project (every project when projectID is "") per
// UTC hour in [from, to) by outcome, every hour present, from redemptions_hourly.
func (s *Store) OutcomesByHour(ctx context.Context, projectID string, from, to time.Time) ([]contract.HourOutcomes, error) {
	from, to = from.UTC().Truncate(time.Hour), to.UTC()
	return collect(ctx, s.pool, "count verify outcomes by hour", func(r pgx.Row) (contract.HourOutcomes, error) {
		var h contract.HourOutcomes
		err := r.Scan(&h.From, &h.Success, &h.Refused)
		return h, err
	}, `SELECT h.at, coalesce(c.n, 0), coalesce(c.refused, 0)
		 FROM generate_series($1::timestamptz, $2::timestamptz - interval '1 microsecond', interval '1 hour') AS h(at)
		 LEFT JOIN (
		     SELECT hour AS at, sum(n)::bigint AS n, sum(refused)::bigint AS refused
		     FROM redemptions_hourly
		     WHERE hour >= $1 AND hour < $2 AND ($3 = '' OR project_id = nullif($3, '')::uuid)
		     GROUP BY 1) c ON c.at = h.at
		 ORDER BY h.at`, from, to, projectID)
}
