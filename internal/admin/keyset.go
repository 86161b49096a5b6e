package admin

import (
	"context"
	"math"
	"strconv"

	"github.com/acv/acv/api/contract"
)

// ListCodesAfter reads one keyset page of a project's codes, newest first, as PostgreSQL
// records them. The cursor is opaque to callers; a malformed one is KindInvalid.
func (a *Admin) ListCodesAfter(ctx context.Context, projectID string, q contract.CursorQuery, now int64) (contract.CursorPage, error) {
	if q.PageSize < 1 {
		q.PageSize = contract.DefaultPageSize
	}
	if q.PageSize > contract.MaxPageSize {
		return contract.CursorPage{}, contract.Errorf(contract.KindInvalid, "page size must be 1 to %d", contract.MaxPageSize)
	}
	var after int64
	if q.Cursor != "" {
		v, err := strconv.ParseInt(q.Cursor, 10, 64)
		if err != nil || v < 1 {
			return contract.CursorPage{}, contract.Errorf(contract.KindInvalid, "cursor %q is not one a page returned", q.Cursor)
		}
		after = v
	}
	p, err := a.Store.Project(ctx, projectID)
	if err != nil {
		return contract.CursorPage{}, notFound(err, "project", projectID)
	}
	page, err := a.Store.ListCodesAfter(ctx, projectID, contract.KeysetQuery{State: q.State, Search: q.Search, After: after, PageSize: q.PageSize}, now)
	if err != nil {
		return contract.CursorPage{}, notFound(err, "project", projectID)
	}
	// The total is the page-numbered list's: a page past the end reads no row, only the count
	// (from the statistics counters when there is no search).
	_, total, err := a.Store.ListCodes(ctx, projectID, contract.ListQuery{State: q.State, Search: q.Search, Page: math.MaxInt, PageSize: q.PageSize}, now)
	if err != nil {
		return contract.CursorPage{}, notFound(err, "project", projectID)
	}
	out := contract.CursorPage{Items: make([]contract.Code, 0, len(page.Codes)), Total: total, PageSize: q.PageSize}
	for _, r := range page.Codes {
		out.Items = append(out.Items, r.Resource(p.ExpiresAt, now))
	}
	if page.Next > 0 {
		out.NextCursor = strconv.FormatInt(page.Next, 10)
	}
	return out, nil
}
