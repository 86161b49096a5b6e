package store

import (
	"context"
	"fmt"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// codeHistorySQL reads a code's logs newest first ($1 the code id, $2 the limit or NULL). It has
// no time bound, so it reads every partition, but each with one seek of
// verification_logs_code_idx, merged in order (TestLogHistoryPlans checks the plan at 10M rows).
const codeHistorySQL = `SELECT id, verified_at, verified_by, ip_address, result, action, reason
	FROM verification_logs WHERE code_id = $1
	ORDER BY verified_at DESC, id DESC LIMIT $2`

// Logs returns a code's verification logs newest first, at most limit of them (limit <= 0:
// all), as the single-code endpoints show them. An unknown code simply has no logs.
func (s *Store) Logs(ctx context.Context, codeID string, limit int) ([]contract.LogEntry, error) {
	if !contract.ValidID(codeID) {
		return []contract.LogEntry{}, nil
	}
	var lim *int64
	if limit > 0 {
		l := int64(limit)
		lim = &l
	}
	rows, err := s.pool.Query(ctx, codeHistorySQL, codeID, lim)
	if err != nil {
		return nil, fmt.Errorf("select logs of code %s: %w", codeID, translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (contract.LogEntry, error) {
		var (
			e  contract.LogEntry
			id pgtype.UUID
			at time.Time
		)
		if err := r.Scan(&id, &at, &e.VerifiedBy, &e.IPAddress, &e.Result, &e.Action, &e.Reason); err != nil {
			return e, err
		}
		e.ID = hexID(id)
		e.VerifiedAt = at.Unix()
		return e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("select logs of code %s: %w", codeID, translate(err))
	}
	return out, nil
}
