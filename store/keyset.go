package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/acv/acv/api/contract"
)

// ListCodesAfter reads the codes of a project after q.After in the list's order (seq
// descending), with ListCodes' filters; seq < After lets every plan seek on (project_id, seq).
// contract.ErrNotFound when the project does not exist.
func (s *Store) ListCodesAfter(ctx context.Context, projectID string, q contract.KeysetQuery, now int64) (contract.KeysetPage, error) {
	query, args, q, err := s.keysetSQL(ctx, projectID, q, now)
	if err != nil {
		return contract.KeysetPage{}, err
	}
	var seqs []int64
	out, err := collect(ctx, s.pool, fmt.Sprintf("list codes of project %s after %d", projectID, q.After),
		func(r pgx.Row) (contract.CodeRecord, error) {
			var seq int64
			c, err := scanCodeSeq(r, &seq)
			seqs = append(seqs, seq)
			return c, err
		}, query, args...)
	if err != nil {
		return contract.KeysetPage{}, err
	}
	page := contract.KeysetPage{Codes: out}
	// One row more than the page was asked for tells that a next page exists.
	if len(out) > q.PageSize {
		page.Codes = out[:q.PageSize]
		page.Next = seqs[q.PageSize-1]
	}
	return page, nil
}

// keysetSQL is ListCodesAfter's query and arguments, and q with its defaults; ExplainKeyset
// shows its plan.
func (s *Store) keysetSQL(ctx context.Context, projectID string, q contract.KeysetQuery, now int64) (string, []any, contract.KeysetQuery, error) {
	p, err := s.Project(ctx, projectID)
	if err != nil {
		return "", nil, q, err
	}
	if q.PageSize < 1 {
		q.PageSize = contract.DefaultPageSize
	}
	args := params{projectID}
	arg := args.bind
	where := []string{"c.project_id = $1"}
	var after string // the cursor's placeholder
	if q.After > 0 {
		after = arg(q.After)
		where = append(where, "c.seq < "+after)
	}
	if q.State != "" {
		cond, err := stateCondition(q.State, arg, toTime(p.ExpiresAt), time.Unix(now, 0))
		if err != nil {
			return "", nil, q, err
		}
		where = append(where, cond)
	}
	if q.Search != "" {
		// The matches newest first from code_values (its trigram index), each joined to its
		// code for the state, until the page is full.
		matches := searchCondition(q.Search, arg)
		if after != "" {
			matches += " AND v.seq < " + after
		}
		return `SELECT ` + codeColumns + `, c.seq FROM (SELECT v.code_id, v.seq FROM code_values v WHERE ` + matches + `
			ORDER BY v.seq DESC) m JOIN codes c ON c.id = m.code_id WHERE ` + strings.Join(where, " AND ") +
			` ORDER BY m.seq DESC LIMIT ` + arg(q.PageSize+1), args, q, nil
	}
	if q.State == contract.StateUsed {
		cond := "u.project_id = $1"
		if after != "" {
			cond += " AND u.seq < " + after
		}
		return `SELECT ` + codeColumns + `, c.seq FROM ` + usedCodes + ` WHERE ` + cond +
			` ORDER BY u.seq DESC LIMIT ` + arg(q.PageSize+1), args, q, nil
	}
	return `SELECT ` + codeColumns + `, c.seq FROM codes c WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY c.seq DESC LIMIT ` + arg(q.PageSize+1), args, q, nil
}

// ExplainKeyset returns PostgreSQL's plan (EXPLAIN, text format) of ListCodesAfter's query, so
// a test can hold that a deep page is still an index seek.
func (s *Store) ExplainKeyset(ctx context.Context, projectID string, q contract.KeysetQuery, now int64) (string, error) {
	query, args, _, err := s.keysetSQL(ctx, projectID, q, now)
	if err != nil {
		return "", err
	}
	return s.explain(ctx, "keyset list", query, args...)
}

// explain returns PostgreSQL's plan (EXPLAIN, text format) of query, for the tests that hold a
// query to an index plan; what names the query in an error.
func (s *Store) explain(ctx context.Context, what, query string, args ...any) (string, error) {
	lines, err := collect(ctx, s.pool, "explain "+what, rowTo[string], "EXPLAIN "+query, args...)
	return strings.Join(lines, "\n"), err
}
