package store_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

// TestAdminTokens: a token is found by the hash of its secret with its owner, listed per owner
// or for all, marked used at most once a minute, and revoked once; its hash is unique.
func TestAdminTokens(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now().Truncate(time.Microsecond)
	ann, err := s.CreateAdminAccount(ctx, contract.NewAdminAccount{Username: "ann", PasswordHash: "$argon2id$x", Role: "admin", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := s.CreateAdminAccount(ctx, contract.NewAdminAccount{Username: "bob", PasswordHash: "$argon2id$x", Role: "viewer", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	h1, h2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	t1, err := s.CreateAdminToken(ctx, contract.NewAdminToken{Hash: h1, Name: "ci", AdminID: ann.ID, Role: "operator", Now: now, ExpiresAt: now.Add(time.Hour)})
	if err != nil || !contract.ValidID(t1.ID) || t1.Admin.Username != "ann" || t1.Role != "operator" || !t1.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("create %+v, %v", t1, err)
	}
	if _, err := s.CreateAdminToken(ctx, contract.NewAdminToken{Hash: h1, Name: "again", AdminID: bob.ID, Role: "viewer", Now: now, ExpiresAt: now.Add(time.Hour)}); !errors.Is(err, contract.ErrConflict) {
		t.Errorf("a second token with the same hash: %v", err)
	}
	if _, err := s.CreateAdminToken(ctx, contract.NewAdminToken{Hash: []byte("short"), Name: "x", AdminID: bob.ID, Role: "viewer", Now: now, ExpiresAt: now}); err == nil {
		t.Error("a hash that is not 32 bytes was accepted")
	}
	if _, err := s.CreateAdminToken(ctx, contract.NewAdminToken{Hash: h2, Name: "dash", AdminID: bob.ID, Role: "viewer", Now: now.Add(time.Second), ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.AdminTokenByHash(ctx, h1)
	if err != nil || got.ID != t1.ID || got.Admin.ID != ann.ID || got.LastUsedAt != nil || got.RevokedAt != nil {
		t.Fatalf("by hash %+v, %v", got, err)
	}
	if _, err := s.AdminTokenByHash(ctx, bytes.Repeat([]byte{3}, 32)); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("unknown hash: %v", err)
	}
	all, err := s.AdminTokens(ctx, "")
	if err != nil || len(all) != 2 || all[0].Name != "dash" {
		t.Errorf("every token, newest first: %+v, %v", all, err)
	}
	bobs, err := s.AdminTokens(ctx, bob.ID)
	if err != nil || len(bobs) != 1 || bobs[0].Name != "dash" {
		t.Errorf("bob's tokens: %+v, %v", bobs, err)
	}

	if err := s.TouchAdminToken(ctx, t1.ID, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchAdminToken(ctx, t1.ID, now.Add(90*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.AdminToken(ctx, t1.ID); got.LastUsedAt == nil || !got.LastUsedAt.Equal(now.Add(time.Minute)) {
		t.Errorf("last used %v, want the first touch (a second within the minute writes nothing)", got.LastUsedAt)
	}
	if err := s.RevokeAdminToken(ctx, t1.ID, now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeAdminToken(ctx, t1.ID, now.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.AdminToken(ctx, t1.ID); got.RevokedAt == nil || !got.RevokedAt.Equal(now.Add(2*time.Minute)) {
		t.Errorf("revoked at %v, want the first revocation's time", got.RevokedAt)
	}
	if err := s.RevokeAdminToken(ctx, contract.NewID(), now); !errors.Is(err, contract.ErrNotFound) {
		t.Errorf("revoke an unknown token: %v", err)
	}
}
