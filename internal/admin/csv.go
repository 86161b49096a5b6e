package admin

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/store"
)

// ImportResult counts what an import did: Read codes (data rows), of which Inserted were new
// and Duplicates already in the project (or repeated in the file).
type ImportResult struct {
	Read, Inserted, Duplicates int
}

// ImportError is a bad row (or unreadable CSV) that stopped an import; the codes of the rows
// before it are kept (imported), the rest of the file is not read.
type ImportError struct {
	Line int   // line of the file, from 1
	Err  error // what is wrong with it
	// Kept counts the rows before Line: all imported (new, or already present).
	Kept ImportResult
}

func (e *ImportError) Error() string {
	return fmt.Sprintf("line %d: %v; import stopped there: the %d code(s) before it were kept (%d new, %d already present), "+
		"the rest of the file was not imported (fix the line and import the file again: codes already present are skipped)",
		e.Line, e.Err, e.Kept.Read, e.Kept.Inserted, e.Kept.Duplicates)
}

func (e *ImportError) Unwrap() error { return e.Err }

// ImportCSV reads codes from CSV and creates the ones the project lacks. Columns: code and,
// optionally, expires_at (Unix seconds or RFC 3339; empty: the project's expiry applies). A
// first row naming a "code" column is a header, and then the columns are found by name, so the
// file `acv codes export` writes imports as is (its other columns are ignored: codes are
// imported unused). Without a header the first column is the code and the second expires_at.
// A bad row stops the import with an *ImportError naming its line; the rows before it stay
// imported, in both stores.
func (a *Admin) ImportCSV(ctx context.Context, projectID string, r io.Reader, progress func(done int)) (res ImportResult, err error) {
	if _, err := a.Store.Project(ctx, projectID); err != nil {
		return res, notFound(err, "project", projectID)
	}
	l := a.newLoader(ctx, projectID, "")
	defer func() {
		if cerr := l.close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		if err == nil {
			err = a.Store.AfterBulkLoad(ctx)
		}
	}()
	return a.importCSV(ctx, l, r, progress)
}

// parseExpiry reads an expires_at cell: Unix seconds or RFC 3339.
func parseExpiry(s string) (int64, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, fmt.Errorf("expires_at %q: use Unix seconds or RFC 3339 (2027-01-01T00:00:00Z)", s)
	}
	return t.Unix(), nil
}

func (a *Admin) importCSV(ctx context.Context, l *loader, r io.Reader, progress func(done int)) (ImportResult, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	var res ImportResult
	batch := make([]store.NewCode, 0, generateBatch)
	seen := make(map[string]struct{})
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
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
	// bad keeps the rows before the bad one and reports it.
	bad := func(line int, err error) (ImportResult, error) {
		if ferr := flush(); ferr != nil {
			return res, fmt.Errorf("line %d: %v; and writing the rows before it failed: %w", line, err, ferr)
		}
		return res, &ImportError{Line: line, Err: err, Kept: res}
	}
	codeCol, expCol := 0, 1
	for first := true; ; first = false {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return bad(pe.Line, pe.Err)
			}
			return res, fmt.Errorf("read csv: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if first && isHeader(rec) {
			codeCol, expCol = -1, -1
			for i, h := range rec {
				switch strings.ToLower(strings.TrimSpace(h)) {
				case "code":
					codeCol = i
				case "expires_at":
					expCol = i
				}
			}
			continue
		}
		if codeCol >= len(rec) {
			return bad(line, fmt.Errorf("no code column (the row has %d fields)", len(rec)))
		}
		c := store.NewCode{Code: rec[codeCol]}
		if err := contract.ValidateCode(c.Code); err != nil {
			return bad(line, err)
		}
		if expCol >= 0 && expCol < len(rec) && strings.TrimSpace(rec[expCol]) != "" {
			v, err := parseExpiry(strings.TrimSpace(rec[expCol]))
			if err != nil {
				return bad(line, err)
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
	if err := flush(); err != nil {
		return res, err
	}
	return res, nil
}

// isHeader tells whether a first row names its columns: one of its cells is "code".
func isHeader(rec []string) bool {
	for _, h := range rec {
		if strings.EqualFold(strings.TrimSpace(h), "code") {
			return true
		}
	}
	return false
}

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
