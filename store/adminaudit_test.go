package store_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/store"
)

// verifyChain is the walk console.VerifyChain makes, kept here so the store's own tests
// check the chain without the console.
func verifyChain(t *testing.T, s *store.Store) (rows int, err error) {
	t.Helper()
	var expect []byte
	_, werr := s.WalkAdminAudit(testCtx(t), func(a contract.AuditAnchor, r contract.AuditRecord) error {
		if expect == nil {
			expect = a.Hash
		}
		if !bytes.Equal(r.PrevHash, expect) {
			return fmt.Errorf("row %d: broken link", r.Seq)
		}
		if !bytes.Equal(r.Hash, r.ComputeHash()) {
			return fmt.Errorf("row %d: content changed", r.Seq)
		}
		expect = r.Hash
		rows++
		return nil
	})
	return rows, werr
}

func TestAdminAuditChainUnderConcurrentAppends(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	pid := mustProject(t, s, nil).ID
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				_, err := s.AppendAdminAudit(ctx, contract.AuditEntry{
					At: time.Now(), AdminUsername: fmt.Sprintf("w%d", w), Action: "test.append", ProjectID: pid,
					Detail: map[string]any{"i": i, "rate": 2.5, "big": int64(1) << 60, "nested": map[string]any{"b": 1, "a": []any{"x", nil}}},
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n, err := verifyChain(t, s)
	if err != nil || n != 80 {
		t.Fatalf("chain of %d rows: %v", n, err)
	}
	rows, err := s.AdminAudit(ctx, contract.AuditFilter{AdminUsername: "w3", Limit: 5})
	if err != nil || len(rows) != 5 || rows[0].ProjectID != pid || rows[0].Seq <= rows[4].Seq {
		t.Fatalf("filtered rows %+v, %v", rows, err)
	}
	if got := string(rows[0].Detail); got != `{"big":1152921504606846976,"i":9,"nested":{"a":["x",null],"b":1},"rate":2.5}` {
		t.Fatalf("canonical detail %s", got)
	}
	if _, err := s.AppendAdminAudit(ctx, contract.AuditEntry{At: time.Now(), Action: "x", ProjectID: "not-an-id"}); err == nil {
		t.Fatal("a malformed project id must be refused")
	}
}

// TestAdminAuditRetentionKeepsChain: a retention run removes the oldest rows and moves the
// anchor; the rows kept still verify, appends go on from them, and a later run that removes
// every row leaves an anchor the next append chains to.
func TestAdminAuditRetentionKeepsChain(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	base := time.Now().Add(-100 * 24 * time.Hour)
	for d := 0; d < 10; d++ {
		if _, err := s.AppendAdminAudit(ctx, contract.AuditEntry{At: base.Add(time.Duration(d) * 24 * time.Hour),
			AdminUsername: "a", Action: "test.day", Detail: map[string]any{"day": d}}); err != nil {
			t.Fatal(err)
		}
	}
	// A plain DELETE is refused; the retention run may.
	if _, err := s.Pool().Exec(ctx, `DELETE FROM admin_audit`); err == nil {
		t.Fatal("DELETE outside retention must be refused")
	}
	n, err := s.PruneAdminAudit(ctx, base.Add(4*24*time.Hour))
	if err != nil || n != 4 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	if rows, err := verifyChain(t, s); err != nil || rows != 6 {
		t.Fatalf("after retention: %d rows, %v", rows, err)
	}
	if _, err := s.AppendAdminAudit(ctx, contract.AuditEntry{At: time.Now(), AdminUsername: "a", Action: "test.after"}); err != nil {
		t.Fatal(err)
	}
	if n, err = s.PruneAdminAudit(ctx, time.Now().Add(time.Hour)); err != nil || n != 7 {
		t.Fatalf("pruned all: %d, %v", n, err)
	}
	if _, err := s.AppendAdminAudit(ctx, contract.AuditEntry{At: time.Now(), AdminUsername: "a", Action: "test.fresh"}); err != nil {
		t.Fatal(err)
	}
	if rows, err := verifyChain(t, s); err != nil || rows != 1 {
		t.Fatalf("after removing every row: %d rows, %v", rows, err)
	}
	if n, err = s.PruneAdminAudit(ctx, base); err != nil || n != 0 {
		t.Fatalf("nothing to prune: %d, %v", n, err)
	}
}
