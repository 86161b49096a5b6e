package store

import (
	"context"
	"fmt"
	"time"
)

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
