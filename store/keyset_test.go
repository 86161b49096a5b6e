package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

// TestListCodesAfterVisitsEveryCodeOnce pages by cursor through a project, unfiltered, by
// state and by search, and holds that every matching code comes exactly once, newest first,
// and that no other project's code does.
func TestListCodesAfterVisitsEveryCodeOnce(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now().Unix()
	p := mustProject(t, s, nil)
	other := mustProject(t, s, nil)
	mustInsert(t, s, other.ID, values("KS-other-1", "KS-other-2")...)
	var codes []contract.NewCode
	for i := range 1000 {
		codes = append(codes, contract.NewCode{Code: fmt.Sprintf("KS-%04d", i)})
	}
	rows := mustInsert(t, s, p.ID, codes...)
	// Every seventh code disabled: the state filter pages through a sparse subset.
	wantDisabled := 0
	for i := 0; i < len(rows); i += 7 {
		r := rows[i]
		r.Disabled, r.Version = true, 1
		if err := s.ApplySnapshot(ctx, r); err != nil {
			t.Fatalf("disable: %v", err)
		}
		wantDisabled++
	}

	walk := func(t *testing.T, q contract.KeysetQuery) []string {
		t.Helper()
		var got []string
		for pages := 0; ; pages++ {
			if pages > 1100 {
				t.Fatal("paging does not end")
			}
			page, err := s.ListCodesAfter(ctx, p.ID, q, now)
			if err != nil {
				t.Fatalf("list after %d: %v", q.After, err)
			}
			if len(page.Codes) > q.PageSize {
				t.Fatalf("page of %d codes, asked %d", len(page.Codes), q.PageSize)
			}
			for _, c := range page.Codes {
				got = append(got, c.Code)
			}
			if page.Next == 0 {
				return got
			}
			if page.Next >= q.After && q.After != 0 {
				t.Fatalf("cursor went from %d to %d", q.After, page.Next)
			}
			q.After = page.Next
		}
	}
	once := func(t *testing.T, got []string, want int, match func(i int) bool) {
		t.Helper()
		if len(got) != want {
			t.Fatalf("paged through %d codes, want %d", len(got), want)
		}
		seen := map[string]bool{}
		for i, v := range got {
			if seen[v] {
				t.Fatalf("code %s came twice", v)
			}
			seen[v] = true
			if i > 0 && got[i-1] < v {
				t.Fatalf("not newest first: %s before %s", got[i-1], v)
			}
		}
		for i := range codes {
			if match(i) && !seen[codes[i].Code] {
				t.Fatalf("code %s never came", codes[i].Code)
			}
		}
	}
	for _, size := range []int{1, 7, 50, 999, 1000, 1001} {
		t.Run(fmt.Sprintf("all/size=%d", size), func(t *testing.T) {
			got := walk(t, contract.KeysetQuery{PageSize: size})
			once(t, got, len(codes), func(int) bool { return true })
		})
	}
	t.Run("disabled", func(t *testing.T) {
		got := walk(t, contract.KeysetQuery{PageSize: 13, State: contract.StateDisabled})
		once(t, got, wantDisabled, func(i int) bool { return i%7 == 0 })
	})
	t.Run("unused", func(t *testing.T) {
		got := walk(t, contract.KeysetQuery{PageSize: 100, State: contract.StateUnused})
		once(t, got, len(codes)-wantDisabled, func(i int) bool { return i%7 != 0 })
	})
	t.Run("search", func(t *testing.T) {
		// KS-01xx: 100 codes.
		got := walk(t, contract.KeysetQuery{PageSize: 9, Search: "ks-01"})
		once(t, got, 100, func(i int) bool { return strings.HasPrefix(codes[i].Code, "KS-01") })
	})
	t.Run("unknown project", func(t *testing.T) {
		_, err := s.ListCodesAfter(ctx, "00000000000000000000000000000000", contract.KeysetQuery{}, now)
		wantNotFound(t, "project", err)
	})
}

// TestListCodesAfterPlanIsIndexSeek holds that a page deep into a large project is an index
// scan that starts at the cursor, not a sequential scan or a sort of the whole project.
func TestListCodesAfterPlanIsIndexSeek(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 60,000 codes")
	}
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now().Unix()
	p := mustProject(t, s, nil)
	const n = 60_000
	for b := 0; b < n; b += 10_000 {
		batch := make([]contract.NewCode, 10_000)
		for i := range batch {
			batch[i] = contract.NewCode{Code: fmt.Sprintf("PLAN-%06d", b+i)}
		}
		rows := mustInsert(t, s, p.ID, batch...)
		// One code in a hundred used: the used list must find them without walking the rest.
		var evs []contract.Event
		for i := 50; i < len(rows); i += 100 {
			evs = append(evs, verifyEvent(rows[i], 1, time.Now().UnixMilli(), "till"))
		}
		if _, err := s.ApplyEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AfterBulkLoad(ctx); err != nil {
		t.Fatalf("analyze: %v", err)
	}
	// The cursor of a page near the end of the list: a page numbered about 1,150 of 50.
	page, err := s.ListCodesAfter(ctx, p.ID, contract.KeysetQuery{PageSize: 50}, now)
	if err != nil || page.Next == 0 {
		t.Fatalf("first page: next %d, %v", page.Next, err)
	}
	deep := page.Next - 57_500
	for _, q := range []contract.KeysetQuery{
		{PageSize: 50, After: deep},
		{PageSize: 50, After: deep, State: contract.StateUnused},
		{PageSize: 50, State: contract.StateUsed},
		{PageSize: 50, After: deep + 5_000, State: contract.StateUsed},
	} {
		plan, err := s.ExplainKeyset(ctx, p.ID, q, now)
		if err != nil {
			t.Fatalf("explain: %v", err)
		}
		if !strings.Contains(plan, "Index Scan") && !strings.Contains(plan, "Index Only Scan") {
			t.Errorf("state %q: plan is not an index scan:\n%s", q.State, plan)
		}
		if strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "Sort") {
			t.Errorf("state %q: plan scans or sorts the project:\n%s", q.State, plan)
		}
		if q.State == contract.StateUsed && !strings.Contains(plan, "code_used_pkey") {
			t.Errorf("used codes are not found through code_used:\n%s", plan)
		}
		got, err := s.ListCodesAfter(ctx, p.ID, q, now)
		if err != nil || len(got.Codes) != 50 {
			t.Fatalf("deep page: %d codes, %v", len(got.Codes), err)
		}
	}
	// A search finds its matches through the trigram index on code_values (which verifies
	// never write), not by reading the project's codes.
	for _, q := range []contract.KeysetQuery{
		{PageSize: 50, Search: "PLAN-04210"},
		{PageSize: 50, Search: "plan-04210", State: contract.StateUnused},
	} {
		plan, err := s.ExplainKeyset(ctx, p.ID, q, now)
		if err != nil {
			t.Fatalf("explain: %v", err)
		}
		if !strings.Contains(plan, "code_values_trgm_idx") || strings.Contains(plan, "Seq Scan") {
			t.Errorf("search %q state %q: plan does not read the trigram index alone:\n%s", q.Search, q.State, plan)
		}
		got, err := s.ListCodesAfter(ctx, p.ID, q, now)
		if err != nil || len(got.Codes) != 10 {
			t.Fatalf("search %q: %d codes, %v; want PLAN-042100 to PLAN-042109", q.Search, len(got.Codes), err)
		}
	}
}
