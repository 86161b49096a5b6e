package store_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/acv/acv/api/contract"
)

func TestProjects(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)

	p, err := s.CreateProject(ctx, contract.NewProject{Name: "shop", Description: "summer", ExpiresAt: ptr(int64(2000000000))})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if !contract.ValidID(p.ID) || !p.Status || p.CreatedAt == 0 || p.Statistics != nil {
		t.Fatalf("created project = %+v", p)
	}
	got, err := s.Project(ctx, p.ID)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.ID != p.ID || got.Name != "shop" || got.Description != "summer" || !got.Status ||
		got.ExpiresAt == nil || *got.ExpiresAt != 2000000000 || got.CreatedAt != p.CreatedAt {
		t.Errorf("project = %+v, want %+v", got, p)
	}

	if err := s.SetProjectEnabled(ctx, p.ID, false); err != nil {
		t.Fatalf("disable: %v", err)
	}
	if err := s.SetProjectExpiry(ctx, p.ID, nil); err != nil {
		t.Fatalf("clear expiry: %v", err)
	}
	got, _ = s.Project(ctx, p.ID)
	if got.Status || got.ExpiresAt != nil {
		t.Errorf("after disable and clearing expiry: %+v", got)
	}
	if err := s.SetProjectExpiry(ctx, p.ID, ptr(int64(1700000000))); err != nil {
		t.Fatalf("set expiry: %v", err)
	}
	got, _ = s.Project(ctx, p.ID)
	if got.ExpiresAt == nil || *got.ExpiresAt != 1700000000 {
		t.Errorf("expiry = %v, want 1700000000", got.ExpiresAt)
	}

	missing := contract.NewID()
	for name, err := range map[string]error{
		"get unknown":        func() error { _, err := s.Project(ctx, missing); return err }(),
		"get malformed":      func() error { _, err := s.Project(ctx, "not-an-id"); return err }(),
		"enable unknown":     s.SetProjectEnabled(ctx, missing, true),
		"expiry unknown":     s.SetProjectExpiry(ctx, missing, nil),
		"statistics unknown": func() error { _, err := s.Statistics(ctx, missing, 0); return err }(),
		"list unknown":       func() error { _, _, err := s.ListCodes(ctx, missing, contract.ListQuery{}, 0); return err }(),
		"insert unknown":     func() error { _, err := s.InsertCodes(ctx, missing, values("x")); return err }(),
		"code by id unknown": func() error { _, err := s.CodeByID(ctx, p.ID, missing); return err }(),
		"code by value":      func() error { _, err := s.CodeByValue(ctx, p.ID, "nope"); return err }(),
		"snapshot unknown":   s.ApplySnapshot(ctx, contract.CodeRecord{ID: missing, Version: 1}),
		"create key unknown": func() error { _, err := s.CreateAPIKey(ctx, newAPIKey(missing, 0, 0)); return err }(),
		"get key unknown":    func() error { _, err := s.APIKey(ctx, missing); return err }(),
		"revoke key unknown": s.RevokeAPIKey(ctx, missing),
		"limit key unknown":  s.SetAPIKeyRateLimit(ctx, missing, 1, 1),
		"get key malformed":  func() error { _, err := s.APIKey(ctx, "ABC"); return err }(),
	} {
		wantNotFound(t, name, err)
	}
}

func TestAPIKeys(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, ptr(int64(1900000000)))

	tests := []struct {
		name      string
		rate      float64
		burst     int
		wantRate  float64
		wantBurst int
	}{
		{"unlimited", 0, 0, 0, 0},
		{"limited", 12.5, 40, 12.5, 40},
		{"negative means unset", -1, -5, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nk := newAPIKey(p.ID, tt.rate, tt.burst)
			k, err := s.CreateAPIKey(ctx, nk)
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			// The secret is kept and returned as given: the store knows nothing of sealing.
			if k.ID != nk.ID || k.Secret != nk.Secret || k.ProjectID != p.ID ||
				k.Revoked || !k.ProjectEnabled || k.ProjectExpiresAt == nil || *k.ProjectExpiresAt != 1900000000 ||
				k.RatePerSec != tt.wantRate || k.Burst != tt.wantBurst {
				t.Fatalf("created key = %+v", k)
			}
			got, err := s.APIKey(ctx, k.ID)
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if !reflect.DeepEqual(got, k) {
				t.Errorf("get = %+v, want %+v", got, k)
			}
		})
	}

	k, _ := s.CreateAPIKey(ctx, newAPIKey(p.ID, 0, 0))
	k2, _ := s.CreateAPIKey(ctx, newAPIKey(p.ID, 0, 0))
	if k.Secret == k2.Secret || k.ID == k2.ID {
		t.Fatalf("two keys share id or secret")
	}
	dup := newAPIKey(p.ID, 0, 0)
	dup.ID = k.ID
	if _, err := s.CreateAPIKey(ctx, dup); !errors.Is(err, contract.ErrConflict) {
		t.Fatalf("a second key with a taken id: %v, want ErrConflict", err)
	}
	if err := s.SetAPIKeyRateLimit(ctx, k.ID, 3, 7); err != nil {
		t.Fatalf("set limit: %v", err)
	}
	if err := s.SetProjectEnabled(ctx, p.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeAPIKey(ctx, k.ID); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if err := s.RevokeAPIKey(ctx, k.ID); err != nil {
		t.Fatalf("revoke twice: %v", err)
	}
	got, err := s.APIKey(ctx, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Revoked || got.RatePerSec != 3 || got.Burst != 7 || got.ProjectEnabled || got.Secret != k.Secret {
		t.Errorf("after limit, revoke and project disable: %+v", got)
	}
	if other, _ := s.APIKey(ctx, k2.ID); other.Revoked {
		t.Errorf("revoking one key revoked another")
	}
	if err := s.SetAPIKeyRateLimit(ctx, k.ID, 0, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.APIKey(ctx, k.ID); got.RatePerSec != 0 || got.Burst != 0 {
		t.Errorf("cleared limit = %v/%v", got.RatePerSec, got.Burst)
	}
}
