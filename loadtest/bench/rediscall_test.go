package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/localenv"
)

// The ceiling's call runs the verify function as Verify does: it redeems a code stored with
// putPatternCodes and logs the event, with arguments redis-benchmark can pass (no NUL byte).
func TestVerifyCallRedeems(t *testing.T) {
	r, err := localenv.StartRedis(t.TempDir(), localenv.RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Kill() })
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	pid := nulFreeID()
	if err := cache.New(rdb).PublishProject(ctx, contract.Project{ID: pid, Status: true}, 0); err != nil {
		t.Fatal(err)
	}
	codeID := contract.NewID()
	if err := putPatternCodes(ctx, rdb, pid, "__rand_int__", []contract.CodeRecord{{ID: codeID, Code: "000000000042"}}); err != nil {
		t.Fatal(err)
	}
	args, err := verifyCall(ctx, rdb, pid, "__rand_int__", time.Unix(1_800_000_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	// redis-benchmark replaces each placeholder with the same twelve digits.
	var call []interface{}
	for _, a := range args {
		if strings.Contains(a, "\x00") {
			t.Fatalf("argument %q holds a NUL byte", a)
		}
		call = append(call, strings.ReplaceAll(a, "__rand_int__", "000000000042"))
	}
	outcome := func() string {
		t.Helper()
		v, err := rdb.Do(ctx, call...).Result()
		if err != nil {
			t.Fatal(err)
		}
		r, ok := v.([]interface{})
		if !ok || len(r) != 2 || r[0] != int64(0) {
			t.Fatalf("reply %#v, want the status OK and an outcome", v)
		}
		return fmt.Sprint(r[1])
	}
	if s := outcome(); hex.EncodeToString([]byte(s)) != codeID {
		t.Fatalf("outcome %q, want the code id %s: a success", s, codeID)
	}
	if s := outcome(); len(s) < 16 || hex.EncodeToString([]byte(s[:16])) != codeID || s[16:] != "CODE_ALREADY_USED|1800000000000" {
		t.Fatalf("the same call again: %q; want CODE_ALREADY_USED", s)
	}
	entries, err := rdb.LRange(ctx, cache.OutboxOf(pid, "__rand_int__"), 0, -1).Result()
	if err != nil || len(entries) != 2 {
		t.Fatalf("outbox: %q, %v", entries, err)
	}
	ev, _, err := contract.DecodeOutboxEntry(entries[0])
	if err != nil || ev.CodeID != codeID || !ev.Changed || ev.VerifiedBy != "bench" {
		t.Fatalf("event %+v, %v", ev, err)
	}
}
