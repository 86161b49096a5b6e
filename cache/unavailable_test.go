package cache_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
)

// TestRedisLoadingIsUnavailable runs the hot path against a real Redis that is reloading its
// dataset (DEBUG RELOAD, slowed down): every call fails as contract.KindUnavailable (503)
// with Redis's LOADING error in the chain, never as an internal error (500), and nothing
// changes; once Redis has loaded, the same verify succeeds.
func TestRedisLoadingIsUnavailable(t *testing.T) {
	ctx := context.Background()
	srv := testkit.RedisServer(t, localenv.RedisOptions{Debug: true})
	// The client retries LOADING as the service's does (go-redis's default, three retries),
	// then reports it.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	for _, coalesce := range []bool{false, true} {
		var opts []cache.Option
		if coalesce {
			opts = append(opts, cache.WithCoalescing(2, 8))
		}
		c := cache.New(rdb, opts...)
		t.Cleanup(c.Close)
		pid := contract.NewID()
		if err := c.PublishProject(ctx, contract.Project{ID: pid, Status: true}, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutCode(ctx, pid, contract.CodeRecord{ID: contract.NewID(), ProjectID: pid, Code: "LOAD-1"}); err != nil {
			t.Fatal(err)
		}
		op := func() contract.Operation {
			return contract.Operation{Action: contract.ActionVerify, ProjectID: pid, KeyID: "k1", Code: "LOAD-1",
				IP: "127.0.0.1", ReplayKey: contract.NewID(), EventID: contract.NewID(), Now: time.Now()}
		}

		done := testkit.LoadRedis(t, srv.Addr, 2*time.Second)
		for name, call := range map[string]func() error{
			"verify": func() error { _, err := c.Verify(ctx, op()); return err },
			"admit": func() error {
				_, err := c.Admit(ctx, contract.Admission{ProjectID: pid, KeyID: "k1", ReplayKey: contract.NewID(), CheckReplay: true, Now: time.Now()})
				return err
			},
			"live code": func() error { _, _, err := c.LiveCode(ctx, pid, "LOAD-1"); return err },
		} {
			err := call()
			if k := contract.KindOf(err); k != contract.KindUnavailable {
				t.Fatalf("coalesce %v, %s while redis loads: kind %q, want %q: %v", coalesce, name, k, contract.KindUnavailable, err)
			}
			if !redis.IsLoadingError(err) {
				t.Fatalf("coalesce %v, %s: the LOADING error is not in the chain: %v", coalesce, name, err)
			}
		}
		done()
		r, err := c.Verify(ctx, op())
		if err != nil || !r.Outcome.Success() {
			t.Fatalf("coalesce %v, verify after the reload: %+v %v", coalesce, r, err)
		}
	}

	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		down := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		t.Cleanup(func() { down.Close() })
		_, err = cache.New(down).Verify(ctx, contract.Operation{Action: contract.ActionVerify, ProjectID: contract.NewID(),
			KeyID: "k1", Code: "X", IP: "127.0.0.1", ReplayKey: contract.NewID(), EventID: contract.NewID(), Now: time.Now()})
		if k := contract.KindOf(err); k != contract.KindUnavailable || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("verify with redis down: kind %q: %v", k, err)
		}
	})
}
