package cache_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/testkit"
)

// The verify script is a Redis Function: a node without its library (flushed here; in
// production a master added or resharded onto) answers "Function not found", and the call
// loads the library and runs: one call at a time, and in a coalesced pipeline.
func TestVerifyLoadsItsFunctionWhereMissing(t *testing.T) {
	testkit.OnEachRedis(t, testVerifyLoadsItsFunctionWhereMissing)
}

func testVerifyLoadsItsFunctionWhereMissing(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []cache.Option
	}{
		{"one call", nil},
		{"coalesced", []cache.Option{cache.WithCoalescing(2, 32)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.opts...)
			ctx := context.Background()
			for i := 0; i < 40; i++ {
				f.code(fmt.Sprintf("F%d", i), contract.CodeRecord{})
			}
			for round := 0; round < 2; round++ {
				flushFunctions(t, f.rdb)
				var wg sync.WaitGroup
				errs := make([]error, 20)
				ops := make([]contract.Operation, len(errs))
				for i := range ops {
					ops[i] = f.call(contract.ActionVerify, fmt.Sprintf("F%d", round*20+i))
				}
				for i := range errs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r, err := f.c.Apply(ctx, ops[i])
						if err == nil && !r.Outcome.Success() {
							err = fmt.Errorf("outcome %+v", r.Outcome)
						}
						errs[i] = err
					}()
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Fatalf("round %d, verify %d after the library was deleted: %v", round, i, err)
					}
				}
			}
			if libs := functionLibraries(t, f.rdb); len(libs) == 0 {
				t.Fatal("no acv_apply library after the verifies")
			}
		})
	}
}

// flushFunctions deletes every function library: on a cluster, on every master.
func flushFunctions(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if cl, ok := rdb.(*redis.ClusterClient); ok {
		err = cl.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.FunctionFlush(ctx).Err() })
	} else {
		err = rdb.FunctionFlush(ctx).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// functionLibraries lists the acv_apply libraries the masters hold.
func functionLibraries(t *testing.T, rdb redis.UniversalClient) []string {
	t.Helper()
	ctx := context.Background()
	var names []string
	collect := func(ctx context.Context, c *redis.Client) error {
		libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "acv_apply_*"}).Result()
		for _, l := range libs {
			if strings.HasPrefix(l.Name, "acv_apply_") {
				names = append(names, l.Name)
			}
		}
		return err
	}
	var err error
	if cl, ok := rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		err = cl.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return collect(ctx, m)
		})
	} else {
		err = collect(ctx, rdb.(*redis.Client))
	}
	if err != nil {
		t.Fatal(err)
	}
	return names
}
