// Command acvload drives signed requests at a running acv. Without a subcommand it verifies the
// unused codes of an export (acv codes export) as fast as it can, or at -rate, and reports
// throughput and latency percentiles:
//
//	acvload -base http://127.0.0.1:8080 -key K -secret S -project P -codes codes.csv -c 64 -d 10s
//
// `acvload scenario` runs the scenarios of loadtest/k6 with their thresholds and checks, serves
// its own /metrics and prints a table; `make loadtest` runs it (loadtest/README.md):
//
//	API_SECRET=S acvload scenario -base http://127.0.0.1:8080 -key K -project P -codes codes.csv redeem readmix
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/settings"
	"github.com/acv/acv/loadtest/loadgen"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "scenario" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := runScenarios(ctx, os.Args[2:])
		stop()
		os.Exit(code)
	}
	var cfg loadgen.Config
	flag.StringVar(&cfg.BaseURL, "base", "http://127.0.0.1:8080", "service base URL")
	flag.StringVar(&cfg.KeyID, "key", "", "API key id")
	flag.StringVar(&cfg.Secret, "secret", "", "API secret")
	flag.StringVar(&cfg.ProjectID, "project", "", "project id")
	codesFile := flag.String("codes", "", "CSV of codes (acv codes export); unused ones are verified once each")
	flag.IntVar(&cfg.Concurrency, "c", 64, "concurrent connections")
	flag.DurationVar(&cfg.Duration, "d", 10*time.Second, "duration")
	flag.Float64Var(&cfg.Rate, "rate", 0, "target requests per second in total (0: as fast as possible)")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: acvload [flags]   (verify the unused codes of an export)\n"+
			"       acvload scenario -h   (the load test scenarios)\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	codes, err := loadgen.ReadCodes(*codesFile)
	for _, c := range loadgen.SelectCodes(codes, "", "unused") {
		cfg.Codes = append(cfg.Codes, c.Value)
	}
	if err == nil && len(cfg.Codes) == 0 {
		err = fmt.Errorf("no unused codes in %s", *codesFile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "acvload:", err)
		os.Exit(2)
	}
	rep := loadgen.Run(context.Background(), cfg)
	if *asJSON {
		_ = json.NewEncoder(os.Stdout).Encode(rep)
		return
	}
	fmt.Println(rep)
}

// runScenarios is `acvload scenario [flags] [scenario...]`; its exit code is 0 when every
// threshold of every scenario held, 1 when one did not or a scenario could not run, 2 for a
// usage error.
func runScenarios(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("acvload scenario", flag.ContinueOnError)
	base := fs.String("base", settings.Get("BASE_URL"), "service base URL (default $BASE_URL; required: no port is assumed)")
	key := fs.String("key", settings.Get("API_KEY"), "API key id (default $API_KEY); its secret is read from $API_SECRET only, to keep it off the command line")
	project := fs.String("project", settings.Get("PROJECT_ID"), "the key's project (default $PROJECT_ID)")
	codesFile := fs.String("codes", settings.Get("CODES_FILE"), "export of `acv codes export` (default $CODES_FILE)")
	metricsAddr := fs.String("metrics-addr", "127.0.0.1:9101", "address serving this run's /metrics (a free loopback port when busy; empty: none)")
	targets := fs.String("prometheus-targets", settings.Get("ACV_DEV_PROMETHEUS_TARGETS"),
		"directory of file_sd targets of a Prometheus (acv dev --prometheus writes it to .acv/env as ACV_DEV_PROMETHEUS_TARGETS) to register the metrics address with for the run")
	linger := fs.Duration("linger", 15*time.Second, "after the last scenario, how long to wait for that Prometheus to scrape the final numbers")
	jsonOut := fs.String("json", "", "write the results as JSON to this file")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: acvload scenario [flags] [%s]  (default: all, in that order)\n\n"+
			"Settings come from the environment (loadtest/README.md): DURATION, REDEEM_RATE, CONTENTION_VUS, …, and the\n"+
			"thresholds P95_MS, P99_MS, MAX_FAILED_RATE, MIN_CHECKS_RATE.\n\n", strings.Join(loadgen.Scenarios, " "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	names := fs.Args()
	if len(names) == 0 {
		names = loadgen.Scenarios
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "acvload scenario: "+format+"\n", a...)
		return 2
	}
	for _, n := range names {
		if !slices.Contains(loadgen.Scenarios, n) {
			return usage("no scenario %q (scenarios: %s)", n, strings.Join(loadgen.Scenarios, ", "))
		}
	}
	secret := settings.Get("API_SECRET")
	if *base == "" || *key == "" || secret == "" || *project == "" || *codesFile == "" {
		return usage("-base, -key, -project, -codes (or BASE_URL, API_KEY, PROJECT_ID, CODES_FILE) and API_SECRET are required")
	}
	scenarios, err := loadgen.SettingsFromEnv(settings.Get)
	if err != nil {
		return usage("%v", err)
	}
	codes, err := loadgen.ReadCodes(*codesFile)
	if err != nil {
		return usage("%v", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r := &loadgen.Runner{
		Target:   loadgen.Target{BaseURL: *base, KeyID: *key, Secret: secret, ProjectID: *project},
		Codes:    codes,
		Settings: scenarios,
		Metrics:  loadgen.NewMetrics(reg),
		Log:      os.Stderr,
	}
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "acvload scenario:", err)
		return 1
	}
	var scraped *atomic.Int64
	if *metricsAddr != "" {
		ln, last, err := serveMetrics(*metricsAddr, reg)
		if err != nil {
			return fail(err)
		}
		defer ln.Close()
		where := ""
		if *targets != "" {
			remove, err := localenv.RegisterScrapeTarget(*targets, "acvload", ln.Addr().String(), nil)
			if err != nil {
				return fail(err)
			}
			defer remove()
			scraped = last
			where = " (registered with the Prometheus of " + *targets + ")"
		}
		fmt.Fprintf(os.Stderr, "acvload metrics: http://%s/metrics%s\n", ln.Addr(), where)
	}

	// One line a scenario: load-phase requests, requests/s, p95 and p99, and the verdict.
	table := []string{fmt.Sprintf("\n%-11s %9s %9s %9s %9s  %s", "scenario", "requests", "req/s", "p95 ms", "p99 ms", "result")}
	notRun := func(name, why string) string {
		return fmt.Sprintf("%-11s %9s %9s %9s %9s  %s", name, "-", "-", "-", "-", why)
	}
	var results []loadgen.Result
	failed := false
	for _, name := range names {
		if ctx.Err() != nil {
			table = append(table, notRun(name, "not run (interrupted)"))
			continue
		}
		res, err := r.Run(ctx, name)
		if err != nil {
			fail(err)
			failed = true
			table = append(table, notRun(name, "FAIL (could not run)"))
			continue
		}
		results = append(results, res)
		verdict := "pass"
		if !res.Passed() {
			failed = true
			verdict = "FAIL (thresholds: " + strings.Join(res.Failing(), ", ") + ")"
		}
		table = append(table, fmt.Sprintf("%-11s %9d %9.1f %9.1f %9.1f  %s", name, res.Requests, res.RPS, res.P95Ms, res.P99Ms, verdict))
	}
	end := time.Now()
	fmt.Println(strings.Join(table, "\n"))
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fail(err)
			failed = true
		}
	}
	// The final counts reach Prometheus only with a scrape after the run.
	if scraped != nil {
		deadline := time.Now().Add(*linger)
		for scraped.Load() <= end.UnixNano() && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if failed || ctx.Err() != nil {
		return 1
	}
	return 0
}

// serveMetrics serves reg on addr, or on a free loopback port when addr is busy; last holds
// the time of the last scrape, in unix nanoseconds.
func serveMetrics(addr string, reg *prometheus.Registry) (ln net.Listener, last *atomic.Int64, err error) {
	if ln, err = net.Listen("tcp", addr); err != nil {
		fmt.Fprintf(os.Stderr, "acvload: %s is busy (%v); serving metrics on a free port\n", addr, err)
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, nil, err
		}
	}
	last = new(atomic.Int64)
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		t := time.Now()
		h.ServeHTTP(w, r)
		last.Store(t.UnixNano())
	})
	go func() { _ = (&http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}).Serve(ln) }()
	return ln, last, nil
}
