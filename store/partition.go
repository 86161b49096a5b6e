package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/acv/acv/api/contract"
)

const (
	logsDefaultPartition = "verification_logs_default"
	// logMaintenanceLock is the advisory lock key one maintenance run holds, so concurrent runs
	// (several relays or consumers, an operator's `acv logs maintain`) take turns: "acvlogs\0".
	logMaintenanceLock int64 = 0x6163766c6f677300
	// partitionLockTimeout bounds how long a run waits for the logs' locks: a partition's DDL
	// waiting behind a long query would stall every write and read queued behind it.
	partitionLockTimeout = "2s"
)

// partitionName is the name of the day partition starting at day (UTC midnight).
func partitionName(day time.Time) string {
	return "verification_logs_p" + day.UTC().Format("20060102")
}

// utcDay is the UTC midnight starting t's day.
func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// boundLiteral renders a partition bound as a SQL literal (DDL takes no parameters).
func boundLiteral(t time.Time) string {
	return "'" + t.UTC().Format("2006-01-02T15:04:05Z") + "'"
}

// LogPartitions lists the partitions of verification_logs in range order, the default last.
func (s *Store) LogPartitions(ctx context.Context) ([]contract.LogPartition, error) {
	return logPartitions(ctx, s.pool)
}

func logPartitions(ctx context.Context, q querier) ([]contract.LogPartition, error) {
	// pg_get_expr renders the bounds with their offset; cast back, they are exact.
	return collect(ctx, q, "list log partitions", func(r pgx.CollectableRow) (contract.LogPartition, error) {
		var (
			p        contract.LogPartition
			from, to *time.Time
		)
		err := r.Scan(&p.Name, &p.Default, &from, &to)
		if from != nil {
			p.From = from.UTC()
		}
		if to != nil {
			p.To = to.UTC()
		}
		return p, err
	}, `SELECT c.relname::text, b.def = 'DEFAULT',
		        (regexp_match(b.def, 'FROM \(''([^'']+)''\)'))[1]::timestamptz,
		        (regexp_match(b.def, 'TO \(''([^'']+)''\)'))[1]::timestamptz
		 FROM pg_inherits i
		 JOIN pg_class c ON c.oid = i.inhrelid
		 CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS def) b
		 WHERE i.inhparent = 'verification_logs'::regclass
		 ORDER BY 2, 3`)
}

// MaintainLogPartitions gives the days ahead, and the days the default partition holds rows of,
// their partitions, and drops those past retention, one short transaction each. A run that finds
// another's lock held reports Busy.
func (s *Store) MaintainLogPartitions(ctx context.Context, now time.Time, policy contract.LogPolicy) (contract.LogMaintenance, error) {
	var res contract.LogMaintenance
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("maintain log partitions: %w", translate(err))
	}
	defer conn.Release()
	locked, err := one(ctx, conn, "maintain log partitions: lock", pgx.RowTo[bool], `SELECT pg_try_advisory_lock($1)`, logMaintenanceLock)
	if err != nil || !locked {
		res.Busy = err == nil // another run holds the lock
		return res, err
	}
	defer func() {
		// A session lock outlives the call on a pooled connection: release it, or close the
		// connection (which releases it) when that fails.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, logMaintenanceLock); err != nil {
			_ = conn.Conn().Close(uctx)
		}
	}()

	parts, err := logPartitions(ctx, conn)
	if err != nil {
		return res, err
	}
	today := utcDay(now)
	want := map[time.Time]bool{}
	for i := 0; i <= max(policy.Ahead, 0); i++ {
		want[today.AddDate(0, 0, i)] = true
	}
	var cutoff time.Time
	if policy.RetentionDays > 0 {
		cutoff = today.AddDate(0, 0, -policy.RetentionDays)
	}
	// Days the default partition holds rows of get their partition, so it stays nearly empty.
	strays, err := collect(ctx, conn, "maintain log partitions: days in the default partition", pgx.RowTo[time.Time],
		`SELECT DISTINCT date_trunc('day', verified_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
		 FROM `+logsDefaultPartition+` WHERE verified_at >= $1`, cutoff)
	if err != nil {
		return res, err
	}
	for _, d := range strays {
		want[d.UTC()] = true
	}
	days := make([]time.Time, 0, len(want))
	for d := range want {
		if !covered(parts, d) {
			days = append(days, d)
		}
	}
	slices.SortFunc(days, time.Time.Compare)
	for _, d := range days {
		moved, err := createDayPartition(ctx, conn, d)
		if err != nil {
			return res, err
		}
		res.Created = append(res.Created, partitionName(d))
		res.Moved += moved
	}
	if cutoff.IsZero() {
		return res, nil
	}
	for _, p := range parts {
		if p.Default || p.To.IsZero() || p.To.After(cutoff) {
			continue
		}
		if err := inLockedTx(ctx, conn, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `DROP TABLE `+pgx.Identifier{p.Name}.Sanitize())
			return err
		}); err != nil {
			return res, fmt.Errorf("maintain log partitions: drop %s: %w", p.Name, translate(err))
		}
		res.Dropped = append(res.Dropped, p.Name)
	}
	res.Purged, err = affected(ctx, conn, "maintain log partitions: purge the default partition",
		`DELETE FROM `+logsDefaultPartition+` WHERE verified_at < $1`, cutoff)
	return res, err
}

// covered tells whether one of parts (the default aside) holds day d.
func covered(parts []contract.LogPartition, d time.Time) bool {
	for _, p := range parts {
		if !p.Default && !p.From.After(d) && p.To.After(d) {
			return true
		}
	}
	return false
}

// createDayPartition makes the partition of day d, moving into it that day's rows of the
// default partition, and returns how many it moved. Built apart and attached, it locks
// verification_logs only SHARE UPDATE EXCLUSIVE; the default partition is locked first, so no
// row of the day arrives there between the move and the attach.
func createDayPartition(ctx context.Context, conn txBeginner, d time.Time) (int64, error) {
	name := partitionName(d)
	ident := pgx.Identifier{name}.Sanitize()
	var moved int64
	err := inLockedTx(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE `+logsDefaultPartition+` IN ACCESS EXCLUSIVE MODE`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx,
			`CREATE TABLE `+ident+` (LIKE verification_logs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx,
			`WITH m AS (DELETE FROM `+logsDefaultPartition+` WHERE verified_at >= $1 AND verified_at < $2 RETURNING *)
			 INSERT INTO `+ident+` SELECT * FROM m`, d, d.AddDate(0, 0, 1))
		if err != nil {
			return err
		}
		moved = tag.RowsAffected()
		_, err = tx.Exec(ctx, `ALTER TABLE verification_logs ATTACH PARTITION `+ident+
			` FOR VALUES FROM (`+boundLiteral(d)+`) TO (`+boundLiteral(d.AddDate(0, 0, 1))+`)`)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("maintain log partitions: create %s: %w", name, translate(err))
	}
	return moved, nil
}

type txBeginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// inLockedTx runs fn in a transaction whose lock waits end after partitionLockTimeout.
func inLockedTx(ctx context.Context, conn txBeginner, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+partitionLockTimeout+`'`); err != nil {
			return err
		}
		return fn(tx)
	})
}

// MaintainLogsEvery runs MaintainLogPartitions now and then every interval until ctx ends,
// handing each outcome to report (may be nil); the advisory lock makes concurrent runs take turns.
func (s *Store) MaintainLogsEvery(ctx context.Context, every time.Duration, policy contract.LogPolicy,
	report func(contract.LogMaintenance, error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		res, err := s.MaintainLogPartitions(ctx, time.Now(), policy)
		if ctx.Err() != nil {
			return
		}
		if report != nil {
			report(res, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
