package store_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

func TestListCodes(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now().Unix()
	p := mustProject(t, s, ptr(now+50))
	other := mustProject(t, s, nil)
	mustInsert(t, s, other.ID, values("50%_off", "other-only")...)

	batch1 := mustInsert(t, s, p.ID,
		contract.NewCode{Code: "u-used"},
		contract.NewCode{Code: "d-disabled"},
		contract.NewCode{Code: "x-expired", ExpiresAt: ptr(now - 10)},
		contract.NewCode{Code: "f-future", ExpiresAt: ptr(now + 1000)},
		contract.NewCode{Code: "p-projexp"},
		contract.NewCode{Code: "50%_off"},
		contract.NewCode{Code: "50xxoff"},
		contract.NewCode{Code: `a\b`},
		contract.NewCode{Code: "ÄÖÜ-Straße"},
		contract.NewCode{Code: "UPPER-case"},
		contract.NewCode{Code: "used-and-disabled"},
	)
	batch2 := mustInsert(t, s, p.ID,
		contract.NewCode{Code: "n1", ExpiresAt: ptr(now + 1000)},
		contract.NewCode{Code: "n2", ExpiresAt: ptr(now + 1000)},
		contract.NewCode{Code: "n3", ExpiresAt: ptr(now + 1000)},
	)
	if len(batch1) != 11 || len(batch2) != 3 {
		t.Fatalf("fixture inserted %d + %d", len(batch1), len(batch2))
	}
	snap := func(i int, snap contract.CodeRecord) {
		snap.ID = batch1[i].ID
		if err := s.ApplySnapshot(ctx, snap); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
	}
	snap(0, contract.CodeRecord{VerifiedAtMs: now * 1000, VerifiedBy: "till-1", Version: 1})
	snap(1, contract.CodeRecord{Disabled: true, Version: 1})
	snap(10, contract.CodeRecord{VerifiedAtMs: now * 1000, Version: 1})
	snap(10, contract.CodeRecord{VerifiedAtMs: now * 1000, Disabled: true, Version: 2})

	// list pages through a query and returns the values, checking every page's total.
	list := func(t *testing.T, q contract.ListQuery, at int64) ([]string, int64) {
		t.Helper()
		var all []string
		var total int64 = -1
		for q.Page = 1; ; q.Page++ {
			rows, n, err := s.ListCodes(ctx, p.ID, q, at)
			if err != nil {
				t.Fatalf("list %+v: %v", q, err)
			}
			if total >= 0 && n != total {
				t.Fatalf("total changed between pages: %d then %d", total, n)
			}
			total = n
			if len(rows) > q.PageSize {
				t.Fatalf("page of %d rows, page size %d", len(rows), q.PageSize)
			}
			for _, r := range rows {
				if r.ProjectID != p.ID {
					t.Fatalf("listed a code of project %s", r.ProjectID)
				}
			}
			all = append(all, codesOf(rows)...)
			if len(rows) < q.PageSize {
				if rows == nil {
					t.Fatalf("nil page, want empty slice")
				}
				return all, total
			}
		}
	}

	// Explicit expectations.
	tests := []struct {
		name string
		q    contract.ListQuery
		at   int64
		want []string
	}{
		{"all newest first", contract.ListQuery{}, now, []string{"n3", "n2", "n1", "used-and-disabled", "UPPER-case", "ÄÖÜ-Straße", `a\b`, "50xxoff", "50%_off", "p-projexp", "f-future", "x-expired", "d-disabled", "u-used"}},
		{"used", contract.ListQuery{State: contract.StateUsed}, now, []string{"u-used"}},
		{"disabled wins over used", contract.ListQuery{State: contract.StateDisabled}, now, []string{"used-and-disabled", "d-disabled"}},
		{"expired own expiry", contract.ListQuery{State: contract.StateExpired}, now, []string{"x-expired"}},
		{"expired falls back to project expiry", contract.ListQuery{State: contract.StateExpired}, now + 50, []string{"UPPER-case", "ÄÖÜ-Straße", `a\b`, "50xxoff", "50%_off", "p-projexp", "x-expired"}},
		{"unused", contract.ListQuery{State: contract.StateUnused}, now + 49, []string{"n3", "n2", "n1", "UPPER-case", "ÄÖÜ-Straße", `a\b`, "50xxoff", "50%_off", "p-projexp", "f-future"}},
		{"percent matches itself", contract.ListQuery{Search: "%"}, now, []string{"50%_off"}},
		{"underscore matches itself", contract.ListQuery{Search: "_"}, now, []string{"50%_off"}},
		{"percent and underscore", contract.ListQuery{Search: "0%_O"}, now, []string{"50%_off"}},
		{"backslash matches itself", contract.ListQuery{Search: `\`}, now, []string{`a\b`}},
		{"case-insensitive", contract.ListQuery{Search: "upper-CASE"}, now, []string{"UPPER-case"}},
		{"case-insensitive unicode", contract.ListQuery{Search: "äöü-strasse"}, now, nil},
		{"case-insensitive unicode umlauts", contract.ListQuery{Search: "äöü-STRAßE"}, now, []string{"ÄÖÜ-Straße"}},
		{"search and state", contract.ListQuery{Search: "50", State: contract.StateExpired}, now + 50, []string{"50xxoff", "50%_off"}},
		{"no match", contract.ListQuery{Search: "other-only"}, now, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, size := range []int{1, 2, 100} {
				q := tt.q
				q.PageSize = size
				got, total := list(t, q, tt.at)
				if !slices.Equal(got, tt.want) || total != int64(len(tt.want)) {
					t.Fatalf("page size %d: got %q (total %d), want %q", size, got, total, tt.want)
				}
			}
		})
	}

	// Against a brute-force reference over every state, several searches and times.
	var stored []contract.CodeRecord
	if err := s.ExportCodes(ctx, p.ID, func(r contract.CodeRecord) error { stored = append(stored, r); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Reverse(stored) // newest first
	for _, at := range []int64{now - 100, now, now + 50, now + 2000} {
		for _, st := range []contract.State{"", contract.StateUnused, contract.StateUsed, contract.StateDisabled, contract.StateExpired} {
			for _, search := range []string{"", "o", "OFF", "50", "-", "ß", "zz"} {
				t.Run(fmt.Sprintf("reference/%d/%s/%s", at-now, st, search), func(t *testing.T) {
					var want []string
					for _, r := range stored {
						c := r.Resource(p.ExpiresAt, at)
						state := contract.DeriveState(c.IsDisabled, c.VerifiedAt != nil, contract.EffectiveExpiry(c.ExpiresAt, p.ExpiresAt), at)
						if (st == "" || st == state) && strings.Contains(strings.ToLower(r.Code), strings.ToLower(search)) {
							want = append(want, r.Code)
						}
					}
					got, total := list(t, contract.ListQuery{State: st, Search: search, PageSize: 4}, at)
					if !slices.Equal(got, want) || total != int64(len(want)) {
						t.Errorf("got %q (total %d), want %q", got, total, want)
					}
				})
			}
		}
	}

	countOf := func(t *testing.T, q contract.ListQuery) int64 {
		t.Helper()
		_, n, err := s.ListCodes(ctx, p.ID, contract.ListQuery{State: q.State, Search: q.Search, PageSize: 1}, now)
		if err != nil {
			t.Fatalf("count %+v: %v", q, err)
		}
		return n
	}
	t.Run("page past the end", func(t *testing.T) {
		rows, total, err := s.ListCodes(ctx, p.ID, contract.ListQuery{Page: 9, PageSize: 5}, now)
		if err != nil || rows == nil || len(rows) != 0 || total != 14 {
			t.Errorf("rows %v, total %d, err %v; want empty, 14", rows, total, err)
		}
		rows, total, err = s.ListCodes(ctx, p.ID, contract.ListQuery{Page: 2, PageSize: 5, Search: "n"}, now)
		if err != nil || len(rows) != 0 || total != 4 {
			t.Errorf("search past end: rows %v, total %d, err %v; want empty, 4", codesOf(rows), total, err)
		}
	})
	t.Run("page overflow", func(t *testing.T) {
		// (page-1) × page_size past int64: every such page is past the end, with the totals.
		for _, q := range []contract.ListQuery{
			{Page: math.MaxInt, PageSize: 100},
			{Page: math.MaxInt, PageSize: math.MaxInt},
			{Page: math.MaxInt / 2, PageSize: 3},
			{Page: 2, PageSize: math.MaxInt},
			{Page: math.MaxInt, PageSize: 100, State: contract.StateUnused},
			{Page: math.MaxInt, PageSize: 100, Search: "n"},
		} {
			rows, total, err := s.ListCodes(ctx, p.ID, q, now)
			if err != nil || rows == nil || len(rows) != 0 || total != countOf(t, q) {
				t.Errorf("%+v: rows %v, total %d, err %v; want empty, %d", q, codesOf(rows), total, err, countOf(t, q))
			}
		}
		// The first page of a page size past int64's reach still lists every code.
		rows, total, err := s.ListCodes(ctx, p.ID, contract.ListQuery{Page: 1, PageSize: math.MaxInt}, now)
		if err != nil || len(rows) != 14 || total != 14 {
			t.Errorf("page 1 of size MaxInt: %d rows, total %d, err %v; want 14, 14", len(rows), total, err)
		}
	})
	t.Run("defaults", func(t *testing.T) {
		rows, total, err := s.ListCodes(ctx, p.ID, contract.ListQuery{}, now)
		if err != nil || len(rows) != 14 || total != 14 {
			t.Errorf("zero query: %d rows, total %d, err %v", len(rows), total, err)
		}
	})
	t.Run("bad state", func(t *testing.T) {
		if _, _, err := s.ListCodes(ctx, p.ID, contract.ListQuery{State: "bogus"}, now); err == nil {
			t.Errorf("unknown state accepted")
		}
	})
}
