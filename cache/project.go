package cache

import (
	"context"
	"fmt"
)

// ProjectState is what the hot path needs of a project.
type ProjectState struct {
	ID        string
	Enabled   bool
	ExpiresAt *int64 // unix s
}

// PutProject writes a project's state; admin changes call it so they reach the hot path at once.
func (c *Cache) PutProject(ctx context.Context, p ProjectState) error {
	en := "0"
	if p.Enabled {
		en = "1"
	}
	pipe := c.rdb.TxPipeline()
	key := projectKey(p.ID)
	pipe.Del(ctx, key)
	if p.ExpiresAt != nil {
		pipe.HSet(ctx, key, "en", en, "x", *p.ExpiresAt)
	} else {
		pipe.HSet(ctx, key, "en", en)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("put project: %w", err)
	}
	return nil
}
