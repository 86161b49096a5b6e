// Command acvload drives signed verify requests at a running acv and reports throughput and
// latency percentiles. It signs every request itself, with the contract's six-line string, so
// what it measures is the service's authentication and hot path, not a shortcut.
//
//	acv codes export --project P -o codes.csv
//	acvload -base http://127.0.0.1:8080 -key K -secret S -project P -codes codes.csv -c 64 -d 10s
package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acv/acv/api"
	"github.com/acv/acv/api/client"
)

// Report is what one run measured; -json prints it for scripts.
type Report struct {
	Requests   int64   `json:"requests"`
	Errors     int64   `json:"errors"`
	Successes  int64   `json:"successes"`
	Seconds    float64 `json:"seconds"`
	RPS        float64 `json:"rps"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
	CPUSeconds float64 `json:"cpu_seconds"`
}

func main() {
	base := flag.String("base", "http://127.0.0.1:8080", "service base URL")
	key := flag.String("key", "", "API key id")
	secret := flag.String("secret", "", "API secret")
	project := flag.String("project", "", "project id")
	codesFile := flag.String("codes", "", "CSV of codes (acv codes export); unused ones are verified once each")
	conc := flag.Int("c", 64, "concurrent connections")
	dur := flag.Duration("d", 10*time.Second, "duration")
	rate := flag.Float64("rate", 0, "target requests per second in total (0: as fast as possible)")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	flag.Parse()
	codes, err := readCodes(*codesFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "acvload:", err)
		os.Exit(2)
	}
	rep := run(*base, *key, *secret, *project, codes, *conc, *dur, *rate)
	if *asJSON {
		_ = json.NewEncoder(os.Stdout).Encode(rep)
		return
	}
	fmt.Printf("requests %d  errors %d  successes %d  %.0f req/s  p50 %.2f ms  p99 %.2f ms  max %.2f ms  loadgen cpu %.1f s\n",
		rep.Requests, rep.Errors, rep.Successes, rep.RPS, rep.P50Ms, rep.P99Ms, rep.MaxMs, rep.CPUSeconds)
}

func readCodes(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open codes: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	var out []string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read codes: %w", err)
		}
		if len(rec) > 2 && rec[2] == "unused" {
			out = append(out, rec[1])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no unused codes in %s", path)
	}
	return out, nil
}

func run(base, key, secret, project string, codes []string, conc int, dur time.Duration, rate float64) Report {
	tr := &http.Transport{MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}
	cl := &client.Client{BaseURL: base, KeyID: key, Secret: secret, Nonce: true, HTTP: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
	var next, reqs, errs, oks atomic.Int64
	lat := make([][]time.Duration, conc)
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var tick <-chan time.Time
	if rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer t.Stop()
		tick = t.C
	}
	cpu0 := cpuSeconds()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for ctx.Err() == nil {
				if tick != nil {
					select {
					case <-tick:
					case <-ctx.Done():
						return
					}
				}
				i := next.Add(1) - 1
				if i >= int64(len(codes)) {
					return
				}
				t0 := time.Now()
				r, _, err := cl.Verify(context.Background(), project, api.VerifyRequest{Code: codes[i]}, client.Options{})
				lat[w] = append(lat[w], time.Since(t0))
				reqs.Add(1)
				switch {
				case err != nil:
					errs.Add(1)
				case r.Success:
					oks.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
	}
	return Report{Requests: reqs.Load(), Errors: errs.Load(), Successes: oks.Load(), Seconds: elapsed,
		RPS: float64(reqs.Load()) / elapsed, P50Ms: pct(0.50), P99Ms: pct(0.99), MaxMs: pct(1),
		CPUSeconds: cpuSeconds() - cpu0}
}
