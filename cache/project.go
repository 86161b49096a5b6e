package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/redisscript"
)

// PublishProject writes a project's state, as of version of its row, to every shard's copy
// (a copy never yields to an older version: putproject.lua), pipelined. It returns once every
// shard holds that version or a newer one, so every verify starting after it sees the new
// state. Version 0 (a project built in Redis alone) yields to any loaded row.
func (c *Cache) PublishProject(ctx context.Context, p contract.Project, version int64) error {
	args := projectArgs(p, version)
	calls := make([]*redisscript.Call, Shards)
	for s := range calls {
		calls[s] = &redisscript.Call{Script: putProjectScript, Keys: []string{projectKey(s, p.ID)}, Args: args}
	}
	redisscript.Send(ctx, c.rdb, calls, nil)
	var errs []error
	for s, call := range calls {
		err := call.Err
		if err == nil {
			_, err = decodeDone(putProjectScript, call.Reply)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", s, translate(err)))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("publish project %s to %d of %d shards: %w", p.ID, len(errs), Shards, errors.Join(errs...))
	}
	return nil
}

// storeProject writes one shard's copy of a project's state unless the shard holds a newer one.
func (c *Cache) storeProject(ctx context.Context, shard int, p contract.Project, version int64) error {
	_, err := c.runDone(ctx, "store project", putProjectScript, []string{projectKey(shard, p.ID)}, projectArgs(p, version)...)
	return err
}

// loadProject copies a project's state from the Loader into one shard.
func (c *Cache) loadProject(ctx context.Context, shard int, projectID string) error {
	if c.loader == nil {
		return errors.New("project not in redis and no loader configured")
	}
	p, version, err := c.loader.ProjectState(ctx, projectID)
	if err != nil {
		return fmt.Errorf("load project: %w", err)
	}
	return c.storeProject(ctx, shard, p, version)
}

func projectArgs(p contract.Project, version int64) []interface{} {
	en, exp := "0", ""
	if p.Status {
		en = "1"
	}
	if p.ExpiresAt != nil {
		exp = strconv.FormatInt(*p.ExpiresAt, 10)
	}
	return []interface{}{en, exp, version}
}
