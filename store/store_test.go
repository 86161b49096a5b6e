package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/acv/acv/internal/testkit"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/store"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// newStore gives a test a migrated store on a fresh database.
func newStore(t *testing.T) *store.Store {
	t.Helper()
	return testkit.MigratedStore(t, testkit.PostgresDB(t))
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func ptr[T any](v T) *T { return &v }

func mustProject(t *testing.T, s *store.Store, expiresAt *int64) contract.Project {
	t.Helper()
	p, err := s.CreateProject(testCtx(t), contract.NewProject{Name: "p", ExpiresAt: expiresAt})
	if err != nil {
		t.Fatalf("create project: %v", err)
	}
	return p
}

func mustInsert(t *testing.T, s *store.Store, projectID string, codes ...contract.NewCode) []contract.CodeRecord {
	t.Helper()
	rows, err := s.InsertCodes(testCtx(t), projectID, codes)
	if err != nil {
		t.Fatalf("insert codes: %v", err)
	}
	return rows
}

// insertNumbered inserts n codes valued prefix-00000, prefix-00001, … into the project, in that
// order (their seqs follow it), and returns them.
func insertNumbered(t *testing.T, s *store.Store, projectID, prefix string, n int) []contract.CodeRecord {
	t.Helper()
	vs := make([]string, n)
	for i := range vs {
		vs[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return mustInsert(t, s, projectID, values(vs...)...)
}

// values makes NewCodes without expiry.
func values(vs ...string) []contract.NewCode {
	out := make([]contract.NewCode, len(vs))
	for i, v := range vs {
		out[i] = contract.NewCode{Code: v}
	}
	return out
}

// bruteStats counts a project's codes by derived state the slow way, from the codes themselves,
// as the reference the trigger-maintained counters must equal.
func bruteStats(t *testing.T, s *store.Store, projectID string, now int64) contract.Statistics {
	t.Helper()
	p, err := s.Project(testCtx(t), projectID)
	if err != nil {
		t.Fatalf("project: %v", err)
	}
	var st contract.Statistics
	err = s.ExportCodes(testCtx(t), projectID, func(r contract.CodeRecord) error {
		st.TotalCodes++
		switch contract.DeriveState(r.Disabled, r.VerifiedAtMs != 0, contract.EffectiveExpiry(r.ExpiresAt, p.ExpiresAt), now) {
		case contract.StateDisabled:
			st.DisabledCodes++
		case contract.StateUsed:
			st.UsedCodes++
		case contract.StateExpired:
			st.ExpiredCodes++
		case contract.StateUnused:
			st.UnusedCodes++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	return st
}

// checkStats asserts the counters equal both want and the brute-force count.
func checkStats(t *testing.T, s *store.Store, projectID string, now int64, want contract.Statistics) {
	t.Helper()
	got, err := s.Statistics(testCtx(t), projectID, now)
	if err != nil {
		t.Fatalf("statistics: %v", err)
	}
	if got != want {
		t.Errorf("statistics at %d = %+v, want %+v", now, got, want)
	}
	if b := bruteStats(t, s, projectID, now); got != b {
		t.Errorf("statistics at %d = %+v, brute force %+v", now, got, b)
	}
	if got.TotalCodes != got.UsedCodes+got.UnusedCodes+got.DisabledCodes+got.ExpiredCodes {
		t.Errorf("total %d is not the sum of %+v", got.TotalCodes, got)
	}
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("%s: err = %v, want ErrNotFound", what, err)
	}
}
