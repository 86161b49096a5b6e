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

// redisSetup is a redis-server's configuration and the verifies run against it.
type redisSetup struct {
	name  string
	redis localenv.RedisOptions
	run   CPURun
}

// The setups the Redis CPU row reports. The script costs Redis more on a server that holds a
// project's state, beside a running relay, at a rate that leaves it idle between requests
// (loadtest/RESULTS.md, "Why FCALL costs more under make run"), so the row's figure is taken
// as a deployment runs: the service's Redis settings (AOF everysec, a password), the relay
// moving events while the verifies run, half a million other codes stored, verifies paced at
// the rate make run was measured at. The same with appendfsync always is make run's Redis; the
// bare setup (an empty server, verifies as fast as the connections go, relay afterwards) is
// what the row reported before, kept for comparison with the earlier tables.
func redisSetups(conns int) (deployed, makeRun, bare redisSetup) {
	bare = redisSetup{name: "bare", redis: localenv.RedisOptions{AOF: true},
		run: CPURun{Codes: cpuVerifies, Concurrency: conns}}
	deployed = redisSetup{name: "deployed", redis: localenv.RedisOptions{AOF: true, Password: "bench-redis-password"},
		run: CPURun{Codes: cpuVerifies, Concurrency: conns, Rate: 7500, Stored: 500_000, RelayDuring: true}}
	makeRun = deployed
	makeRun.name = "make run"
	makeRun.redis.FsyncAlways = true
	return deployed, makeRun, bare
}

// redisCPU measures Redis's CPU per verify (MeasureVerifyCPU: the replay marker and the script
// calls, and the relay's share, from INFO commandstats) on a redis-server of its own for each
// setup. Each figure is the least of cpuRounds runs (the machine is shared); the commands of
// each run go to standard error.
func (b *bench) redisCPU(ctx context.Context) error {
	deployed, makeRun, bare := redisSetups(b.conc)
	var best [3]VerifyCPU
	for round := 0; round < cpuRounds; round++ {
		for i, s := range []redisSetup{deployed, makeRun, bare} {
			v, err := measureRedisCPU(ctx, filepath.Join(b.dir, fmt.Sprintf("rediscpu-%d-%d", round, i)), s)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			fmt.Fprintf(os.Stderr, "bench: redis cpu, %s: %v\n", s.name, v)
			if round == 0 || v.PerVerify() < best[i].PerVerify() {
				best[i] = v
			}
		}
	}
	d, m, e := best[0], best[1], best[2]
	b.rows = append(b.rows, row{name: "Redis CPU µs per verify, as deployed",
		note: fmt.Sprintf("%.1f µs (commands %.1f, FCALL %.1f µs per call, + relay %.1f); redis-server CPU %.0f µs per verify with sockets and AOF; "+
			"AOF everysec, password, relay running, %d other codes stored, %.0f verifies/s; "+
			"with appendfsync always (make run): %.1f µs, redis-server %.0f µs; bare (empty server, unpaced, relay afterwards): %.1f µs, FCALL %.1f µs per call, redis-server %.0f µs; "+
			"least of %d runs of %d verifies, %d connections",
			d.PerVerify(), d.Script, d.FCALL(), d.Relay, d.Process, deployed.run.Stored, deployed.run.Rate,
			m.PerVerify(), m.Process, e.PerVerify(), e.FCALL(), e.Process, cpuRounds, cpuVerifies, b.conc)})
	return nil
}

// measureRedisCPU runs one measurement of s on a fresh redis-server in dir.
func measureRedisCPU(ctx context.Context, dir string, s redisSetup) (VerifyCPU, error) {
	r, err := localenv.StartRedis(dir, s.redis)
	if err != nil {
		return VerifyCPU{}, err
	}
	defer r.Stop(10 * time.Second)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, Password: s.redis.Password, PoolSize: s.run.Concurrency + 300})
	defer rdb.Close()
	run := s.run
	run.Relay = func(ctx context.Context) error {
		return audit.NewRelay(rdb, discard{}, audit.RelayConfig{Outboxes: cache.Outboxes(), Name: "cpu"}).Run(ctx)
	}
	return MeasureVerifyCPU(ctx, rdb, run)
}

// discard is a publisher that acknowledges every message at once: the measurement is Redis's
// share, not Kafka's.
type discard struct{}

func (discard) WriteMessages(context.Context, ...kafka.Message) error { return nil }
