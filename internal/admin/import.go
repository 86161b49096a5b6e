package admin

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/safecsv"
)

// MaxRowErrors is how many row problems an import report lists; the totals count them all.
const MaxRowErrors = 100

// Kinds of row problem in an import report.
const (
	// RowInvalid is a row that cannot be imported (unreadable, no code, a malformed code).
	RowInvalid = "invalid"
	// RowDuplicate repeats a code of an earlier row of the same file; it is skipped.
	RowDuplicate = "duplicate"
	// RowExists is a code the project already holds; it is skipped (left as it is).
	RowExists = "exists"
)

// problem counts a problem row in r and lists it while the list has room.
func problem(r *contract.ImportReport, e contract.RowError) {
	switch e.Kind {
	case RowInvalid:
		r.Invalid++
	case RowDuplicate:
		r.Duplicates++
	case RowExists:
		r.Existing++
	}
	if len(r.Errors) < MaxRowErrors {
		r.Errors = append(r.Errors, e)
	} else {
		r.Truncated = true
	}
}

// ImportCSV reads codes, and optionally expires_at (Unix seconds or RFC 3339), from CSV (safecsv)
// into a project: by name under a header naming "code" (an export imports as is), else in that
// order. Bad rows are skipped and reported; opts.DryRun writes nothing. An error stops the import.
func (a *Admin) ImportCSV(ctx context.Context, projectID string, r io.Reader, opts contract.ImportOptions) (rep contract.ImportReport, err error) {
	rep.DryRun, rep.Errors = opts.DryRun, []contract.RowError{}
	if _, err := a.Store.Project(ctx, projectID); err != nil {
		return rep, notFound(err, "project", projectID)
	}
	imp := &importer{a: a, projectID: projectID, rep: &rep, opts: opts, seen: map[string]int{}}
	if !opts.DryRun {
		imp.l = a.newLoader(ctx, projectID, "")
		defer func() {
			if cerr := imp.l.close(); cerr != nil {
				err = errors.Join(err, cerr)
			}
			if err == nil && rep.Inserted > 0 {
				err = a.Store.AfterBulkLoad(ctx)
			}
		}()
	}
	err = imp.run(ctx, r)
	slices.SortStableFunc(rep.Errors, func(x, y contract.RowError) int { return x.Line - y.Line })
	return rep, err
}

// importer is one import's state: the good rows waiting to be written and the codes seen.
type importer struct {
	a         *Admin
	projectID string
	rep       *contract.ImportReport
	opts      contract.ImportOptions
	l         *loader // nil in a dry run
	seen      map[string]int
	batch     []contract.NewCode
	lines     []int // the line of each batch entry
}

func (im *importer) run(ctx context.Context, r io.Reader) error {
	cr := safecsv.NewReader(r)
	im.batch = make([]contract.NewCode, 0, generateBatch)
	codeCol, expCol := 0, 1
	for first := true; ; first = false {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return fmt.Errorf("read csv: %w", err)
			}
			// The reader resumes after the malformed record: report it and go on.
			im.rep.Read++
			problem(im.rep, contract.RowError{Line: pe.StartLine, Kind: RowInvalid, Reason: pe.Err.Error()})
			continue
		}
		line, _ := cr.FieldPos(0)
		// A first row naming a "code" column is a header: the columns are then found by name.
		if first && slices.ContainsFunc(rec, func(h string) bool { return strings.EqualFold(strings.TrimSpace(h), "code") }) {
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
		im.rep.Read++
		if codeCol >= len(rec) {
			problem(im.rep, contract.RowError{Line: line, Kind: RowInvalid, Reason: fmt.Sprintf("no code column (the row has %d fields)", len(rec))})
			continue
		}
		c := contract.NewCode{Code: rec[codeCol]}
		if err := contract.ValidateCode(c.Code); err != nil {
			problem(im.rep, contract.RowError{Line: line, Value: printable(c.Code), Kind: RowInvalid, Reason: err.Error()})
			continue
		}
		if expCol >= 0 && expCol < len(rec) && strings.TrimSpace(rec[expCol]) != "" {
			v, err := parseExpiry(strings.TrimSpace(rec[expCol]))
			if err != nil {
				problem(im.rep, contract.RowError{Line: line, Value: c.Code, Kind: RowInvalid, Reason: err.Error()})
				continue
			}
			c.ExpiresAt = &v
		}
		if at, dup := im.seen[c.Code]; dup {
			problem(im.rep, contract.RowError{Line: line, Value: c.Code, Kind: RowDuplicate, Reason: fmt.Sprintf("repeats line %d", at)})
			continue
		}
		im.seen[c.Code] = line
		im.batch, im.lines = append(im.batch, c), append(im.lines, line)
		if len(im.batch) == cap(im.batch) {
			if err := im.flush(ctx); err != nil {
				return err
			}
		}
	}
	return im.flush(ctx)
}

// flush writes the good rows (a dry run looks them up) and reports those the project held.
func (im *importer) flush(ctx context.Context) error {
	if len(im.batch) == 0 {
		return nil
	}
	held := map[string]bool{}
	if im.l == nil {
		values := make([]string, len(im.batch))
		for i, c := range im.batch {
			values[i] = c.Code
		}
		existing, err := im.a.Store.ExistingValues(ctx, im.projectID, values)
		if err != nil {
			return err
		}
		for _, v := range existing {
			held[v] = true
		}
	} else {
		rows, err := im.l.insertRows(ctx, im.batch)
		if err != nil {
			return err
		}
		inserted := make(map[string]bool, len(rows))
		for _, r := range rows {
			inserted[r.Code] = true
		}
		for _, c := range im.batch {
			held[c.Code] = !inserted[c.Code]
		}
	}
	for i, c := range im.batch {
		if held[c.Code] {
			problem(im.rep, contract.RowError{Line: im.lines[i], Value: c.Code, Kind: RowExists, Reason: "the project already holds this code"})
		} else {
			im.rep.Inserted++
		}
	}
	im.batch, im.lines = im.batch[:0], im.lines[:0]
	if im.opts.Progress != nil {
		im.opts.Progress(im.rep.Read)
	}
	return nil
}

// printable is a cell as a report shows it: escaped, cut to 80 characters.
func printable(s string) string {
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "…"
	}
	q := strconv.Quote(s)
	if q[1:len(q)-1] == s {
		return s
	}
	return q
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
