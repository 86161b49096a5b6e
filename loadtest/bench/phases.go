package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/loadtest/loadgen"
)

// hotPath measures signed verify with the audit pipeline paused: the API alone, its events
// queueing in the Redis outbox.
func (b *bench) hotPath(ctx context.Context) error {
	p, err := b.startACV(ctx, "api", b.cfg.RedisURL)
	if err != nil {
		return err
	}
	defer p.stop()
	m := meter{partAPI: p.cpu, partRedis: b.redisProcCPU, partLoadgen: loadgen.CPUSeconds}
	prof := b.profile(p, "api-hot")
	cpu := m.during(func() { b.hot = b.load(ctx, p.base, 0) })
	prof()
	rep := b.hot
	b.costs = append(b.costs, newCostRow(costHot, rep, cpu, "events wait in the outbox; the pipeline's parts are not running"))
	b.rows = append(b.rows, loadRow("acv signed verify, hot path only (relay paused)", rep,
		fmt.Sprintf("%d successes; CPU of the machine: acv %.0f%%, redis %.0f%%, all %.0f%%; acv peak RSS %.0f MiB", rep.Successes,
			machineShare(cpu[partAPI], rep), machineShare(cpu[partRedis], rep), machineShare(cpu[partMachine], rep), p.peakRSS())))
	b.halfHot = b.half(ctx, p.base, "relay paused", func(loadgen.Report) string { return "the API and Redis alone" })
	return nil
}

// half runs the load at half the hot path's max rate and adds its row, noted once it ran.
func (b *bench) half(ctx context.Context, base, what string, note func(loadgen.Report) string) loadgen.Report {
	rep := b.load(ctx, base, b.hot.RPS/2)
	b.rows = append(b.rows, loadRow(fmt.Sprintf("acv signed verify at half the hot-path max (%.0f req/s target), %s", b.hot.RPS/2, what), rep, note(rep)))
	return rep
}

func (b *bench) redisProcCPU() float64 { return pidCPU(b.redis.Pid()) }

// sustained measures verify with the pipeline running (API, relay and consumer as three
// processes, each one's CPU read apart), at the highest rate at which the events not yet in
// Postgres stay under one second's worth; each CPU window runs from drained to drained.
func (b *bench) sustained(ctx context.Context) error {
	var procs []*acvProc
	defer func() {
		for _, p := range procs { // the API first, as a deployment drains it first
			p.stop()
		}
	}()
	for _, roles := range []string{"api", "consumer"} {
		p, err := b.startACV(ctx, roles, b.cfg.RedisURL)
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	api, consumer := procs[0], procs[1]
	var relay *acvProc
	m := meter{
		partAPI: api.cpu, partConsumer: consumer.cpu, partRedis: b.redisProcCPU, partLoadgen: loadgen.CPUSeconds,
		partBroker:    func() float64 { return pidCPU(b.kafkaPid()) - jitCPU(b.kafkaPid()) },
		partBrokerJIT: func() float64 { return jitCPU(b.kafkaPid()) },
		partPostgres:  func() float64 { return pgServerCPU(b.pg.Pid()) },
	}
	defer func() { b.relayDebug = "" }()

	// The earlier phases left their events in the outbox. The relay starts only now, so the
	// pipeline's cost per event with full batches is measured on that backlog (which also
	// warms the broker's JIT): from the relay's start (its CPU counts from there) until every
	// event is in Postgres.
	bl, err := b.window(ctx, m, consumer, func() (err error) {
		if relay, err = b.startACV(ctx, "relay", b.cfg.RedisURL); err != nil {
			return err
		}
		procs = append(procs, relay)
		m[partRelay], b.relayDebug = relay.cpu, relay.debug
		return b.waitDrained(ctx, 5*time.Minute)
	})
	if err != nil {
		return err
	}
	if bl.rows > 0 {
		b.backlog = bl
		delete(bl.cpu, partAPI) // idle: no verify is served while the backlog drains
		delete(bl.cpu, partLoadgen)
		b.costs = append(b.costs, costRow{name: costBacklog, verifies: bl.rows, rps: float64(bl.rows) / bl.seconds, cpu: bl.cpu,
			note: fmt.Sprintf("per log row written, in %.1f s; relay batch %.0f, consumer batch %.0f; the broker's JIT warms up here",
				bl.seconds, bl.relayBatch, bl.consumerBatch)})
	}
	fmt.Fprintf(os.Stderr, "bench: the pipeline drained the earlier phases' %d events in %.1f s\n", bl.rows, bl.seconds)

	// What the parts spend with nothing to do: the relay's polls, the consumer's fetches, the
	// broker's housekeeping.
	b.idle = m.during(func() { time.Sleep(idleWindow) })

	// Each attempt is a cost row of its own (the pipeline's fixed costs weigh differently at
	// each rate); when none keeps the lag under a second, the smallest lag is reported as such.
	rate := 0.0 // first try: as fast as the load generator goes
	var kept loadgen.Report
	keptLag, keptCost := -1.0, -1
	for attempt := 0; attempt < 4; attempt++ {
		var rep loadgen.Report
		var maxPending int64
		w, err := b.window(ctx, m, consumer, func() error {
			mon := b.monitor(ctx)
			var profiled []func()
			if attempt == 0 { // the fastest attempt: profile the three processes
				profiled = []func(){b.profile(api, "api-sustained"), b.profile(relay, "relay-sustained"), b.profile(consumer, "consumer-sustained")}
			}
			rep = b.load(ctx, api.base, rate)
			maxPending = mon()
			for _, wait := range profiled {
				wait()
			}
			return b.waitDrained(ctx, 5*time.Minute)
		})
		if err != nil {
			return err
		}
		lagSec := float64(maxPending) / rep.RPS
		fmt.Fprintf(os.Stderr, "bench: sustained at %.0f req/s: at most %d events not yet in Postgres (%.2f s); CPU s: %v\n",
			rep.RPS, maxPending, lagSec, w.cpu)
		b.costs = append(b.costs, newCostRow(fmt.Sprintf("sustained attempt at %.0f req/s (not kept)", rep.RPS), rep, w.cpu,
			fmt.Sprintf("lag at most %.2f s of events; CPU window %.1f s of load + %.1f s until drained", lagSec, rep.Seconds, w.seconds-rep.Seconds)))
		if keptLag < 0 || lagSec < 1 || lagSec < keptLag {
			kept, keptLag, keptCost, b.sustWin = rep, lagSec, len(b.costs)-1, w
		}
		if lagSec < 1 {
			break
		}
		// A tenth lower each time: a coarser step would report a rate well under the highest
		// one that keeps the lag.
		rate = rep.RPS * 0.9
	}
	b.costs[keptCost].name = costSustained
	b.sust = kept
	lagNote := fmt.Sprintf("pipeline lag at most %.2f s of events", keptLag)
	if keptLag >= 1 {
		lagNote = fmt.Sprintf("**the pipeline did not keep its lag under 1 s at any rate tried**: the smallest, %.2f s, at this rate", keptLag)
	}
	b.rows = append(b.rows, loadRow("acv signed verify, sustained (relay + consumer running)", kept,
		fmt.Sprintf("%s; API, relay and consumer as 3 processes, real Kafka 4.4.0; API peak RSS %.0f MiB", lagNote, api.peakRSS())))

	b.halfRate = b.half(ctx, api.base, "pipeline running", func(loadgen.Report) string { return "pipeline running" })
	if err := b.waitDrained(ctx, 5*time.Minute); err != nil {
		return err
	}

	// The same rate with the pipeline yielding the CPU to the hot path: how much of the latency
	// above is the pipeline competing for the cores.
	if err := b.renicePipeline(pipelineNice, relay, consumer); err != nil {
		return err
	}
	mon := b.monitor(ctx)
	b.halfRateNice = b.half(ctx, api.base, fmt.Sprintf("pipeline running at nice %d", pipelineNice), func(rep loadgen.Report) string {
		return fmt.Sprintf("relay, consumer, Kafka broker and PostgreSQL at niceness %d; pipeline lag at most %.2f s of events", pipelineNice, float64(mon())/rep.RPS)
	})
	err = b.waitDrained(ctx, 5*time.Minute)
	if err = errors.Join(err, b.renicePipeline(0, relay, consumer)); err != nil {
		return err
	}
	return b.measureStorage(ctx)
}

// pipeWindow is what the pipeline did over a window: each part's CPU, the log rows and WAL
// written, and the mean relay batch, consumer batch and consumer transaction.
type pipeWindow struct {
	cpu                       cpuSample
	seconds                   float64
	rows, wal                 int64
	relayBatch, consumerBatch float64
	txMs                      float64
}

// window runs fn and reads what the pipeline did meanwhile. The log table is read outside the
// CPU window: a connection costs PostgreSQL CPU.
func (b *bench) window(ctx context.Context, m meter, consumer *acvProc, fn func() error) (pipeWindow, error) {
	log0, err := b.logStats(ctx)
	if err != nil {
		return pipeWindow{}, err
	}
	relay0, cons0 := scrape(b.relayDebug), scrape(consumer.debug)
	cpu0, t0 := m.sample(), time.Now()
	if err := fn(); err != nil {
		return pipeWindow{}, err
	}
	w := pipeWindow{cpu: m.sample().since(cpu0), seconds: time.Since(t0).Seconds()}
	relay1, cons1 := scrape(b.relayDebug), scrape(consumer.debug)
	log1, err := b.logStats(ctx)
	w.rows, w.wal = log1.rows-log0.rows, log1.walLSN-log0.walLSN
	w.relayBatch = ratioOf(relay1, relay0, "acv_relay_batch_size_sum", "acv_relay_batch_size_count")
	w.consumerBatch = ratioOf(cons1, cons0, "acv_consumer_events_written_total", "acv_consumer_batch_write_duration_seconds_count")
	w.txMs = 1e3 * ratioOf(cons1, cons0, "acv_consumer_batch_write_duration_seconds_sum", "acv_consumer_batch_write_duration_seconds_count")
	return w, err
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

// pending is the verification-log events not yet written: the outbox entries not yet
// published, plus the Kafka lag. The relay removes published entries in bulk, so its published
// less removed count is subtracted, read after the outbox so no entry is counted out early.
func (b *bench) pending(ctx context.Context) int64 {
	n, _, err := audit.OutboxLen(ctx, b.deps.Redis, cache.Outboxes())
	if err != nil {
		return 0
	}
	if b.relayDebug != "" {
		m := scrape(b.relayDebug)
		n = max(0, n-int64(m.Sum("acv_relay_published_total")-m.Sum("acv_relay_removed_total")))
	}
	if b.kafka == nil {
		return n
	}
	lag, _ := audit.GroupLag(ctx, b.kafka.Brokers, b.cfg.KafkaTopic, b.cfg.ConsumerGroup)
	for _, l := range lag {
		n += l
	}
	return n
}

func (b *bench) waitDrained(ctx context.Context, within time.Duration) error {
	return localenv.Poll(ctx, within, 200*time.Millisecond, func() error {
		if n := b.pending(ctx); n > 0 {
			return fmt.Errorf("the pipeline did not drain within %s (%d events left)", within, n)
		}
		return nil
	})
}

// masterShare is one master's part of the cluster phase: the script calls it ran and its CPU.
type masterShare struct {
	addr, slots string
	calls       int64   // EVALSHA, EVAL and FCALL calls over the run (INFO commandstats)
	cpu         float64 // CPU seconds over the run
	callShare   float64 // % of the masters' calls
	cpuShare    float64 // % of the masters' CPU
}

// clusterMasters is the cluster phase's master count (as the scale-out issue names it).
const clusterMasters = 3

// clusterHotPath runs the hot-path phase again on a 3-master Redis Cluster (AOF everysec on
// every node), so its figures compare with the single-Redis row of the same run.
func (b *bench) clusterHotPath(ctx context.Context) error {
	c, err := localenv.StartRedisCluster(filepath.Join(b.dir, "redis-cluster"), localenv.ClusterOptions{Masters: clusterMasters, AOF: true})
	if err != nil {
		return err
	}
	defer c.Close()
	masters, slots, err := c.Masters()
	if err != nil {
		return err
	}
	rdb, err := service.NewRedisClient(c.URL(), 64)
	if err != nil {
		return err
	}
	defer rdb.Close()

	// The project's state in every shard, and the codes this phase verifies, as the admin
	// commands would have written them. (The API replica mirrors the key itself at start.)
	cc := cache.New(rdb)
	p, version, err := b.deps.Store.ProjectState(ctx, b.projectID)
	if err == nil {
		err = cc.PublishProject(ctx, p, version)
	}
	if err != nil {
		return err
	}
	n := 300_000
	if b.hot.RPS > 0 {
		n = int(b.hot.RPS * b.dur.Seconds() * 1.5)
	}
	codes := b.take(n)
	defer func() { b.pool = append(b.pool, codes...) }() // what the run did not reach goes back
	want := make(map[string]bool, len(codes))
	for _, v := range codes {
		want[v] = true
	}
	var recs []contract.CodeRecord
	if err := b.deps.Store.ExportCodes(ctx, b.projectID, func(r contract.CodeRecord) error {
		if want[r.Code] {
			recs = append(recs, r)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := cc.PutCodes(ctx, b.projectID, recs); err != nil {
		return fmt.Errorf("load %d codes into the cluster: %w", len(recs), err)
	}

	api, err := b.startACV(ctx, "api", c.URL())
	if err != nil {
		return err
	}
	defer api.stop()
	m := meter{partAPI: api.cpu, partLoadgen: loadgen.CPUSeconds}
	nodes := make([]*redis.Client, len(masters))
	for i, mn := range masters {
		nodes[i] = redis.NewClient(&redis.Options{Addr: mn.Addr})
		defer nodes[i].Close()
		if err := nodes[i].ConfigResetStat(ctx).Err(); err != nil {
			return err
		}
		m[mn.Addr] = func() float64 { return pidCPU(mn.Pid()) }
	}
	var rep loadgen.Report
	cpu := m.during(func() { rep = b.loadCodes(ctx, api.base, 0, codes) })
	codes = codes[rep.Used:]

	var total int64
	b.masters = nil
	for i, mn := range masters {
		stats, err := commandStats(ctx, nodes[i], "")
		if err != nil {
			return err
		}
		ms := masterShare{addr: mn.Addr, slots: strings.Join(slots[i], " "), cpu: cpu[mn.Addr]}
		for _, s := range stats {
			if s.Name == "evalsha" || s.Name == "eval" || s.Name == "fcall" {
				ms.calls += s.Calls
			}
		}
		total += ms.calls
		cpu[partRedis] += ms.cpu
		b.masters = append(b.masters, ms)
	}
	var shares []string
	for i, ms := range b.masters {
		b.masters[i].callShare = 100 * float64(ms.calls) / float64(max(total, 1))
		b.masters[i].cpuShare = 100 * ms.cpu / max(cpu[partRedis], 1e-9)
		shares = append(shares, fmt.Sprintf("%.1f%%", b.masters[i].callShare))
	}
	b.costs = append(b.costs, newCostRow(costCluster, rep, cpu, "Redis: the 3 masters summed"))
	b.clusterRep = rep
	b.rows = append(b.rows, loadRow("acv signed verify, hot path only (relay paused), 3-master Redis Cluster", rep,
		fmt.Sprintf("%d successes; ÷ 1 Redis (hot path row) %s; script calls per master %s", rep.Successes, ratio(rep.RPS, b.hot.RPS), strings.Join(shares, " / "))))
	fmt.Fprintf(os.Stderr, "bench: cluster: %s\n", rep)
	return nil
}

const (
	// kafkaSegmentBytes is Kafka's default segment size, as in production: localenv's brokers
	// roll 1 MiB segments, sized for tests, a cost production does not pay.
	kafkaSegmentBytes = 1 << 30
	kafkaPartitions   = 8 // as ACV_KAFKA_PARTITIONS defaults to
)

// startKafka starts a one-node Apache Kafka 4.4.0 (KRaft, one JVM, full JIT) as a process of
// its own, so its CPU is read like every other part's, and creates the log topic.
func (b *bench) startKafka(ctx context.Context) error {
	t0 := time.Now()
	k, err := localenv.StartKafka(ctx, filepath.Join(b.dir, "kafka"), localenv.KafkaOptions{
		Version: localenv.Kafka4, HeapMB: 512, JVMOptions: []string{"-XX:TieredStopAtLevel=4"},
	})
	if err != nil {
		return fmt.Errorf("start kafka: %w", err)
	}
	b.kafka = k
	if err := k.CreateTopic(ctx, audit.Topic, kafkaPartitions, 1); err != nil {
		return err
	}
	cl := &kafka.Client{Addr: kafka.TCP(k.Brokers...), Timeout: 30 * time.Second}
	res, err := cl.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: audit.Topic,
		Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "segment.bytes", Value: strconv.Itoa(kafkaSegmentBytes), ConfigOperation: kafka.ConfigOperationSet}},
	}}})
	for i := 0; err == nil && i < len(res.Resources); i++ {
		err = res.Resources[i].Error
	}
	if err != nil {
		return fmt.Errorf("set segment.bytes of %s: %w", audit.Topic, err)
	}
	fmt.Fprintf(os.Stderr, "bench: kafka %s up in %.1f s (JVM start %.1f s)\n", k.Version, time.Since(t0).Seconds(), k.Started.Seconds())
	return nil
}

// kafkaPid is the broker JVM's pid, 0 without one. Its JIT compilers' CPU is read apart: their
// work is the JVM warming up, long done in a broker running for days, and here it lasts the
// whole run.
func (b *bench) kafkaPid() int {
	if b.kafka == nil {
		return 0
	}
	return b.kafka.Nodes[0].Pid()
}

// scale fills one project with b.scaleN codes and measures what the data-scale targets name:
// generation time per million (both stores loaded), Redis memory per code, verify latency
// against the small project of the same run, and the p99 of every read the API offers.
func (b *bench) scale(ctx context.Context) error {
	a, big, key, err := b.newProject(ctx, "scale")
	if err != nil {
		return err
	}
	mem0 := usedMemory(ctx, b.deps.Redis)
	past := time.Now().Add(-time.Hour).Unix()
	var firstMillion time.Duration
	start := time.Now()
	for done := 0; done < b.scaleN; {
		n := min(1_000_000, b.scaleN-done)
		spec := contract.GenerateSpec{Count: n, Length: 12}
		if done == 0 {
			// One code in a hundred of the first million has expired, for the expired filter.
			spec.Count = n - n/100
			if _, err := a.Generate(ctx, big.ID, contract.GenerateSpec{Count: n / 100, Length: 12, ExpiresAt: &past}, nil); err != nil {
				return err
			}
		}
		t0 := time.Now()
		if _, err := a.Generate(ctx, big.ID, spec, nil); err != nil {
			return err
		}
		if done == 0 {
			firstMillion = time.Since(start)
		}
		done += n
		fmt.Fprintf(os.Stderr, "bench: scale: %d codes (%.1f s for the last %d)\n", done, time.Since(t0).Seconds(), n)
	}
	perCode := float64(usedMemory(ctx, b.deps.Redis)-mem0) / float64(b.scaleN)
	b.rows = append(b.rows, row{name: fmt.Sprintf("Generate %d codes into Postgres and Redis", b.scaleN), rps: float64(b.scaleN) / time.Since(start).Seconds(),
		note: fmt.Sprintf("first 1,000,000 in %.1f s; Redis %.0f bytes per code", firstMillion.Seconds(), perCode)})

	p, err := b.startACV(ctx, "api,relay,consumer", b.cfg.RedisURL)
	if err != nil {
		return err
	}
	defer p.stop()
	cl := &client.Client{BaseURL: p.base, KeyID: key.ID, Secret: key.Secret}
	small := &client.Client{BaseURL: p.base, KeyID: b.keyID, Secret: b.secret}

	// Some of every state: used (verified through the API), disabled (admin).
	page, err := cl.ListCodes(ctx, big.ID, client.ListParams{Page: 1, PageSize: 100, Status: "unused"})
	if err != nil {
		return err
	}
	for i, c := range page.Items {
		if i%2 == 0 {
			_, _, err = cl.Verify(ctx, big.ID, contract.VerifyRequest{Code: c.Code}, client.Options{})
		} else {
			err = a.SetCodeDisabled(ctx, big.ID, c.Code, true)
		}
		if err != nil {
			return err
		}
	}
	if err := b.waitDrained(ctx, time.Minute); err != nil {
		return err
	}

	// Verify latency, one request at a time, small project against the big one.
	bigCodes, err := b.sampleCodes(ctx, cl, big.ID, 300)
	if err != nil {
		return err
	}
	smallCodes := b.take(300)
	for _, v := range []struct {
		c         *client.Client
		project   string
		codes     []string
		projectOf int
	}{{small, b.projectID, smallCodes, b.codes}, {cl, big.ID, bigCodes, b.scaleN}} {
		var lat []time.Duration
		for _, code := range v.codes {
			t0 := time.Now()
			if _, _, err := v.c.Verify(ctx, v.project, contract.VerifyRequest{Code: code}, client.Options{}); err == nil {
				lat = append(lat, time.Since(t0))
			}
		}
		b.addLatency(fmt.Sprintf("verify, project with %d codes (sequential)", v.projectOf), lat, "")
	}

	st, err := cl.Project(ctx, big.ID)
	if err != nil {
		return err
	}
	last := int((st.Statistics.TotalCodes + 19) / 20)
	type query struct {
		name string
		fn   func(i int) error
	}
	list := func(name string, params func(i int) client.ListParams) query {
		return query{name, func(i int) error { _, err := cl.ListCodes(ctx, big.ID, params(i)); return err }}
	}
	atPage := func(p int, status string) func(int) client.ListParams {
		return func(int) client.ListParams { return client.ListParams{Page: p, Status: status} }
	}
	queries := []query{
		{"project with statistics", func(int) error { _, err := cl.Project(ctx, big.ID); return err }},
		list("list, first page", atPage(1, "")),
		list("list, middle page", atPage(last/2, "")),
		list("list, last page", atPage(last, "")),
		list("list, random deep page", func(int) client.ListParams { return client.ListParams{Page: 1 + rand.IntN(last)} }),
	}
	for _, s := range []string{"unused", "used", "disabled", "expired"} {
		queries = append(queries, list("list, status="+s+", first page", atPage(1, s)))
	}
	for _, n := range []int{3, 4, 6} {
		queries = append(queries, list("search, "+strconv.Itoa(n)+" characters", func(i int) client.ListParams {
			return client.ListParams{Page: 1, Search: strings.ToLower(bigCodes[i%len(bigCodes)][3 : 3+n])}
		}))
	}
	queries = append(queries, query{"code by value, with history", func(i int) error {
		_, err := cl.CodeByValue(ctx, big.ID, bigCodes[i%len(bigCodes)])
		return err
	}})
	for _, q := range queries {
		var lat []time.Duration
		for i := 0; i < 100; i++ {
			t0 := time.Now()
			if err := q.fn(i); err != nil {
				return fmt.Errorf("%s: %w", q.name, err)
			}
			lat = append(lat, time.Since(t0))
		}
		b.addLatency(q.name+fmt.Sprintf(" (%d codes)", b.scaleN), lat, "100 sequential requests")
	}
	return nil
}

// sampleCodes returns n unused codes of a project, from pages spread over the list.
func (b *bench) sampleCodes(ctx context.Context, cl *client.Client, projectID string, n int) ([]string, error) {
	var out []string
	for page := 2; len(out) < n; page += 997 {
		p, err := cl.ListCodes(ctx, projectID, client.ListParams{Page: page, PageSize: 100, Status: "unused"})
		if err != nil {
			return nil, err
		}
		if len(p.Items) == 0 {
			break
		}
		for _, c := range p.Items[:min(len(p.Items), 50)] {
			out = append(out, c.Code)
		}
	}
	return out[:min(n, len(out))], nil
}

func (b *bench) addLatency(name string, lat []time.Duration, note string) {
	if len(lat) > 0 {
		b.rows = append(b.rows, row{name: name, p50: loadgen.PercentileMs(lat, 50), p99: loadgen.PercentileMs(lat, 99), note: note})
	}
}

func usedMemory(ctx context.Context, rdb redis.UniversalClient) int64 {
	mem, _ := info(ctx, rdb, "memory")
	n, _ := strconv.ParseInt(mem["used_memory"], 10, 64)
	return n
}
