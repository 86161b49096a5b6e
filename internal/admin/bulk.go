package admin

import (
	"context"
	"fmt"

	"github.com/acv/acv/internal/plural"

	"github.com/acv/acv/api/contract"
)

// bulkPage is how many codes a bulk change reads, changes in Redis (one pipeline) and writes
// to PostgreSQL (one statement) at a time.
const bulkPage = 2000

// CountMatching counts the codes of a project that f selects and that are not disabled yet:
// what DisableMatching would change, shown before it runs.
func (a *Admin) CountMatching(ctx context.Context, projectID string, f contract.CodeFilter, now int64) (int64, error) {
	if err := checkFilter(f); err != nil {
		return 0, err
	}
	n, err := a.Store.CountBulk(ctx, projectID, f, now)
	return n, notFound(err, "project", projectID)
}

// DisableMatching disables the codes of a project that f selects, as SetCodeDisabled disables
// one (Redis first, as a new version of each code's state, then the same snapshots to
// PostgreSQL), a page of codes a round trip each. With expected, it first checks that the
// count is still the one confirmed. The state filter is read from PostgreSQL's record. It
// returns how many codes it disabled.
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
