package cache

import (
	"context"
	"errors"
	"fmt"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/redisscript"
)

// PublishProject writes a project's state, as of its row's version, to every shard's copy
// (never over a newer version). It returns once every shard holds that version or a newer
// one, so every verify starting after it sees the new state. Version 0 yields to any row.
func (c *Cache) PublishProject(ctx context.Context, p contract.Project, version int64) error {
	args := projectArgs(p, version)
	calls := make([]*redisscript.Call, Shards)
	for s := range calls {
		calls[s] = &redisscript.Call{Script: putProjectScript, Keys: []string{projectKey(s, p.ID)}, Args: args}
	}
	redisscript.Send(ctx, c.rdb, calls, nil)
	var errs []error
	for s, call := range calls {
		if _, err := callDone(call); err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", s, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("publish project %s to %d of %d shards: %w", p.ID, len(errs), Shards, errors.Join(errs...))
	}
	return nil
}

// loadProject copies a project's state from the Loader into one shard's copy, unless the shard
// holds a newer one.
func (c *Cache) loadProject(ctx context.Context, shard int, projectID string) error {
	if c.loader == nil {
		return errors.New("project not in redis and no loader configured")
	}
	p, version, err := c.loader.ProjectState(ctx, projectID)
	if err != nil {
		return fmt.Errorf("load project: %w", err)
	}
	_, err = c.runDone(ctx, "store project", putProjectScript, []string{projectKey(shard, p.ID)}, projectArgs(p, version)...)
	return err
}

func projectArgs(p contract.Project, version int64) []interface{} {
	return []interface{}{flag(p.Status), unixOrEmpty(p.ExpiresAt), version}
}
