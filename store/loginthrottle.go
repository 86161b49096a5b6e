package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/acv/acv/api/contract"
)

// The console's login throttle counts attempts per subject (username, client IP, both) in
// PostgreSQL, shared by every console instance. An attempt is counted before its password is
// checked and given back when it was right, so parallel guesses cannot all pass.

// ReserveLoginAttempt counts one attempt at now against every limit's subject. When one is
// locked, nothing is counted and ok is false, with the latest lock in until; otherwise each count
// goes up (from 1 after window) and a subject whose LockFor is positive is locked from now on.
func (s *Store) ReserveLoginAttempt(ctx context.Context, limits []contract.LoginLimit, now time.Time, window time.Duration) (
	r contract.LoginReservation, until time.Time, ok bool, err error) {
	// Rows are created and locked in subject order, so two attempts never wait on each other
	// in a cycle.
	limits = slices.Clone(limits)
	slices.SortFunc(limits, func(a, b contract.LoginLimit) int { return strings.Compare(a.Subject, b.Subject) })
	subjects := make([]string, len(limits))
	for i, l := range limits {
		subjects[i] = l.Subject
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		// Create the rows missing, then lock them all, in subject order.
		if err := exec(ctx, tx, "create login throttle rows", `INSERT INTO admin_login_throttle (subject, failures, last_failure_at)
			SELECT subject, 0, $2 FROM unnest($1::text[]) AS subject ORDER BY subject
			ON CONFLICT (subject) DO NOTHING`, subjects, now); err != nil {
			return err
		}
		states := make(map[string]loginSubjectState, len(subjects))
		if err := each(ctx, tx, "lock login throttle rows", pgx.RowToStructByPos[loginSubjectState],
			func(st loginSubjectState) error {
				states[st.Subject] = st
				return nil
			}, `SELECT subject, failures, last_failure_at, locked_until FROM admin_login_throttle
			WHERE subject = ANY($1) ORDER BY subject FOR UPDATE`, subjects); err != nil {
			return err
		}
		r, until, ok = contract.LoginReservation{}, time.Time{}, false // a retried transaction starts over
		for _, st := range states {
			if st.Locked != nil && st.Locked.After(now) && st.Locked.After(until) {
				until = *st.Locked
			}
		}
		if !until.IsZero() {
			return nil
		}
		r = contract.LoginReservation{Subjects: subjects, Set: make([]*time.Time, len(limits)), Prev: make([]*time.Time, len(limits))}
		failures := make([]int, len(limits))
		locks := make([]*time.Time, len(limits))
		for i, l := range limits {
			st := states[l.Subject]
			if st.Last.Before(now.Add(-window)) {
				st.Failures = 0
			}
			failures[i], locks[i], r.Prev[i] = st.Failures+1, st.Locked, st.Locked
			if d := l.LockFor(failures[i]); d > 0 {
				if t := now.Add(d); st.Locked == nil || t.After(*st.Locked) {
					locks[i], r.Set[i] = &t, &t
				}
			}
		}
		if _, err := tx.Exec(ctx,
			`UPDATE admin_login_throttle AS t SET failures = a.failures, last_failure_at = $4, locked_until = a.locked_until
			 FROM unnest($1::text[], $2::int[], $3::timestamptz[]) AS a(subject, failures, locked_until)
			 WHERE t.subject = a.subject`, subjects, failures, locks, now); err != nil {
			return fmt.Errorf("count login attempt: %w", translate(err))
		}
		ok = true
		return nil
	})
	if err != nil {
		return contract.LoginReservation{}, time.Time{}, false, fmt.Errorf("reserve login attempt: %w", err)
	}
	return r, until, ok, nil
}

// loginSubjectState is a throttle row as ReserveLoginAttempt reads it.
type loginSubjectState struct {
	Subject  string
	Failures int
	Last     time.Time
	Locked   *time.Time
}

// RefundLoginAttempt gives back an attempt whose password was right: each subject's count
// goes down by one, and a lock the attempt set is lifted unless a later attempt has replaced
// it since.
func (s *Store) RefundLoginAttempt(ctx context.Context, r contract.LoginReservation) error {
	if len(r.Subjects) == 0 {
		return nil
	}
	return exec(ctx, s.pool, "refund login attempt",
		`UPDATE admin_login_throttle AS t SET failures = greatest(t.failures - 1, 0),
		     locked_until = CASE WHEN t.locked_until = a.set THEN a.prev ELSE t.locked_until END
		 FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS a(subject, set, prev)
		 WHERE t.subject = a.subject`, r.Subjects, r.Set, r.Prev)
}

// ClearLoginFailures forgets a subject's failures and lock, after a successful login.
func (s *Store) ClearLoginFailures(ctx context.Context, subject string) error {
	return exec(ctx, s.pool, "clear login failures",
		`DELETE FROM admin_login_throttle WHERE subject = $1`, subject)
}
