package store_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/store"
)

func TestAdminAccountsSessionsAndThrottle(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now().Truncate(time.Microsecond)
	a, err := s.CreateAdminAccount(ctx, store.NewAdminAccount{Username: "ann", PasswordHash: "$argon2id$x", Role: "viewer", MustChangePassword: true, Now: now})
	if err != nil || !contract.ValidID(a.ID) || !a.MustChangePassword || !a.CreatedAt.Equal(now) {
		t.Fatalf("create %+v, %v", a, err)
	}
	if _, err := s.CreateAdminAccount(ctx, store.NewAdminAccount{Username: "ann", PasswordHash: "$argon2id$y", Role: "admin", Now: now}); !errors.Is(err, contract.ErrConflict) {
		t.Fatalf("duplicate username: %v", err)
	}
	for _, bad := range []store.NewAdminAccount{
		{Username: "Ann", PasswordHash: "$argon2id$x", Role: "viewer", Now: now},    // not lowercased
		{Username: "bea", PasswordHash: "plain", Role: "viewer", Now: now},          // not a hash
		{Username: "cid", PasswordHash: "$argon2id$x", Role: "superuser", Now: now}, // no such role
	} {
		if _, err := s.CreateAdminAccount(ctx, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	id := bytes.Repeat([]byte{7}, 32)
	if err := s.CreateAdminSession(ctx, store.NewAdminSession{ID: id, AdminID: a.ID, Now: now, ExpiresAt: now.Add(time.Hour), UserAgent: "ua", ClientIP: "10.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	se, err := s.AdminSession(ctx, id)
	if err != nil || se.Admin.Username != "ann" || se.RevokedAt != nil || se.ClientIP != "10.0.0.1" {
		t.Fatalf("session %+v, %v", se, err)
	}
	if err := s.SetAdminPassword(ctx, a.ID, "$argon2id$new", false, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	se, err = s.AdminSession(ctx, id)
	if err != nil || se.RevokedAt == nil || se.Admin.MustChangePassword || se.Admin.PasswordHash != "$argon2id$new" {
		t.Fatalf("a password change must revoke the session: %+v, %v", se, err)
	}
	if _, err := s.AdminSession(ctx, bytes.Repeat([]byte{8}, 32)); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}

	lock := func(n int) time.Duration {
		if n >= 3 {
			return time.Minute
		}
		return 0
	}
	for i := 1; i <= 3; i++ {
		if n, err := s.RecordLoginFailure(ctx, "user:ann", now, 15*time.Minute, lock); err != nil || n != i {
			t.Fatalf("failure %d: %d, %v", i, n, err)
		}
	}
	until, locked, err := s.LoginLockedUntil(ctx, []string{"user:ann", "ip:1.2.3.4"}, now)
	if err != nil || !locked || !until.Equal(now.Add(time.Minute)) {
		t.Fatalf("locked %v until %v, %v", locked, until, err)
	}
	if _, locked, _ = s.LoginLockedUntil(ctx, []string{"user:ann"}, now.Add(2*time.Minute)); locked {
		t.Fatal("the lock must end")
	}
	// Past the window the count starts again.
	if n, err := s.RecordLoginFailure(ctx, "user:ann", now.Add(time.Hour), 15*time.Minute, lock); err != nil || n != 1 {
		t.Fatalf("after the window: %d, %v", n, err)
	}
	if err := s.ClearLoginFailures(ctx, "user:ann"); err != nil {
		t.Fatal(err)
	}
}
