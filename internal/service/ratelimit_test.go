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

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/testkit"
)

// The bound for the per-key limit across replicas: one key limited to R requests a
// second, driven from 3 API replicas at 5R for 10 s with real concurrency, gets between 0.9R
// and 1.1R admitted per second over the window (the 10 s after a first second, which also
// spends the full bucket), and a 429 with Retry-After for the rest. Each replica admits from a
// local lease of the key's Redis bucket (cache/lease.go); the test reports how many Redis calls
// the limit cost.
//
// The replicas are `acv serve` processes, as deployed (the test binary's race detector would
// make three in-process replicas too slow to be offered 5R on two cores), on one Redis and on
// the 3-master cluster. Every request verifies a code of its own, so an admitted request is a
// success whose verified_at, taken from the clock the bucket reads, says in which second the
// replica admitted it, however late the answer reached the client.
func TestRateLimitAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s of load, twice")
	}
	testkit.OnEachRedis(t, testRateLimitAcrossReplicas)
}

func testRateLimitAcrossReplicas(t *testing.T) {
	const (
		rate     = 100
		burst    = 10 // a tenth of a second: small, yet a replica stalled 50 ms loses no token
		offered  = 5 * rate
		window   = 10 // seconds measured, after a first second that spends the full bucket
		workers  = 96
		replicas = 3
	)
	ctx := context.Background()
	s := testkit.NewStack(t)
	settings := s.ProcessSettings(t)
	settings["ACV_ROLES"] = "api" // the events wait in the outbox: this test reads Redis only
	p, err := s.Admin.CreateProject(ctx, contract.NewProject{Name: "rate limit"})
	if err != nil {
		t.Fatal(err)
	}
	key, err := s.Admin.CreateAPIKey(ctx, p.ID, rate, burst)
	if err != nil {
		t.Fatal(err)
	}
	codes := make([]string, offered*(window+2))
	for i := range codes {
		codes[i] = fmt.Sprintf("RL-%06d", i)
	}
	s.ImportCodes(p.ID, nil, codes...)
	signers := make([]*testkit.Signer, replicas)
	for i := range signers {
		svc := testkit.StartService(t, fmt.Sprintf("api-%d", i+1), settings)
		signers[i] = s.Signer(t, "http://"+svc.HTTPAddr, key)
	}
	path := testkit.VerifyPath(p.ID)
	// Warm every replica's key cache; the bucket then refills to its burst.
	for _, sg := range signers {
		if r := sg.Post(path, map[string]any{"code": "RL-NOPE"}, nil); r.Status != http.StatusOK {
			t.Fatalf("warm-up: %d %s", r.Status, r.Body)
		}
	}
	time.Sleep(time.Second)
	calls := redisCallCounter(t, s)

	var (
		mu       sync.Mutex
		admitted = map[int64]int{} // verified_at second → successes
		refused  int
		errs     atomic.Int64
		sent     atomic.Int64
		wg       sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		if errs.Add(1) <= 3 {
			t.Errorf(format, args...)
		}
	}
	jobs := make(chan int, offered)
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second))) // whole seconds
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				body := []byte(`{"code":"` + codes[i] + `"}`)
				req := signers[i%replicas].Build(testkit.Request{Method: http.MethodPost, Path: path, Body: body, Nonce: testkit.Nonce()})
				resp, err := s.HTTP.Do(req)
				if err != nil {
					fail("verify: %v", err)
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					var v contract.VerifyResponse
					if err := json.Unmarshal(b, &v); err != nil || !v.Success || v.VerifiedAt == nil {
						fail("an admitted verify of a fresh code did not succeed: %s", b)
						continue
					}
					mu.Lock()
					admitted[*v.VerifiedAt]++
					mu.Unlock()
				case http.StatusTooManyRequests:
					if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || n < 1 {
						fail("429 with Retry-After %q", resp.Header.Get("Retry-After"))
					}
					mu.Lock()
					refused++
					mu.Unlock()
				default:
					fail("verify answered %d %s", resp.StatusCode, b)
				}
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

	first := start.Unix()
	perSec := make([]string, 0, window)
	var lo, hi float64 = math.MaxFloat64, 0
	inWindow, outside := 0, 0
	for sec, n := range admitted {
		if sec < first+1 || sec > first+window {
			outside += n
		}
	}
	for sec := first + 1; sec <= first+window; sec++ {
		n := admitted[sec]
		inWindow += n
		lo, hi = min(lo, float64(n)/rate), max(hi, float64(n)/rate)
		perSec = append(perSec, strconv.Itoa(n))
	}
	mean := float64(inWindow) / window / rate
	stats := calls()
	answered := inWindow + outside + refused
	line := fmt.Sprintf("offered %.0f/s through %d replicas (%d sent in %v), admitted in the first second %d, then per second [%s] (mean %.3f R, min %.3f, max %.3f), %d outside the window; %d 429; "+
		"redis commands (scripts' own included) %s, lease calls %.3f per request",
		float64(sent.Load())/elapsed.Seconds(), replicas, sent.Load(), elapsed.Round(time.Millisecond), admitted[first],
		strings.Join(perSec, " "), mean, lo, hi, outside-admitted[first], refused, stats, float64(stats["evalsha"]-int64(inWindow+outside))/float64(max(answered, 1)))
	testkit.Report(t, "%s", line)
	if errs.Load() != 0 {
		t.Errorf("%d answers neither a success nor a 429", errs.Load())
	}
	if float64(sent.Load()) < 0.8*offered*(window+1) {
		t.Fatalf("only %d requests offered in %v: the machine could not drive 5R", sent.Load(), elapsed)
	}
	if mean < 0.9 || mean > 1.1 {
		t.Errorf("admitted %.3f R per second over the window, want within [0.9, 1.1] R", mean)
	}
	// Each second on its own stays near R too: leases do not bunch admissions into some
	// seconds (a looser bound, since a lease taken at the end of a second may be spent in
	// the next).
	if lo < 0.8 || hi > 1.2 {
		t.Errorf("admitted per second [%s], want every second within [%.0f, %.0f]", strings.Join(perSec, " "), 0.8*rate, 1.2*rate)
	}
}

// redisCalls is INFO commandstats' call counts of the hot path's commands, summed over the
// stack's Redis nodes.
type redisCalls map[string]int64

func (c redisCalls) String() string {
	b, _ := json.Marshal(map[string]int64(c))
	return string(b)
}

// redisCallCounter resets the command statistics of every Redis node of the stack and returns
// a function that reads what was called since.
func redisCallCounter(t *testing.T, s *testkit.Stack) func() redisCalls {
	t.Helper()
	ctx := context.Background()
	var addrs []string
	if s.RedisCluster != nil {
		addrs = s.RedisCluster.Addrs()
	} else {
		addrs = []string{s.Redis.Addr}
	}
	clients := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a})
		t.Cleanup(func() { clients[i].Close() })
		if err := clients[i].ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return func() redisCalls {
		out := redisCalls{}
		for _, c := range clients {
			info, err := c.Info(ctx, "commandstats").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(info, "\n") {
				name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
				if !ok || !strings.HasPrefix(name, "cmdstat_") {
					continue
				}
				name = strings.TrimPrefix(name, "cmdstat_")
				switch name {
				case "info", "config|resetstat", "ping", "hello", "cluster|slots", "cluster|shards", "client|setinfo", "command":
					continue
				}
				for _, kv := range strings.Split(rest, ",") {
					if v, ok := strings.CutPrefix(kv, "calls="); ok {
						n, err := strconv.ParseInt(v, 10, 64)
						if err != nil {
							t.Fatalf("commandstats %q: %v", line, err)
						}
						out[name] += n
					}
				}
			}
		}
		return out
	}
}
