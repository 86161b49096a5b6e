package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/loadtest/loadgen"
)

// proc is an acv process under test.
type proc struct {
	cmd *exec.Cmd
	// base is the API's address (empty without the api role); debug serves /metrics.
	base, debug string
}

// startACV starts `acv serve` with roles against the run's single Redis.
func (b *bench) startACV(ctx context.Context, roles string) (*proc, error) {
	return b.startACVOn(ctx, roles, b.cfg.RedisURL)
}

// startACVOn starts `acv serve` with roles against the Redis (or Redis Cluster) at redisURL,
// and returns once it answers: the API on /readyz, a pipeline-only process on its debug
// address.
func (b *bench) startACVOn(ctx context.Context, roles, redisURL string) (*proc, error) {
	port, err := localenv.FreePort()
	if err != nil {
		return nil, err
	}
	dport, err := localenv.FreePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var brokers string
	if b.kafka != nil {
		brokers = strings.Join(b.kafka.Brokers, ",")
	}
	name := strings.ReplaceAll(roles, ",", "-")
	if redisURL != b.cfg.RedisURL {
		name += "-cluster"
	}
	cmd := exec.Command(b.acv, "serve")
	cmd.Env = append(os.Environ(),
		"ACV_HTTP_ADDR="+addr, "ACV_DEBUG_ADDR="+fmt.Sprintf("127.0.0.1:%d", dport), "ACV_ADMIN_ADDR=",
		"ACV_REDIS_URL="+redisURL, "ACV_DATABASE_URL="+b.cfg.DatabaseURL,
		"KAFKA_BROKERS="+brokers, "ACV_ROLES="+roles,
		"ACV_MASTER_KEY=", "ACV_MASTER_KEY_FILE="+filepath.Join(b.dir, "master.key"),
		"ACV_INSTANCE=bench-"+name)
	// The service logs as deployed (one access line per request, level info), to a file.
	logf, err := os.Create(filepath.Join(b.dir, "acv-"+name+".log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", b.acv, err)
	}
	p := &proc{cmd: cmd, debug: fmt.Sprintf("http://127.0.0.1:%d", dport)}
	ready := p.debug + "/readyz"
	if strings.Contains(roles, "api") {
		p.base = "http://" + addr
		ready = p.base + "/readyz"
	}
	if err := waitHTTP(ctx, ready, "GET"); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// cpu is the process's user+system CPU seconds so far.
func (p *proc) cpu() float64 { return pidCPU(p.cmd.Process.Pid) }

// machineBusy is the CPU seconds the whole machine spent busy so far (all cores).
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])[1:]
	var busy float64
	for i, v := range f {
		n, _ := strconv.ParseFloat(v, 64)
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy / 100
}

// peakRSS is the process's high-water resident set, in MiB.
func (p *proc) peakRSS() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			kb, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// hotPath measures signed verify with the audit pipeline paused: the API alone, its events
// queueing in the Redis outbox.
func (b *bench) hotPath(ctx context.Context) error {
	p, err := b.startACV(ctx, "api")
	if err != nil {
		return err
	}
	defer p.stop()
	m := meter{partAPI: p.cpu, partRedis: func() float64 { return pidCPU(b.redis.Pid()) }, partLoadgen: selfCPU}
	cpu0, busy0 := m.sample(), machineBusy()
	prof := b.profile(ctx, p, "api-hot")
	rep := b.load(ctx, p.base, 0, len(b.pool))
	cpu, busy := m.sample().since(cpu0), machineBusy()-busy0
	prof()
	b.hot = rep
	b.costs = append(b.costs, newCostRow(costHot, rep, cpu, busy, "events wait in the outbox; the pipeline's parts are not running"))
	share := func(sec float64) float64 { return 100 * sec / (rep.Seconds * float64(numCPU())) }
	b.rows = append(b.rows, row{name: "acv signed verify, hot path only (relay paused)", rps: rep.RPS, p50: rep.P50Ms, p99: rep.P99Ms,
		errors: rep.Errors, genCPU: genShare(rep),
		note: fmt.Sprintf("%d successes; CPU of the machine: acv %.0f%%, redis %.0f%%, all %.0f%%; acv peak RSS %.0f MiB", rep.Successes,
			share(cpu[partAPI]), share(cpu[partRedis]), share(busy), p.peakRSS())})
	half := rep.RPS / 2
	hr := b.load(ctx, p.base, half, len(b.pool))
	b.rows = append(b.rows, row{name: fmt.Sprintf("acv signed verify at half the hot-path max (%.0f req/s target), relay paused", half), rps: hr.RPS,
		p50: hr.P50Ms, p99: hr.P99Ms, errors: hr.Errors, genCPU: genShare(hr), note: "the API and Redis alone"})
	b.halfHot = hr
	return nil
}

// sustained measures verify with the pipeline running, at the highest rate at which the
// events not yet in Postgres (outbox plus consumer lag) stay under one second's worth. The API,
// the relay and the consumer run as three `acv serve` processes (ACV_ROLES=api, relay,
// consumer), so each one's CPU is read apart. Each attempt's CPU window runs from a drained
// pipeline to a drained pipeline: every process's work for exactly the verifies of the
// attempt, the log rows committed in Postgres included.
func (b *bench) sustained(ctx context.Context) error {
	var procs []*proc
	defer func() {
		for _, p := range procs { // the API first, as a deployment drains it first
			p.stop()
		}
	}()
	for _, roles := range []string{"api", "consumer"} {
		p, err := b.startACV(ctx, roles)
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	api, consumer := procs[0], procs[1]
	var relay *proc
	m := meter{
		partAPI: api.cpu, partConsumer: consumer.cpu,
		partRelay: func() float64 {
			if relay == nil {
				return 0
			}
			return relay.cpu()
		},
		partRedis:     func() float64 { return pidCPU(b.redis.Pid()) },
		partBroker:    b.brokerCPU,
		partBrokerJIT: b.brokerJIT,
		partPostgres:  func() float64 { return pgServerCPU(b.pg.Pid()) },
		partLoadgen:   selfCPU,
	}

	// The earlier phases left their events in the outbox. The relay starts only now, so the
	// pipeline's cost per event with full batches is measured on that backlog (which also
	// warms the broker's JIT): from the relay's start until every event is in Postgres.
	log0, err := b.logStats(ctx)
	if err != nil {
		return err
	}
	cons0 := scrape(consumer.debug)
	cpu0, busy0, t0 := m.sample(), machineBusy(), time.Now()
	if relay, err = b.startACV(ctx, "relay"); err != nil {
		return err
	}
	procs = append(procs, relay)
	b.relayDebug = relay.debug
	defer func() { b.relayDebug = "" }()
	if err := b.waitDrained(ctx, 5*time.Minute); err != nil {
		return err
	}
	cpu, busy, drained := m.sample().since(cpu0), machineBusy()-busy0, time.Since(t0).Seconds()
	log1, err := b.logStats(ctx)
	if err != nil {
		return err
	}
	relay1, cons1 := scrape(relay.debug), scrape(consumer.debug)
	if events := log1.rows - log0.rows; events > 0 {
		delete(cpu, partAPI) // idle: no verify is served while the backlog drains
		delete(cpu, partLoadgen)
		b.storage.backlogRelayBatch = ratioOf(relay1, map[string]float64{}, "acv_relay_batch_size_sum", "acv_relay_batch_size_count")
		b.storage.backlogConsumerBatch = ratioOf(cons1, cons0, "acv_consumer_events_written_total", "acv_consumer_batch_write_duration_seconds_count")
		b.storage.backlogWAL = float64(log1.walLSN-log0.walLSN) / float64(events)
		b.storage.backlogTx = 1e3 * ratioOf(cons1, cons0, "acv_consumer_batch_write_duration_seconds_sum", "acv_consumer_batch_write_duration_seconds_count")
		b.costs = append(b.costs, costRow{name: costBacklog, verifies: events, rps: float64(events) / drained, cpu: cpu, machine: busy,
			note: fmt.Sprintf("per log row written, in %.1f s; relay batch %.0f, consumer batch %.0f; the broker's JIT warms up here",
				drained, b.storage.backlogRelayBatch, b.storage.backlogConsumerBatch)})
	}
	fmt.Fprintf(os.Stderr, "bench: the pipeline drained the earlier phases' %d events in %.1f s\n", log1.rows-log0.rows, drained)

	// What the parts spend with nothing to do: the relay's polls of 256 outboxes (one every 100 ms while they stay empty), the
	// consumer's fetches, the broker's housekeeping. Per verify it weighs less the higher the
	// rate.
	idle0 := m.sample()
	time.Sleep(idleWindow)
	b.idle = m.sample().since(idle0)

	// Each attempt is a cost row of its own: at these rates the pipeline's fixed costs (polls,
	// fetches) weigh on the per-verify figures, which the attempts at other rates show. When no
	// attempt keeps the lag under a second, the one with the smallest lag is reported as such.
	rate := 0.0 // first try: as fast as the load generator goes
	var kept loadgen.Report
	keptLag, keptCost := -1.0, -1
	for attempt := 0; attempt < 4; attempt++ {
		log0, err := b.logStats(ctx)
		if err != nil {
			return err
		}
		relay0, cons0 := scrape(relay.debug), scrape(consumer.debug)
		cpu0, busy0, w0 := m.sample(), machineBusy(), time.Now()
		mon := b.monitor(ctx)
		var profiled []func()
		if attempt == 0 { // the first attempt runs as fast as it goes: profile the three processes
			for _, p := range []struct {
				proc *proc
				name string
			}{{api, "api-sustained"}, {relay, "relay-sustained"}, {consumer, "consumer-sustained"}} {
				profiled = append(profiled, b.profile(ctx, p.proc, p.name))
			}
		}
		rep := b.load(ctx, api.base, rate, len(b.pool))
		maxPending := mon()
		for _, wait := range profiled {
			wait()
		}
		lagSec := float64(maxPending) / rep.RPS
		if err := b.waitDrained(ctx, 5*time.Minute); err != nil {
			return err
		}
		cpu, busy, window := m.sample().since(cpu0), machineBusy()-busy0, time.Since(w0).Seconds()
		relay1, cons1 := scrape(relay.debug), scrape(consumer.debug)
		log1, err := b.logStats(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: sustained at %.0f req/s: at most %d events not yet in Postgres (%.2f s); CPU s: %v\n",
			rep.RPS, maxPending, lagSec, cpu)
		b.costs = append(b.costs, newCostRow(fmt.Sprintf("sustained attempt at %.0f req/s (not kept)", rep.RPS), rep, cpu, busy,
			fmt.Sprintf("lag at most %.2f s of events; CPU window %.1f s of load + %.1f s until drained", lagSec, rep.Seconds, window-rep.Seconds)))
		if keptLag < 0 || lagSec < 1 || lagSec < keptLag {
			kept, keptLag, keptCost = rep, lagSec, len(b.costs)-1
			b.storage.walBytes, b.storage.walRows = log1.walLSN-log0.walLSN, log1.rows-log0.rows
			b.storage.relayBatch = ratioOf(relay1, relay0, "acv_relay_batch_size_sum", "acv_relay_batch_size_count")
			b.storage.consumerBatch = ratioOf(cons1, cons0, "acv_consumer_events_written_total", "acv_consumer_batch_write_duration_seconds_count")
			b.storage.consumerTxMs = 1e3 * ratioOf(cons1, cons0, "acv_consumer_batch_write_duration_seconds_sum", "acv_consumer_batch_write_duration_seconds_count")
		}
		if lagSec < 1 {
			break
		}
		// A tenth lower each time (0.9, 0.81, 0.73 of the first attempt's rate): a coarser
		// step would report a rate up to a quarter under the highest one that keeps the lag.
		rate = rep.RPS * 0.9
	}
	b.costs[keptCost].name = costSustained
	b.sust = kept
	lagNote := fmt.Sprintf("pipeline lag at most %.2f s of events", keptLag)
	if keptLag >= 1 {
		lagNote = fmt.Sprintf("**the pipeline did not keep its lag under 1 s at any rate tried**: the smallest, %.2f s, at this rate", keptLag)
	}
	b.rows = append(b.rows, row{name: "acv signed verify, sustained (relay + consumer running)", rps: kept.RPS, p50: kept.P50Ms, p99: kept.P99Ms,
		errors: kept.Errors, genCPU: genShare(kept), note: fmt.Sprintf("%s; API, relay and consumer as 3 processes, real Kafka 4.4.0; API peak RSS %.0f MiB", lagNote, api.peakRSS())})

	half := b.hot.RPS / 2
	rep := b.load(ctx, api.base, half, len(b.pool))
	b.rows = append(b.rows, row{name: fmt.Sprintf("acv signed verify at half the hot-path max (%.0f req/s target), pipeline running", half), rps: rep.RPS,
		p50: rep.P50Ms, p99: rep.P99Ms, errors: rep.Errors, genCPU: genShare(rep), note: "pipeline running"})
	b.halfRate = rep
	if err := b.waitDrained(ctx, 5*time.Minute); err != nil {
		return err
	}

	// The same rate with the pipeline yielding the CPU to the hot path (priority.go): how much
	// of the latency above is the pipeline's work competing for the two cores.
	if err := b.renicePipeline(pipelineNice, relay, consumer); err != nil {
		return err
	}
	mon := b.monitor(ctx)
	rep = b.load(ctx, api.base, half, len(b.pool))
	lag := float64(mon()) / rep.RPS
	err = b.waitDrained(ctx, 5*time.Minute)
	if rerr := b.renicePipeline(0, relay, consumer); err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	b.rows = append(b.rows, row{name: fmt.Sprintf("acv signed verify at half the hot-path max (%.0f req/s target), pipeline running at nice %d", half, pipelineNice),
		rps: rep.RPS, p50: rep.P50Ms, p99: rep.P99Ms, errors: rep.Errors, genCPU: genShare(rep),
		note: fmt.Sprintf("relay, consumer, Kafka broker and PostgreSQL at niceness %d; pipeline lag at most %.2f s of events", pipelineNice, lag)})
	b.halfRateNice = rep
	return b.measureStorage(ctx)
}

// monitor samples the events not yet in Postgres until the returned function is called, which
// reports the largest count seen.
func (b *bench) monitor(ctx context.Context) func() int64 {
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan int64, 1)
	go func() {
		var worst int64
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-mctx.Done():
				done <- worst
				return
			case <-t.C:
				worst = max(worst, b.pending(mctx))
			}
		}
	}()
	return func() int64 {
		cancel()
		return <-done
	}
}

// pending is the number of verification-log events not yet written: the outbox entries not
// yet published, plus the Kafka lag. The relay removes published entries in bulk (every
// second), so the outbox also holds entries already in Kafka: the relay's published count
// less its removed count, read after the outbox so that an entry is never counted out before
// the lag counts it in.
func (b *bench) pending(ctx context.Context) int64 {
	n, _, err := audit.OutboxLen(ctx, b.deps.Redis, cache.Outboxes())
	if err != nil {
		return 0
	}
	if b.relayDebug != "" {
		m := scrape(b.relayDebug)
		n = max(0, n-int64(m["acv_relay_published_total"]-m["acv_relay_removed_total"]))
	}
	if b.kafka == nil {
		return n
	}
	lag, err := audit.GroupLag(ctx, b.kafka.Brokers, b.cfg.KafkaTopic, b.cfg.ConsumerGroup)
	if err == nil {
		for _, l := range lag {
			n += l
		}
	}
	return n
}

func (b *bench) waitDrained(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for b.pending(ctx) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the pipeline did not drain within %s", within)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}
