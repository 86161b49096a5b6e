package store_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

// Two batches inserting into one project at once interleave their rounds, and each still
// finds exactly its own codes through the sequence ranges its rounds recorded.
func TestBatchRangesUnderConcurrentInserts(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	var batches [2]contract.Batch
	for i := range batches {
		b, err := s.CreateBatch(ctx, contract.NewBatch{ProjectID: p.ID, Name: fmt.Sprint("b", i), Requested: 1000, Spec: contract.BatchSpec{Length: 8}})
		if err != nil {
			t.Fatal(err)
		}
		batches[i] = b
	}
	const rounds, per = 10, 100
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	for i, b := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				codes := make([]contract.NewCode, per)
				for j := range codes {
					codes[j] = contract.NewCode{Code: fmt.Sprintf("B%d-%02d-%03d", i, r, j)}
				}
				if _, err := s.InsertBatchCodes(ctx, p.ID, b.ID, codes); err != nil {
					errs <- err
				}
			}
		}()
	}
	// Codes outside any batch, meanwhile.
	mustInsert(t, s, p.ID, values("LOOSE-1", "LOOSE-2")...)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	for i, b := range batches {
		n, err := s.CountBulk(ctx, p.ID, contract.CodeFilter{BatchID: b.ID}, now)
		if err != nil || n != rounds*per {
			t.Fatalf("batch %d holds %d codes (%v), want %d", i, n, err, rounds*per)
		}
		page, _, err := s.BulkPage(ctx, p.ID, contract.CodeFilter{BatchID: b.ID, Search: fmt.Sprintf("B%d-", 1-i)}, now, 0, 10)
		if err != nil || len(page) != 0 {
			t.Fatalf("batch %d finds the other's codes: %v %v", i, codesOf(page), err)
		}
	}
	if n, err := s.CountBulk(ctx, p.ID, contract.CodeFilter{}, now); err != nil || n != 2*rounds*per+2 {
		t.Fatalf("project holds %d enabled codes (%v)", n, err)
	}
}

// ApplySnapshots applies a snapshot only when it is newer than the stored state, as
// ApplySnapshot does one by one, and the statistics follow.
func TestApplySnapshotsKeepsNewerState(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	rows := mustInsert(t, s, p.ID, values("S1", "S2", "S3")...)
	if err := s.ApplySnapshot(ctx, contract.CodeRecord{ID: rows[2].ID, Version: 5, VerifiedAtMs: 1_750_000_000_000, VerifiedBy: "till"}); err != nil {
		t.Fatal(err)
	}
	snaps := []contract.CodeRecord{
		{ID: rows[0].ID, Version: 1, Disabled: true},
		{ID: rows[1].ID, Version: 2, Disabled: true, VerifiedAtMs: 1_750_000_000_000, VerifiedBy: "x"},
		{ID: rows[2].ID, Version: 4, Disabled: true}, // older than the stored 5: ignored
	}
	if err := s.ApplySnapshots(ctx, snaps); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		disabled bool
		version  int64
		by       string
	}{{true, 1, ""}, {true, 2, "x"}, {false, 5, "till"}} {
		r, err := s.CodeByID(ctx, p.ID, rows[i].ID)
		if err != nil || r.Disabled != want.disabled || r.Version != want.version || r.VerifiedBy != want.by {
			t.Errorf("code %d: %+v %v, want %+v", i, r, err, want)
		}
	}
	st, err := s.Statistics(ctx, p.ID, time.Now().Unix())
	if err != nil || st.DisabledCodes != 2 || st.UsedCodes != 1 {
		t.Fatalf("statistics %+v %v", st, err)
	}
	if err := s.ApplySnapshots(ctx, []contract.CodeRecord{{ID: "nonsense", Version: 9}}); err == nil {
		t.Fatal("a malformed id was accepted")
	}
}
