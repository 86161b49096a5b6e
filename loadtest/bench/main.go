// Command bench measures acv against ceilings taken in the same run on the same machine, and
// prints one table: a bare Gin handler (the HTTP ceiling), redis-benchmark running acv's own
// verify script (the Redis ceiling), a plain PostgreSQL verify with pgbench (what one would
// build instead), then acv's signed verify on the hot path alone (on one Redis and on a
// 3-master Redis Cluster), sustained with the audit pipeline running (API, relay and consumer
// as separate processes, a real one-node Apache Kafka), and at half of its maximum rate. Every
// row is compared with the ceilings, because absolute figures drift between runs and machines.
// A second table gives each process's CPU per verify (from /proc/<pid>/stat), the capacity
// model's input, which holds across machines far better than requests per second.
//
//	go run ./loadtest/bench -acv bin/acv
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	ceiling := flag.String("ceiling-server", "", "internal: serve the bare HTTP ceiling on this address")
	acvBin := flag.String("acv", "bin/acv", "the acv binary to measure")
	dur := flag.Duration("d", 10*time.Second, "length of each measured phase")
	conc := flag.Int("c", 64, "connections of the load generator")
	codes := flag.Int("codes", 800_000, "codes generated for the run")
	out := flag.String("o", "", "also write the markdown table to this file")
	scaleN := flag.Int("scale", 10_000_000, "codes in the big project of the scale phase (-only scale)")
	profile := flag.String("profile", "", "write CPU profiles of the API (hot path and sustained phases), the relay and the consumer (sustained) into this directory")
	only := flag.String("only", "", "comma-separated phases to run (http, redis, rediscpu, factors, pg, hot, cluster, sustained, scale); all but factors and scale when empty")
	flag.Parse()
	if *ceiling != "" {
		if err := serveCeiling(*ceiling); err != nil {
			fmt.Fprintln(os.Stderr, "ceiling server:", err)
			os.Exit(1)
		}
		return
	}
	b := &bench{acv: *acvBin, dur: *dur, conc: *conc, codes: *codes, scaleN: *scaleN, profileDir: *profile}
	if *only != "" {
		b.phases = map[string]bool{}
		for _, p := range strings.Split(*only, ",") {
			b.phases[strings.TrimSpace(p)] = true
		}
	}
	b.loadAvg[0] = loadAvg()
	if err := b.run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		b.cleanup()
		os.Exit(1)
	}
	b.loadAvg[1] = loadAvg()
	b.cleanup()
	table := b.table()
	fmt.Print(table)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(table), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}
