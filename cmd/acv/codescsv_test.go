package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/safecsv"
	"github.com/acv/acv/store"
)

// TestCodesExportImportRoundTripsFormulaCells: acv codes export writes code values and
// verified_by values that start like formulas (or with the apostrophe that guards them) so that
// no cell runs in a spreadsheet, and acv codes import reads the file back as the same values.
func TestCodesExportImportRoundTripsFormulaCells(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	st, err := store.Open(ctx, c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var p, q contract.Project
	if err := json.Unmarshal([]byte(c.ok("project", "create", "--name", "formulas")), &p); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(c.ok("project", "create", "--name", "copy")), &q); err != nil {
		t.Fatal(err)
	}
	// Codes the contract allows; the API refuses a tab or CR in verified_by, but the export must
	// be safe for whatever the store holds.
	verifiedBy := map[string]string{
		"=1+2":       `=HYPERLINK("http://evil.example","open")`,
		"+31-6-1234": "+1+cmd|' /C calc'!A0",
		"-5":         "-2+3",
		"@SUM(A1)":   "@SUM(A1:A9)",
		"'=quoted":   "\t=1+2",
		"''=twice":   "\r=1+2",
		"'plain":     "'=quoted",
		"'":          "'",
		"PLAIN-1":    "",
	}
	var codes []contract.NewCode
	for v := range verifiedBy {
		codes = append(codes, contract.NewCode{Code: v})
	}
	recs, err := st.InsertCodes(ctx, p.ID, codes)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if by := verifiedBy[r.Code]; by != "" {
			if err := st.ApplySnapshot(ctx, contract.CodeRecord{ID: r.ID, VerifiedAtMs: time.Now().UnixMilli(), VerifiedBy: by, Version: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}

	exported := c.ok("codes", "export", "--project", p.ID)
	// Named as an argument, the file holds what standard output did.
	file := filepath.Join(t.TempDir(), "codes.csv")
	c.ok("codes", "export", "--project", p.ID, file)
	if b, err := os.ReadFile(file); err != nil || string(b) != exported {
		t.Errorf("export to %s: %v, %d bytes; standard output had %d", file, err, len(b), len(exported))
	}
	raw, err := csv.NewReader(strings.NewReader(exported)).ReadAll()
	if err != nil || len(raw) != len(codes)+1 {
		t.Fatalf("export: %d rows, %v\n%s", len(raw), err, exported)
	}
	for _, r := range raw {
		for _, cell := range r {
			if cell != "" && strings.ContainsRune("=+-@\t\r\n", rune(cell[0])) {
				t.Errorf("export cell %q starts a formula", cell)
			}
		}
	}
	rd := safecsv.NewReader(strings.NewReader(exported))
	for i := 0; ; i++ {
		r, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if by, ok := verifiedBy[r[1]]; i > 0 && (!ok || r[6] != by) {
			t.Errorf("read back code %q verified_by %q; want an exported code and %q", r[1], r[6], by)
		}
	}

	if _, errs, rc := c.run([]byte(exported), "codes", "import", "--project", q.ID, "-"); rc != 0 {
		t.Fatalf("import of the export: exit %d\n%s", rc, errs)
	}
	for v := range verifiedBy {
		if _, err := st.CodeByValue(ctx, q.ID, v); err != nil {
			t.Errorf("code %q not imported as itself: %v", v, err)
		}
	}
	if s, err := st.Statistics(ctx, q.ID, 0); err != nil || s.TotalCodes != int64(len(codes)) {
		t.Errorf("copy holds %+v, %v; want %d codes", s, err, len(codes))
	}
}
