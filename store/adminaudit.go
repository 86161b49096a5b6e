package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/acv/acv/api/contract"
)

// canonicalJSON rewrites a JSON object in one form: keys sorted, no spaces, numbers as
// written. PostgreSQL returns jsonb in a form of its own; both sides of the hash run it
// through this, so the hash does not depend on how PostgreSQL prints JSON.
func canonicalJSON(raw []byte) (json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("audit detail: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("audit detail must be a JSON object")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("audit detail: %w", err)
	}
	return b, nil
}

// auditLock is the advisory lock key that serialises appends to the audit chain and retention
// runs, so every row's prev_hash is the hash of the row appended just before it.
const auditLock = 0x61637661756469 // "acvaudi"

// AppendAdminAudit appends one entry to the admin audit log, chained to the newest row (or to
// the anchor, when retention removed every row), and returns the row as stored.
func (s *Store) AppendAdminAudit(ctx context.Context, e contract.AuditEntry) (contract.AuditRecord, error) {
	for _, id := range []string{e.AdminID, e.ProjectID} {
		if id != "" && !contract.ValidID(id) {
			return contract.AuditRecord{}, fmt.Errorf("audit entry: id %q is not an id", id)
		}
	}
	detail := e.Detail
	if detail == nil {
		detail = map[string]any{}
	}
	raw, err := json.Marshal(detail)
	if err != nil {
		return contract.AuditRecord{}, fmt.Errorf("audit detail: %w", err)
	}
	r := contract.AuditRecord{
		At: e.At.Truncate(time.Microsecond), AdminID: e.AdminID, AdminUsername: e.AdminUsername, Action: e.Action,
		TargetKind: e.TargetKind, TargetID: e.TargetID, ProjectID: e.ProjectID, ClientIP: e.ClientIP,
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if err := exec(ctx, tx, "lock audit chain", `SELECT pg_advisory_xact_lock($1)`, int64(auditLock)); err != nil {
			return err
		}
		// The detail as PostgreSQL will return it, so the hash is of what a verifier reads.
		stored, err := one(ctx, tx, "audit detail", pgx.RowTo[string], `SELECT $1::jsonb::text`, string(raw))
		if err != nil {
			return err
		}
		if r.Detail, err = canonicalJSON([]byte(stored)); err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `SELECT hash FROM admin_audit ORDER BY seq DESC LIMIT 1`).Scan(&r.PrevHash)
		if errors.Is(err, pgx.ErrNoRows) {
			err = tx.QueryRow(ctx, `SELECT hash FROM admin_audit_anchor`).Scan(&r.PrevHash)
		}
		if err != nil {
			return fmt.Errorf("read audit chain head: %w", translate(err))
		}
		if err := tx.QueryRow(ctx, `SELECT nextval(pg_get_serial_sequence('admin_audit', 'seq'))`).Scan(&r.Seq); err != nil {
			return fmt.Errorf("next audit seq: %w", translate(err))
		}
		r.Hash = r.ComputeHash()
		return exec(ctx, tx, "insert audit row",
			`INSERT INTO admin_audit (seq, at, admin_id, admin_username, action, target_kind, target_id, project_id,
			                          detail, client_ip, prev_hash, hash)
			 VALUES ($1, $2, nullif($3, '')::uuid, $4, $5, $6, $7, nullif($8, '')::uuid, $9, $10, $11, $12)`,
			r.Seq, r.At, r.AdminID, r.AdminUsername, r.Action, r.TargetKind, r.TargetID, r.ProjectID,
			string(r.Detail), r.ClientIP, r.PrevHash, r.Hash)
	})
	if err != nil {
		return contract.AuditRecord{}, err
	}
	return r, nil
}

const auditSelect = `SELECT seq, at, admin_id, admin_username, action, target_kind, target_id, project_id,
	detail::text, client_ip, prev_hash, hash FROM admin_audit`

func scanAudit(row pgx.CollectableRow) (contract.AuditRecord, error) {
	var (
		r           contract.AuditRecord
		aid, pid    pgtype.UUID
		detailsText string
	)
	if err := row.Scan(&r.Seq, &r.At, &aid, &r.AdminUsername, &r.Action, &r.TargetKind, &r.TargetID, &pid,
		&detailsText, &r.ClientIP, &r.PrevHash, &r.Hash); err != nil {
		return r, err
	}
	if aid.Valid {
		r.AdminID = hexID(aid)
	}
	if pid.Valid {
		r.ProjectID = hexID(pid)
	}
	d, err := canonicalJSON([]byte(detailsText))
	if err != nil {
		// A detail that is not an object can only be a tampered row: keep its text, and
		// the hash check will tell.
		d = json.RawMessage(strconv.Quote(detailsText))
	}
	r.Detail = d
	return r, nil
}

// AdminAudit reads rows of the admin audit log, newest first, keyset-paged by seq.
func (s *Store) AdminAudit(ctx context.Context, f contract.AuditFilter) ([]contract.AuditRecord, error) {
	f.Limit = pageLimit(f.Limit)
	var (
		where []string
		args  params
	)
	arg := args.bind
	if f.ProjectID != "" && !contract.ValidID(f.ProjectID) {
		return []contract.AuditRecord{}, nil
	}
	for _, eq := range []struct{ col, v string }{
		{"admin_username", f.AdminUsername}, {"target_kind", f.TargetKind}, {"target_id", f.TargetID}, {"project_id", f.ProjectID},
	} {
		if eq.v != "" {
			where = append(where, eq.col+" = "+arg(eq.v))
		}
	}
	if strings.HasSuffix(f.Action, ".") {
		where = append(where, "starts_with(action, "+arg(f.Action)+")")
	} else if f.Action != "" {
		where = append(where, "action = "+arg(f.Action))
	}
	if !f.Since.IsZero() {
		where = append(where, "at >= "+arg(f.Since))
	}
	if !f.Until.IsZero() {
		where = append(where, "at < "+arg(f.Until))
	}
	if f.BeforeSeq > 0 {
		where = append(where, "seq < "+arg(f.BeforeSeq))
	}
	q := auditSelect
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY seq DESC LIMIT " + arg(f.Limit)
	return collect(ctx, s.pool, "select admin audit", scanAudit, q, args...)
}

// WalkAdminAudit calls fn with the anchor and each row of the admin audit log, oldest first, in
// one snapshot (a retention run beside it does not tear the chain); an error of fn stops it. It
// returns the anchor, also when there is no row.
func (s *Store) WalkAdminAudit(ctx context.Context, fn func(contract.AuditAnchor, contract.AuditRecord) error) (contract.AuditAnchor, error) {
	var a contract.AuditAnchor
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT seq, hash FROM admin_audit_anchor`).Scan(&a.Seq, &a.Hash); err != nil {
			return fmt.Errorf("read audit anchor: %w", translate(err))
		}
		return each(ctx, tx, "read admin audit", scanAudit, func(r contract.AuditRecord) error { return fn(a, r) }, auditSelect+` ORDER BY seq`)
	})
	return a, err
}

// PruneAdminAudit deletes the prefix of the admin audit chain before the first row at or after
// before, moving the anchor to the last deleted row's hash in the same transaction, so the rows
// kept still verify. It returns how many rows it deleted.
func (s *Store) PruneAdminAudit(ctx context.Context, before time.Time) (int64, error) {
	var deleted int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := exec(ctx, tx, "lock audit chain", `SELECT pg_advisory_xact_lock($1)`, int64(auditLock)); err != nil {
			return err
		}
		// The guard trigger lets this transaction, and only it, delete audit rows and move
		// the anchor.
		if err := exec(ctx, tx, "enter audit retention", `SELECT set_config('acv.audit_retention', 'on', true)`); err != nil {
			return err
		}
		var (
			last int64
			hash []byte
		)
		err := tx.QueryRow(ctx,
			`SELECT seq, hash FROM admin_audit
			 WHERE seq < coalesce((SELECT min(seq) FROM admin_audit WHERE at >= $1), 9223372036854775807)
			 ORDER BY seq DESC LIMIT 1`, before).Scan(&last, &hash)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("find audit rows past retention: %w", translate(err))
		}
		if deleted, err = affected(ctx, tx, "delete audit rows", `DELETE FROM admin_audit WHERE seq <= $1`, last); err != nil {
			return err
		}
		return exec(ctx, tx, "move audit anchor", `UPDATE admin_audit_anchor SET seq = $1, hash = $2, moved_at = now()`, last, hash)
	})
	return deleted, err
}
