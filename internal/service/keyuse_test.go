package service_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/internal/testkit"
)

// TestAPIKeyLastUse: a key used through the API shows a last-used time within the flush
// interval, written by the API process without a PostgreSQL query on the request, and the
// time never moves backwards.
func TestAPIKeyLastUse(t *testing.T) {
	s := testkit.NewStack(t)
	// An API replica as StartAPI starts it, flushing every 200ms instead of every 10s.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.Config
	cfg.Roles = service.Roles{API: true}
	api := s.Go(func(ctx context.Context) error {
		return service.RunWithHooks(ctx, cfg, ln, service.Hooks{KeyUseFlush: 200 * time.Millisecond})
	})
	t.Cleanup(func() {
		if err := api.Stop(); err != nil {
			t.Errorf("api replica: %v", err)
		}
	})
	base := "http://" + ln.Addr().String()
	tn := s.NewTenant(nil)
	ctx := context.Background()
	lastUsed := func() *int64 {
		keys, err := s.Admin.Store.ProjectAPIKeys(ctx, tn.ProjectID)
		if err != nil || len(keys) != 1 {
			t.Fatalf("keys %+v, %v", keys, err)
		}
		return keys[0].LastUsedAt
	}
	if lastUsed() != nil {
		t.Fatal("a key never used has a last use")
	}
	sg := s.Signer(t, base, tn.Key)
	before := time.Now().Unix()
	if r := sg.Get(testkit.ProjectPath(tn.ProjectID), ""); r.Status != http.StatusOK {
		t.Fatalf("project: %d %s", r.Status, r.Body)
	}
	after := time.Now().Unix()
	testkit.WaitFor(t, 5*time.Second, "the key's last use", func() (bool, string) {
		return lastUsed() != nil, "not flushed"
	})
	got := *lastUsed()
	if got < before || got > after {
		t.Fatalf("last used %d, want within [%d, %d]", got, before, after)
	}
	// A late flush of an older use (another replica's) does not move it back.
	if err := s.Deps.Store.TouchAPIKeys(ctx, []string{tn.Key.ID}, []time.Time{time.Unix(got-3600, 0)}); err != nil {
		t.Fatal(err)
	}
	if now := *lastUsed(); now != got {
		t.Fatalf("last use moved back from %d to %d", got, now)
	}
	// A newer one moves it forward.
	if err := s.Deps.Store.TouchAPIKeys(ctx, []string{tn.Key.ID}, []time.Time{time.Unix(got+60, 0)}); err != nil {
		t.Fatal(err)
	}
	if now := *lastUsed(); now != got+60 {
		t.Fatalf("last use %d, want %d", now, got+60)
	}
}
