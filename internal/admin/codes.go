package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/plural"
	"github.com/acv/acv/internal/safecsv"
)

// SetCodeDisabled disables or enables one code: Redis first, as a new version of its state,
// then the same snapshot to Postgres, which applies it only if nothing newer arrived.
func (a *Admin) SetCodeDisabled(ctx context.Context, projectID, value string, disabled bool) error {
	if _, err := a.Store.Project(ctx, projectID); err != nil {
		return notFound(err, "project", projectID)
	}
	row, err := a.code(ctx, projectID, value)
	if err != nil {
		return err
	}
	st, err := a.Cache.SetDisabled(ctx, projectID, value, disabled)
	if err != nil {
		return err
	}
	st.ID = row.ID
	return a.Store.ApplySnapshot(ctx, st)
}

// code reads a code of a project by its value, as a refusal naming it when missing.
func (a *Admin) code(ctx context.Context, projectID, value string) (contract.CodeRecord, error) {
	rec, err := a.Store.CodeByValue(ctx, projectID, value)
	if errors.Is(err, contract.ErrNotFound) {
		return rec, contract.NotFound("code %q not found in project %s", value, projectID)
	}
	if err != nil {
		return rec, fmt.Errorf("code %q: %w", value, err)
	}
	return rec, nil
}

// pageSize is a list's page size, the default for 0, refused above the largest.
func pageSize(n int) (int, error) {
	if n > contract.MaxPageSize {
		return 0, contract.Errorf(contract.KindInvalid, "page size must be 1 to %d", contract.MaxPageSize)
	}
	return cmp.Or(max(n, 0), contract.DefaultPageSize), nil
}

// resources are records as the API shows codes, in a project expiring at expiresAt.
func resources(rows []contract.CodeRecord, expiresAt *int64, now int64) []contract.Code {
	out := make([]contract.Code, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.Resource(expiresAt, now))
	}
	return out
}

// ListCodes reads one page of a project's codes as PostgreSQL records them.
func (a *Admin) ListCodes(ctx context.Context, projectID string, q contract.ListQuery, now int64) (contract.CodePage, error) {
	q.Page = max(q.Page, 1)
	var err error
	if q.PageSize, err = pageSize(q.PageSize); err != nil {
		return contract.CodePage{}, err
	}
	p, err := a.Store.Project(ctx, projectID)
	if err != nil {
		return contract.CodePage{}, notFound(err, "project", projectID)
	}
	rows, total, err := a.Store.ListCodes(ctx, projectID, q, now)
	if err != nil {
		return contract.CodePage{}, notFound(err, "project", projectID)
	}
	return contract.CodePage{Items: resources(rows, p.ExpiresAt, now), Total: total, Page: q.Page, PageSize: q.PageSize,
		TotalPages: (total + int64(q.PageSize) - 1) / int64(q.PageSize)}, nil
}

// HistoryLimit is how many verification-log entries Code shows.
const HistoryLimit = 100

// Code reads one code by its value with its live state (Redis, when it holds the code) and its
// verification history (newest first, at most HistoryLimit entries).
func (a *Admin) Code(ctx context.Context, projectID, value string, now int64) (contract.CodeWithHistory, error) {
	p, err := a.Store.Project(ctx, projectID)
	if err != nil {
		return contract.CodeWithHistory{}, notFound(err, "project", projectID)
	}
	rec, err := a.code(ctx, projectID, value)
	if err != nil {
		return contract.CodeWithHistory{}, err
	}
	if live, found, err := a.Cache.LiveCode(ctx, projectID, value); err == nil && found {
		rec = rec.WithLiveState(live)
	}
	c := contract.CodeWithHistory{Code: rec.Resource(p.ExpiresAt, now)}
	c.State = contract.DeriveState(c.IsDisabled, c.VerifiedAt != nil, contract.EffectiveExpiry(c.ExpiresAt, p.ExpiresAt), now)
	logs, err := a.Store.Logs(ctx, rec.ID, HistoryLimit)
	c.VerificationLogs = orEmpty(logs)
	return c, err
}

// ListCodesAfter reads one keyset page of a project's codes, newest first; the cursor is opaque.
func (a *Admin) ListCodesAfter(ctx context.Context, projectID string, q contract.CursorQuery, now int64) (contract.CursorPage, error) {
	var err error
	if q.PageSize, err = pageSize(q.PageSize); err != nil {
		return contract.CursorPage{}, err
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
	out := contract.CursorPage{Items: resources(page.Codes, p.ExpiresAt, now), Total: total, PageSize: q.PageSize}
	if page.Next > 0 {
		out.NextCursor = strconv.FormatInt(page.Next, 10)
	}
	return out, nil
}

// bulkPage is how many codes a bulk change handles a round trip.
const bulkPage = 2000

// CountMatching counts the codes f selects that are not disabled yet: what DisableMatching changes.
func (a *Admin) CountMatching(ctx context.Context, projectID string, f contract.CodeFilter, now int64) (int64, error) {
	if err := checkFilter(f); err != nil {
		return 0, err
	}
	n, err := a.Store.CountBulk(ctx, projectID, f, now)
	return n, notFound(err, "project", projectID)
}

// DisableMatching disables the codes f selects as SetCodeDisabled does, a page a round trip,
// and returns how many; with expected, only while that is still their count.
func (a *Admin) DisableMatching(ctx context.Context, projectID string, f contract.CodeFilter, expected *int64, now int64) (int, error) {
	if expected != nil {
		n, err := a.CountMatching(ctx, projectID, f, now)
		if err != nil {
			return 0, err
		}
		if n != *expected {
			return 0, &contract.Error{Kind: contract.KindConflict, Err: contract.ErrCountChanged,
				Message: fmt.Sprintf("%s now, not the %d confirmed: check the new count and confirm again", plural.N(n, "code matches", "codes match"), *expected)}
		}
	} else if err := checkFilter(f); err != nil {
		return 0, err
	}
	done, after := 0, int64(0)
	for {
		page, last, err := a.Store.BulkPage(ctx, projectID, f, now, after, bulkPage)
		if err != nil {
			return done, notFound(err, "project", projectID)
		}
		if len(page) == 0 {
			return done, nil
		}
		snaps, err := a.Cache.SetDisabledMany(ctx, projectID, page, true)
		if err != nil {
			return done, err
		}
		if err := a.Store.ApplySnapshots(ctx, snaps); err != nil {
			return done, err
		}
		done += len(page)
		after = last
	}
}

// checkFilter refuses a filter a bulk disable cannot mean.
func checkFilter(f contract.CodeFilter) error {
	switch f.State {
	case "", contract.StateUnused, contract.StateUsed, contract.StateExpired:
	case contract.StateDisabled:
		return contract.Errorf(contract.KindInvalid, "disabled codes are disabled already: choose unused, used or expired")
	default:
		return contract.Errorf(contract.KindInvalid, "status must be unused, used or expired")
	}
	if f.BatchID != "" && !contract.ValidID(f.BatchID) {
		return contract.NotFound("batch %s not found", f.BatchID)
	}
	if err := contract.ValidateText("search", f.Search, contract.MaxCodeLen); err != nil {
		return contract.Errorf(contract.KindInvalid, "%v", err)
	}
	return nil
}

// ExportCSV writes every code of the project with its state as spreadsheet-safe CSV (safecsv),
// which ImportCSV reads back as it was.
func (a *Admin) ExportCSV(ctx context.Context, projectID string, now int64, w io.Writer) (int, error) {
	p, err := a.Store.Project(ctx, projectID)
	if err != nil {
		return 0, notFound(err, "project", projectID)
	}
	cw := safecsv.NewWriter(w)
	if err := cw.Write("id", "code", "state", "is_disabled", "expires_at", "verified_at", "verified_by", "created_at"); err != nil {
		return 0, fmt.Errorf("export codes of project %s: %w", projectID, err)
	}
	n := 0
	err = a.Store.ExportCodes(ctx, projectID, func(r contract.CodeRecord) error {
		c := r.Resource(p.ExpiresAt, now)
		st := contract.DeriveState(c.IsDisabled, c.VerifiedAt != nil, contract.EffectiveExpiry(c.ExpiresAt, p.ExpiresAt), now)
		n++
		return cw.Write(c.ID, c.Code, string(st), strconv.FormatBool(c.IsDisabled),
			optInt(c.ExpiresAt), optInt(c.VerifiedAt), optStr(c.VerifiedBy), strconv.FormatInt(c.CreatedAt, 10))
	})
	if ferr := cw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return n, fmt.Errorf("export codes of project %s: %w", projectID, err)
	}
	return n, nil
}

func optInt(v *int64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(*v, 10)
}

func optStr(v *string) string {
	if v == nil {
		return ""
	}
	return *v
}
