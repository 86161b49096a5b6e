package store_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

func TestAdminAccountsSessionsAndThrottle(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now().Truncate(time.Microsecond)
	a, err := s.CreateAdminAccount(ctx, contract.NewAdminAccount{Username: "ann", PasswordHash: "$argon2id$x", Role: "viewer", MustChangePassword: true, Now: now})
	if err != nil || !contract.ValidID(a.ID) || !a.MustChangePassword || !a.CreatedAt.Equal(now) {
		t.Fatalf("create %+v, %v", a, err)
	}
	if _, err := s.CreateAdminAccount(ctx, contract.NewAdminAccount{Username: "ann", PasswordHash: "$argon2id$y", Role: "admin", Now: now}); !errors.Is(err, contract.ErrConflict) {
		t.Fatalf("duplicate username: %v", err)
	}
	for _, bad := range []contract.NewAdminAccount{
		{Username: "Ann", PasswordHash: "$argon2id$x", Role: "viewer", Now: now},    // not lowercased
		{Username: "bea", PasswordHash: "plain", Role: "viewer", Now: now},          // not a hash
		{Username: "cid", PasswordHash: "$argon2id$x", Role: "superuser", Now: now}, // no such role
	} {
		if _, err := s.CreateAdminAccount(ctx, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	id := bytes.Repeat([]byte{7}, 32)
	if err := s.CreateAdminSession(ctx, contract.NewAdminSession{ID: id, AdminID: a.ID, Now: now, ExpiresAt: now.Add(time.Hour), UserAgent: "ua", ClientIP: "10.0.0.1"}); err != nil {
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

	lock := []contract.LoginLimit{{Subject: "user:ann", LockFor: func(n int) time.Duration {
		if n >= 3 {
			return time.Minute
		}
		return 0
	}}}
	for i := 1; i <= 3; i++ {
		if _, _, ok, err := s.ReserveLoginAttempt(ctx, lock, now, 15*time.Minute); err != nil || !ok {
			t.Fatalf("attempt %d: %v, %v", i, ok, err)
		}
	}
	// The third attempt locked the subject: the next one is refused with the lock's end.
	_, until, ok, err := s.ReserveLoginAttempt(ctx, append(lock, contract.LoginLimit{Subject: "ip:1.2.3.4", LockFor: noLock}), now, 15*time.Minute)
	if err != nil || ok || !until.Equal(now.Add(time.Minute)) {
		t.Fatalf("locked: reserved %v, until %v, %v", ok, until, err)
	}
	if _, _, ok, _ = s.ReserveLoginAttempt(ctx, lock, now.Add(2*time.Minute), 15*time.Minute); !ok {
		t.Fatal("the lock must end")
	}
	// Past the window the count starts again: the next two attempts lock nothing.
	later := now.Add(time.Hour)
	for i := 1; i <= 2; i++ {
		if _, _, ok, err := s.ReserveLoginAttempt(ctx, lock, later, 15*time.Minute); err != nil || !ok {
			t.Fatalf("after the window, attempt %d: %v, %v", i, ok, err)
		}
	}
	// A right password gives its attempt back, and lifts the lock it set.
	r, _, ok, err := s.ReserveLoginAttempt(ctx, lock, later, 15*time.Minute)
	if err != nil || !ok {
		t.Fatalf("third attempt after the window: %v, %v", ok, err)
	}
	if err := s.RefundLoginAttempt(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err = s.ReserveLoginAttempt(ctx, lock, later, 15*time.Minute); err != nil || !ok {
		t.Fatalf("after the refund: %v, %v", ok, err)
	}
	if err := s.ClearLoginFailures(ctx, "user:ann"); err != nil {
		t.Fatal(err)
	}
}

// noLock is a LoginLimit.LockFor that never locks.
func noLock(int) time.Duration { return 0 }
