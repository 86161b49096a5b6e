package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/redis/go-redis/v9"
)

// CPURun is one measurement.
type CPURun struct {
	Codes       int // codes stored, each verified once; default 100,000
	Concurrency int // verifies in flight; default 16
	// Rate paces the verifies, in verifies per second over all connections; 0 sends each as
	// soon as its connection is free.
	Rate float64
	// Stored is the number of codes stored beside the verified ones and never verified: the
	// project's state.
	Stored int
	// Relay runs the outbox relay (audit.Relay over cache.Outboxes) until its context ends.
	// MeasureVerifyCPU starts it after the verifies, or with them when RelayDuring is set (as
	// the service runs it), and ends it once the outbox is empty.
	Relay       func(ctx context.Context) error
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

// VerifyCPU is what Redis spent per verify.
type VerifyCPU struct {
	Verifies int
	Script   float64 // µs per verify in the verify phase's calls: the replay marker's SET and FCALL
	Relay    float64 // µs per verify in the relay's commands
	Process  float64 // µs per verify of redis-server's CPU time (user and system), both phases
	Batches  int64   // the relay phase's reads (LRANGE)
	Commands []CommandCPU
}

// PerVerify is the target's figure: the script and the relay's share.
func (v VerifyCPU) PerVerify() float64 { return v.Script + v.Relay }

// FCALL is the verify phase's usec per FCALL (INFO commandstats usec_per_call).
func (v VerifyCPU) FCALL() float64 { return v.usecPerCall("fcall") }

func (v VerifyCPU) usecPerCall(name string) float64 {
	for _, c := range v.Commands {
		if c.Phase == "verify" && c.Name == name && c.Calls > 0 {
			return float64(c.Usec) / float64(c.Calls)
		}
	}
	return 0
}

// String is the measurement with its commands, one a line.
func (v VerifyCPU) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "FCALL: %.2f µs per verify = script %.2f + relay %.2f (%d verifies, %d relay reads); redis-server CPU %.2f µs per verify",
		v.PerVerify(), v.Script, v.Relay, v.Verifies, v.Batches, v.Process)
	for _, c := range v.Commands {
		nested := ""
		if c.Nested {
			nested = " (inside its caller)"
		}
		fmt.Fprintf(&b, "\n    %-6s %-14s %9d calls %8.2f µs per verify%s", c.Phase, c.Name, c.Calls,
			float64(c.Usec)/float64(v.Verifies), nested)
	}
	return b.String()
}

// Nested commands: what the hot-path scripts call (timed inside FCALL), and what the relay
// sends inside MULTI (timed inside EXEC) or its scripts (timed inside FCALL). MeasureVerifyCPU's own probes (XLEN, INFO) are left out altogether.
var (
	// The replay marker's SET is a call of its own, not the script's: the meter sends no
	// Idempotency-Key, so apply.lua sets nothing with SET.
	nestedInVerify = map[string]bool{"hmget": true, "hget": true, "exists": true, "get": true,
		"hset": true, "hdel": true, "del": true, "expire": true, "rpush": true}
	nestedInRelay = map[string]bool{"lindex": true, "ltrim": true, "get": true, "set": true, "del": true,
		"zadd": true, "zremrangebyscore": true, "pexpire": true, "zrange": true}
	probes = map[string]bool{"xlen": true, "llen": true, "info": true, "config|resetstat": true, "hello": true,
		"ping": true, "client|setinfo": true}
)

// MeasureVerifyCPU measures what Redis spends on each verify, the figure the scale-out target
// names ("Redis CPU per verify"): it stores codes, runs verifies through cache.Verify (the
// calls the API makes: the replay marker's SET NX and the script's FCALL), with the outbox
// relay running beside them or not, then lets the relay move the events left, and reads INFO
// commandstats after each of the two phases. With the relay running beside the verifies, its
// commands in the verify phase count as the relay's share. Per verify it reports the script calls' time and the relay's
// commands' time, each the sum of the usec of its top-level commands (a command run inside a
// script or a MULTI is timed inside its caller too, so it is listed, not added), and Redis's
// own CPU time (INFO cpu), which also holds reading and writing the sockets and the
// append-only file. rdb is a Redis of the benchmark's own: it is flushed first.
func MeasureVerifyCPU(ctx context.Context, rdb *redis.Client, run CPURun) (VerifyCPU, error) {
	if run.Codes <= 0 {
		run.Codes = 100_000
	}
	if run.Concurrency <= 0 {
		run.Concurrency = 16
	}
	if run.Relay == nil {
		return VerifyCPU{}, errors.New("measure verify cpu: no relay")
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		return VerifyCPU{}, fmt.Errorf("measure verify cpu: flush: %w", err)
	}
	c := cache.New(rdb)
	if err := c.Preload(ctx); err != nil {
		return VerifyCPU{}, err
	}
	pid := contract.NewID()
	if err := c.PublishProject(ctx, contract.Project{ID: pid, Status: true}, 0); err != nil {
		return VerifyCPU{}, err
	}
	codes := make([]contract.CodeRecord, run.Codes+run.Stored)
	for i := range codes {
		codes[i] = contract.CodeRecord{ID: contract.NewID(), ProjectID: pid, Code: fmt.Sprintf("CPU-%09d", i)}
	}
	for i := 0; i < len(codes); i += 10_000 {
		if err := c.PutCodes(ctx, pid, codes[i:min(i+10_000, len(codes))]); err != nil {
			return VerifyCPU{}, err
		}
	}
	codes = codes[:run.Codes]

	cpu0, err := redisCPUTime(ctx, rdb)
	if err != nil {
		return VerifyCPU{}, err
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		return VerifyCPU{}, err
	}
	var stopRelay func() error
	if run.RelayDuring {
		stopRelay = startRelay(ctx, run.Relay)
	}
	verifyErr := verifyAll(ctx, c, pid, codes, run.Concurrency, run.Rate)
	if stopRelay != nil {
		if err := stopRelay(); err != nil && verifyErr == nil {
			verifyErr = fmt.Errorf("relay stopped while the verifies ran: %w", err)
		}
	}
	if verifyErr != nil {
		return VerifyCPU{}, verifyErr
	}
	verify, err := commandStats(ctx, rdb, "verify")
	if err != nil {
		return VerifyCPU{}, err
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		return VerifyCPU{}, err
	}
	if err := relayUntilEmpty(ctx, rdb, run.Relay); err != nil {
		return VerifyCPU{}, err
	}
	relay, err := commandStats(ctx, rdb, "relay")
	if err != nil {
		return VerifyCPU{}, err
	}
	cpu1, err := redisCPUTime(ctx, rdb)
	if err != nil {
		return VerifyCPU{}, err
	}

	n := float64(run.Codes)
	out := VerifyCPU{Verifies: run.Codes, Process: (cpu1 - cpu0).Seconds() * 1e6 / n}
	if run.RelayDuring {
		verify = splitRelayCalls(verify, relay, int64(run.Codes))
	}
	for _, s := range append(verify, relay...) {
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
// verifies' own (one FCALL and one replay marker SET each): the relay's scripts are functions
// too, and INFO commandstats counts by command name alone. The relay's part of each is priced
// at what a call of it cost in the relay phase, where the relay ran alone.
func splitRelayCalls(verify, relay []CommandCPU, verifies int64) []CommandCPU {
	perCall := map[string]float64{}
	for _, s := range relay {
		if s.Calls > 0 {
			perCall[s.Name] = float64(s.Usec) / float64(s.Calls)
		}
	}
	out := make([]CommandCPU, 0, len(verify)+2)
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
// and no Idempotency-Key (as the load generator sends them); every one must succeed.
// At a rate above zero, the i-th verify starts no sooner than i/rate seconds after the first.
func verifyAll(ctx context.Context, c *cache.Cache, pid string, codes []contract.CodeRecord, concurrency int, rate float64) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, concurrency)
	start := time.Now()
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(codes) || ctx.Err() != nil {
					return
				}
				if rate > 0 {
					time.Sleep(time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
				}
				res, err := c.Verify(ctx, contract.Operation{ProjectID: pid, KeyID: "cpu", Code: codes[i].Code,
					IP: "127.0.0.1", ReplayKey: "n:" + contract.NewID(), EventID: contract.NewID(), Now: time.Now()})
				if err == nil && !res.Outcome.Success() {
					err = fmt.Errorf("verify %s: %s", codes[i].Code, res.Outcome.Error)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// startRelay runs relay until the returned function is called, which waits for it to end.
func startRelay(ctx context.Context, relay func(context.Context) error) (stop func() error) {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay(rctx) }()
	return func() error {
		select {
		case err := <-done:
			cancel()
			return fmt.Errorf("relay ended early: %v", err)
		default:
		}
		cancel()
		<-done
		return nil
	}
}

// relayUntilEmpty runs relay until every outbox is empty.
func relayUntilEmpty(ctx context.Context, rdb *redis.Client, relay func(context.Context) error) error {
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- relay(rctx) }()
	defer func() {
		stop()
		<-done
	}()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("relay stopped before the outbox was empty: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		n, err := outboxLen(ctx, rdb)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("outbox still holds %d entries", n)
		}
	}
}

func outboxLen(ctx context.Context, rdb *redis.Client) (int64, error) {
	pipe := rdb.Pipeline()
	var cmds []*redis.IntCmd
	for _, key := range cache.Outboxes() {
		cmds = append(cmds, pipe.LLen(ctx, key))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("outbox length: %w", err)
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

// commandStats reads INFO commandstats.
func commandStats(ctx context.Context, rdb *redis.Client, phase string) ([]CommandCPU, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("info commandstats: %w", err)
	}
	var out []CommandCPU
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		s := CommandCPU{Phase: phase, Name: strings.TrimPrefix(name, "cmdstat_")}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				s.Calls, err = strconv.ParseInt(v, 10, 64)
			case "usec":
				s.Usec, err = strconv.ParseInt(v, 10, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("commandstats line %q: %w", line, err)
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Usec > out[j].Usec })
	return out, nil
}

// redisCPUTime is redis-server's CPU time so far (INFO cpu: used_cpu_sys + used_cpu_user).
func redisCPUTime(ctx context.Context, rdb *redis.Client) (time.Duration, error) {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("info cpu: %w", err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("info cpu %s: %w", k, err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second)), nil
}
