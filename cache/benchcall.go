package cache

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
)

// BenchmarkVerify is one verify script call in the shape redis-benchmark sends it: the
// script's source, then the arguments of EVALSHA after the digest (key count, keys, argv).
// valuePattern holds redis-benchmark's "__rand_int__" placeholder, so every call names a
// random code of one project. The replay marker is not the script's: Verify spends it before,
// with one SET NX in the marker's own slot. It serves the benchmark's
// Redis ceiling, which must run exactly the hot path's script on exactly its keys (of an
// unlimited key: no bucket), though by EVALSHA where Verify sends FCALL of the same script
// (some 3% dearer for Redis). redis-benchmark substitutes the placeholder after the keys are
// named, so every call lands in the shard of valuePattern itself: store the codes with
// PutBenchmarkCodes, not PutCodes. redis-benchmark's arguments cannot hold a NUL byte: the
// event head holds none but in its raw ids, so the event id is drawn without one, and
// projectID must be an id whose 16 raw bytes hold none: BenchmarkVerify panics on another.
func BenchmarkVerify(projectID, valuePattern string, now time.Time) (src string, args []string) {
	s := ShardOf(projectID, valuePattern)
	keys := []string{
		codeKeyIn(s, projectID, valuePattern),
		projectKey(s, projectID),
		outboxKey(s),
	}
	eventID := contract.NewID()
	for strings.Contains(rawID(eventID), "\x00") {
		eventID = contract.NewID()
	}
	head, err := contract.AppendEventHead(nil, contract.Operation{Action: contract.ActionVerify, ProjectID: projectID,
		EventID: eventID, By: "bench", IP: "127.0.0.1", Now: now})
	if err == nil && strings.Contains(string(head), "\x00") {
		err = fmt.Errorf("project id %s holds a NUL byte", projectID)
	}
	if err != nil {
		panic("benchmark verify: " + err.Error())
	}
	args = append([]string{strconv.Itoa(len(keys))}, keys...)
	args = append(args, string(head))
	return luaPrelude() + applySrc, args
}

// PutBenchmarkCodes stores codes where BenchmarkVerify's calls for valuePattern look for them:
// all in the shard of valuePattern, under the key each value would have there. Codes stored
// this way are found by the benchmark's calls only, not by Verify (unless a value's own shard
// happens to be that one).
func (c *Cache) PutBenchmarkCodes(ctx context.Context, projectID, valuePattern string, codes []contract.CodeRecord) error {
	s := ShardOf(projectID, valuePattern)
	if err := putCodeScript.Load(ctx, c.rdb).Err(); err != nil {
		return fmt.Errorf("load putcode script: %w", translate(err))
	}
	pipe := c.rdb.Pipeline()
	for _, r := range codes {
		if err := checkCodeID(r); err != nil {
			return err
		}
		putCodeScript.EvalSha(ctx, pipe, []string{codeKeyIn(s, projectID, r.Code)}, putCodeArgs(r)...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("put benchmark codes: %w", translate(err))
	}
	return nil
}
