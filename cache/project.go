package cache

import (
	"context"
	"fmt"
	"strconv"
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

// LoadProject stores a project's state read from Postgres unless Redis already holds one.
func (c *Cache) LoadProject(ctx context.Context, p ProjectState) error {
	en, exp := "0", ""
	if p.Enabled {
		en = "1"
	}
	if p.ExpiresAt != nil {
		exp = strconv.FormatInt(*p.ExpiresAt, 10)
	}
	if err := loadProjectScript.Run(ctx, c.rdb, []string{projectKey(p.ID)}, en, exp).Err(); err != nil {
		return fmt.Errorf("load project: %w", err)
	}
	return nil
}
