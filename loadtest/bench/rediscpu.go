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

// redisCPU measures Redis's CPU per verify (MeasureVerifyCPU: the replay marker and the script
// calls, and the relay's share, from INFO commandstats) on a redis-server of its own with its
// append-only file, as production runs it. The figure is the least of cpuRounds runs (the
// machine is shared); the commands of each run go to standard error.
func (b *bench) redisCPU(ctx context.Context) error {
	var best VerifyCPU
	for round := 0; round < cpuRounds; round++ {
		v, err := measureRedisCPU(ctx, filepath.Join(b.dir, fmt.Sprintf("rediscpu-%d", round)), b.conc)
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "bench: redis cpu:", v)
		if round == 0 || v.PerVerify() < best.PerVerify() {
			best = v
		}
	}
	b.rows = append(b.rows, row{name: "Redis CPU µs per verify",
		note: fmt.Sprintf("%.1f µs (commands %.1f + relay %.1f); redis-server CPU %.0f µs per verify with sockets and AOF; "+
			"least of %d runs of %d verifies, %d connections",
			best.PerVerify(), best.Script, best.Relay, best.Process, cpuRounds, cpuVerifies, b.conc)})
	return nil
}

// measureRedisCPU runs one measurement on a fresh redis-server in dir.
func measureRedisCPU(ctx context.Context, dir string, conc int) (VerifyCPU, error) {
	r, err := localenv.StartRedis(dir, localenv.RedisOptions{AOF: true})
	if err != nil {
		return VerifyCPU{}, err
	}
	defer r.Stop(10 * time.Second)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: conc + 300})
	defer rdb.Close()
	return MeasureVerifyCPU(ctx, rdb, CPURun{Codes: cpuVerifies, Concurrency: conc,
		Relay: func(ctx context.Context) error {
			return audit.NewRelay(rdb, discard{}, audit.RelayConfig{Outboxes: cache.Outboxes(), Name: "cpu"}).Run(ctx)
		}})
}

// discard is a publisher that acknowledges every message at once: the measurement is Redis's
// share, not Kafka's.
type discard struct{}

func (discard) WriteMessages(context.Context, ...kafka.Message) error { return nil }
