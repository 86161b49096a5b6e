package audit

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/internal/redisscript"
)

// Trim runs the removal script as the relay does: the published prefix of n entries that began
// with first and ended with last. It reports whether it trimmed.
func Trim(ctx context.Context, rdb redis.Cmdable, outbox, first, last string, n int) (bool, error) {
	done, err := runScripts(ctx, rdb, []*redisscript.Call{trimCall(outbox, &outboxState{read: n, first: first, last: last})})
	return done[0], err
}
