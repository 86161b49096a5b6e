package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
)

// ListCodes returns one page of a project's codes, newest first, and how many match; the state
// is derived at now. Without a search the total comes from the statistics counters.
// contract.ErrNotFound when the project does not exist.
func (s *Store) ListCodes(ctx context.Context, projectID string, q contract.ListQuery, now int64) ([]contract.CodeRecord, int64, error) {
	args, where, err := s.codeFilter(ctx, projectID, q.State, now)
	if err != nil {
		return nil, 0, err
	}
	q.Page = max(q.Page, 1)
	if q.PageSize < 1 {
		q.PageSize = contract.DefaultPageSize
	}
	arg := args.bind
	withoutSearch := strings.Join(where, " AND ")
	var matches string // a search's condition on code_values v
	if q.Search != "" {
		// The trigram index is on code_values, which verifies never touch.
		matches = searchCondition(q.Search, arg)
		where = append(where, `c.id IN (SELECT v.code_id FROM code_values v WHERE `+matches+`)`)
	}
	filter := strings.Join(where, " AND ")

	var total int64
	if q.Search == "" {
		st, err := s.Statistics(ctx, projectID, now)
		if err != nil {
			return nil, 0, err
		}
		total = countOf(st, q.State)
	} else {
		// A search alone is answered from code_values, codes joined for the page's rows only.
		count := `SELECT count(*) FROM codes c WHERE ` + filter
		if q.State == "" {
			count = `SELECT count(*) FROM code_values v WHERE ` + matches
		}
		if total, err = one(ctx, s.pool, "count codes of project "+projectID, pgx.RowTo[int64], count, args...); err != nil {
			return nil, 0, err
		}
	}

	offset, ok := pageOffset(q.Page, q.PageSize, total)
	if !ok {
		return []contract.CodeRecord{}, total, nil
	}
	limit, off := arg(q.PageSize), arg(offset)
	var query string
	if q.State == "" && q.Search == "" {
		// The codes hold exactly 1..code_seq: the page starts offset below the top, one seek.
		query = `SELECT ` + codeColumns + ` FROM codes c WHERE ` + filter + `
			AND c.seq <= (SELECT p.code_seq FROM projects p WHERE p.id = $1) - ` + off + `
			ORDER BY c.seq DESC LIMIT ` + limit
	} else if q.State == "" {
		query = `WITH m AS MATERIALIZED (SELECT v.code_id, v.seq FROM code_values v WHERE ` + matches + `
			ORDER BY v.seq DESC LIMIT ` + limit + ` OFFSET ` + off + `)
			SELECT ` + codeColumns + ` FROM codes c JOIN m ON m.code_id = c.id ORDER BY m.seq DESC`
	} else if q.Search != "" {
		// A search with a state filter: the matches newest first from code_values, each joined
		// to its code for the state, until the page is full (not every match of a broad search).
		query = `SELECT ` + codeColumns + ` FROM (SELECT v.code_id, v.seq FROM code_values v WHERE ` + matches + `
			ORDER BY v.seq DESC) m JOIN codes c ON c.id = m.code_id WHERE ` + withoutSearch + `
			ORDER BY m.seq DESC LIMIT ` + limit + ` OFFSET ` + off
	} else if q.State == contract.StateExpired && total <= sparseRows {
		// Expired codes are usually few and old: collect them through the expiry index, then
		// sort, rather than walk nearly every open code newest first.
		query = `WITH m AS MATERIALIZED (SELECT c.id FROM codes c WHERE ` + filter + `)
			SELECT ` + codeColumns + ` FROM codes c JOIN m ON m.id = c.id
			ORDER BY c.seq DESC LIMIT ` + limit + ` OFFSET ` + off
	} else if q.State == contract.StateUsed {
		query = `SELECT ` + codeColumns + ` FROM ` + usedCodes + ` WHERE u.project_id = $1
			ORDER BY u.seq DESC LIMIT ` + limit + ` OFFSET ` + off
	} else {
		// Unused codes (and disabled ones, through codes_seq_disabled_idx): the project's codes
		// newest first, each row's state checked on the row.
		query = `SELECT ` + codeColumns + ` FROM codes c WHERE ` + filter + `
			ORDER BY c.seq DESC LIMIT ` + limit + ` OFFSET ` + off
	}
	out, err := collect(ctx, s.pool, "list codes of project "+projectID, scanCode, query, args...)
	return out, total, err
}

// pageOffset is the number of matching rows before page (1-based) of size pageSize, and
// whether that page starts before the end of total rows. It compares in pages, so a page
// however deep cannot overflow into a negative OFFSET.
func pageOffset(page, pageSize int, total int64) (int64, bool) {
	before := int64(page) - 1 // pages before this one; page >= 1, so no overflow
	if total <= 0 || before > (total-1)/int64(pageSize) {
		return 0, false
	}
	return before * int64(pageSize), true // at most total - 1
}

// sparseRows is how many matching codes a filtered page may collect and sort instead of
// walking the list in order.
const sparseRows = 200_000

// usedCodes is the source of a list of used codes: code_used (exactly the used codes, keyed by
// seq) joined to each code row (alias c). No index of codes names the state, so a verify's
// update stays a HOT update; early in a campaign the used codes are few among millions.
const usedCodes = `code_used u JOIN codes c ON c.project_id = u.project_id AND c.seq = u.seq`

// codeFilter starts a predicate on codes c: project $1 (in args) and, unless "", state st at now.
func (s *Store) codeFilter(ctx context.Context, projectID string, st contract.State, now int64) (params, []string, error) {
	p, err := s.Project(ctx, projectID)
	if err != nil {
		return nil, nil, err
	}
	args, where := params{projectID}, []string{"c.project_id = $1"}
	if st != "" {
		cond, err := stateCondition(st, args.bind, toTime(p.ExpiresAt), time.Unix(now, 0))
		if err != nil {
			return nil, nil, err
		}
		where = append(where, cond)
	}
	return args, where, nil
}

// stateCondition is the SQL predicate of a derived state on a code row c; arg binds a parameter
// and returns its placeholder.
func stateCondition(st contract.State, arg func(any) string, projectExpiresAt *time.Time, now time.Time) (string, error) {
	const open = "NOT c.is_disabled AND c.verified_at IS NULL"
	switch st {
	case contract.StateDisabled:
		return "c.is_disabled", nil
	case contract.StateUsed:
		return "c.verified_at IS NOT NULL AND NOT c.is_disabled", nil
	}
	// The project's expiry fallback is decided here, leaving the predicate on the code's own
	// expires_at, which codes_expiry_idx serves.
	projectPassed := projectExpiresAt != nil && !now.Before(*projectExpiresAt)
	switch st {
	case contract.StateExpired:
		if projectPassed {
			return open + " AND (c.expires_at IS NULL OR c.expires_at <= " + arg(now) + ")", nil
		}
		return open + " AND c.expires_at <= " + arg(now), nil
	case contract.StateUnused:
		if projectPassed {
			return open + " AND c.expires_at > " + arg(now), nil
		}
		return open + " AND (c.expires_at IS NULL OR c.expires_at > " + arg(now) + ")", nil
	}
	return "", fmt.Errorf("unknown state %q", st)
}

// searchCondition is a search's condition on code_values v (aliased so) of the project bound
// as $1: a case-insensitive substring of the value, served by code_values_trgm_idx.
func searchCondition(search string, arg func(any) string) string {
	return `v.project_id = $1 AND v.code ILIKE ` + arg(likePattern(search)) + ` ESCAPE '\'`
}

// likePattern turns a search string into an ILIKE substring pattern in which %, _ and the
// escape character \ match themselves.
func likePattern(search string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(search) + "%"
}

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
		func(r pgx.CollectableRow) (contract.CodeRecord, error) {
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
	args, where, err := s.codeFilter(ctx, projectID, q.State, now)
	if err != nil {
		return "", nil, q, err
	}
	if q.PageSize < 1 {
		q.PageSize = contract.DefaultPageSize
	}
	arg := args.bind
	var after string // the cursor's placeholder
	if q.After > 0 {
		after = arg(q.After)
		where = append(where, "c.seq < "+after)
	}
	from, cond, order := "codes c", strings.Join(where, " AND "), "c.seq"
	switch {
	case q.Search != "":
		// The matches newest first from code_values (its trigram index), each joined to its
		// code for the state, until the page is full.
		matches := searchCondition(q.Search, arg)
		if after != "" {
			matches += " AND v.seq < " + after
		}
		from = `(SELECT v.code_id, v.seq FROM code_values v WHERE ` + matches + `
			ORDER BY v.seq DESC) m JOIN codes c ON c.id = m.code_id`
		order = "m.seq"
	case q.State == contract.StateUsed:
		from, cond, order = usedCodes, "u.project_id = $1", "u.seq"
		if after != "" {
			cond += " AND u.seq < " + after
		}
	}
	return `SELECT ` + codeColumns + `, c.seq FROM ` + from + ` WHERE ` + cond +
		` ORDER BY ` + order + ` DESC LIMIT ` + arg(q.PageSize+1), args, q, nil
}
