package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The login throttle of the operator console: failed logins counted per subject (a username,
// a client IP), in PostgreSQL so every console instance sees the same counts and a restart
// forgets none.

// LoginLockedUntil is the latest lock of subjects still in force at now; ok is false when none
// of them is locked.
func (s *Store) LoginLockedUntil(ctx context.Context, subjects []string, now time.Time) (until time.Time, ok bool, err error) {
	var t *time.Time
	err = s.pool.QueryRow(ctx,
		`SELECT max(locked_until) FROM admin_login_throttle WHERE subject = ANY($1) AND locked_until > $2`,
		subjects, now).Scan(&t)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read login throttle: %w", translate(err))
	}
	if t == nil {
		return time.Time{}, false, nil
	}
	return *t, true, nil
}

// RecordLoginFailure counts one failed login of subject at now and returns the subject's
// failures: the count restarts from 1 when the previous failure is older than window. When
// lockFor(failures) is positive, the subject is locked for that long from now (a longer lock
// already in force is kept).
func (s *Store) RecordLoginFailure(ctx context.Context, subject string, now time.Time, window time.Duration,
	lockFor func(failures int) time.Duration) (int, error) {
	var failures int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx,
			`INSERT INTO admin_login_throttle AS t (subject, failures, last_failure_at) VALUES ($1, 1, $2)
			 ON CONFLICT (subject) DO UPDATE SET
			     failures = CASE WHEN t.last_failure_at < $2 - $3::interval THEN 1 ELSE t.failures + 1 END,
			     last_failure_at = $2
			 RETURNING failures`,
			subject, now, window).Scan(&failures)
		if err != nil {
			return fmt.Errorf("count login failure: %w", translate(err))
		}
		if d := lockFor(failures); d > 0 {
			if _, err := tx.Exec(ctx,
				`UPDATE admin_login_throttle SET locked_until = greatest(locked_until, $2) WHERE subject = $1`,
				subject, now.Add(d)); err != nil {
				return fmt.Errorf("lock login: %w", translate(err))
			}
		}
		return nil
	})
	return failures, err
}

// ClearLoginFailures forgets a subject's failures and lock, after a successful login.
func (s *Store) ClearLoginFailures(ctx context.Context, subject string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM admin_login_throttle WHERE subject = $1`, subject); err != nil {
		return fmt.Errorf("clear login failures: %w", translate(err))
	}
	return nil
}
