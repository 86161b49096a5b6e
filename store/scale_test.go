package store_test

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
)

// scaleCodes is the number of codes the scale tests create, or 0 when they are off. They run only
// with ACV_STORE_SCALE=1 (ACV_STORE_SCALE_CODES overrides the default of 2,000,000), e.g.
//
//	ACV_STORE_SCALE=1 go test -race -count=1 -run Scale -v -timeout 60m ./store/...
func scaleCodes(t *testing.T) int {
	if os.Getenv("ACV_STORE_SCALE") == "" {
		t.Skip("scale test: set ACV_STORE_SCALE=1 to run")
	}
	n := 2_000_000
	if v := os.Getenv("ACV_STORE_SCALE_CODES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 {
			t.Fatalf("ACV_STORE_SCALE_CODES=%q: want an integer >= 1000", v)
		}
	}
	return n
}

// randomValues draws n distinct code values like the generator's: 12 characters of an
// unambiguous alphabet, in random order (so index insertion is as scattered as in production).
func randomValues(r *rand.Rand, n int, seen map[string]struct{}) []contract.NewCode {
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	out := make([]contract.NewCode, 0, n)
	buf := make([]byte, 12)
	for len(out) < n {
		for i := range buf {
			buf[i] = alphabet[r.IntN(len(alphabet))]
		}
		v := string(buf)
		if _, dup := seen[v]; dup {
			continue
		}
		seen[v] = struct{}{}
		out = append(out, contract.NewCode{Code: v})
	}
	return out
}

// latencies runs fn until it has max samples or budget is spent (at least min samples) and
// returns the p50 and p99 and the number of samples.
func latencies(t *testing.T, min, max int, budget time.Duration, fn func() error) (p50, p99 time.Duration, n int) {
	t.Helper()
	for i := 0; i < 3; i++ { // warm-up
		if err := fn(); err != nil {
			t.Fatal(err)
		}
	}
	var samples []time.Duration
	start := time.Now()
	for len(samples) < max && (len(samples) < min || time.Since(start) < budget) {
		t0 := time.Now()
		if err := fn(); err != nil {
			t.Fatal(err)
		}
		samples = append(samples, time.Since(t0))
	}
	slices.Sort(samples)
	pct := func(p float64) time.Duration {
		i := int(p*float64(len(samples))+0.5) - 1
		return samples[max0(min0(i, len(samples)-1), 0)]
	}
	return pct(0.50), pct(0.99), len(samples)
}

func min0(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func max0(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// TestListScale fills one project with millions of codes through InsertCodes in batches of
// 100k and measures ListCodes on the first, a middle and the last page.
func TestListScale(t *testing.T) {
	n := scaleCodes(t)
	s := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	p := mustProject(t, s, nil)

	r := rand.New(rand.NewPCG(1, 2))
	seen := make(map[string]struct{}, n)
	const batch = 100_000
	start := time.Now()
	var slowest time.Duration
	for done := 0; done < n; {
		in := randomValues(r, min0(batch, n-done), seen)
		t0 := time.Now()
		rows, err := s.InsertCodes(ctx, p.ID, in)
		if err != nil {
			t.Fatalf("insert after %d: %v", done, err)
		}
		d := time.Since(t0)
		slowest = max(slowest, d)
		if len(rows) != len(in) {
			t.Fatalf("inserted %d of %d", len(rows), len(in))
		}
		done += len(in)
		t.Logf("batch ending at %d codes: %v", done, d)
	}
	t.Logf("inserted %d codes in %v (slowest batch %v)", n, time.Since(start), slowest)
	if _, err := s.Pool().Exec(ctx, `VACUUM ANALYZE codes`); err != nil {
		t.Fatalf("vacuum: %v", err)
	}

	now := time.Now().Unix()
	for _, size := range []int{20, 100} {
		pages := (n + size - 1) / size
		for _, page := range []int{1, pages / 2, pages} {
			q := contract.ListQuery{Page: page, PageSize: size}
			want := size
			if page == pages {
				want = n - (pages-1)*size
			}
			var got []contract.CodeRecord
			p50, p99, k := latencies(t, 20, 500, 15*time.Second, func() error {
				rows, total, err := s.ListCodes(ctx, p.ID, q, now)
				if err == nil && (len(rows) != want || total != int64(n)) {
					t.Fatalf("page %d size %d: %d rows total %d", page, size, len(rows), total)
				}
				got = rows
				return err
			})
			t.Logf("ListCodes             page_size %3d page %6d: p50 %9v  p99 %9v  (%d samples)", size, page,
				p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), k)

			// The OFFSET query the list used to run, over the (project_id, seq) index.
			var ref []string
			p50, p99, k = latencies(t, 10, 500, 15*time.Second, func() error {
				rows, err := s.Pool().Query(ctx, `SELECT `+scaleColumns+` FROM codes c WHERE c.project_id = $1
					ORDER BY c.seq DESC LIMIT $2 OFFSET $3`, p.ID, size, (page-1)*size)
				if err != nil {
					return err
				}
				ref, err = pgx.CollectRows(rows, pgx.RowTo[string])
				return err
			})
			t.Logf("OFFSET reference      page_size %3d page %6d: p50 %9v  p99 %9v  (%d samples)", size, page,
				p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), k)
			ids := make([]string, len(got))
			for i, r := range got {
				ids[i] = r.Code
			}
			if !slices.Equal(ids, ref) {
				t.Errorf("page %d size %d differs from the OFFSET reference", page, size)
			}
		}
	}
	// For comparison: a state-filtered list still skips OFFSET matching rows.
	for _, page := range []int{1, n / 100 / 2} {
		q := contract.ListQuery{Page: page, PageSize: 100, State: contract.StateUnused}
		p50, p99, k := latencies(t, 10, 500, 15*time.Second, func() error {
			_, _, err := s.ListCodes(ctx, p.ID, q, now)
			return err
		})
		t.Logf("ListCodes unused      page_size 100 page %6d: p50 %9v  p99 %9v  (%d samples)", page,
			p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), k)
	}
}

// scaleColumns selects a code's value, to compare pages.
const scaleColumns = `c.code`
