package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/loadtest/loadgen"
)

// defaultMetricsAddr is where acvload serves /metrics while it is free (next to acv dev's
// 127.0.0.1:9100).
const defaultMetricsAddr = "127.0.0.1:9101"

// runScenarios is `acvload scenario [flags] [scenario...]`: it runs the scenarios in order and
// returns the exit code: 0 when every threshold of every scenario held, 1 when one did not or a
// scenario could not run, 2 for a usage error.
func runScenarios(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("acvload scenario", flag.ContinueOnError)
	base := fs.String("base", os.Getenv("BASE_URL"), "service base URL (default $BASE_URL; required: no port is assumed)")
	key := fs.String("key", os.Getenv("API_KEY"), "API key id (default $API_KEY); its secret is read from $API_SECRET only, to keep it off the command line")
	project := fs.String("project", os.Getenv("PROJECT_ID"), "the key's project (default $PROJECT_ID)")
	codesFile := fs.String("codes", os.Getenv("CODES_FILE"), "export of `acv codes export` (default $CODES_FILE)")
	metricsAddr := fs.String("metrics-addr", defaultMetricsAddr, "address serving this run's /metrics (a free loopback port when busy; empty: none)")
	targets := fs.String("prometheus-targets", os.Getenv("ACV_DEV_PROMETHEUS_TARGETS"),
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
	secret := os.Getenv("API_SECRET")
	if *base == "" || *key == "" || secret == "" || *project == "" || *codesFile == "" {
		return usage("-base, -key, -project, -codes (or BASE_URL, API_KEY, PROJECT_ID, CODES_FILE) and API_SECRET are required")
	}
	settings, err := loadgen.SettingsFromEnv(os.Getenv)
	if err != nil {
		return usage("%v", err)
	}
	codes, err := loadgen.ReadCodesFile(*codesFile)
	if err != nil {
		return usage("%v", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r := &loadgen.Runner{
		Target:   loadgen.Target{BaseURL: *base, KeyID: *key, Secret: secret, ProjectID: *project},
		Codes:    codes,
		Settings: settings,
		Metrics:  loadgen.NewMetrics(reg),
		Log:      os.Stderr,
	}
	var scraped func(after time.Time) bool
	if *metricsAddr != "" {
		srv, err := serveMetrics(*metricsAddr, reg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "acvload scenario:", err)
			return 1
		}
		defer srv.close()
		where := ""
		if *targets != "" {
			remove, err := localenv.RegisterScrapeTarget(*targets, "acvload", srv.addr, nil)
			if err != nil {
				fmt.Fprintln(os.Stderr, "acvload scenario:", err)
				return 1
			}
			defer remove()
			scraped = srv.scrapedAfter
			where = " (registered with the Prometheus of " + *targets + ")"
		}
		fmt.Fprintf(os.Stderr, "acvload metrics: http://%s/metrics%s\n", srv.addr, where)
	}

	var results []loadgen.Result
	failed := false
	var errs []string
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		res, err := r.Run(ctx, name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "acvload scenario:", err)
			errs = append(errs, name)
			failed = true
			continue
		}
		results = append(results, res)
		failed = failed || !res.Passed()
	}
	end := time.Now()
	printTable(os.Stdout, names, results, errs)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "acvload scenario:", err)
			failed = true
		}
	}
	// The final counts reach Prometheus only with a scrape after the run.
	if scraped != nil {
		deadline := time.Now().Add(*linger)
		for !scraped(end) && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if failed || ctx.Err() != nil {
		return 1
	}
	return 0
}

// printTable prints one line a scenario: load-phase requests, requests/s, p95 and p99, and the
// verdict (as loadtest/run-k6.sh prints k6's).
func printTable(w io.Writer, names []string, results []loadgen.Result, errs []string) {
	fmt.Fprintf(w, "\n%-11s %9s %9s %9s %9s  %s\n", "scenario", "requests", "req/s", "p95 ms", "p99 ms", "result")
	for _, n := range names {
		i := slices.IndexFunc(results, func(r loadgen.Result) bool { return r.Scenario == n })
		switch {
		case i >= 0:
			r := results[i]
			verdict := "pass"
			if !r.Passed() {
				var failing []string
				for _, t := range r.Thresholds {
					if !t.Pass {
						failing = append(failing, t.Metric)
					}
				}
				verdict = "FAIL (thresholds: " + strings.Join(failing, ", ") + ")"
			}
			fmt.Fprintf(w, "%-11s %9d %9.1f %9.1f %9.1f  %s\n", n, r.Requests, r.RPS, r.P95Ms, r.P99Ms, verdict)
		case slices.Contains(errs, n):
			fmt.Fprintf(w, "%-11s %9s %9s %9s %9s  %s\n", n, "-", "-", "-", "-", "FAIL (could not run)")
		default:
			fmt.Fprintf(w, "%-11s %9s %9s %9s %9s  %s\n", n, "-", "-", "-", "-", "not run (interrupted)")
		}
	}
}

// metricsServer serves the run's /metrics and notes when it was last scraped.
type metricsServer struct {
	addr string
	hs   *http.Server
	last atomic.Int64 // unix nanoseconds of the last scrape
}

// serveMetrics serves reg on addr, or on a free loopback port when addr is busy.
func serveMetrics(addr string, reg *prometheus.Registry) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		port, perr := localenv.FreePort()
		if perr != nil {
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
		fmt.Fprintf(os.Stderr, "acvload: %s is busy (%v); serving metrics on a free port\n", addr, err)
		if ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err != nil {
			return nil, err
		}
	}
	s := &metricsServer{addr: ln.Addr().String()}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		t := time.Now()
		h.ServeHTTP(w, r)
		s.last.Store(t.UnixNano())
	})
	s.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.hs.Serve(ln) }()
	return s, nil
}

// scrapedAfter tells whether /metrics was gathered after t.
func (s *metricsServer) scrapedAfter(t time.Time) bool { return s.last.Load() > t.UnixNano() }

func (s *metricsServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.hs.Shutdown(ctx)
}
