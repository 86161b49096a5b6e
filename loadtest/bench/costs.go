package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/acv/acv/loadtest/loadgen"
)

// idleWindow is how long the pipeline's idle CPU is read.
const idleWindow = 5 * time.Second

// costRow is one line of the cost table: the CPU each process spent over a phase's window,
// divided by the verifies that succeeded in it. It is the capacity model's input: CPU per
// verify holds across machines far better than requests per second.
type costRow struct {
	name     string
	verifies int64 // successes (pgbench: transactions processed), counted exactly
	rps      float64
	p50, p99 float64   // ms; 0 = not measured
	cpu      cpuSample // CPU seconds per part over the window; a part absent ran no work of this phase
	machine  float64   // CPU seconds the whole machine was busy over the window (all processes, the kernel, other work)
	note     string
}

func newCostRow(name string, rep loadgen.Report, cpu cpuSample, machine float64, note string) costRow {
	return costRow{name: name, verifies: rep.Successes, rps: rep.RPS, p50: rep.P50Ms, p99: rep.P99Ms,
		cpu: cpu, machine: machine, note: note}
}

// us is a part's CPU µs per verify, and whether the part ran in this phase.
func (c costRow) us(part string) (float64, bool) {
	v, ok := c.cpu[part]
	if !ok || c.verifies == 0 {
		return 0, false
	}
	return 1e6 * v / float64(c.verifies), true
}

// total is the CPU µs per verify of every measured process together.
func (c costRow) total() float64 {
	var t float64
	for _, p := range partOrder {
		v, _ := c.us(p)
		t += v
	}
	return t
}

// cost is the row of the given name, if the run measured it.
func (b *bench) cost(name string) (costRow, bool) {
	for _, c := range b.costs {
		if c.name == name {
			return c, true
		}
	}
	return costRow{}, false
}

// Names of the cost rows the targets read.
const (
	costCeiling   = "HTTP ceiling: bare Gin handler (per request)"
	costHot       = "acv hot path (ACV_ROLES=api, relay paused), 1 Redis"
	costCluster   = "acv hot path (ACV_ROLES=api, relay paused), 3-master Redis Cluster"
	costSustained = "acv sustained: API, relay, consumer as 3 processes; Kafka 4.4.0; window drained to drained"
	costBacklog   = "pipeline alone, draining the earlier phases' outbox backlog (per event)"
	costPlainPG   = "plain PostgreSQL: pgbench, UPDATE + log INSERT per transaction"
)

// costTable renders the cost rows and the targets the issue sets on them.
func (b *bench) costTable() string {
	if len(b.costs) == 0 {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n### CPU per verify, by process (µs of user+system CPU from /proc/<pid>/stat, children excluded, ÷ successful verifies)\n\n")
	fmt.Fprintf(&sb, "| phase | verifies | req/s | p50 ms | p99 ms |")
	for _, p := range partOrder {
		fmt.Fprintf(&sb, " %s |", p)
	}
	fmt.Fprintf(&sb, " total | machine busy | notes |\n|---|---:|---:|---:|---:|")
	for range partOrder {
		fmt.Fprintf(&sb, "---:|")
	}
	fmt.Fprintf(&sb, "---:|---:|---|\n")
	ms := func(v float64) string {
		if v == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", v)
	}
	for _, c := range b.costs {
		fmt.Fprintf(&sb, "| %s | %d | %.0f | %s | %s |", c.name, c.verifies, c.rps, ms(c.p50), ms(c.p99))
		for _, p := range partOrder {
			if v, ok := c.us(p); ok {
				fmt.Fprintf(&sb, " %.1f |", v)
			} else {
				fmt.Fprintf(&sb, " – |")
			}
		}
		machine := "–"
		if c.machine > 0 && c.verifies > 0 {
			machine = fmt.Sprintf("%.1f", 1e6*c.machine/float64(c.verifies))
		}
		note := c.note
		if v, ok := c.us(partBrokerJIT); ok {
			note += fmt.Sprintf("; broker JIT compilers apart (JVM warm-up): %.1f µs", v)
		}
		fmt.Fprintf(&sb, " %.1f | %s | %s |\n", c.total(), machine, note)
	}

	if len(b.idle) > 0 {
		fmt.Fprintf(&sb, "\nIdle, pipeline processes running and no load (CPU ms per second, over %.0f s):", idleWindow.Seconds())
		for _, p := range partOrder {
			if v, ok := b.idle[p]; ok {
				fmt.Fprintf(&sb, " %s %.1f;", p, 1e3*v/idleWindow.Seconds())
			}
		}
		fmt.Fprintf(&sb, " the load generator column is the bench process, idle.\n")
	}

	hot, okHot := b.cost(costHot)
	ceil, okCeil := b.cost(costCeiling)
	sust, okSust := b.cost(costSustained)
	fmt.Fprintf(&sb, "\nTargets (same run):\n")
	if okSust {
		relay, _ := sust.us(partRelay)
		cons, _ := sust.us(partConsumer)
		pg, _ := sust.us(partPostgres)
		broker, _ := sust.us(partBroker)
		pipe := relay + cons + pg
		line := fmt.Sprintf("- pipeline CPU per verify (relay %.1f + consumer %.1f + Postgres %.1f) = %.1f µs ≤ 25 µs: %s (sustained); Kafka broker apart: %.1f µs",
			relay, cons, pg, pipe, verdict(pipe <= 25), broker)
		if bl, ok := b.cost(costBacklog); ok {
			r, _ := bl.us(partRelay)
			c, _ := bl.us(partConsumer)
			p, _ := bl.us(partPostgres)
			k, _ := bl.us(partBroker)
			line += fmt.Sprintf("; with full batches (the backlog): %.1f + %.1f + %.1f = %.1f µs, broker %.1f µs", r, c, p, r+c+p, k)
		}
		fmt.Fprintln(&sb, line)
	}
	if okHot && okCeil {
		api, _ := hot.us(partAPI)
		bare, _ := ceil.us(partAPI)
		if bare > 0 {
			line := fmt.Sprintf("- API process CPU per verify ÷ bare Gin handler CPU per request = %.1f ÷ %.1f µs = %.2f ≤ 2: %s (hot path)",
				api, bare, api/bare, verdict(api/bare <= 2))
			if okSust {
				sapi, _ := sust.us(partAPI)
				line += fmt.Sprintf("; sustained phase: %.1f µs, %.2f", sapi, sapi/bare)
			}
			fmt.Fprintln(&sb, line)
		}
	}
	return sb.String()
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}
