package redisscript_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/redisscript"
	"github.com/acv/acv/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// incr.lua as a test script: its header's contract is a status, then the counter's new value.
var incr = redisscript.New("acv_test_incr", "local S_OK = 0\n", "return {S_OK, redis.call('INCR', KEYS[1])}")

// A node without the library (never loaded, or flushed) answers "Function not found": the call
// loads it and is sent again, once, alone and in a pipeline with a tail; each call keeps its own
// reply, and the tail's check becomes the error of the calls that succeeded.
func TestSendLoadsWhatIsMissing(t *testing.T) {
	r := testkit.RedisServer(t, localenv.RedisOptions{})
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()

	v, err := incr.Run(ctx, rdb, []string{"a"})
	if st, rep, derr := incr.Decode(v, 1); err != nil || derr != nil || st != 0 || rep.Int(0) != 1 {
		t.Fatalf("first call on a Redis without the library: %v, %v, %v", v, err, derr)
	}
	if err := rdb.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	calls := []*redisscript.Call{
		{Script: incr, Keys: []string{"a"}},
		{Script: incr, Keys: []string{"b"}},
	}
	var tailRuns int
	redisscript.Send(ctx, rdb, calls, func(ctx context.Context, p redis.Pipeliner) func() error {
		tailRuns++
		ping := p.Ping(ctx)
		return ping.Err
	})
	for i, want := range []int64{2, 1} {
		st, rep, err := incr.Decode(calls[i].Reply, 1)
		if calls[i].Err != nil || err != nil || st != 0 || rep.Int(0) != want {
			t.Fatalf("call %d after a flush: %v, %v, %v", i, calls[i].Reply, calls[i].Err, err)
		}
	}
	if tailRuns != 2 {
		t.Errorf("the tail went with %d pipelines, want 2 (the first, and the one sent again)", tailRuns)
	}
	if n, _ := rdb.Get(ctx, "a").Int(); n != 2 {
		t.Errorf("the refused call ran %d times in all, want once more", n-1)
	}
}

// Replies are read strictly: a status first, then exactly the fields the header promises, each
// of its type; errors name the script.
func TestDecodeIsStrict(t *testing.T) {
	st, rep, err := incr.Decode([]interface{}{int64(3), "x", int64(7)}, 2)
	if err != nil || st != 3 || rep.Str(0) != "x" || rep.Int(1) != 7 || rep.Err() != nil {
		t.Fatalf("a well-formed reply: %d, %v", st, err)
	}
	for _, bad := range []interface{}{nil, int64(0), "0", []interface{}{}, []interface{}{"0", "x", int64(7)},
		[]interface{}{int64(0), "x"}, []interface{}{int64(0), "x", int64(7), int64(8)}} {
		if _, _, err := incr.Decode(bad, 2); err == nil || !strings.Contains(err.Error(), "acv_test_incr") {
			t.Errorf("%#v: %v", bad, err)
		}
	}
	_, rep, _ = incr.Decode([]interface{}{int64(0), int64(1), "x"}, 2)
	rep.Str(0)
	rep.Int(1)
	if rep.Err() == nil || !strings.Contains(rep.Err().Error(), "acv_test_incr") {
		t.Errorf("fields of the wrong types: %v", rep.Err())
	}
}
