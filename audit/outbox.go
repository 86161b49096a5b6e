package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// An outbox is a Redis list per shard: the verify script appends each event (RPUSH, the
// cheapest write Redis has for it), and the relay that holds the outbox's lease reads a prefix
// (LRANGE), publishes it, and only then removes it (trimScript). Nothing else changes the list:
// appends at the tail, trims at the head. So an entry's index only moves when a trim removed
// entries before it, and an entry, which carries its unique event id, is never written twice.

// scriptCall is one script run of a pipeline.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
}

// runScripts sends calls in one pipeline by EVALSHA; the calls a node refused with NOSCRIPT (a
// restarted or new master) did not run, so they are sent again by EVAL, which also caches the
// script there. The replies come back in the calls' order; err is the first failure.
func runScripts(ctx context.Context, rdb redis.Cmdable, calls []scriptCall) ([]*redis.Cmd, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.Cmd, len(calls))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range calls {
			cmds[i] = c.script.EvalSha(ctx, p, c.keys, c.args...)
		}
		return nil
	})
	var again []int
	for i, c := range cmds {
		if err := c.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range again {
				cmds[i] = calls[i].script.Eval(ctx, p, calls[i].keys, calls[i].args...)
			}
			return nil
		})
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return cmds, err
		}
	}
	return cmds, nil
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

// trimScript removes the n entries a relay published from the head of an outbox, if they are
// still its head: the entry at index 0 is the first one the relay read, and the entry at n-1 is
// the last one it published. Entries are unique and leave only from the head, so a first entry
// still in place means nothing was removed since the relay read, and the entries at 0..n-1 are
// the ones it published. The last entry guards a list rebuilt after a failover that lost its
// tail. Anything else (another relay trimmed meanwhile) refuses, and the relay reads again from
// the head: at worst an entry is published twice, never removed unpublished.
//
// KEYS[1] the outbox; ARGV[1] the first entry; ARGV[2] the last published; ARGV[3] n.
// Reply: 1 trimmed, 0 refused.
var trimScript = redis.NewScript(`
local n = tonumber(ARGV[3])
if redis.call('LINDEX', KEYS[1], 0) == ARGV[1] and redis.call('LINDEX', KEYS[1], n - 1) == ARGV[2] then
  redis.call('LTRIM', KEYS[1], n, -1)
  return 1
end
return 0
`)

// trimCall is the removal of an outbox's published prefix.
func trimCall(key string, st *outboxState) scriptCall {
	return scriptCall{trimScript, []string{key}, []any{st.first, st.last, strconv.Itoa(st.read)}}
}
