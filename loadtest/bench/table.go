package main

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
)

func numCPU() int { return runtime.NumCPU() }

// loadAvg is the machine's 1, 5 and 15 minute load averages, as /proc/loadavg gives them: work
// of other processes than the run's shows there.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// table renders the run as markdown, each row with its ratios to the ceilings of the same run.
func (b *bench) table() string {
	var httpCeil, redisCeil, plainPG float64
	for _, r := range b.rows {
		switch {
		case strings.HasPrefix(r.name, "HTTP ceiling"):
			httpCeil = r.rps
		case strings.HasPrefix(r.name, "Redis ceiling"):
			redisCeil = r.rps
		case strings.HasPrefix(r.name, "Plain PostgreSQL"):
			plainPG = r.rps
		}
	}
	ratio := func(v, of float64) string {
		if of == 0 || v == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", v/of)
	}
	ms := func(v float64) string {
		if v == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", v)
	}
	// Ceilings first, whatever order the phases ran in.
	rows := append([]row(nil), b.rows...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].isCeiling && !rows[j].isCeiling })
	var sb strings.Builder
	fmt.Fprintf(&sb, "| measurement | req/s | p50 ms | p99 ms | errors | ÷ HTTP ceiling | ÷ Redis ceiling | ÷ plain PostgreSQL | load generator CPU | notes |\n")
	fmt.Fprintf(&sb, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		gen := "–"
		if r.genCPU > 0 {
			gen = fmt.Sprintf("%.0f%%", 100*r.genCPU)
		}
		rps := "–"
		if r.rps > 0 {
			rps = fmt.Sprintf("%.0f", r.rps)
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %d | %s | %s | %s | %s | %s |\n", r.name, rps, ms(r.p50), ms(r.p99), r.errors,
			ratio(r.rps, httpCeil), ratio(r.rps, redisCeil), ratio(r.rps, plainPG), gen, r.note)
	}
	fmt.Fprintf(&sb, "\nTargets (same run): hot path ≥ 0.45 × HTTP ceiling → %s; sustained ≥ 3 × plain PostgreSQL → %s; p99 ≤ 5 ms at half the max rate → %s ms (relay paused), %s ms (pipeline running), %s ms (pipeline running at nice %d).\n",
		ratio(b.hot.RPS, httpCeil), ratio(b.sust.RPS, plainPG), ms(b.halfHot.P99Ms), ms(b.halfRate.P99Ms), ms(b.halfRateNice.P99Ms), pipelineNice)
	fmt.Fprintf(&sb, "Machine: %d CPUs shared by the load generator, acv, Redis, PostgreSQL and the Kafka broker; load average (1, 5, 15 min) %s at the start, %s at the end.\n",
		numCPU(), b.loadAvg[0], b.loadAvg[1])
	sb.WriteString(b.costTable())
	sb.WriteString(b.clusterTable())
	sb.WriteString(b.storageText())
	return sb.String()
}
