package audit

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Trim runs the removal script as the relay does: the published prefix of n entries that began
// with first and ended with last. It reports whether it trimmed.
func Trim(ctx context.Context, rdb redis.Cmdable, outbox, first, last string, n int) (bool, error) {
	cmds, err := runScripts(ctx, rdb, []scriptCall{trimCall(outbox, &outboxState{read: n, first: first, last: last})})
	if err != nil {
		return false, err
	}
	v, err := cmds[0].Int()
	return v == 1, err
}
