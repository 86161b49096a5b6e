package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/testkit"
)

// SetDisabledMany disables codes Redis holds and codes it does not (stored from the record
// given, then changed), each as a new version, and keeps what Redis knew: a used code stays
// used. On a cluster the pipeline spans every master.
func TestSetDisabledMany(t *testing.T) { testkit.OnEachRedis(t, testSetDisabledMany) }

func testSetDisabledMany(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var recs []contract.CodeRecord
	for _, v := range []string{"M1", "M2", "M3", "M4", "M5", "M6"} {
		id := f.code(v, contract.CodeRecord{})
		recs = append(recs, contract.CodeRecord{ID: id, ProjectID: f.pid, Code: v})
	}
	f.apply(f.call(contract.ActionVerify, "M2"))
	// Two codes Redis has never seen (one remembered as unknown): loaded from their records.
	missing := contract.CodeRecord{ID: contract.NewID(), ProjectID: f.pid, Code: "MISSING", Version: 3}
	unknown := contract.CodeRecord{ID: contract.NewID(), ProjectID: f.pid, Code: "UNKNOWN"}
	if err := f.c.MarkUnknown(ctx, f.pid, "UNKNOWN", time.Minute); err != nil {
		t.Fatal(err)
	}
	recs = append(recs, missing, unknown)
	out, err := f.c.SetDisabledMany(ctx, f.pid, recs, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(recs) {
		t.Fatalf("%d snapshots for %d codes", len(out), len(recs))
	}
	for i, s := range out {
		if s.ID != recs[i].ID || s.Code != recs[i].Code || !s.Disabled || s.Version < 1 {
			t.Errorf("snapshot %d: %+v for %+v", i, s, recs[i])
		}
		live, found := f.live(recs[i].Code)
		if !found || !live.Disabled || live.Version != s.Version {
			t.Errorf("%s in redis: %+v found=%v, snapshot version %d", recs[i].Code, live, found, s.Version)
		}
	}
	if out[1].VerifiedAtMs == 0 {
		t.Errorf("the used code lost its use: %+v", out[1])
	}
	if out[6].Version != 4 {
		t.Errorf("a loaded code's version continues from its record's: %+v", out[6])
	}
	if res := f.apply(f.call(contract.ActionVerify, "M1")); res.Outcome.Error != contract.CodeDisabled {
		t.Errorf("verify of a disabled code: %+v", res)
	}
}
