package cache_test

import (
	"context"
	"errors"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/testkit"
)

func keyOf(pid string, version int64) contract.APIKey {
	return contract.APIKey{ID: contract.NewKeyID(), ProjectID: pid, Secret: "v1:k1:sealed-bytes", RatePerSec: 2.5, Burst: 7, Version: version}
}

// A mirrored key is read from Redis alone, with its project's state, and an older write never
// replaces a newer one.
func TestKeyMirrorNewestVersionWins(t *testing.T) {
	testkit.OnEachRedis(t, testKeyMirrorNewestVersionWins)
}

func testKeyMirrorNewestVersionWins(t *testing.T) {
	l := newFakeLoader()
	f := newFixture(t, cache.WithLoader(l))
	ctx := context.Background()
	k := keyOf(f.pid, 2)
	if stored, err := f.c.PutKey(ctx, k); err != nil || !stored {
		t.Fatalf("put: stored=%v err=%v", stored, err)
	}
	old := k
	old.Version, old.RatePerSec = 1, 100
	if stored, err := f.c.PutKey(ctx, old); err != nil || stored {
		t.Fatalf("an older version stored=%v err=%v", stored, err)
	}
	got, err := f.c.APIKey(ctx, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := k
	want.ProjectEnabled = true
	if got.ID != want.ID || got.ProjectID != want.ProjectID || got.Secret != want.Secret || got.RatePerSec != want.RatePerSec ||
		got.Burst != want.Burst || got.Version != 2 || got.Revoked || !got.ProjectEnabled || got.ProjectExpiresAt != nil {
		t.Fatalf("read %+v, want %+v", got, want)
	}
	if n := l.keyCalls(k.ID); n != 0 {
		t.Fatalf("a mirrored key asked the loader %d times", n)
	}
	f.project(false, ptr(1_900_000_000))
	if got, _ := f.c.APIKey(ctx, k.ID); got.ProjectEnabled || got.ProjectExpiresAt == nil || *got.ProjectExpiresAt != 1_900_000_000 {
		t.Fatalf("project state not followed: %+v", got)
	}
}

// Revocation happens in Redis first and is for good: no later write, however new, clears it.
func TestRevokeKeyIsSticky(t *testing.T) { testkit.OnEachRedis(t, testRevokeKeyIsSticky) }

func testRevokeKeyIsSticky(t *testing.T) {
	l := newFakeLoader()
	f := newFixture(t, cache.WithLoader(l))
	ctx := context.Background()
	k := keyOf(f.pid, 1)
	if _, err := f.c.PutKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := f.c.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	newer := k
	newer.Version = 9
	if _, err := f.c.PutKey(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if got, err := f.c.APIKey(ctx, k.ID); err != nil || !got.Revoked || got.Version != 9 {
		t.Fatalf("after revoke and a newer write: %+v %v", got, err)
	}
	// Revoking a key Redis never saw leaves a stub that the load completes, revoked.
	other := keyOf(f.pid, 3)
	l.mu.Lock()
	l.keys[other.ID] = other
	l.mu.Unlock()
	if err := f.c.RevokeKey(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	got, err := f.c.APIKey(ctx, other.ID)
	if err != nil || !got.Revoked || got.Secret != other.Secret || got.ProjectID != f.pid {
		t.Fatalf("revoked stub after load: %+v %v", got, err)
	}
}

// Key ids that fail the checksum never reach the Loader; ids that pass but name no key reach
// it once, then Redis remembers them as unknown.
func TestUnknownKeysCostNoLoads(t *testing.T) { testkit.OnEachRedis(t, testUnknownKeysCostNoLoads) }

func testUnknownKeysCostNoLoads(t *testing.T) {
	l := newFakeLoader()
	f := newFixture(t, cache.WithLoader(l))
	ctx := context.Background()
	for i := 0; i < 200; i++ {
		id := contract.NewID() // no key-id checksum
		if _, err := f.c.APIKey(ctx, id); !errors.Is(err, contract.ErrNotFound) {
			t.Fatalf("random id %s: %v", id, err)
		}
		if n := l.keyCalls(id); n != 0 {
			t.Fatalf("random id %s reached the loader %d times", id, n)
		}
	}
	id := contract.NewKeyID()
	for i := 0; i < 5; i++ {
		if _, err := f.c.APIKey(ctx, id); !errors.Is(err, contract.ErrNotFound) {
			t.Fatalf("unknown id: %v", err)
		}
	}
	if n := l.keyCalls(id); n != 1 {
		t.Fatalf("an unknown id with a valid checksum reached the loader %d times, want 1", n)
	}
	// A key created after its id was remembered as unknown replaces the marker.
	k := keyOf(f.pid, 1)
	k.ID = id
	if stored, err := f.c.PutKey(ctx, k); err != nil || !stored {
		t.Fatalf("put over the unknown marker: %v %v", stored, err)
	}
	if got, err := f.c.APIKey(ctx, id); err != nil || got.Secret != k.Secret {
		t.Fatalf("after create: %+v %v", got, err)
	}
}

// A key Redis lacks (issued before the mirror, or lost with Redis) is loaded once, with its
// project when Redis lacks that too; a loader failure is an error, not "unknown".
func TestKeyLoadedOnMiss(t *testing.T) { testkit.OnEachRedis(t, testKeyLoadedOnMiss) }

func testKeyLoadedOnMiss(t *testing.T) {
	l := newFakeLoader()
	f := newFixture(t, cache.WithLoader(l))
	ctx := context.Background()
	pid := contract.NewID()
	l.addProject(contract.Project{ID: pid, Status: true})
	k := keyOf(pid, 4)
	l.mu.Lock()
	l.keys[k.ID] = k
	l.mu.Unlock()
	l.keyErr = errors.New("postgres down")
	if _, err := f.c.APIKey(ctx, k.ID); err == nil || errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("loader failure answered %v", err)
	}
	l.keyErr = nil
	for i := 0; i < 3; i++ {
		got, err := f.c.APIKey(ctx, k.ID)
		if err != nil || got.Version != 4 || !got.ProjectEnabled {
			t.Fatalf("load %d: %+v %v", i, got, err)
		}
	}
	if n, p := l.keyCalls(k.ID), l.projectCalls(pid); n != 2 || p != 1 {
		t.Fatalf("key loads %d (want 2: the failed one and the first), project loads %d (want 1)", n, p)
	}
}
