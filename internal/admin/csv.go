package admin

import (
	"context"
	"encoding/csv"
	"io"
	"strconv"

	"github.com/acv/acv/api/contract"
)

// ExportCSV writes every code of the project with its state as Postgres records it.
func (a *Admin) ExportCSV(ctx context.Context, projectID string, now int64, w io.Writer) (int, error) {
	p, err := a.Store.Project(ctx, projectID)
	if err != nil {
		return 0, notFound(err, "project", projectID)
	}
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"id", "code", "state", "is_disabled", "expires_at", "verified_at", "verified_by", "created_at"})
	n := 0
	err = a.Store.ExportCodes(ctx, projectID, func(r contract.CodeRecord) error {
		c := r.Resource(p.ExpiresAt, now)
		st := contract.DeriveState(c.IsDisabled, c.VerifiedAt != nil, contract.EffectiveExpiry(c.ExpiresAt, p.ExpiresAt), now)
		n++
		return cw.Write([]string{c.ID, c.Code, string(st), strconv.FormatBool(c.IsDisabled),
			optInt(c.ExpiresAt), optInt(c.VerifiedAt), optStr(c.VerifiedBy), strconv.FormatInt(c.CreatedAt, 10)})
	})
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	return n, err
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
