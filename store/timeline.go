package store

import (
	"context"
	"fmt"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
)

// RedemptionsByHour counts the successful verifies of every project per UTC hour in
// [from, to), every hour of the range present (zero when none). It reads redemptions_hourly,
// which the consumer keeps with the log rows it writes (ApplyEvents), so a dashboard costs a
// row per project and hour whatever the traffic.
func (s *Store) RedemptionsByHour(ctx context.Context, from, to time.Time) ([]contract.HourCount, error) {
	from, to = from.UTC().Truncate(time.Hour), to.UTC()
	rows, err := s.pool.Query(ctx,
		`SELECT h.at, coalesce(c.n, 0)
		 FROM generate_series($1::timestamptz, $2::timestamptz - interval '1 microsecond', interval '1 hour') AS h(at)
		 LEFT JOIN (
		     SELECT hour AS at, sum(n)::bigint AS n
		     FROM redemptions_hourly
		     WHERE hour >= $1 AND hour < $2
		     GROUP BY 1) c ON c.at = h.at
		 ORDER BY h.at`, from, to)
	if err != nil {
		return nil, fmt.Errorf("count redemptions by hour: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (contract.HourCount, error) {
		var h contract.HourCount
		err := r.Scan(&h.From, &h.Count)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("count redemptions by hour: %w", translate(err))
	}
	return out, nil
}

// NewestLog is the time of the newest verification log within the last day, and false when
// there is none: how far behind the pipeline's writes are, seen from PostgreSQL.
func (s *Store) NewestLog(ctx context.Context, now time.Time) (time.Time, bool, error) {
	var t *time.Time
	if err := s.pool.QueryRow(ctx,
		`SELECT max(verified_at) FROM verification_logs WHERE verified_at >= $1 AND verified_at < $2`,
		now.Add(-24*time.Hour), now.Add(time.Hour)).Scan(&t); err != nil {
		return time.Time{}, false, fmt.Errorf("newest verification log: %w", translate(err))
	}
	if t == nil {
		return time.Time{}, false, nil
	}
	return *t, true, nil
}
