package cache

import (
	"strconv"
	"time"

	"github.com/acv/acv/api/contract"
)

// BenchmarkVerify is one verify script call in the shape redis-benchmark sends it: the
// script's source, then the arguments of EVALSHA after the digest (key count, keys, argv).
// valuePattern and replayPattern hold redis-benchmark's "__rand_int__" placeholder, so every
// call names a random code and a fresh replay key of one project. It serves the benchmark's
// Redis ceiling, which must run exactly the hot path's script on exactly its keys.
func BenchmarkVerify(projectID, keyID, valuePattern, replayPattern string, now time.Time) (src string, args []string) {
	keys := []string{
		codeKey(projectID, valuePattern),
		projectKey(projectID),
		outboxKey(shardOf(projectID)),
		bucketKey(projectID, keyID),
		replayKey(projectID, keyID, replayPattern),
		idemKey(projectID, keyID, "none"),
	}
	args = append([]string{strconv.Itoa(len(keys))}, keys...)
	args = append(args, string(contract.ActionVerify), strconv.FormatInt(now.UnixMilli(), 10), contract.NewID(),
		projectID, "bench", "", "127.0.0.1", strconv.FormatInt(int64(ReplayTTL/time.Second), 10), "0", "",
		strconv.FormatInt(int64(IdempotencyTTL/time.Second), 10), "0", "0", "")
	return luaPrelude() + applySrc, args
}
