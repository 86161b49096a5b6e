package store_test

import (
	"errors"
	"testing"

	"github.com/acv/acv/api/contract"
)

// Every change of a project's flags is a new version of its row: the hot path's copies of the
// flags keep the newest version they are given, so the version must grow with each change.
func TestProjectStateVersions(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p, err := s.CreateProject(ctx, contract.NewProject{Name: "v", ExpiresAt: ptr(int64(2000000000))})
	if err != nil {
		t.Fatal(err)
	}
	state := func() (contract.Project, int64) {
		t.Helper()
		got, v, err := s.ProjectState(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got, v
	}
	got, v1 := state()
	if got.ID != p.ID || !got.Status || got.ExpiresAt == nil || *got.ExpiresAt != 2000000000 || v1 < 1 {
		t.Fatalf("new project: %+v version %d", got, v1)
	}
	if err := s.SetProjectEnabled(ctx, p.ID, false); err != nil {
		t.Fatal(err)
	}
	got, v2 := state()
	if got.Status || v2 != v1+1 {
		t.Fatalf("after disable: %+v version %d, want disabled at version %d", got, v2, v1+1)
	}
	if err := s.SetProjectExpiry(ctx, p.ID, nil); err != nil {
		t.Fatal(err)
	}
	got, v3 := state()
	if got.Status || got.ExpiresAt != nil || v3 != v2+1 {
		t.Fatalf("after clearing the expiry: %+v version %d, want version %d", got, v3, v2+1)
	}
	if _, _, err := s.ProjectState(ctx, contract.NewID()); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("unknown project: %v, want ErrNotFound", err)
	}
	if _, _, err := s.ProjectState(ctx, "not-an-id"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("malformed id: %v, want ErrNotFound", err)
	}
}
