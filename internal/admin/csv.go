package admin

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/safecsv"
)

// ExportCSV writes every code of the project with its state as Postgres records it. The file
// is written in the one spreadsheet-safe CSV of every export (safecsv): a code value or a
// verified_by an API client chose cannot run as a formula in the spreadsheet that opens it,
// and ImportCSV reads the values back as they were.
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
