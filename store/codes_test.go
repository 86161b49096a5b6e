package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
)

func codesOf(rows []contract.CodeRecord) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Code
	}
	return out
}

func TestInsertCodes(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p1 := mustProject(t, s, nil)
	p2 := mustProject(t, s, nil)
	mustInsert(t, s, p1.ID, values("AAA", "BBB")...)

	tests := []struct {
		name    string
		project string
		in      []contract.NewCode
		want    []string
	}{
		{"all new keep input order", p1.ID, values("CCC", "DDD", "EEE"), []string{"CCC", "DDD", "EEE"}},
		{"existing values skipped", p1.ID, values("AAA", "FFF", "BBB", "GGG"), []string{"FFF", "GGG"}},
		{"repeats within the batch inserted once", p1.ID, values("HHH", "HHH", "III", "HHH"), []string{"HHH", "III"}},
		{"only duplicates", p1.ID, values("AAA", "CCC"), []string{}},
		{"another project may hold the same values", p2.ID, values("AAA", "BBB", "aaa"), []string{"AAA", "BBB", "aaa"}},
		{"case matters for uniqueness", p1.ID, values("aaa", "Aaa"), []string{"aaa", "Aaa"}},
		{"unicode", p1.ID, values("Grüße-✓", "日本語コード"), []string{"Grüße-✓", "日本語コード"}},
		{"empty batch", p1.ID, nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now().Unix()
			rows, err := s.InsertCodes(ctx, tt.project, tt.in)
			if err != nil {
				t.Fatalf("insert: %v", err)
			}
			if got := codesOf(rows); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("inserted %q, want %q", got, tt.want)
			}
			for _, r := range rows {
				if !contract.ValidID(r.ID) || r.ProjectID != tt.project || r.CreatedAt < before-1 || r.CreatedAt > time.Now().Unix()+1 ||
					r.Disabled || r.VerifiedAtMs != 0 || r.VerifiedBy != "" || r.Version != 0 {
					t.Errorf("returned row %+v", r)
				}
				byValue, err := s.CodeByValue(ctx, tt.project, r.Code)
				if err != nil {
					t.Fatalf("by value %q: %v", r.Code, err)
				}
				byID, err := s.CodeByID(ctx, tt.project, r.ID)
				if err != nil {
					t.Fatalf("by id %s: %v", r.ID, err)
				}
				if byValue.ID != r.ID || byID.Code != r.Code || byID.CreatedAt != r.CreatedAt {
					t.Errorf("stored %+v / %+v, returned %+v", byValue, byID, r)
				}
			}
		})
	}

	// One project never sees another's codes.
	a1, _ := s.CodeByValue(ctx, p1.ID, "AAA")
	a2, _ := s.CodeByValue(ctx, p2.ID, "AAA")
	if a1.ID == a2.ID || a1.ProjectID != p1.ID || a2.ProjectID != p2.ID {
		t.Errorf("shared value resolved to %+v and %+v", a1, a2)
	}
	_, err := s.CodeByID(ctx, p2.ID, a1.ID)
	wantNotFound(t, "code of another project by id", err)
	_, err = s.CodeByValue(ctx, p2.ID, "CCC")
	wantNotFound(t, "value only another project holds", err)

	for _, bad := range []string{"", strings.Repeat("x", 101), "tab\there"} {
		if _, err := s.InsertCodes(ctx, p1.ID, values("ok-1", bad)); err == nil {
			t.Errorf("insert of invalid value %q succeeded", bad)
		}
	}
	if _, err := s.CodeByValue(ctx, p1.ID, "ok-1"); err == nil {
		t.Errorf("a rejected batch inserted part of itself")
	}

	exp := int64(1900000000)
	rows := mustInsert(t, s, p1.ID, contract.NewCode{Code: "with-expiry", ExpiresAt: &exp})
	got, _ := s.CodeByID(ctx, p1.ID, rows[0].ID)
	if got.ExpiresAt == nil || *got.ExpiresAt != exp || rows[0].ExpiresAt == nil || *rows[0].ExpiresAt != exp {
		t.Errorf("expiry stored %v returned %v, want %d", got.ExpiresAt, rows[0].ExpiresAt, exp)
	}
	c := got.Resource(nil, exp)
	if !c.IsExpired || c.Status || c.ID != got.ID || c.Code != "with-expiry" {
		t.Errorf("Resource() at expiry = %+v", c)
	}
}

func TestInsertCodesBulk(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	const n = 100_000
	in := make([]contract.NewCode, n)
	for i := range in {
		in[i] = contract.NewCode{Code: fmt.Sprintf("BULK-%07d", i)}
	}
	start := time.Now()
	rows, err := s.InsertCodes(ctx, p.ID, in)
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	t.Logf("inserted %d codes in %v", len(rows), time.Since(start))
	if len(rows) != n || rows[0].Code != in[0].Code || rows[n-1].Code != in[n-1].Code {
		t.Fatalf("inserted %d rows", len(rows))
	}
	// A second generation round with half the values colliding.
	for i := range in {
		if i%2 == 1 {
			in[i].Code = fmt.Sprintf("MORE-%07d", i)
		}
	}
	start = time.Now()
	rows, err = s.InsertCodes(ctx, p.ID, in)
	if err != nil {
		t.Fatalf("insert again: %v", err)
	}
	t.Logf("second round: %d of %d new in %v", len(rows), n, time.Since(start))
	if len(rows) != n/2 {
		t.Fatalf("second round inserted %d, want %d", len(rows), n/2)
	}
	now := time.Now().Unix()
	checkStats(t, s, p.ID, now, contract.Statistics{TotalCodes: n * 3 / 2, UnusedCodes: n * 3 / 2})
}

// TestCopyFiresCountTriggers checks that a COPY straight into codes (as a bulk import might do)
// keeps the statistics counters exact: statement triggers with transition tables fire on COPY.
func TestCopyFiresCountTriggers(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	now := time.Now().Unix()
	past, future := time.Unix(now-10, 0), time.Unix(now+10, 0)
	var src [][]any
	for i := 0; i < 30; i++ {
		var exp *time.Time
		switch i % 3 {
		case 1:
			exp = &past
		case 2:
			exp = &future
		}
		var verified *time.Time
		if i%5 == 0 {
			verified = &past
		}
		src = append(src, []any{contract.NewID(), p.ID, fmt.Sprintf("copy-%d", i), i%7 == 0, exp, verified, time.Now()})
	}
	n, err := s.Pool().CopyFrom(ctx, pgx.Identifier{"codes"},
		[]string{"id", "project_id", "code", "is_disabled", "expires_at", "verified_at", "created_at"},
		pgx.CopyFromRows(src))
	if err != nil || n != 30 {
		t.Fatalf("copy: %d rows, %v", n, err)
	}
	want := bruteStats(t, s, p.ID, now)
	if want.TotalCodes != 30 || want.ExpiredCodes == 0 || want.UsedCodes == 0 || want.DisabledCodes == 0 || want.UnusedCodes == 0 {
		t.Fatalf("fixture does not cover every state: %+v", want)
	}
	checkStats(t, s, p.ID, now, want)
}
