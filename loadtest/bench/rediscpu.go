package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/localenv"
)

// Each Redis CPU measurement runs cpuVerifies verifies, each of a code of its own; each figure
// is the least of cpuRounds measurements.
const (
	cpuVerifies = 100_000
	cpuRounds   = 2
)

// redisCPU measures Redis's CPU per verify (cache.MeasureVerifyCPU: the script calls and the
// relay's share of the stream commands, from INFO commandstats) before the lean script (the
// previous script by EVALSHA, the relay's XACK+XDEL) and after it (FCALL, the relay's removal
// script), each on a redis-server of its own with its append-only file, as production runs it;
// the EVALSHA of the lean script too, for the choice of FCALL. Each figure is the least of
// cpuRounds runs (the machine is shared); the commands of each run go to standard error.
func (b *bench) redisCPU(ctx context.Context) error {
	var got [3]cache.VerifyCPU
	for round := 0; round < cpuRounds; round++ {
		for i, call := range []cache.ApplyCall{cache.ApplyV1, cache.ApplyEvalSha, cache.ApplyFCall} {
			v, err := measureRedisCPU(ctx, filepath.Join(b.dir, fmt.Sprintf("rediscpu-%d-%d", round, i)), call, b.conc)
			if err != nil {
				return fmt.Errorf("%s: %w", call, err)
			}
			fmt.Fprintln(os.Stderr, "bench: redis cpu:", v)
			if round == 0 || v.PerVerify() < got[i].PerVerify() {
				got[i] = v
			}
		}
	}
	before, evalsha, after := got[0], got[1], got[2]
	b.rows = append(b.rows, row{name: "Redis CPU µs per verify: before (EVALSHA of today's script) / after",
		note: fmt.Sprintf("before %.1f µs (script %.1f + relay %.1f) / after %.1f µs (FCALL %.1f + relay %.1f); "+
			"EVALSHA of the lean script %.1f (%.1f + %.1f); redis-server CPU %.0f / %.0f µs per verify with sockets and AOF; "+
			"least of %d runs of %d verifies, %d connections",
			before.PerVerify(), before.Script, before.Relay, after.PerVerify(), after.Script, after.Relay,
			evalsha.PerVerify(), evalsha.Script, evalsha.Relay, before.Process, after.Process, cpuRounds, cpuVerifies, b.conc)})
	return nil
}

// measureRedisCPU runs one measurement on a fresh redis-server in dir.
func measureRedisCPU(ctx context.Context, dir string, call cache.ApplyCall, conc int) (cache.VerifyCPU, error) {
	r, err := localenv.StartRedis(dir, localenv.RedisOptions{AOF: true})
	if err != nil {
		return cache.VerifyCPU{}, err
	}
	defer r.Stop(10 * time.Second)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: conc + 300})
	defer rdb.Close()
	return cache.MeasureVerifyCPU(ctx, rdb, cache.CPURun{Codes: cpuVerifies, Concurrency: conc, Call: call,
		Relay: func(ctx context.Context) error {
			return audit.NewRelay(rdb, discard{}, audit.RelayConfig{Outboxes: cache.Outboxes(), Name: "cpu"}).Run(ctx)
		}})
}

// discard is a publisher that acknowledges every message at once: the measurement is Redis's
// share, not Kafka's.
type discard struct{}

func (discard) WriteMessages(context.Context, ...kafka.Message) error { return nil }
