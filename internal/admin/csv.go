package admin

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/store"
)

// ImportResult counts what an import did.
type ImportResult struct {
	Read, Inserted, Duplicates int
}

// ImportCSV reads code values from CSV (column 1: code; optional column 2: expires_at as Unix
// seconds; a first row "code,..." is a header) and creates the ones the project lacks. A bad
// row stops the import with its line number; rows before it stay imported.
func (a *Admin) ImportCSV(ctx context.Context, projectID string, r io.Reader, progress func(done int)) (res ImportResult, err error) {
	l := a.newLoader(ctx, projectID)
	defer func() {
		// Rows before a bad one stay imported, in both stores.
		if cerr := l.close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = a.Store.AfterBulkLoad(ctx)
		}
	}()
	return a.importCSV(ctx, l, r, progress)
}

func (a *Admin) importCSV(ctx context.Context, l *loader, r io.Reader, progress func(done int)) (ImportResult, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	var res ImportResult
	batch := make([]store.NewCode, 0, generateBatch)
	seen := make(map[string]struct{})
	flush := func() error {
		n, err := l.insert(ctx, batch)
		if err != nil {
			return err
		}
		res.Inserted += n
		res.Duplicates += len(batch) - n
		batch = batch[:0]
		clear(seen)
		if progress != nil {
			progress(res.Read)
		}
		return nil
	}
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, fmt.Errorf("read csv: %w", err)
		}
		if line == 1 && strings.EqualFold(strings.TrimSpace(rec[0]), "code") {
			continue
		}
		c := store.NewCode{Code: rec[0]}
		if err := contract.ValidateCode(c.Code); err != nil {
			return res, fmt.Errorf("line %d: %w", line, err)
		}
		if len(rec) > 1 && strings.TrimSpace(rec[1]) != "" {
			v, err := strconv.ParseInt(strings.TrimSpace(rec[1]), 10, 64)
			if err != nil {
				return res, fmt.Errorf("line %d: expires_at must be Unix seconds", line)
			}
			c.ExpiresAt = &v
		}
		res.Read++
		if _, dup := seen[c.Code]; dup {
			res.Duplicates++
			continue
		}
		seen[c.Code] = struct{}{}
		batch = append(batch, c)
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	if len(batch) > 0 {
		if err := flush(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// ExportCSV writes every code of the project with its state as Postgres records it.
func (a *Admin) ExportCSV(ctx context.Context, projectID string, now int64, w io.Writer) (int, error) {
	p, err := a.Store.Project(ctx, projectID)
	if err != nil {
		return 0, err
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
