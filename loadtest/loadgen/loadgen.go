// Package loadgen drives signed verify requests at a server and measures throughput and
// latency. It signs every request itself with the contract's six-line string (a fresh nonce
// and timestamp each), so a run against acv measures authentication and the hot path, and a
// run against a bare handler costs the load generator exactly the same.
package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Config is one run.
type Config struct {
	BaseURL, KeyID, Secret, ProjectID string
	Codes                             []string      // verified in order, each once; the run ends early when they run out
	Concurrency                       int           // connections
	Duration                          time.Duration // run length
	Rate                              float64       // total requests per second; 0 = as fast as possible
}

// Report is what a run measured.
type Report struct {
	Requests   int64   `json:"requests"`
	Errors     int64   `json:"errors"`    // transport errors and non-2xx answers
	Successes  int64   `json:"successes"` // success=true
	Seconds    float64 `json:"seconds"`
	RPS        float64 `json:"rps"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
	CPUSeconds float64 `json:"cpu_seconds"` // this process's CPU during the run
	Used       int     `json:"codes_used"`
}

func (r Report) String() string {
	return fmt.Sprintf("%d requests, %d errors, %d successes, %.0f req/s, p50 %.2f ms, p99 %.2f ms, max %.2f ms, load generator CPU %.1f s",
		r.Requests, r.Errors, r.Successes, r.RPS, r.P50Ms, r.P99Ms, r.MaxMs, r.CPUSeconds)
}

// Run drives verifies until the duration passes or the codes run out.
func Run(ctx context.Context, cfg Config) Report {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || u.Host == "" {
		return Report{Errors: 1}
	}
	path := "/api/v1/projects/" + cfg.ProjectID + "/codes/verify"
	var next, reqs, errs, oks atomic.Int64
	lat := make([][]time.Duration, cfg.Concurrency)
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	// At a target rate each connection keeps its own schedule, staggered from the others, so
	// the total is the target rate however long single requests take (a late request is
	// followed at once by the next, until the schedule is met again).
	var interval time.Duration
	if cfg.Rate > 0 {
		interval = time.Duration(float64(cfg.Concurrency) * float64(time.Second) / cfg.Rate)
	}
	success := []byte(`"success":true`)
	cpu0 := CPUSeconds()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < cfg.Concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			lat[w] = make([]time.Duration, 0, 1<<14)
			sg := &signer{host: u.Host, path: path, keyID: cfg.KeyID, secret: cfg.Secret}
			var c *conn
			defer func() {
				if c != nil {
					c.close()
				}
			}()
			var req, body []byte
			due := time.Now().Add(time.Duration(w) * interval / time.Duration(cfg.Concurrency))
			for ctx.Err() == nil {
				if interval > 0 {
					if d := time.Until(due); d > 0 {
						select {
						case <-time.After(d):
						case <-ctx.Done():
							return
						}
					}
					due = due.Add(interval)
				}
				i := next.Add(1) - 1
				if i >= int64(len(cfg.Codes)) {
					return
				}
				body = append(body[:0], `{"code":`...)
				body = strconv.AppendQuote(body, cfg.Codes[i])
				body = append(body, '}')
				t0 := time.Now()
				req = sg.verifyRequest(req, body, t0)
				if c == nil {
					if c, err = dial(u.Host); err != nil {
						errs.Add(1)
						reqs.Add(1)
						c = nil
						continue
					}
				}
				status, answer, err := c.roundTrip(req)
				lat[w] = append(lat[w], time.Since(t0))
				reqs.Add(1)
				if err != nil {
					errs.Add(1)
					c.close()
					c = nil
					continue
				}
				if status != 200 {
					errs.Add(1)
					continue
				}
				if bytes.Contains(answer, success) {
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
		CPUSeconds: CPUSeconds() - cpu0, Used: int(min(next.Load(), int64(len(cfg.Codes))))}
}

// CPUSeconds is this process's user+system CPU time, to show the load generator's own share.
func CPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
