package service_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/testkit"
)

// TestLiveRelaysCounted: the dashboard's "relays alive" counts the relays with a live
// heartbeat on the outboxes.
func TestLiveRelaysCounted(t *testing.T) {
	s := testkit.NewStack(t)
	ctx := context.Background()
	count := func() int64 {
		n, err := audit.LiveRelays(ctx, s.Deps.Redis, cache.Outboxes(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("%d relays alive before any started", n)
	}
	s.StartRelay("relay-a")
	s.StartRelay("relay-b")
	testkit.WaitFor(t, 20*time.Second, "two relays alive", func() (bool, string) {
		n := count()
		return n == 2, strconv.FormatInt(n, 10)
	})
}
