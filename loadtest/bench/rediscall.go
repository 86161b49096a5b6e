package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
)

// The Redis ceiling sends the hot path's verify call itself, through redis-benchmark: FCALL of
// the cache's verify function (loaded by Cache.Preload) on exactly its keys, for an unlimited
// key (no bucket). The replay marker is not the script's: Verify spends it before, with one
// SET NX in the marker's own slot.
//
// redis-benchmark substitutes its "__rand_int__" placeholder after the keys are named, so every
// call lands in the shard of the value pattern itself: the codes are stored there
// (putPatternCodes), not where Verify would look for them. Its arguments cannot hold a NUL
// byte: the event head holds none but in its raw ids, so the event id is drawn without one, and
// the project id must be one whose 16 raw bytes hold none.

// patternCodeKey is the key a code of the value pattern's shard has: the cache's layout, a
// shard's prefix, "c:", the project id's raw bytes, the value. putPatternCodes fails loudly
// when the layout changed under it (a renamed key is missing).
func patternCodeKey(projectID, valuePattern, value string) string {
	return cache.ShardPrefix(cache.ShardOf(projectID, valuePattern)) + "c:" + contract.RawID(projectID) + value
}

// verifyCall is redis-benchmark's command for one verify of a random code of valuePattern:
// FCALL, the verify function's name, the key count, the keys and the event head.
func verifyCall(ctx context.Context, rdb *redis.Client, projectID, valuePattern string, now time.Time) ([]string, error) {
	if err := cache.New(rdb).Preload(ctx); err != nil {
		return nil, err
	}
	libs, err := rdb.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "acv_apply_*"}).Result()
	if err != nil {
		return nil, fmt.Errorf("list the verify function: %w", err)
	}
	if len(libs) != 1 || len(libs[0].Functions) != 1 {
		return nil, fmt.Errorf("want one acv_apply library on the bench's Redis, found %d", len(libs))
	}
	s := cache.ShardOf(projectID, valuePattern)
	keys := []string{
		patternCodeKey(projectID, valuePattern, valuePattern),
		cache.ShardPrefix(s) + "p:" + projectID,
		cache.OutboxOf(projectID, valuePattern),
	}
	eventID := contract.NewID()
	for strings.Contains(contract.RawID(eventID), "\x00") {
		eventID = contract.NewID()
	}
	head, err := contract.AppendEventHead(nil, contract.Operation{Action: contract.ActionVerify, ProjectID: projectID,
		EventID: eventID, By: "bench", IP: "127.0.0.1", Now: now})
	if err != nil {
		return nil, fmt.Errorf("verify call: %w", err)
	}
	if strings.Contains(string(head), "\x00") {
		return nil, fmt.Errorf("verify call: project id %s holds a NUL byte", projectID)
	}
	call := append([]string{"FCALL", libs[0].Functions[0].Name, fmt.Sprint(len(keys))}, keys...)
	return append(call, string(head)), nil
}

// putPatternCodes stores codes where verifyCall's calls look for them: each under the key it
// would have in the value pattern's shard. They are stored by Cache.PutCodes, then renamed
// from their own shard's key; Verify does not find them (unless a value's own shard happens
// to be that one).
func putPatternCodes(ctx context.Context, rdb *redis.Client, projectID, valuePattern string, codes []contract.CodeRecord) error {
	if err := cache.New(rdb).PutCodes(ctx, projectID, codes); err != nil {
		return err
	}
	pipe := rdb.Pipeline()
	for _, r := range codes {
		own := cache.ShardPrefix(cache.ShardOf(projectID, r.Code)) + "c:" + contract.RawID(projectID) + r.Code
		if to := patternCodeKey(projectID, valuePattern, r.Code); own != to {
			pipe.Rename(ctx, own, to)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("move codes to the pattern's shard: %w", err)
	}
	return nil
}
