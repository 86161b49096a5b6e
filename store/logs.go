package store

import (
	"context"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
)

// codeHistorySQL reads a code's logs newest first ($1 the code id, $2 the limit or NULL): one
// seek of verification_logs_code_idx per partition, merged in order.
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
	return collect(ctx, s.pool, "select logs of code "+codeID, func(r pgx.Row) (contract.LogEntry, error) {
		var (
			e  contract.LogEntry
			at time.Time
		)
		err := r.Scan(hexIDInto(&e.ID), &at, &e.VerifiedBy, &e.IPAddress, &e.Result, &e.Action, &e.Reason)
		e.VerifiedAt = at.Unix()
		return e, err
	}, codeHistorySQL, codeID, lim)
}
