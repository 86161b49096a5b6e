package store_test

import (
	"errors"
	"testing"

	"github.com/acv/acv/api/contract"
)

func TestAdminReads(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	a := mustProject(t, s, nil)
	b := mustProject(t, s, ptr(int64(2000000000)))
	ps, err := s.Projects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].ID != a.ID || ps[1].ID != b.ID || ps[1].ExpiresAt == nil || *ps[1].ExpiresAt != 2000000000 {
		t.Fatalf("projects = %+v", ps)
	}

	k1, err := s.CreateAPIKey(ctx, newAPIKey(a.ID, 10, 20))
	if err != nil {
		t.Fatal(err)
	}
	k2, err := s.CreateAPIKey(ctx, newAPIKey(a.ID, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateAPIKey(ctx, newAPIKey(b.ID, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeAPIKey(ctx, k2.ID); err != nil {
		t.Fatal(err)
	}
	keys, err := s.ProjectAPIKeys(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 {
		t.Fatalf("keys of a = %+v", keys)
	}
	byID := map[string]int{keys[0].ID: 0, keys[1].ID: 1}
	g1, g2 := keys[byID[k1.ID]], keys[byID[k2.ID]]
	if g1.Revoked || g1.RatePerSec != 10 || g1.Burst != 20 || g1.ProjectID != a.ID || g1.CreatedAt == 0 {
		t.Errorf("key 1 = %+v", g1)
	}
	if !g2.Revoked || g2.RevokedAt == nil {
		t.Errorf("revoked key = %+v", g2)
	}
	if _, err := s.ProjectAPIKeys(ctx, contract.NewID()); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("keys of a missing project: %v, want ErrNotFound", err)
	}
}
