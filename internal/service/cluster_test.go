package service_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/internal/testkit"
)

// The suites written for one Redis run unchanged on a 3-master Redis Cluster: every key a
// script names is in one slot, and every part (API, relay, operator commands) takes the
// cluster from ACV_REDIS_URL.

func TestContractOnRedisCluster(t *testing.T) {
	testkit.UseRedisCluster(t)
	TestContract(t)
}

func TestContentionOnRedisCluster(t *testing.T) {
	testkit.UseRedisCluster(t)
	TestContentionRedeemsOnceAcrossReplicas(t)
}

func TestCyclesOnRedisCluster(t *testing.T) {
	testkit.UseRedisCluster(t)
	TestVerifyReactivateCycles(t)
}

func TestBadInputOnRedisCluster(t *testing.T) {
	testkit.UseRedisCluster(t)
	TestBadInput(t)
}

// ACV_REDIS_URL names one Redis or a cluster; a cluster URL that the service would misread is
// refused at start, not half-used.
func TestRedisURLForms(t *testing.T) {
	for _, tc := range []struct {
		url     string
		cluster bool
		addrs   []string
		err     string
	}{
		{url: "redis://127.0.0.1:6379/0"},
		{url: "redis://:secret@127.0.0.1:6379/2?pool_size=7"},
		{url: "rediss://127.0.0.1:6380"},
		{url: "redis-cluster://127.0.0.1:7000", cluster: true, addrs: []string{"127.0.0.1:7000"}},
		{url: "redis-cluster://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002", cluster: true,
			addrs: []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}},
		{url: "rediss-cluster://u:p@10.0.0.1:7000/0?addr=10.0.0.2:7000", cluster: true, addrs: []string{"10.0.0.1:7000", "10.0.0.2:7000"}},
		{url: "redis://127.0.0.1:7000?addr=127.0.0.1:7001", cluster: true, addrs: []string{"127.0.0.1:7000", "127.0.0.1:7001"}},
		{url: "redis-cluster://127.0.0.1:7000/3", err: "database 0 only"},
		{url: "redis-cluster://127.0.0.1:7000?addr=nonsense", err: "addr"},
		{url: "redis-cluster://127.0.0.1:7000?db=2", err: "unexpected option"},
		{url: "memcached://127.0.0.1:11211", err: "scheme"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			rdb, err := service.NewRedisClient(tc.url, 10)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			cc, isCluster := rdb.(*redis.ClusterClient)
			if isCluster != tc.cluster {
				t.Fatalf("client %T, want a cluster client: %v", rdb, tc.cluster)
			}
			if isCluster {
				o := cc.Options()
				if fmt.Sprint(o.Addrs) != fmt.Sprint(tc.addrs) || o.PoolSize != 10 {
					t.Fatalf("cluster options: addrs %v pool %d, want %v and 10", o.Addrs, o.PoolSize, tc.addrs)
				}
			}
		})
	}
}

// TestClusterSpreadsOneProject verifies 30,000 codes of one project through three API
// replicas on a 3-master cluster: every verify succeeds once, every log reaches PostgreSQL
// exactly once, and each master holds and serves between 25% and 42% of them (its share of
// the keys, INFO keyspace; of the verify script's calls, INFO commandstats).
func TestClusterSpreadsOneProject(t *testing.T) {
	if testing.Short() {
		t.Skip("30,000 verifies")
	}
	const n = 30_000
	s := testkit.NewStackWith(t, testkit.StackOptions{RedisCluster: true})
	s.Config.Pipeline = service.PipelineDirect // the relay writes PostgreSQL: no broker to feed on 2 cores
	bases := s.StartAPIs(3)
	s.StartRelay("relay-a")
	tn := s.NewTenant(nil, bases...)
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("SPREAD-%06d", i)
	}
	ctx := context.Background()
	masters := clusterMasters(t, s)
	keysBefore := keyCounts(t, masters)
	for i := 0; i < n; i += 5000 {
		s.ImportCodes(tn.ProjectID, nil, values[i:i+5000]...)
	}
	for _, m := range masters {
		if err := m.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}

	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < 48; w++ {
		c := tn.Clients[w%len(tn.Clients)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				r, _, err := c.Verify(ctx, tn.ProjectID, contract.VerifyRequest{Code: values[i]}, client.Options{})
				if err != nil || !r.Success {
					if failed.Add(1) <= 5 {
						t.Errorf("verify %s: %+v %v", values[i], r, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d of %d verifies did not succeed", f, n)
	}

	// Each master's new keys are its codes and the replay markers their verifies wrote beside
	// them.
	keysAfter := keyCounts(t, masters)
	calls := scriptCalls(t, masters)
	var totalKeys, totalCalls int64
	for i := range masters {
		totalKeys += keysAfter[i] - keysBefore[i]
		totalCalls += calls[i]
	}
	// (Beside them, up to one outbox list and one relay lease a shard, and the relays' member
	// set, if the relay had not made them yet when the keys were first counted.)
	if totalCalls < n || totalKeys < 2*n || totalKeys > 2*n+2*cache.Shards+1 {
		t.Fatalf("%d verify script calls over the masters, want at least %d; %d new keys, want %d", totalCalls, n, totalKeys, 2*n)
	}
	var report []string
	for i, m := range masters {
		keyShare := float64(keysAfter[i]-keysBefore[i]) / float64(totalKeys)
		callShare := float64(calls[i]) / float64(totalCalls)
		report = append(report, fmt.Sprintf("%s: %.1f%% of the new keys, %.1f%% of script calls (%d)",
			m.Options().Addr, 100*keyShare, 100*callShare, calls[i]))
		for what, share := range map[string]float64{"keys": keyShare, "script calls": callShare} {
			if share < 0.25 || share > 0.42 {
				t.Errorf("master %s holds %.1f%% of the %s, want 25%%..42%%", m.Options().Addr, 100*share, what)
			}
		}
	}
	t.Logf("%d verifies in %s (%.0f/s) through 3 replicas; per master: %s", n, took.Round(time.Millisecond),
		float64(n)/took.Seconds(), strings.Join(report, "; "))

	s.WaitDrained(t, tn.ProjectID, n, 2*time.Minute)
	var logs, codes, successes int
	if err := s.Deps.Store.Pool().QueryRow(ctx,
		`SELECT count(*), count(DISTINCT code_id), count(*) FILTER (WHERE result = 'success')
		 FROM verification_logs WHERE project_id = $1`, tn.ProjectID).Scan(&logs, &codes, &successes); err != nil {
		t.Fatal(err)
	}
	if logs != n || codes != n || successes != n {
		t.Fatalf("postgres holds %d logs of %d codes, %d successes; want %d of each", logs, codes, successes, n)
	}
}

// TestProjectDisableReachesEveryShard disables a project while verifies of codes in every shard
// run through three API replicas: the operator command returns once every shard holds the
// disable, so every verify that starts after it returned answers PROJECT_DISABLED, on every
// replica, and none does later than 1 s after the command started. Reads (the GET endpoints'
// 401) follow within the replicas' key-cache TTL.
func TestProjectDisableReachesEveryShard(t *testing.T) {
	s := testkit.NewStackWith(t, testkit.StackOptions{RedisCluster: true})
	s.Config.Pipeline = service.PipelineDirect
	bases := s.StartAPIs(3)
	s.StartRelay("relay-a")
	tn := s.NewTenant(nil, bases...)
	// At least 2048 codes, and as many more as it takes for every shard to hold some: which
	// shard a value lands in depends on the project id, so a fixed set could miss one.
	var values []string
	shards := map[int]bool{}
	for i := 0; i < 2048 || len(shards) < cache.Shards; i++ {
		if i == 100_000 {
			t.Fatalf("%d codes reach %d of %d shards", i, len(shards), cache.Shards)
		}
		v := fmt.Sprintf("DIS-%05d", i)
		values = append(values, v)
		shards[cache.ShardOf(tn.ProjectID, v)] = true
	}
	s.ImportCodes(tn.ProjectID, nil, values...)
	ctx := context.Background()

	type answer struct {
		start, end time.Time
		code       string
		err        error
	}
	var (
		mu      sync.Mutex
		answers []answer
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for w := 0; w < 24; w++ {
		c := tn.Clients[w%len(tn.Clients)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				a := answer{start: time.Now()}
				r, _, err := c.Verify(ctx, tn.ProjectID, contract.VerifyRequest{Code: values[rng.IntN(len(values))]}, client.Options{})
				a.end, a.err, a.code = time.Now(), err, Deref(r.ErrorCode)
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Second) // verifies in flight on every replica
	t0 := time.Now()
	if err := s.Admin.SetProjectEnabled(ctx, tn.ProjectID, false); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()

	var lastEnabled time.Time
	after := 0
	// The bound is 1 s from the command's start; a machine so loaded that the command itself
	// took longer (its 256 pipelined writes wait for CPU) moves it to the command's return,
	// which verifies started after must always respect. A command slower than 3 s fails.
	bound := time.Second
	if took := t1.Sub(t0); took > bound {
		if took > 3*time.Second {
			t.Fatalf("the disable command took %s", took)
		}
		bound = took
	}
	for _, a := range answers {
		if a.err != nil {
			t.Fatalf("verify failed: %v", a.err)
		}
		disabled := a.code == string(contract.ProjectDisabled)
		if !disabled && a.end.After(lastEnabled) {
			lastEnabled = a.end
		}
		if a.start.After(t1) {
			after++
			if !disabled {
				t.Errorf("a verify started %s after the disable returned answered %q", a.start.Sub(t1), a.code)
			}
		}
		if a.start.After(t0.Add(bound)) && !disabled {
			t.Errorf("a verify started %s after the disable began answered %q", a.start.Sub(t0), a.code)
		}
	}
	if after < 100 {
		t.Fatalf("only %d verifies started after the disable returned", after)
	}
	t.Logf("disable command took %s; last verify not refused ended %s after it began; %d verifies after it returned, all PROJECT_DISABLED (%d verifies in all)",
		t1.Sub(t0).Round(time.Millisecond), lastEnabled.Sub(t0).Round(time.Millisecond), after, len(answers))

	// Reads: each replica's key cache refreshes the project's flag within its TTL.
	for _, b := range bases {
		sg := s.Signer(t, b, tn.Key)
		testkit.WaitFor(t, s.Config.KeyCacheTTL+time.Second, "GET to answer 401 on "+b, func() (bool, string) {
			r := sg.Get(testkit.ProjectPath(tn.ProjectID), "")
			return r.Status == http.StatusUnauthorized, strconv.Itoa(r.Status)
		})
	}
}

// clusterMasters are clients of each master of the stack's cluster.
func clusterMasters(t *testing.T, s *testkit.Stack) []*redis.Client {
	t.Helper()
	nodes, _, err := s.RedisCluster.Masters()
	if err != nil {
		t.Fatal(err)
	}
	var out []*redis.Client
	for _, n := range nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr})
		t.Cleanup(func() { c.Close() })
		out = append(out, c)
	}
	if len(out) != 3 {
		t.Fatalf("%d masters, want 3", len(out))
	}
	return out
}

// keyCounts is each master's key count, from INFO keyspace.
func keyCounts(t *testing.T, masters []*redis.Client) []int64 {
	t.Helper()
	out := make([]int64, len(masters))
	for i, m := range masters {
		info, err := m.Info(context.Background(), "keyspace").Result()
		if err != nil {
			t.Fatal(err)
		}
		// db0:keys=123,expires=4,avg_ttl=5
		if _, rest, ok := strings.Cut(info, "db0:keys="); ok {
			v, _, _ := strings.Cut(rest, ",")
			out[i], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return out
}

// scriptCalls is each master's count of script calls (FCALL and EVALSHA) since CONFIG RESETSTAT.
func scriptCalls(t *testing.T, masters []*redis.Client) []int64 {
	t.Helper()
	out := make([]int64, len(masters))
	for i, m := range masters {
		info, err := m.Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		// The verify script runs by FCALL; the operator scripts by EVALSHA.
		for _, cmd := range []string{"cmdstat_fcall:calls=", "cmdstat_evalsha:calls="} {
			if _, rest, ok := strings.Cut(info, cmd); ok {
				v, _, _ := strings.Cut(rest, ",")
				n, _ := strconv.ParseInt(v, 10, 64)
				out[i] += n
			}
		}
	}
	return out
}
