// Package loadgen drives signed verify requests at a server and measures throughput and
// latency. It signs every request itself with the contract's six-line string (a fresh nonce
// and timestamp each), so a run against acv measures authentication and the hot path, and a
// run against a bare handler costs the load generator exactly the same.
package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/acv/acv/api/contract"
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
	// At a target rate each connection keeps its own staggered schedule; a late request is
	// followed at once by the next until the schedule is met again.
	var interval time.Duration
	if cfg.Rate > 0 {
		interval = time.Duration(float64(cfg.Concurrency) * float64(time.Second) / cfg.Rate)
	}
	success := []byte(`"success":true`)
	cpu0 := CPUSeconds()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < cfg.Concurrency; w++ {
		wg.Go(func() {
			lat[w] = make([]time.Duration, 0, 1<<14)
			sg := &signer{host: u.Host, path: path, keyID: cfg.KeyID, secret: cfg.Secret}
			var c *conn
			defer func() {
				if c != nil {
					c.c.Close()
				}
			}()
			var req, body []byte
			due := time.Now().Add(time.Duration(w) * interval / time.Duration(cfg.Concurrency))
			for ctx.Err() == nil {
				if interval > 0 {
					if !sleepUntil(ctx, due) {
						return
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
					nc, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
					if err != nil {
						errs.Add(1)
						reqs.Add(1)
						continue
					}
					c = &conn{c: nc, r: bufio.NewReaderSize(nc, 16<<10)}
				}
				status, answer, err := c.roundTrip(req)
				lat[w] = append(lat[w], time.Since(t0))
				reqs.Add(1)
				switch {
				case err != nil:
					errs.Add(1)
					c.c.Close()
					c = nil
				case status != 200:
					errs.Add(1)
				case bytes.Contains(answer, success):
					oks.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	all := slices.Concat(lat...)
	return Report{Requests: reqs.Load(), Errors: errs.Load(), Successes: oks.Load(), Seconds: elapsed,
		RPS: float64(reqs.Load()) / elapsed, P50Ms: PercentileMs(all, 50), P99Ms: PercentileMs(all, 99), MaxMs: PercentileMs(all, 100),
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

// conn is one keep-alive HTTP/1.1 connection driven by hand, as wrk drives its connections: a
// request is written in one piece and the answer read by its Content-Length. Go's net/http
// client would spend more CPU than the server it measures.
type conn struct {
	c    net.Conn
	r    *bufio.Reader
	body []byte
}

// signer builds signed verify requests; each worker has its own, so nothing is shared.
type signer struct {
	host, path, keyID, secret string
	nonce                     [16]byte
}

// verifyRequest renders a signed POST of body, with a fresh nonce and the current timestamp.
func (s *signer) verifyRequest(dst []byte, body []byte, now time.Time) []byte {
	_, _ = rand.Read(s.nonce[:])
	nonce := hex.EncodeToString(s.nonce[:])
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := contract.Sign(s.secret, contract.StringToSign("POST", s.path, "", contract.BodySHA256(body), ts, nonce))
	dst = append(dst[:0], "POST "...)
	dst = append(dst, s.path...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, s.host...)
	dst = append(dst, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\nX-API-Key: "...)
	dst = append(dst, s.keyID...)
	dst = append(dst, "\r\nX-Timestamp: "...)
	dst = append(dst, ts...)
	dst = append(dst, "\r\nX-Nonce: "...)
	dst = append(dst, nonce...)
	dst = append(dst, "\r\nX-Signature: "...)
	dst = append(dst, sig...)
	dst = append(dst, "\r\n\r\n"...)
	return append(dst, body...)
}

var errChunked = errors.New("chunked answers are not supported")

// roundTrip writes req and reads one answer; the body stays valid until the next call.
func (c *conn) roundTrip(req []byte) (int, []byte, error) {
	if _, err := c.c.Write(req); err != nil {
		return 0, nil, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	length := -1
	for {
		h, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		if len(h) <= 2 {
			break
		}
		if name, value, ok := bytes.Cut(h, []byte(":")); ok {
			switch {
			case bytes.EqualFold(name, []byte("Content-Length")):
				length, err = strconv.Atoi(string(bytes.TrimSpace(value)))
				if err != nil {
					return 0, nil, fmt.Errorf("bad Content-Length %q", value)
				}
			case bytes.EqualFold(name, []byte("Transfer-Encoding")):
				return 0, nil, errChunked
			}
		}
	}
	if length < 0 {
		return 0, nil, errors.New("answer without Content-Length")
	}
	if cap(c.body) < length {
		c.body = make([]byte, length)
	}
	c.body = c.body[:length]
	if _, err := io.ReadFull(c.r, c.body); err != nil {
		return 0, nil, err
	}
	return status, c.body, nil
}
