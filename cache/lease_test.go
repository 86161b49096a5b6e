package cache_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/testkit"
)

// Replicas lease tokens from one bucket and never admit more than it hands out: at a fixed
// instant, two replicas together admit exactly the burst, and a second later exactly what the
// bucket refilled; every refusal says how long to wait.
func TestLeasedTokensNeverExceedTheBucket(t *testing.T) {
	testkit.OnEachRedis(t, testLeasedTokensNeverExceedTheBucket)
}

func testLeasedTokensNeverExceedTheBucket(t *testing.T) {
	f := newFixture(t)
	other := cache.New(f.rdb)
	t.Cleanup(other.Close)
	ctx := context.Background()
	replicas := []*cache.Cache{f.c, other}
	limit := contract.RateLimit{Rate: 200, Burst: 10}
	keyID := contract.NewID()
	admitAll := func(now time.Time) int {
		t.Helper()
		admitted, refusedInARow := 0, 0
		for i := 0; refusedInARow < len(replicas) && i < 1000; i++ {
			rs, err := replicas[i%len(replicas)].Admit(ctx, contract.Admission{ProjectID: f.pid, KeyID: keyID,
				ReplayKey: contract.NewID(), Limit: limit, Now: now})
			switch {
			case err == nil:
				admitted++
				refusedInARow = 0
				if rs.Remaining < 0 || rs.Remaining > limit.Burst {
					t.Fatalf("remaining %d", rs.Remaining)
				}
			case errors.Is(err, contract.ErrRateLimited):
				refusedInARow++
				if rs.Wait <= 0 || rs.Wait > time.Second {
					t.Fatalf("refused with wait %v", rs.Wait)
				}
			default:
				t.Fatal(err)
			}
		}
		return admitted
	}
	start := f.clock
	if n := admitAll(start); n != limit.Burst {
		t.Fatalf("admitted %d at one instant, want the burst, %d", n, limit.Burst)
	}
	// Every replica waits before asking the short bucket again; then it holds a refill.
	if n := admitAll(start.Add(30 * time.Millisecond)); n != 6 {
		t.Fatalf("admitted %d 30 ms later, want the 6 tokens refilled", n)
	}
	if n := admitAll(start.Add(time.Second)); n != limit.Burst {
		t.Fatalf("admitted %d a second later, want the burst again", n)
	}
}
