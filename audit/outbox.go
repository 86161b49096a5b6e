package audit

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/internal/redisscript"
)

// An outbox is a Redis list per shard: the verify script appends each event (RPUSH, the
// cheapest write Redis has for it), and the relay that holds the outbox's lease reads a prefix
// (LRANGE), publishes it, and only then removes it (scripts/trim.lua). Nothing else changes
// the list: appends at the tail, trims at the head. So an entry's index only moves when a trim
// removed entries before it, and an entry, which carries its unique event id, is never written
// twice.

// The relay's scripts (scripts/*.lua, each with its KEYS, ARGV and reply), run as Redis
// Functions. Each replies a status first: statusOK when it did what it asks, statusRefused when
// the state was not what the relay expected.
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
// whether it did what it asks. A call that failed, or replied anything but a status, keeps the
// error in its Err and is not done. err is the first failure.
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

// readOutboxes reads, in one pipeline (one per node on a cluster, every command naming one
// key), up to count entries of each outbox from its offset on. A failed read is an error for
// the whole round: the relay reads again after a pause.
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
