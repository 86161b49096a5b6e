package cache

import (
	"context"
	"fmt"
	"strconv"

	"github.com/acv/acv/api/contract"
)

// PutProject writes a project's state; admin changes call it so they reach the hot path at once.
func (c *Cache) PutProject(ctx context.Context, p contract.Project) error {
	pipe := c.rdb.TxPipeline()
	key := projectKey(p.ID)
	pipe.Del(ctx, key)
	pipe.HSet(ctx, key, projectFields(p)...)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("put project: %w", translate(err))
	}
	return nil
}

// LoadProject stores a project's state read from Postgres unless Redis already holds one.
func (c *Cache) LoadProject(ctx context.Context, p contract.Project) error {
	exp := ""
	if p.ExpiresAt != nil {
		exp = strconv.FormatInt(*p.ExpiresAt, 10)
	}
	if err := loadProjectScript.Run(ctx, c.rdb, []string{projectKey(p.ID)}, enabledFlag(p), exp).Err(); err != nil {
		return fmt.Errorf("load project: %w", translate(err))
	}
	return nil
}

func enabledFlag(p contract.Project) string {
	if p.Status {
		return "1"
	}
	return "0"
}

func projectFields(p contract.Project) []interface{} {
	f := []interface{}{fEnabled, enabledFlag(p)}
	if p.ExpiresAt != nil {
		f = append(f, fExpiresAt, *p.ExpiresAt)
	}
	return f
}
