package console_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
	"github.com/acv/acv/internal/safecsv"
)

// formulaStarts are the first characters a spreadsheet reads as a formula, or skips before
// looking for one.
const formulaStarts = "=+-@\t\r\n"

// rawCells parses a CSV file as a spreadsheet does, without undoing the export's escape, and
// fails the test on any cell that starts a formula.
func rawCells(t *testing.T, what string, body []byte) [][]string {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, body)
	}
	for _, r := range rows {
		for _, cell := range r {
			if cell != "" && strings.ContainsRune(formulaStarts, rune(cell[0])) {
				t.Errorf("%s: cell %q starts a formula", what, cell)
			}
		}
	}
	return rows
}

// readBack reads a CSV file as the import does (safecsv), every row.
func readBack(t *testing.T, body []byte) [][]string {
	t.Helper()
	r := safecsv.NewReader(bytes.NewReader(body))
	var rows [][]string
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return rows
		}
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, append([]string(nil), rec...))
	}
}

// TestConsoleCodeExportIsSpreadsheetSafeAndImportsBack: the admin API's code export (the
// console page's download is the same Service.Export) writes codes and verified_by values that
// start like formulas so that no cell runs, and its import reads the file back as exactly
// those values.
func TestConsoleCodeExportIsSpreadsheetSafeAndImportsBack(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	sys := console.SystemActor("test")
	op := e.account("olga", console.RoleOperator)
	p, err := e.svc.CreateProject(ctx, sys, contract.NewProject{Name: "formulas"})
	if err != nil {
		t.Fatal(err)
	}
	verifiedBy := map[string]string{
		"=1+2":       `=HYPERLINK("http://evil.example","open")`,
		"+31-6-1234": "+1+cmd|' /C calc'!A0",
		"-5":         "-2+3",
		"@SUM(A1)":   "@SUM(A1:A9)",
		"'=quoted":   "\t=1+2",
		"'plain":     "\r=1+2",
		"'":          "'=quoted",
		"PLAIN-1":    "",
	}
	var codes []contract.NewCode
	for v := range verifiedBy {
		codes = append(codes, contract.NewCode{Code: v})
	}
	recs, err := e.store.InsertCodes(ctx, p.ID, codes)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if by := verifiedBy[r.Code]; by != "" {
			if err := e.store.ApplySnapshot(ctx, contract.CodeRecord{ID: r.ID, VerifiedAtMs: e.clock.Now().UnixMilli(), VerifiedBy: by, Version: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}

	res, body := op.do("GET", "/projects/"+p.ID+"/export", nil)
	expect(t, "export", res, body, http.StatusOK)
	if raw := rawCells(t, "code export", body); len(raw) != len(codes)+1 {
		t.Fatalf("export has %d rows, want %d codes", len(raw)-1, len(codes))
	}
	rows := readBack(t, body)
	for _, r := range rows[1:] {
		if by, ok := verifiedBy[r[1]]; !ok || r[6] != by {
			t.Errorf("read back code %q verified_by %q; want an exported code and %q", r[1], r[6], by)
		}
	}

	res, pbody := op.do("POST", "/projects", map[string]string{"name": "copy"})
	expect(t, "project", res, pbody, http.StatusCreated)
	var q contract.Project
	decode(t, pbody, &q)
	res, ibody := op.do("POST", "/projects/"+q.ID+"/import", string(body))
	expect(t, "import of the export", res, ibody, http.StatusOK)
	var rep contract.ImportReport
	decode(t, ibody, &rep)
	if rep.Inserted != len(codes) || rep.Invalid != 0 {
		t.Fatalf("import of the export: %s", ibody)
	}
	for v := range verifiedBy {
		if _, err := e.store.CodeByValue(ctx, q.ID, v); err != nil {
			t.Errorf("code %q not imported as itself: %v", v, err)
		}
	}
}

// TestConsoleLogAndAuditExportsShareTheCodeExportEscape: the log and audit exports write
// through the same escape as the code export, so a value that already starts with the
// apostrophe gets a second one and reads back as itself, never as the formula after it.
func TestConsoleLogAndAuditExportsShareTheCodeExportEscape(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	sys := console.SystemActor("'=sys")
	p, err := e.svc.CreateProject(ctx, sys, contract.NewProject{Name: "escape"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Import(ctx, sys, p.ID, strings.NewReader("code\nLOG-A\n"), false); err != nil {
		t.Fatal(err)
	}
	code, err := e.store.CodeByValue(ctx, p.ID, "LOG-A")
	if err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	if _, err := e.store.ApplyEvents(ctx, []contract.Event{
		logEvent(t, code, p.ID, now.Add(-time.Minute), contract.ResultSuccess, "", "'=apostrophe", "10.0.0.1"),
		logEvent(t, code, p.ID, now.Add(-50*time.Second), contract.ResultFailed, "CODE_ALREADY_USED", "=formula", "10.0.0.2"),
	}); err != nil {
		t.Fatal(err)
	}
	op := e.account("otto", console.RoleOperator)

	res, body := op.do("GET", "/logs.csv?project_id="+p.ID, nil)
	expect(t, "log export", res, body, http.StatusOK)
	raw, back := rawCells(t, "log export", body), readBack(t, body)
	if len(raw) != 3 || raw[0][8] != "verified_by" {
		t.Fatalf("log export %q", raw)
	}
	want := map[string]string{"''=apostrophe": "'=apostrophe", "'=formula": "=formula"}
	for i := 1; i < len(raw); i++ {
		if w, ok := want[raw[i][8]]; !ok || back[i][8] != w {
			t.Errorf("log export verified_by written %q, read back %q", raw[i][8], back[i][8])
		}
	}

	res, body = op.do("GET", "/audit.csv?action=project.create", nil)
	expect(t, "audit export", res, body, http.StatusOK)
	raw, back = rawCells(t, "audit export", body), readBack(t, body)
	if len(raw) != 2 || raw[0][3] != "admin_username" || raw[1][3] != "''=sys" || back[1][3] != "'=sys" {
		t.Fatalf("audit export %q, read back %q", raw, back)
	}
}
