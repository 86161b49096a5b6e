package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
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
	return collect(ctx, s.pool, "select logs of code "+codeID, func(r pgx.CollectableRow) (contract.LogEntry, error) {
		var (
			e  contract.LogEntry
			at time.Time
		)
		err := r.Scan(hexIDInto(&e.ID), &at, &e.VerifiedBy, &e.IPAddress, &e.Result, &e.Action, &e.Reason)
		e.VerifiedAt = at.Unix()
		return e, err
	}, codeHistorySQL, codeID, positive(limit))
}

// NewestLog is the time of the newest verification log within the last day, and false when
// there is none: how far behind the pipeline's writes are, seen from PostgreSQL.
func (s *Store) NewestLog(ctx context.Context, now time.Time) (time.Time, bool, error) {
	t, err := one(ctx, s.pool, "newest verification log", pgx.RowTo[*time.Time],
		`SELECT max(verified_at) FROM verification_logs WHERE verified_at >= $1 AND verified_at < $2`,
		now.Add(-24*time.Hour), now.Add(time.Hour))
	if err != nil || t == nil {
		return time.Time{}, false, err
	}
	return *t, true, nil
}

// errBadCursor is a cursor SearchLogs did not make.
var errBadCursor = contract.Errorf(contract.KindInvalid, "after must be a cursor from a previous page (next_after)")

// CheckLogFilter is the error SearchLogs and ExportLogs would answer f with (a bad time range,
// id or cursor), before any query: so an export can refuse it before its first byte.
func (s *Store) CheckLogFilter(f contract.LogFilter) error {
	_, _, err := logQuery(f)
	return err
}

func parseLogCursor(s string) (time.Time, string, error) {
	us, id, ok := strings.Cut(s, "_")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || !contract.ValidID(id) {
		return time.Time{}, "", errBadCursor
	}
	return time.UnixMicro(n), id, nil
}

// logQuery builds the search's SQL: the time range first, so the planner prunes to the
// partitions it covers, then the filters, newest first by (verified_at, id), which the indexes
// verification_logs_project_idx, the primary key (verified_at, id) and _code_idx give in order.
func logQuery(f contract.LogFilter) (string, []any, error) {
	if f.From.IsZero() || f.To.IsZero() {
		return "", nil, errors.New("search logs: a time range is required")
	}
	if !f.From.Before(f.To) {
		return "", nil, contract.Errorf(contract.KindInvalid, "from must be before to")
	}
	var args params
	arg := args.bind
	where := []string{"l.verified_at >= " + arg(f.From), "l.verified_at < " + arg(f.To)}
	for _, id := range []struct{ kind, v, col string }{
		{"project", f.ProjectID, "l.project_id"}, {"code", f.CodeID, "l.code_id"},
	} {
		if id.v == "" {
			continue
		}
		if !contract.ValidID(id.v) {
			return "", nil, contract.Errorf(contract.KindInvalid, "%s must be an id of 32 hex digits", id.kind)
		}
		where = append(where, id.col+" = "+arg(id.v))
	}
	if f.Code != "" {
		where = append(where, "l.code_id IS NULL AND l.code = "+arg(f.Code))
	}
	for _, eq := range []struct{ v, col string }{
		{f.Action, "l.action"}, {f.Result, "l.result"}, {f.Reason, "l.reason"},
		{f.VerifiedBy, "l.verified_by"}, {f.IP, "l.ip_address"},
	} {
		if eq.v != "" {
			where = append(where, eq.col+" = "+arg(eq.v))
		}
	}
	if f.After != "" {
		at, id, err := parseLogCursor(f.After)
		if err != nil {
			return "", nil, err
		}
		where = append(where, "(l.verified_at, l.id) < ("+arg(at)+", "+arg(id)+"::uuid)")
	}
	q := `SELECT l.id, l.verified_at, l.project_id, l.code_id, coalesce(c.code, l.code, ''), l.action, l.result,
			coalesce(l.reason, ''), coalesce(l.verified_by, ''), l.ip_address
		FROM verification_logs l LEFT JOIN codes c ON c.id = l.code_id
		WHERE ` + strings.Join(where, " AND ") + `
		ORDER BY l.verified_at DESC, l.id DESC`
	return q, args, nil
}

func scanLog(row pgx.CollectableRow) (contract.LogRecord, error) {
	var (
		r      contract.LogRecord
		codeID pgtype.UUID
	)
	err := row.Scan(hexIDInto(&r.ID), &r.VerifiedAt, hexIDInto(&r.ProjectID), &codeID, &r.Code, &r.Action, &r.Result, &r.Reason, &r.VerifiedBy, &r.IP)
	if codeID.Valid { // NULL: an attempt on a value no code has
		r.CodeID = hexID(codeID)
	}
	return r, err
}

// pageLimit is a page size as the log and audit reads take it: 100 when unset, at most 1,000.
func pageLimit(n int) int {
	if n < 1 {
		return 100
	}
	return min(n, 1000)
}

// SearchLogs reads one page of verification logs matching f, newest first. Pass the Cursor of
// the last row as f.After for the next page.
func (s *Store) SearchLogs(ctx context.Context, f contract.LogFilter) ([]contract.LogRecord, error) {
	f.Limit = pageLimit(f.Limit)
	q, args, err := logQuery(f)
	if err != nil {
		return nil, err
	}
	return collect(ctx, s.pool, "search logs", scanLog, q+" LIMIT "+strconv.Itoa(f.Limit), args...)
}

// ExportLogs calls fn for every log matching f (f.Limit ignored), newest first, streaming
// from one query so an export of millions of rows holds one row in memory at a time.
func (s *Store) ExportLogs(ctx context.Context, f contract.LogFilter, fn func(contract.LogRecord) error) error {
	q, args, err := logQuery(f)
	if err != nil {
		return err
	}
	return each(ctx, s.pool, "export logs", scanLog, fn, q, args...)
}
