package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/localenv"
)

// CPURun is one measurement of MeasureVerifyCPU.
type CPURun struct {
	Codes       int     // codes stored, each verified once
	Concurrency int     // verifies in flight
	Rate        float64 // verifies per second over all connections; 0: unpaced
	Stored      int     // codes stored beside the verified ones and never verified
	// RelayDuring runs the outbox relay beside the verifies, as the service runs it; it always
	// runs afterwards until the outbox is empty.
	RelayDuring bool
}

// CommandCPU is one line of INFO commandstats in one phase.
type CommandCPU struct {
	Phase  string // "verify" or "relay"
	Name   string
	Calls  int64
	Usec   int64
	Nested bool // run inside a script or a MULTI of the phase: its time is in its caller's too
}

// VerifyCPU is what Redis spent per verify, in µs.
type VerifyCPU struct {
	Verifies int
	Script   float64 // the verify phase's calls: the replay marker's SET and FCALL
	Relay    float64 // the relay's commands
	Process  float64 // redis-server's CPU time (user and system), both phases
	Batches  int64   // the relay phase's reads (LRANGE)
	Commands []CommandCPU
}

// PerVerify is the target's figure: the script and the relay's share.
func (v VerifyCPU) PerVerify() float64 { return v.Script + v.Relay }

// FCALL is the verify phase's usec per FCALL.
func (v VerifyCPU) FCALL() float64 { return v.usecPerCall("fcall") }

func (v VerifyCPU) usecPerCall(name string) float64 {
	for _, c := range v.Commands {
		if c.Phase == "verify" && c.Name == name && c.Calls > 0 {
			return float64(c.Usec) / float64(c.Calls)
		}
	}
	return 0
}

func (v VerifyCPU) String() string {
	s := fmt.Sprintf("FCALL: %.2f µs per verify = script %.2f + relay %.2f (%d verifies, %d relay reads); redis-server CPU %.2f µs per verify",
		v.PerVerify(), v.Script, v.Relay, v.Verifies, v.Batches, v.Process)
	for _, c := range v.Commands {
		s += fmt.Sprintf("\n    %-6s %-14s %9d calls %8.2f µs per verify", c.Phase, c.Name, c.Calls, float64(c.Usec)/float64(v.Verifies))
		if c.Nested {
			s += " (inside its caller)"
		}
	}
	return s
}

// Commands timed inside their caller: what the verify scripts call, and what the relay sends
// inside MULTI or its scripts. The meter's own probes are left out altogether.
var (
	// The replay marker's SET is a top-level call: the meter sends no Idempotency-Key.
	nestedInVerify = map[string]bool{"hmget": true, "hget": true, "exists": true, "get": true,
		"hset": true, "hdel": true, "del": true, "expire": true, "rpush": true}
	nestedInRelay = map[string]bool{"lindex": true, "ltrim": true, "get": true, "set": true, "del": true,
		"zadd": true, "zremrangebyscore": true, "pexpire": true, "zrange": true}
	probes = map[string]bool{"llen": true, "info": true, "config|resetstat": true, "hello": true,
		"ping": true, "client|setinfo": true}
)

// MeasureVerifyCPU starts a redis-server with opts in dir and measures what it spends on each
// verify through cache.Verify (the replay marker's SET NX and the FCALL) and the relay's moving
// its event, from INFO commandstats (top-level commands; nested ones are listed, not added) and
// redis-server's own CPU time, which also holds the sockets and the AOF.
func MeasureVerifyCPU(ctx context.Context, dir string, opts localenv.RedisOptions, run CPURun) (VerifyCPU, error) {
	r, err := localenv.StartRedis(dir, opts)
	if err != nil {
		return VerifyCPU{}, err
	}
	defer r.Stop(10 * time.Second)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, Password: opts.Password, PoolSize: run.Concurrency + 300})
	defer rdb.Close()
	c := cache.New(rdb)
	pid := contract.NewID()
	if err := c.Preload(ctx); err != nil {
		return VerifyCPU{}, err
	}
	if err := c.PublishProject(ctx, contract.Project{ID: pid, Status: true}, 0); err != nil {
		return VerifyCPU{}, err
	}
	codes := make([]contract.CodeRecord, run.Codes+run.Stored)
	for i := range codes {
		codes[i] = contract.CodeRecord{ID: contract.NewID(), ProjectID: pid, Code: fmt.Sprintf("CPU-%09d", i)}
	}
	for chunk := range slices.Chunk(codes, 10_000) {
		if err := c.PutCodes(ctx, pid, chunk); err != nil {
			return VerifyCPU{}, err
		}
	}
	codes = codes[:run.Codes]

	// phase runs fn between a reset of the command statistics and their reading.
	phase := func(name string, relay bool, fn func(context.Context) error) ([]CommandCPU, error) {
		err := rdb.ConfigResetStat(ctx).Err()
		if err == nil && relay {
			err = whileRelaying(ctx, rdb, fn)
		} else if err == nil {
			err = fn(ctx)
		}
		if err != nil {
			return nil, err
		}
		return commandStats(ctx, rdb, name)
	}
	cpu0 := pidCPU(r.Pid())
	verifyStats, err := phase("verify", run.RelayDuring, func(ctx context.Context) error {
		return verifyAll(ctx, c, pid, codes, run.Concurrency, run.Rate)
	})
	if err != nil {
		return VerifyCPU{}, err
	}
	relayStats, err := phase("relay", true, func(ctx context.Context) error {
		return localenv.Poll(ctx, 5*time.Minute, 20*time.Millisecond, func() error {
			n, err := outboxLen(ctx, rdb)
			if err == nil && n > 0 {
				err = fmt.Errorf("outbox still holds %d entries", n)
			}
			return err
		})
	})
	if err != nil {
		return VerifyCPU{}, err
	}

	n := float64(run.Codes)
	out := VerifyCPU{Verifies: run.Codes, Process: (pidCPU(r.Pid()) - cpu0) * 1e6 / n}
	if run.RelayDuring {
		verifyStats = splitRelayCalls(verifyStats, relayStats, int64(run.Codes))
	}
	for _, s := range append(verifyStats, relayStats...) {
		if probes[s.Name] {
			continue
		}
		if s.Phase == "verify" {
			// The relay may have run in this phase too; the replay marker's SET is top-level.
			s.Nested = nestedInVerify[s.Name] || (nestedInRelay[s.Name] && s.Name != "set")
		} else {
			s.Nested = s.Nested || nestedInRelay[s.Name]
		}
		out.Commands = append(out.Commands, s)
		switch {
		case s.Nested:
		case s.Phase == "verify" && (s.Name == "fcall" || s.Name == "set"):
			out.Script += float64(s.Usec) / n
		default:
			out.Relay += float64(s.Usec) / n
			if s.Name == "lrange" {
				out.Batches += s.Calls
			}
		}
	}
	return out, nil
}

// splitRelayCalls separates, in the verify phase's stats, the relay's FCALLs and SETs from the
// verifies' own (one of each a verify): commandstats counts by command name alone. The relay's
// part is priced at what a call cost in the relay phase, where the relay ran alone.
func splitRelayCalls(verify, relay []CommandCPU, verifies int64) []CommandCPU {
	perCall := map[string]float64{}
	for _, s := range relay {
		if s.Calls > 0 {
			perCall[s.Name] = float64(s.Usec) / float64(s.Calls)
		}
	}
	var out []CommandCPU
	for _, s := range verify {
		if (s.Name == "fcall" || s.Name == "set") && s.Calls > verifies {
			extra := s.Calls - verifies
			usec := min(s.Usec, int64(float64(extra)*perCall[s.Name]))
			out = append(out, CommandCPU{Phase: "verify", Name: s.Name, Calls: verifies, Usec: s.Usec - usec},
				CommandCPU{Phase: "relay", Name: s.Name, Calls: extra, Usec: usec, Nested: nestedInRelay[s.Name]})
			continue
		}
		out = append(out, s)
	}
	return out
}

// verifyAll verifies every code once, concurrency at a time, each with a replay key of its own
// and no Idempotency-Key; every one must succeed. At a rate, verify i starts no sooner than
// i/rate seconds after the first.
func verifyAll(ctx context.Context, c *cache.Cache, pid string, codes []contract.CodeRecord, concurrency int, rate float64) error {
	g, ctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	start := time.Now()
	for range concurrency {
		g.Go(func() error {
			for i := int(next.Add(1)) - 1; i < len(codes); i = int(next.Add(1)) - 1 {
				if rate > 0 {
					time.Sleep(time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
				}
				res, err := c.Verify(ctx, contract.Operation{ProjectID: pid, KeyID: "cpu", Code: codes[i].Code,
					IP: "127.0.0.1", ReplayKey: "n:" + contract.NewID(), EventID: contract.NewID(), Now: time.Now()})
				if err == nil && !res.Outcome.Success() {
					err = fmt.Errorf("verify %s: %s", codes[i].Code, res.Outcome.Error)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// whileRelaying runs fn with the outbox relay beside it (publishing to a discarding writer: the
// measurement is Redis's share, not Kafka's); fn's context ends if the relay does, an error.
func whileRelaying(ctx context.Context, rdb *redis.Client, fn func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		err := audit.NewRelay(rdb, discard{}, audit.RelayConfig{Outboxes: cache.Outboxes(), Name: "cpu"}).Run(ctx)
		cancel(fmt.Errorf("relay ended early: %v", err))
		close(done)
	}()
	err := fn(ctx)
	cancel(nil)
	<-done
	if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// outboxLen is the entries of every outbox (LLEN alone: a probe the meter leaves out).
func outboxLen(ctx context.Context, rdb *redis.Client) (int64, error) {
	cmds := make([]*redis.IntCmd, len(cache.Outboxes()))
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range cache.Outboxes() {
			cmds[i] = p.LLen(ctx, key)
		}
		return nil
	})
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, err
}

func info(ctx context.Context, rdb redis.UniversalClient, section string) (map[string]string, error) {
	m, err := rdb.InfoMap(ctx, section).Result()
	if err != nil {
		return nil, fmt.Errorf("info %s: %w", section, err)
	}
	out := map[string]string{}
	for _, kv := range m {
		maps.Copy(out, kv)
	}
	return out, nil
}

// commandStats reads INFO commandstats, costliest first.
func commandStats(ctx context.Context, rdb redis.UniversalClient, phase string) ([]CommandCPU, error) {
	stats, err := info(ctx, rdb, "commandstats")
	var out []CommandCPU
	for k, line := range stats {
		if name, ok := strings.CutPrefix(k, "cmdstat_"); ok {
			s := CommandCPU{Phase: phase, Name: name}
			if _, err := fmt.Sscanf(line, "calls=%d,usec=%d", &s.Calls, &s.Usec); err != nil {
				return nil, fmt.Errorf("commandstats %s: %w", line, err)
			}
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b CommandCPU) int { return cmp.Or(cmp.Compare(b.Usec, a.Usec), strings.Compare(a.Name, b.Name)) })
	return out, err
}

// Each Redis CPU figure is the least of cpuRounds measurements of cpuVerifies verifies.
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

func (b *bench) measure(ctx context.Context, dir string, s redisSetup) (VerifyCPU, error) {
	v, err := MeasureVerifyCPU(ctx, filepath.Join(b.dir, dir), s.redis, s.run)
	if err != nil {
		err = fmt.Errorf("%s: %w", s.name, err)
	}
	return v, err
}

// redisSetups are the setups the Redis CPU row reports: the script costs Redis more as
// deployed (loadtest/RESULTS.md, "Why FCALL costs more under make run"); make run's Redis adds
// appendfsync always; bare is the earlier tables' setup.
func redisSetups(conns int) (deployed, makeRun, bare redisSetup) {
	bare = redisSetup{"bare", localenv.RedisOptions{AOF: true}, CPURun{Codes: cpuVerifies, Concurrency: conns}}
	deployed = redisSetup{"deployed", localenv.RedisOptions{AOF: true, Password: "bench-redis-password"},
		CPURun{Codes: cpuVerifies, Concurrency: conns, Rate: 7500, Stored: 500_000, RelayDuring: true}}
	makeRun = deployed
	makeRun.name = "make run"
	makeRun.redis.FsyncAlways = true
	return deployed, makeRun, bare
}

// redisCPU measures Redis's CPU per verify on a redis-server of its own for each setup, the
// least of cpuRounds runs (the machine is shared); each run's commands go to standard error.
func (b *bench) redisCPU(ctx context.Context) error {
	deployed, makeRun, bare := redisSetups(b.conc)
	var best [3]VerifyCPU
	for round := range cpuRounds {
		for i, s := range []redisSetup{deployed, makeRun, bare} {
			v, err := b.measure(ctx, fmt.Sprintf("rediscpu-%d-%d", round, i), s)
			if err != nil {
				return err
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

// fcallFactors (-only factors) measures what makes the script cost Redis more: the bare setup
// with one deployment factor changed at a time, then all of them, each beside a run of the bare
// setup in the same round (only the ratio holds on a shared machine).
func (b *bench) fcallFactors(ctx context.Context) error {
	_, makeRun, ref := redisSetups(b.conc)
	ref.run.Codes = 30_000
	with := func(name string, change func(*redisSetup)) redisSetup {
		s := ref
		s.name = name
		change(&s)
		return s
	}
	setups := []redisSetup{
		with("appendfsync always", func(s *redisSetup) { s.redis.FsyncAlways = true }),
		with("requirepass", func(s *redisSetup) { s.redis.Password = makeRun.redis.Password }),
		with("relay running with the verifies", func(s *redisSetup) { s.run.RelayDuring = true }),
		with(fmt.Sprintf("paced at %.0f verifies/s", makeRun.run.Rate), func(s *redisSetup) { s.run.Rate = makeRun.run.Rate }),
		with(fmt.Sprintf("%d other codes stored", makeRun.run.Stored), func(s *redisSetup) { s.run.Stored = makeRun.run.Stored }),
		with("all of them (make run)", func(s *redisSetup) { s.redis, s.run = makeRun.redis, makeRun.run; s.run.Codes = ref.run.Codes }),
	}
	for i, s := range setups {
		for round := range 2 {
			for j, run := range []redisSetup{ref, s} {
				v, err := b.measure(ctx, fmt.Sprintf("factor-%d-%d-%d", i, round, j), run)
				if err != nil {
					return err
				}
				fmt.Printf("%d.%d  %-36s FCALL %5.1f µs/call  SET %4.1f µs/call  redis-server %5.1f µs/verify  relay %4.1f µs/verify\n",
					i, round, run.name, v.FCALL(), v.usecPerCall("set"), v.Process, v.Relay)
			}
		}
	}
	return nil
}

// discard is a publisher that acknowledges every message at once.
type discard struct{}

func (discard) WriteMessages(context.Context, ...kafka.Message) error { return nil }
