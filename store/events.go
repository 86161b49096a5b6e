package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// msToTimestamptz converts a Unix-millisecond SQL expression to timestamptz exactly (no
// floating-point division), 0 meaning NULL.
func msToTimestamptz(expr string) string {
	return `CASE WHEN ` + expr + ` = 0 THEN NULL ELSE timestamptz 'epoch' + ` + expr + ` * interval '1 millisecond' END`
}

// ApplySnapshot sets the state (verified_at, verified_by, is_disabled, version) of code snap.ID
// when snap.Version is newer than the stored one: an older snapshot never overwrites a newer
// state. contract.ErrNotFound when the code does not exist.
func (s *Store) ApplySnapshot(ctx context.Context, snap contract.CodeRecord) error {
	codeID := snap.ID
	if err := checkID("code", codeID); err != nil {
		return err
	}
	n, err := affected(ctx, s.pool, "apply snapshot to code "+codeID,
		`UPDATE codes SET verified_at = `+msToTimestamptz("$2::bigint")+`,
		        verified_by = nullif($3, ''), is_disabled = $4, version = $5
		 WHERE id = $1 AND version < $5`,
		codeID, snap.VerifiedAtMs, snap.VerifiedBy, snap.Disabled, snap.Version)
	if err != nil || n > 0 {
		return err
	}
	exists, err := one(ctx, s.pool, "apply snapshot to code "+codeID, pgx.RowTo[bool],
		`SELECT EXISTS (SELECT 1 FROM codes WHERE id = $1)`, codeID)
	if err == nil && !exists {
		err = fmt.Errorf("code %s: %w", codeID, contract.ErrNotFound)
	}
	return err
}

// ApplyEvents is the audit pipeline's sink: in one transaction, a log row per event keyed by event
// id (a redelivery writes nothing) and each Changed event's snapshot when newer. It returns how
// many rows were new. Rows are locked in one order and a deadlock retried, so consumers need no
// coordination.
func (s *Store) ApplyEvents(ctx context.Context, events []contract.Event) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	// The statements sort what they write (logs by event id, snapshots by code id) for their
	// lock order, so Go need not.
	n := len(events)
	var (
		ids, codeIDs, projectIDs = make([]string, n), make([]string, n), make([]string, n)
		actions, results         = make([]string, n), make([]string, n)
		reasons, bys, ips        = make([]string, n), make([]string, n), make([]string, n)
		values                   = make([]string, n)
		ts                       = make([]int64, n)
		latest                   = make(map[string]int, n) // code id → index of its newest state
	)
	for i := range events {
		e := &events[i]
		if !e.WellFormedIDs() {
			return 0, fmt.Errorf("event %q (code %q, project %q): malformed id", e.ID, e.CodeID, e.ProjectID)
		}
		ids[i], codeIDs[i], projectIDs[i], values[i] = e.ID, e.CodeID, e.ProjectID, e.Code
		actions[i], results[i] = string(e.Action), e.Result
		reasons[i], bys[i], ips[i], ts[i] = e.Reason, e.VerifiedBy, e.IP, e.TS
		if e.Changed && !e.Unknown() { // an unknown value has no code whose state to apply
			// The highest version wins; of equal ones, the lowest event id (arrival order aside).
			j, ok := latest[e.CodeID]
			if !ok || e.Version > events[j].Version || (e.Version == events[j].Version && e.ID < events[j].ID) {
				latest[e.CodeID] = i
			}
		}
	}
	var (
		snapIDs      = make([]string, len(latest))
		snapVersions = make([]int64, len(latest))
		snapVerified = make([]int64, len(latest))
		snapBy       = make([]string, len(latest))
		snapDisabled = make([]bool, len(latest))
		k            int
	)
	for _, i := range latest {
		e := &events[i]
		snapIDs[k], snapVersions[k], snapVerified[k] = e.CodeID, e.Version, e.VerifiedAt
		snapBy[k], snapDisabled[k] = e.StateBy, e.Disabled
		k++
	}

	// A batch is first written with plain inserts: ON CONFLICT DO NOTHING inserts each row
	// speculatively (a second WAL record). Only a batch holding an event already stored (a
	// redelivery) meets the primary key; it is then written again with ON CONFLICT.
	var inserted int64
	redelivered := false
	apply := func(tx pgx.Tx) error {
		skip := ""
		if redelivered {
			skip = `ON CONFLICT (verified_at, id) DO NOTHING`
		}
		// The log rows, and the hourly counts of the successful and refused verifies among the
		// rows newly inserted, upserted in key order so consumers lock count rows in one order.
		err := tx.QueryRow(ctx,
			`WITH ins AS (
			   INSERT INTO verification_logs
			     (id, code_id, project_id, action, result, reason, verified_by, ip_address, verified_at, code)
			   SELECT e.id, nullif(e.code_id, '')::uuid, e.project_id, e.action, e.result, nullif(e.reason, ''),
			          nullif(e.verified_by, ''), e.ip, timestamptz 'epoch' + e.ts * interval '1 millisecond',
			          nullif(e.code, '')
			   FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::text[],
			               $7::text[], $8::text[], $9::bigint[], $10::text[])
			        AS e(id, code_id, project_id, action, result, reason, verified_by, ip, ts, code)
			   ORDER BY e.id
			   `+skip+`
			   RETURNING project_id, verified_at, action, result),
			 hourly AS (
			   INSERT INTO redemptions_hourly AS r (project_id, hour, n, refused)
			   SELECT project_id, date_trunc('hour', verified_at, 'UTC'),
			          count(*) FILTER (WHERE result = 'success'), count(*) FILTER (WHERE result = 'failed')
			   FROM ins WHERE action = 'verify' AND result IN ('success', 'failed')
			   GROUP BY 1, 2 ORDER BY 1, 2
			   ON CONFLICT (project_id, hour) DO UPDATE SET n = r.n + excluded.n, refused = r.refused + excluded.refused)
			 SELECT count(*) FROM ins`,
			ids, codeIDs, projectIDs, actions, results, reasons, bys, ips, ts, values).Scan(&inserted)
		if err != nil {
			return fmt.Errorf("insert verification logs: %w", err)
		}
		if len(snapIDs) == 0 {
			return nil
		}
		const snapshots = `unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::text[], $5::bool[])
			AS s(id, version, verified_ms, verified_by, disabled)`
		if _, err := tx.Exec(ctx,
			`UPDATE codes c SET verified_at = `+msToTimestamptz("s.verified_ms")+`,
			        verified_by = nullif(s.verified_by, ''), is_disabled = s.disabled, version = s.version
			 FROM (SELECT * FROM `+snapshots+` ORDER BY s.id) s
			 WHERE c.id = s.id AND s.version > c.version`,
			snapIDs, snapVersions, snapVerified, snapBy, snapDisabled); err != nil {
			return fmt.Errorf("apply snapshots: %w", err)
		}
		return nil
	}
	err := s.inTx(ctx, apply)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && strings.HasPrefix(pgErr.TableName, "verification_logs") {
		// The log's primary key (reported by its day partition); any other unique violation
		// is an error, not a redelivery.
		redelivered = true
		err = s.inTx(ctx, apply)
	}
	if err != nil {
		return 0, fmt.Errorf("apply %d events: %w", len(events), err)
	}
	return int(inserted), nil
}
