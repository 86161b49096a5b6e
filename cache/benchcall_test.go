package cache_test

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
	"github.com/acv/acv/internal/testkit"
)

// The benchmark's call runs the verify script as Verify does: it redeems a code stored with
// PutBenchmarkCodes and logs the event, with arguments redis-benchmark can pass (no NUL byte).
func TestBenchmarkVerifyRedeems(t *testing.T) {
	r := testkit.RedisServer(t, localenv.RedisOptions{})
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	pid := contract.NewID()
	for raw, _ := hex.DecodeString(pid); strings.Contains(string(raw), "\x00"); raw, _ = hex.DecodeString(pid) {
		pid = contract.NewID()
	}
	c := cache.New(rdb)
	if err := c.PutProject(ctx, contract.Project{ID: pid, Status: true}); err != nil {
		t.Fatal(err)
	}
	codeID := contract.NewID()
	if err := c.PutBenchmarkCodes(ctx, pid, "__rand_int__", []contract.CodeRecord{{ID: codeID, Code: "000000000042"}}); err != nil {
		t.Fatal(err)
	}
	src, args := cache.BenchmarkVerify(pid, "__rand_int__", time.Unix(1_800_000_000, 0))
	for _, a := range args {
		if strings.Contains(a, "\x00") {
			t.Fatalf("argument %q holds a NUL byte", a)
		}
	}
	sha, err := rdb.ScriptLoad(ctx, src).Result()
	if err != nil {
		t.Fatal(err)
	}
	// redis-benchmark replaces each placeholder with the same twelve digits.
	call := []interface{}{"EVALSHA", sha}
	for _, a := range args {
		call = append(call, strings.ReplaceAll(a, "__rand_int__", "000000000042"))
	}
	v, err := rdb.Do(ctx, call...).Result()
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := v.(string); !ok || hex.EncodeToString([]byte(s)) != codeID {
		t.Fatalf("reply %q, want the code id %s: a success", v, codeID)
	}
	if again, err := rdb.Do(ctx, call...).Result(); err != nil || hex.EncodeToString([]byte(fmt.Sprint(again))[:16]) != codeID || fmt.Sprint(again)[16:] != "CODE_ALREADY_USED|1800000000000" {
		t.Fatalf("the same call again: %q, %v; want CODE_ALREADY_USED", again, err)
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
