package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/internal/testkit"
)

// The bound for the per-key limit across replicas: one key limited to R requests a
// second, driven from 3 API replicas at 5R for 10 s with real concurrency, gets between 0.9R
// and 1.1R admitted in every second of the window (the 10 s after a first second, which also
// spends the full bucket), and a 429 with Retry-After for the rest.
// Each replica admits from a local lease of the key's Redis bucket (cache/lease.go), so the
// test also reports how many Redis calls the limit cost.
func TestRateLimitAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s of load")
	}
	const (
		rate    = 200
		burst   = 20 // a tenth of a second: small, yet a replica stalled 50 ms loses no token
		offered = 5 * rate
		window  = 10 // seconds measured, after a first second that spends the full bucket
		workers = 96
	)
	s := testkit.NewStack(t)
	bases := s.StartAPIs(3)
	tn := s.NewTenant(nil)
	ctx := context.Background()
	key, err := s.Admin.CreateAPIKey(ctx, tn.ProjectID, rate, burst)
	if err != nil {
		t.Fatal(err)
	}
	path := testkit.VerifyPath(tn.ProjectID)
	signers := make([]*testkit.Signer, len(bases))
	for i, b := range bases {
		signers[i] = s.Signer(t, b, key)
	}
	// Warm every replica's key cache and the unknown code's negative entry.
	for _, sg := range signers {
		if r := sg.Post(path, map[string]any{"code": "RL-NOPE"}, nil); r.Status != http.StatusOK {
			t.Fatalf("warm-up: %d %s", r.Status, r.Body)
		}
	}
	time.Sleep(time.Second) // the bucket refills to its burst

	rdb := redis.NewClient(&redis.Options{Addr: s.Redis.Addr})
	defer rdb.Close()
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	// Answers are counted in the second the server wrote them (their Date header), so a client
	// goroutine scheduled late on a busy machine does not move an answer to the next second.
	type answer struct {
		at     time.Duration
		status int
		retry  string
	}
	var (
		mu      sync.Mutex
		answers []answer
		errs    atomic.Int64
		sent    atomic.Int64
		wg      sync.WaitGroup
	)
	body := []byte(`{"code":"RL-NOPE"}`)
	jobs := make(chan int, offered)
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second))) // whole seconds
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				sg := signers[i%len(signers)]
				req := sg.Build(testkit.Request{Method: http.MethodPost, Path: path, Body: body, Nonce: testkit.Nonce()})
				resp, err := s.HTTP.Do(req)
				if err != nil {
					if errs.Add(1) <= 3 {
						t.Errorf("verify: %v", err)
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				a := answer{at: time.Since(start), status: resp.StatusCode, retry: resp.Header.Get("Retry-After")}
				if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
					a.at = d.Sub(start.Truncate(time.Second))
				}
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			}
		}()
	}
	// Open loop: 5R requests a second, released every 10 ms, whatever the answers take.
	tick := time.NewTicker(10 * time.Millisecond)
	for n := 0; time.Since(start) < (window+1)*time.Second; {
		<-tick.C
		due := int(time.Since(start).Seconds() * offered)
		for ; n < due; n++ {
			select {
			case jobs <- n:
				sent.Add(1)
			default: // every worker busy and the queue full: the load is not offered
			}
		}
	}
	tick.Stop()
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)

	admitted := make([]int, window+2)
	var refused, other int
	for _, a := range answers {
		sec := int(a.at / time.Second)
		switch a.status {
		case http.StatusOK:
			admitted[min(sec, window+1)]++
		case http.StatusTooManyRequests:
			refused++
			if n, err := strconv.Atoi(a.retry); err != nil || n < 1 {
				t.Errorf("429 with Retry-After %q", a.retry)
			}
		default:
			other++
		}
	}
	stats := commandCalls(t, rdb)
	total := len(answers)
	var lo, hi float64 = math.MaxFloat64, 0
	var perSec []string
	for sec := 1; sec <= window; sec++ {
		ratio := float64(admitted[sec]) / rate
		lo, hi = min(lo, ratio), max(hi, ratio)
		perSec = append(perSec, strconv.Itoa(admitted[sec]))
	}
	t.Logf("offered %.0f/s (%d sent in %v, %d answered), admitted in the first second %d, then per second [%s] (+%d after), ratio to R min %.3f max %.3f; %d 429, %d other",
		float64(sent.Load())/elapsed.Seconds(), sent.Load(), elapsed.Round(time.Millisecond), total,
		admitted[0], strings.Join(perSec, " "), admitted[window+1], lo, hi, refused, other)
	// commandstats counts the commands scripts run too: each admitted verify is one apply.lua
	// call (EVALSHA) that runs one EXISTS; the other script calls are lease and give-back
	// calls, the other EXISTS the replay check of a refused request (401 before 429).
	ok := int64(total - refused)
	t.Logf("redis commands (scripts' own included): %s; lease calls %.3f per request, replay checks of refused requests %.3f per 429",
		stats, float64(stats["evalsha"]-ok)/float64(total), float64(stats["exists"]-ok)/float64(max(refused, 1)))
	if other != 0 || errs.Load() != 0 {
		t.Errorf("%d answers neither 200 nor 429, %d transport errors", other, errs.Load())
	}
	if float64(sent.Load()) < 0.8*offered*(window+1) {
		t.Fatalf("only %d requests offered in %v: the machine could not drive 5R", sent.Load(), elapsed)
	}
	if lo < 0.9 || hi > 1.1 {
		t.Errorf("admitted per second [%s], want every second within [%.0f, %.0f]", strings.Join(perSec, " "), 0.9*rate, 1.1*rate)
	}
}

// redisCalls is INFO commandstats' call counts of the commands the hot path sends.
type redisCalls map[string]int64

func (c redisCalls) total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

func (c redisCalls) String() string {
	b, _ := json.Marshal(map[string]int64(c))
	return string(b)
}

func commandCalls(t *testing.T, rdb *redis.Client) redisCalls {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := redisCalls{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatal(fmt.Errorf("commandstats %q: %w", line, err))
				}
				switch name {
				case "xreadgroup", "xack", "xdel", "xautoclaim", "multi", "exec", "info", "config|resetstat", "ping":
				default:
					out[name] = n
				}
			}
		}
	}
	return out
}
