package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/testkit"
	"github.com/acv/acv/store"
)

// TestLoginThrottleReservationIsAtomic: 40 attempts at once, through two stores (two console
// instances) on one database, against a subject that locks at its fifth attempt: exactly five
// are reserved, every other one is refused, and an overlapping subject of the refused ones is
// not counted.
func TestLoginThrottleReservationIsAtomic(t *testing.T) {
	ctx := testCtx(t)
	url := testkit.PostgresDB(t)
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	var replicas [2]*store.Store
	for i := range replicas {
		s, err := store.Open(ctx, url)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(s.Close)
		replicas[i] = s
	}
	now := time.Now().Truncate(time.Microsecond)
	limits := []contract.LoginLimit{
		{Subject: "pair:x", LockFor: func(n int) time.Duration {
			if n >= 5 {
				return time.Minute
			}
			return 0
		}},
		{Subject: "account:x", LockFor: noLock},
	}
	var (
		wg               sync.WaitGroup
		mu               sync.Mutex
		reserved, locked int
	)
	start := make(chan struct{})
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(s *store.Store) {
			defer wg.Done()
			<-start
			_, until, ok, err := s.ReserveLoginAttempt(ctx, limits, now, 15*time.Minute)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case ok:
				reserved++
			case until.Equal(now.Add(time.Minute)):
				locked++
			default:
				t.Errorf("refused until %v", until)
			}
		}(replicas[i%2])
	}
	close(start)
	wg.Wait()
	if reserved != 5 || locked != 35 {
		t.Fatalf("%d attempts reserved, %d refused; want 5 and 35", reserved, locked)
	}
	// The account subject counted the five reserved attempts only: with the pair's lock over,
	// its next attempt is its sixth.
	sixth := []contract.LoginLimit{{Subject: "account:x", LockFor: func(n int) time.Duration {
		if n != 6 {
			t.Errorf("the account's attempt counted as number %d, want 6", n)
		}
		return 0
	}}}
	if _, _, ok, err := replicas[0].ReserveLoginAttempt(ctx, sixth, now.Add(2*time.Minute), 15*time.Minute); err != nil || !ok {
		t.Fatalf("after the lock: %v, %v", ok, err)
	}
}
