package admin_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/store"
)

// What `acv codes export` writes, `acv codes import` reads: header row, the code and
// expires_at columns found by name, the others ignored.
func TestImportReadsWhatExportWrites(t *testing.T) {
	a, _, pid := newAdmin(t)
	ctx := context.Background()
	exp := int64(1900000000)
	if _, err := a.Store.InsertCodes(ctx, pid, []store.NewCode{{Code: "EXP-A", ExpiresAt: &exp}, {Code: "EXP-B"}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := a.ExportCSV(ctx, pid, time.Now().Unix(), &out); err != nil {
		t.Fatal(err)
	}
	other, err := a.CreateProject(ctx, store.NewProject{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.ImportCSV(ctx, other.ID, bytes.NewReader(out.Bytes()), nil)
	if err != nil || res.Read != 2 || res.Inserted != 2 {
		t.Fatalf("import of an export: %+v, %v\n%s", res, err, out.String())
	}
	row, err := a.Store.CodeByValue(ctx, other.ID, "EXP-A")
	if err != nil || row.ExpiresAt == nil || *row.ExpiresAt != exp {
		t.Fatalf("EXP-A: %+v, %v", row, err)
	}
	// Again: every code is already present.
	if res, err = a.ImportCSV(ctx, other.ID, bytes.NewReader(out.Bytes()), nil); err != nil || res.Duplicates != 2 || res.Inserted != 0 {
		t.Fatalf("second import: %+v, %v", res, err)
	}
}

func TestImportAcceptsRFC3339AndUnixExpiry(t *testing.T) {
	a, _, pid := newAdmin(t)
	ctx := context.Background()
	in := "R1,2030-01-02T03:04:05Z\nR2,1900000000\nR3,\n"
	if res, err := a.ImportCSV(ctx, pid, strings.NewReader(in), nil); err != nil || res.Inserted != 3 {
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

// A bad row stops the import with its line; the rows before it are kept and the error says so.
func TestImportBadRowKeepsEarlierRows(t *testing.T) {
	a, _, pid := newAdmin(t)
	ctx := context.Background()
	in := "code,expires_at\nK1,\nK2,1900000000\nK3,next tuesday\nK4,\n"
	res, err := a.ImportCSV(ctx, pid, strings.NewReader(in), nil)
	var ie *admin.ImportError
	if !errors.As(err, &ie) || ie.Line != 4 || ie.Kept.Read != 2 || ie.Kept.Inserted != 2 {
		t.Fatalf("import: %+v, %v; want an ImportError at line 4 with 2 rows kept", res, err)
	}
	for _, w := range []string{"line 4", "expires_at", "2 code(s) before it were kept", "not imported"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	for _, v := range []string{"K1", "K2"} {
		if _, err := a.Store.CodeByValue(ctx, pid, v); err != nil {
			t.Errorf("%s before the bad row not kept: %v", v, err)
		}
	}
	for _, v := range []string{"K3", "K4"} {
		if _, err := a.Store.CodeByValue(ctx, pid, v); !errors.Is(err, contract.ErrNotFound) {
			t.Errorf("%s at or after the bad row: %v, want not found", v, err)
		}
	}
	// A quoted field spanning lines: the reported line is the file's.
	_, err = a.ImportCSV(ctx, pid, strings.NewReader("\"M1\"\nM2\n\"bad\"x\n"), nil)
	if !errors.As(err, &ie) || ie.Line != 3 {
		t.Errorf("malformed quote: %v, want line 3", err)
	}
	missing := contract.NewID()
	if _, err := a.ImportCSV(ctx, missing, strings.NewReader("Z1\n"), nil); err == nil || err.Error() != "project "+missing+" not found" {
		t.Errorf("import into a missing project: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
