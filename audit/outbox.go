package audit

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/redisscript"
)

// An outbox is a Redis list per shard: verifies append (RPUSH); the relay holding its lease reads
// a prefix (LRANGE), publishes it, and only then trims it, so an index moves only on a trim.

// The relay's scripts (scripts/*.lua) reply a status first: statusOK when they did what they
// ask, statusRefused when the state was not what the relay expected.
const (
	statusOK      = 0
	statusRefused = 1
)

var (
	//go:embed scripts/trim.lua
	trimSrc string
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/release.lua
	releaseSrc string

	prelude       = fmt.Sprintf("local S_OK = %d\nlocal S_REFUSED = %d\n", statusOK, statusRefused)
	trimScript    = redisscript.New("acv_relay_trim", prelude, trimSrc)
	acquireScript = redisscript.New("acv_relay_acquire", prelude, acquireSrc)
	releaseScript = redisscript.New("acv_relay_release", prelude, releaseSrc)
)

// runScripts sends calls in one pipeline (one per node on a cluster) and tells, call by call,
// whether it did what it asks; a failed call keeps its error in Err. err is the first failure.
func runScripts(ctx context.Context, rdb redisscript.Client, calls []*redisscript.Call) (done []bool, err error) {
	redisscript.Send(ctx, rdb, calls, nil)
	done = make([]bool, len(calls))
	for i, c := range calls {
		if c.Err == nil {
			var st int64
			if st, _, c.Err = c.Script.Decode(c.Reply, 0); c.Err == nil && st != statusOK && st != statusRefused {
				c.Err = c.Script.Errorf("unknown status %d", st)
			}
			done[i] = c.Err == nil && st == statusOK
		}
		if c.Err != nil && err == nil {
			err = c.Err
		}
	}
	return done, err
}

// readOutboxes reads, in one pipeline, up to count entries of each outbox from its offset on.
func readOutboxes(ctx context.Context, rdb redis.Cmdable, keys []string, offsets []int, count int) ([][]string, error) {
	cmds := make([]*redis.StringSliceCmd, len(keys))
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.LRange(ctx, k, int64(offsets[i]), int64(offsets[i]+count-1))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %d outboxes: %w", len(keys), err)
	}
	out := make([][]string, len(keys))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// trimCall is the removal of an outbox's published prefix (scripts/trim.lua).
func trimCall(key string, st *outboxState) *redisscript.Call {
	return &redisscript.Call{Script: trimScript, Keys: []string{key}, Args: []any{st.first, st.last, strconv.Itoa(st.read)}}
}

// OutboxLen sums the entries still held by the outboxes and reports the age of the oldest one:
// the pipeline's lag in Redis (a growing age means the relay is stuck).
func OutboxLen(ctx context.Context, rdb redis.Cmdable, outboxes []string) (length int64, oldestAge time.Duration, err error) {
	lens := make([]*redis.IntCmd, len(outboxes))
	heads := make([]*redis.StringCmd, len(outboxes))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range outboxes {
			lens[i] = p.LLen(ctx, key)
			heads[i] = p.LIndex(ctx, key, 0)
		}
		return nil
	})
	now := time.Now()
	for i := range outboxes {
		for _, c := range []redis.Cmder{lens[i], heads[i]} {
			if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
				return 0, 0, fmt.Errorf("read outbox lengths: %w", err)
			}
		}
		length += lens[i].Val()
		if head := heads[i].Val(); head != "" {
			// A head that does not decode is published as it is (and counted), not aged.
			if ev, _, derr := contract.DecodeOutboxEntry(head); derr == nil {
				oldestAge = max(oldestAge, now.Sub(time.UnixMilli(ev.TS)))
			}
		}
	}
	return length, oldestAge, nil
}
