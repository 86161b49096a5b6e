package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/loadtest/loadgen"
	"github.com/redis/go-redis/v9"
)

// masterShare is one master's part of the cluster phase: the script calls it ran and its CPU.
type masterShare struct {
	addr, slots string
	calls       int64   // EVALSHA and EVAL calls over the run (INFO commandstats)
	cpu         float64 // CPU seconds over the run
}

// clusterMasters is the cluster phase's master count (as the scale-out issue names it).
const clusterMasters = 3

// clusterHotPath runs the hot-path phase again with the same project's codes on a 3-master
// Redis Cluster (AOF everysec on every node, as the single Redis), in the same run, so its
// figures compare with the single-Redis row. On a 2-core machine the three masters share the
// cores with everything else: the row shows what the cluster path costs, not what it gains.
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
	if err != nil {
		return err
	}
	if err := cc.PublishProject(ctx, p, version); err != nil {
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
	recs := make([]contract.CodeRecord, 0, len(codes))
	if err := b.deps.Store.ExportCodes(ctx, b.projectID, func(r contract.CodeRecord) error {
		if want[r.Code] {
			recs = append(recs, r)
		}
		return nil
	}); err != nil {
		return err
	}
	want = nil
	if err := cc.PutCodes(ctx, b.projectID, recs); err != nil {
		return fmt.Errorf("load %d codes into the cluster: %w", len(recs), err)
	}
	recs = nil

	api, err := b.startACVOn(ctx, "api", c.URL())
	if err != nil {
		return err
	}
	defer api.stop()
	nodes := make([]*redis.Client, len(masters))
	for i, m := range masters {
		nodes[i] = redis.NewClient(&redis.Options{Addr: m.Addr})
		defer nodes[i].Close()
		if err := nodes[i].ConfigResetStat(ctx).Err(); err != nil {
			return err
		}
	}
	m := meter{partAPI: api.cpu, partLoadgen: selfCPU, partRedis: func() float64 {
		var t float64
		for _, m := range masters {
			t += pidCPU(m.Pid())
		}
		return t
	}}
	perMaster := func() []float64 {
		out := make([]float64, len(masters))
		for i, m := range masters {
			out[i] = pidCPU(m.Pid())
		}
		return out
	}
	cpu0, busy0, each0 := m.sample(), machineBusy(), perMaster()
	rep := loadgen.Run(ctx, loadgen.Config{BaseURL: api.base, KeyID: b.keyID, Secret: b.secret, ProjectID: b.projectID,
		Codes: codes, Concurrency: b.conc, Duration: b.dur})
	cpu, busy, each1 := m.sample().since(cpu0), machineBusy()-busy0, perMaster()
	codes = codes[rep.Used:]

	var total int64
	b.masters = nil
	for i, mn := range masters {
		info, err := nodes[i].Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		ms := masterShare{addr: mn.Addr, slots: strings.Join(slots[i], " "), calls: scriptCalls(info), cpu: each1[i] - each0[i]}
		total += ms.calls
		b.masters = append(b.masters, ms)
	}
	var shares []string
	for _, ms := range b.masters {
		shares = append(shares, fmt.Sprintf("%.1f%%", 100*float64(ms.calls)/float64(max(total, 1))))
	}
	ratio := "–"
	if b.hot.RPS > 0 {
		ratio = fmt.Sprintf("%.2f", rep.RPS/b.hot.RPS)
	}
	b.costs = append(b.costs, newCostRow(costCluster, rep, cpu, busy, "Redis: the 3 masters summed"))
	b.clusterRep = rep
	b.rows = append(b.rows, row{name: "acv signed verify, hot path only (relay paused), 3-master Redis Cluster", rps: rep.RPS, p50: rep.P50Ms, p99: rep.P99Ms,
		errors: rep.Errors, genCPU: genShare(rep),
		note: fmt.Sprintf("%d successes; ÷ 1 Redis (hot path row) %s; script calls per master %s", rep.Successes, ratio, strings.Join(shares, " / "))})
	fmt.Fprintf(os.Stderr, "bench: cluster: %s\n", rep)
	return nil
}

var scriptCallsRE = regexp.MustCompile(`(?m)^cmdstat_(?:evalsha|eval|fcall):calls=(\d+)`)

// scriptCalls sums the EVALSHA, EVAL and FCALL calls of an INFO commandstats reply.
func scriptCalls(info string) int64 {
	var n int64
	for _, m := range scriptCallsRE.FindAllStringSubmatch(info, -1) {
		v, _ := strconv.ParseInt(m[1], 10, 64)
		n += v
	}
	return n
}

// clusterTable renders the cluster phase beside the single Redis of the same run, and how
// the calls and the CPU spread over the masters.
func (b *bench) clusterTable() string {
	if len(b.masters) == 0 {
		return ""
	}
	single, okSingle := b.cost(costHot)
	cl, _ := b.cost(costCluster)
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n### One project through 1 Redis and through a %d-master Redis Cluster (same run, hot path, relay paused)\n\n", clusterMasters)
	fmt.Fprintf(&sb, "| Redis | req/s | p50 ms | p99 ms | errors | ÷ 1 Redis | Redis CPU µs per verify | API CPU µs per verify |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	row := func(name string, rep loadgen.Report, c costRow, ratio string) {
		r, _ := c.us(partRedis)
		a, _ := c.us(partAPI)
		fmt.Fprintf(&sb, "| %s | %.0f | %.2f | %.2f | %d | %s | %.1f | %.1f |\n", name, rep.RPS, rep.P50Ms, rep.P99Ms, rep.Errors, ratio, r, a)
	}
	if okSingle {
		row("1 Redis", b.hot, single, "1.00")
	}
	ratio := "–"
	if b.hot.RPS > 0 {
		ratio = fmt.Sprintf("%.2f", b.clusterRep.RPS/b.hot.RPS)
	}
	row(fmt.Sprintf("%d-master cluster (masters summed)", clusterMasters), b.clusterRep, cl, ratio)

	var total int64
	var cpuTotal float64
	for _, m := range b.masters {
		total += m.calls
		cpuTotal += m.cpu
	}
	fmt.Fprintf(&sb, "\n| master | slots | script calls (EVALSHA/EVAL) | share of calls | CPU µs per verify | share of Redis CPU |\n|---|---|---:|---:|---:|---:|\n")
	for _, m := range b.masters {
		fmt.Fprintf(&sb, "| %s | %s | %d | %.1f%% | %.1f | %.1f%% |\n", m.addr, m.slots, m.calls,
			100*float64(m.calls)/float64(max(total, 1)), 1e6*m.cpu/float64(max(b.clusterRep.Successes, 1)), 100*m.cpu/max(cpuTotal, 1e-9))
	}
	return sb.String()
}
