package service_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
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
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/internal/testkit"
)

// The scale-out issue's acceptance tests: a Redis Cluster changes under live verifies — a third
// of its slots move to another master, or a master dies and its replica takes over — and no
// acknowledged redemption is doubled or lost (lost only where the documented durability allows
// it), every one reaches PostgreSQL once, and the client sees no 5xx beyond what its own retry
// absorbs.

// TestReshardingUnderLoad moves every slot of one master (5461, a third) to another with
// `redis-cli --cluster reshard` while 64 goroutines verify codes through three API replicas,
// each code by two of them at once. Keys move with MIGRATE under the traffic: scripts of a slot
// in migration are answered ASK or TRYAGAIN, then MOVED, and the outboxes move under the
// relay's polls and trims.
func TestReshardingUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("resharding a Redis Cluster under load")
	}
	t.Parallel()
	const n = 8000
	t0 := time.Now()
	c, err := localenv.StartRedisCluster(t.TempDir(), localenv.ClusterOptions{AOF: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s := testkit.NewStackWith(t, testkit.StackOptions{OwnRedisCluster: c})
	s.Config.Pipeline = service.PipelineDirect
	bases := s.StartAPIs(3)
	s.StartRelay("relay-a")
	tn := s.NewTenant(nil, bases...)
	masters, ranges, err := c.Masters()
	if err != nil {
		t.Fatal(err)
	}
	from, to := masters[0], masters[1]
	moving := slotCount(ranges[0])
	// Three codes in four live in 4 of the shards that move, the rest anywhere: a slot is in
	// migration for a few milliseconds, and only traffic concentrated on the moving slots
	// meets them there (ASK, TRYAGAIN) at the request rate of a 2-core machine.
	fromShards := shardsOn(t, s, from)
	hot := hotShards(t, fromShards, 4)
	values := codeValuesOn(tn.ProjectID, "MOVE", n, func(shard int) bool { return hot[shard] }, 3*n/4)
	for i := 0; i < n; i += 4000 {
		s.ImportCodes(tn.ProjectID, nil, values[i:min(i+4000, n)]...)
	}
	redirectsBefore := errorReplies(t, c.Addrs())
	setup := time.Since(t0)

	load := startVerifyLoad(t, tn, values, n, 64)
	time.Sleep(time.Second) // every replica busy before the first slot moves
	moveStart := time.Now()
	if err := c.Reshard(from, to, moving); err != nil {
		load.stop()
		t.Fatal(err)
	}
	moveEnd := time.Now()
	time.Sleep(500 * time.Millisecond) // the traffic goes on past the last slot
	load.stop()

	// The slots moved: the source serves none (Redis 7 made it a replica of the target, which
	// took its last slot: cluster-allow-replica-migration), the target serves its own and the
	// moved ones, and holds the keys of every shard the source held.
	ms, after, err := c.Masters()
	if err != nil {
		t.Fatal(err)
	}
	slotsAfter, rangesAfter := map[string]int{}, map[string][]string{}
	for i, m := range ms {
		slotsAfter[m.Addr], rangesAfter[m.Addr] = slotCount(after[i]), after[i]
	}
	if slotsAfter[from.Addr] != 0 || slotsAfter[to.Addr] != slotCount(ranges[1])+moving {
		t.Fatalf("after the reshard %s serves %d slots and %s %d, want 0 and %d", from.Addr, slotsAfter[from.Addr],
			to.Addr, slotsAfter[to.Addr], slotCount(ranges[1])+moving)
	}
	ctx := context.Background()
	target := nodeClients(t, to.Addr)[0]
	var movedKeys int64
	for _, sh := range fromShards {
		slot, err := target.ClusterKeySlot(ctx, cache.ShardPrefix(sh)).Result()
		if err != nil {
			t.Fatal(err)
		}
		k, err := target.ClusterCountKeysInSlot(ctx, int(slot)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !slotIn(rangesAfter[to.Addr], int(slot)) || hot[sh] && k == 0 {
			t.Fatalf("shard %d (slot %d): the target %s serves it %v and holds %d of its keys", sh, slot, to.Addr,
				slotIn(rangesAfter[to.Addr], int(slot)), k)
		}
		movedKeys += k
	}
	redirects := errorReplies(t, c.Addrs()).minus(redirectsBefore)

	answers := load.result()
	sum := summarize(answers)
	// No 5xx reached the client past its retry, and nothing else went wrong.
	if sum.failed > 0 {
		t.Errorf("%d of %d verifies failed after the client's retries: %s", sum.failed, len(answers), sum.failures)
	}
	// A first attempt answered with a stored outcome was run twice by the service: a plain
	// request run twice is refused as its own replay (401) though it redeemed the code.
	if sum.ranTwice > 0 {
		t.Errorf("%d verifies were run twice by the service (first attempts answered Idempotent-Replayed)", sum.ranTwice)
	}
	// Exactly one success a code: each was verified by two requests at once, and again later.
	for code := range sum.answered {
		if k := sum.successes[code]; k != 1 {
			t.Errorf("code %s redeemed %d times", values[code], k)
		}
	}
	// Every answered verify reached PostgreSQL once: a retry that found its request had run
	// got the stored outcome and wrote no second event.
	checkLogRows(t, s, tn.ProjectID, answers, 90*time.Second)

	during := 0
	for _, a := range answers {
		if !a.end.Before(moveStart) && !a.end.After(moveEnd) {
			during++
		}
	}
	took := moveEnd.Sub(moveStart)
	testkit.Report(t, "set up in %s; resharded %d slots (%s → %s; its %d shards, %d keys) in %s under load: %d verifies answered meanwhile (%.0f/s; %.0f/s over the whole run of %d); "+
		"redirects answered by the nodes: %d MOVED, %d ASK, %d TRYAGAIN; client retries %d (%s); %d codes redeemed once each, none twice; "+
		"%d relay warnings (a poll, lease round or trim refused while its outbox moved)",
		setup.Round(time.Millisecond), moving, from.Addr, to.Addr, len(fromShards), movedKeys, took.Round(time.Millisecond), during, float64(during)/took.Seconds(),
		float64(len(answers))/load.took.Seconds(), len(answers), redirects["MOVED"], redirects["ASK"], redirects["TRYAGAIN"],
		load.retries.Load(), load.attemptStatuses(), len(sum.successes), relayWarnings(s))
	if t.Failed() {
		for _, l := range s.Logs.Lines() {
			if strings.Contains(l, `"level":"ERROR"`) {
				t.Log(l)
			}
		}
	}
}

// TestMasterLossOnRedisCluster kills (SIGKILL) one of three masters, each with a replica, under
// verify load through three API replicas, and waits for its replica to take over. With
// ACV_REDIS_WAIT_REPLICAS=1 every acknowledged redemption survives the failover: the code is
// still used in Redis and its log row is in PostgreSQL. Without WAIT up to about a second of
// them may be lost (the documented window); the test counts them and holds only that the
// service answers again after the failover and that no code is redeemed twice.
func TestMasterLossOnRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("killing a Redis Cluster master under load")
	}
	t.Parallel()
	for _, wait := range []int{1, 0} {
		t.Run(fmt.Sprintf("wait-replicas=%d", wait), func(t *testing.T) {
			masterLoss(t, wait)
		})
	}
}

func masterLoss(t *testing.T, waitReplicas int) {
	const n = 6000
	t0 := time.Now()
	c := testkit.RedisCluster(t, localenv.ClusterOptions{Replicas: 1, AOF: true, NodeTimeout: time.Second})
	s := testkit.NewStackWith(t, testkit.StackOptions{OwnRedisCluster: c})
	s.Config.Pipeline = service.PipelineDirect
	s.Config.RedisWaitReplicas = waitReplicas
	s.Config.RedisWaitTimeout = 100 * time.Millisecond
	bases := s.StartAPIs(3)
	s.StartRelay("relay-a")
	tn := s.NewTenant(nil, bases...)
	// The victim and the shards it serves; the probes' codes live there.
	victim := mastersNow(t, c)[0]
	onVictim := map[int]bool{}
	for _, sh := range shardsOn(t, s, victim) {
		onVictim[sh] = true
	}
	const probes = 1000
	values := append(codeValues("LOSS", n),
		codeValuesOn(tn.ProjectID, "PROBE", probes, func(shard int) bool { return onVictim[shard] }, probes)...)
	for i := 0; i < len(values); i += 4000 {
		s.ImportCodes(tn.ProjectID, nil, values[i:min(i+4000, len(values))]...)
	}
	ctx := context.Background()

	setup := time.Since(t0)
	load := startVerifyLoad(t, tn, values, n, 48)
	load.startProbes(tn.Clients[0])
	time.Sleep(1500 * time.Millisecond)
	killAt := time.Now()
	victim.Kill()
	killed := time.Now()
	if err := c.WaitOK(30 * time.Second); err != nil {
		load.stop()
		t.Fatalf("no failover: %v", err)
	}
	failedOver := time.Now()
	for _, m := range mastersNow(t, c) {
		if m == victim {
			t.Fatalf("the killed master %s is still a master", victim.Addr)
		}
	}
	// The lost node is replaced, as an operator would: it rejoins as a replica of the master
	// that took its place. Until it has synchronised, that master has no replica, so with
	// WAIT for one every write of its shards is answered 503.
	if err := victim.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()

	// The service has recovered once the probes, fresh codes of the victim's shards verified
	// one at a time, succeed again, and for 2 s.
	var recovered time.Time
	for {
		at, ok := load.recoveredAt(killAt)
		if ok && time.Since(at) > 2*time.Second {
			recovered = at
			break
		}
		if time.Since(killAt) > 40*time.Second {
			load.stop()
			t.Fatalf("verifies of the lost master's shards did not succeed again within %s of the kill", time.Since(killAt).Round(time.Millisecond))
		}
		time.Sleep(100 * time.Millisecond)
	}
	load.stop()

	answers := load.result()
	sum := summarize(answers)
	// Attempts that failed (5xx or no answer) from the kill on, and requests that still failed
	// after the client's retries.
	failedAttempts := load.failedAttemptsBetween(killAt, recovered.Add(time.Millisecond))
	failedLater := load.failedAttemptsBetween(recovered.Add(time.Millisecond), time.Now())
	finalFailed := 0
	for _, a := range answers {
		if a.status != http.StatusOK && !a.end.Before(killAt) {
			finalFailed++
		}
	}
	if sum.failed > finalFailed {
		t.Errorf("%d verifies failed before the kill: %s", sum.failed-finalFailed, sum.failures)
	}

	// Every acknowledged success: is its code still used in Redis?
	lost := 0
	var lostCodes []string
	for code, k := range sum.successes {
		live, found, err := s.Deps.Cache.LiveCode(ctx, tn.ProjectID, values[code])
		if err != nil || !found {
			t.Fatalf("code %s: found %v, %v", values[code], found, err)
		}
		if live.VerifiedAtMs == 0 {
			lost++
			lostCodes = append(lostCodes, values[code])
		}
		if k > 1 {
			// Two acknowledged successes: legitimate only without WAIT, for a code of the
			// killed master's shards whose first redemption may have been there before the
			// kill, and so lost, and whose second was answered after it.
			first, second := sum.successAnswers[code][0], sum.successAnswers[code][1]
			if waitReplicas > 0 || !onVictim[cache.ShardOf(tn.ProjectID, values[code])] || !first.start.Before(killAt) || !second.end.After(killed) {
				t.Errorf("code %s redeemed %d times: %+v", values[code], k, sum.successAnswers[code])
			}
			lost++
		}
	}
	if waitReplicas > 0 && lost > 0 {
		t.Errorf("%d acknowledged redemptions lost with WAIT for a replica (%v)", lost, lostCodes[:min(5, len(lostCodes))])
	}

	// Their log rows: every acknowledged success (with WAIT) has one.
	testkit.WaitFor(t, 60*time.Second, "the outbox to drain", s.OutboxEmpty)
	// Without WAIT a redemption lost with the master may have reached PostgreSQL before the
	// kill, and the code be redeemed again after it: two success rows.
	missing, doubled := unlogged(t, s, tn.ProjectID, answers)
	if waitReplicas > 0 && (missing > 0 || doubled > 0) {
		t.Errorf("%d acknowledged successes have no log row in postgres, %d codes have more than one success row", missing, doubled)
	}

	testkit.Report(t, "WAIT replicas=%d, set up in %s: killed master %s (SIGKILL) under load; failover done %s after the kill (cluster-node-timeout 1s), "+
		"the node restarted to rejoin as a replica %s after it; verifies of its shards (probed every 50 ms) succeed again %s after the kill; %d failed attempts (5xx or no answer) in that window and %d after it, %d requests still failed after the client's retries; "+
		"%d verifies answered (%.0f/s), client retries %d (%s); %d acknowledged successes, %d lost (code unused again in Redis, or redeemed again), %d without a log row, %d codes with two success rows; %d relay warnings",
		waitReplicas, setup.Round(time.Millisecond), victim.Addr, failedOver.Sub(killAt).Round(time.Millisecond), restarted.Sub(killAt).Round(time.Millisecond),
		recovered.Sub(killAt).Round(time.Millisecond),
		failedAttempts, failedLater, finalFailed, len(answers), float64(len(answers))/load.took.Seconds(), load.retries.Load(), load.attemptStatuses(),
		sum.acked, lost, missing, doubled, relayWarnings(s))
	t.Logf("answered per second: %s; causes of 5xx: %s", load.rates(killAt, recovered), failureCauses(s))
	if failedLater > 0 {
		for _, l := range s.Logs.Lines() {
			ts, _, _ := strings.Cut(strings.TrimPrefix(l, `{"time":"`), `"`)
			if at, err := time.Parse(time.RFC3339Nano, ts); err == nil && at.After(recovered) && strings.Contains(l, `"msg":"request failed"`) {
				t.Logf("failed %s after the recovery: %.300s", at.Sub(recovered).Round(time.Millisecond), l)
			}
		}
	}
}

// codeValues are n distinct code values.
func codeValues(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%07d", prefix, i)
	}
	return out
}

// codeValuesOn are n distinct code values of a project, inHot of them in the shards hot picks
// and the others in the rest, evenly interleaved.
func codeValuesOn(projectID, prefix string, n int, hot func(shard int) bool, inHot int) []string {
	var hots, colds []string
	for i := 0; len(hots) < inHot || len(colds) < n-inHot; i++ {
		v := fmt.Sprintf("%s-%07d", prefix, i)
		if hot(cache.ShardOf(projectID, v)) {
			if len(hots) < inHot {
				hots = append(hots, v)
			}
		} else if len(colds) < n-inHot {
			colds = append(colds, v)
		}
	}
	out := make([]string, 0, n)
	for len(out) < n {
		if len(hots) > 0 && (len(colds) == 0 || (len(out)+1)*inHot > (inHot-len(hots))*n) {
			out, hots = append(out, hots[0]), hots[1:]
		} else {
			out, colds = append(out, colds[0]), colds[1:]
		}
	}
	return out
}

// shardsOn are the shards master m serves.
func shardsOn(t *testing.T, s *testkit.Stack, m *localenv.ClusterNode) []int {
	t.Helper()
	var on []int
	for sh := 0; sh < cache.Shards; sh++ {
		if masterOf(t, s, sh) == m.Addr {
			on = append(on, sh)
		}
	}
	return on
}

// hotShards picks k of the shards, spread over them.
func hotShards(t *testing.T, shards []int, k int) map[int]bool {
	t.Helper()
	if len(shards) < k {
		t.Fatalf("%d shards, want at least %d", len(shards), k)
	}
	out := map[int]bool{}
	for i := 0; i < k; i++ {
		out[shards[i*len(shards)/k+len(shards)/(2*k)]] = true
	}
	return out
}

// masterOf is the address of the master serving a shard, as the stack's client sees it.
func masterOf(t *testing.T, s *testkit.Stack, shard int) string {
	t.Helper()
	m, err := s.Deps.Redis.(*redis.ClusterClient).MasterForKey(context.Background(), cache.ShardPrefix(shard))
	if err != nil {
		t.Fatal(err)
	}
	return m.Options().Addr
}

// verifyAttempts is how often the load's client sends one verify at most: the first time and
// five retries.
const verifyAttempts = 6

// verifyAnswer is what a client finally got for one verify, after its retries.
type verifyAnswer struct {
	code       int // index into the values
	start, end time.Time
	status     int // HTTP status of the last attempt, 0 when it got no answer
	attempts   int
	success    bool
	errorCode  string
	codeID     string
	replayed   bool // Idempotent-Replayed: a retry answered with the stored outcome
	plain      bool // sent without Idempotency-Key, never retried
	err        string
}

// attempt is one HTTP exchange of a verify.
type attempt struct {
	sent, at time.Time // sent, answered
	status   int
}

// verifyLoad verifies a project's codes from many goroutines through every API replica of a
// tenant. The first 2n requests take the codes in order, two requests a code, back to back, so
// both are in flight together; after that codes drawn at random, each already used.
//
// Three workers in four retry as a careful client of the API does, with api/client's own
// retries: each verify carries an Idempotency-Key of its own, and a 502, 503 or 504 or a failed
// connection is sent again unchanged (a fresh signature and nonce, the same key and body) after
// 50 ms, doubling, up to verifyAttempts. A retry of a request that had run gets its stored
// outcome (Idempotent-Replayed). Every fourth worker is a plain client: no Idempotency-Key, no
// retry (a retry without a key could redeem twice), so whatever the service answers is what it
// gets.
type verifyLoad struct {
	t      *testing.T
	tn     *testkit.Tenant
	values []string
	n      int // the workers verify values[:n]; probes take the rest
	// http is the tenant's HTTP client with every attempt recorded (attemptRecorder): the
	// retries happen inside api/client, where the load sees only their number.
	http     *http.Client
	next     atomic.Int64
	retries  atomic.Int64
	halt     chan struct{}
	wg       sync.WaitGroup
	began    time.Time
	took     time.Duration
	mu       sync.Mutex
	answers  []verifyAnswer
	attempts []attempt
}

func startVerifyLoad(t *testing.T, tn *testkit.Tenant, values []string, n, workers int) *verifyLoad {
	l := &verifyLoad{t: t, tn: tn, values: values, n: n, halt: make(chan struct{}), began: time.Now()}
	hc := http.DefaultClient
	if h := tn.Clients[0].HTTP; h != nil {
		hc = h
	}
	recorded := *hc
	recorded.Transport = &attemptRecorder{l: l, next: hc.Transport}
	l.http = &recorded
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go l.work(w)
	}
	t.Cleanup(l.stop)
	return l
}

func (l *verifyLoad) work(w int) {
	defer l.wg.Done()
	c := l.tn.Clients[w%len(l.tn.Clients)]
	plain := w%4 == 3
	rng := rand.New(rand.NewPCG(uint64(w), 11))
	for {
		select {
		case <-l.halt:
			return
		default:
		}
		j := l.next.Add(1) - 1
		code := int(j / 2)
		if code >= l.n {
			code = rng.IntN(l.n)
		}
		l.verify(c, code, plain)
	}
}

// verify sends one verify, through a copy of c that records its attempts and, unless plain,
// retries under an Idempotency-Key of its own, and records the answer.
func (l *verifyLoad) verify(c *client.Client, code int, plain bool) {
	a := verifyAnswer{code: code, start: time.Now(), plain: plain, attempts: 1}
	call := *c
	call.HTTP, call.Retries = l.http, 0 // a plain verify is sent once, whatever c does
	var opt client.Options
	if !plain {
		opt.IdempotencyKey = contract.NewID()
		call.Retries, call.RetryBackoff = verifyAttempts-1, 50*time.Millisecond
		call.OnRetry = func(string, string, int, error) {
			a.attempts++
			l.retries.Add(1)
		}
	}
	r, h, err := call.Verify(context.Background(), l.tn.ProjectID, contract.VerifyRequest{Code: l.values[code]}, opt)
	a.end = time.Now()
	var ce *client.Error
	switch {
	case err == nil:
		a.status = http.StatusOK
		a.success, a.errorCode, a.codeID = r.Success, Deref(r.ErrorCode), Deref(r.CodeID)
		a.replayed = h.Get("Idempotent-Replayed") == "true"
	case errors.As(err, &ce):
		a.status, a.err = ce.Status, err.Error()
	default:
		a.err = err.Error() // no answer: status 0
	}
	l.mu.Lock()
	l.answers = append(l.answers, a)
	l.mu.Unlock()
}

// attemptRecorder is the load's HTTP transport: it records every attempt of every verify, the
// retries api/client sends included, with its HTTP status (0 when it got no answer).
type attemptRecorder struct {
	l    *verifyLoad
	next http.RoundTripper // http.DefaultTransport when nil
}

// RoundTrip sends one attempt through next and records it.
func (r *attemptRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	next := r.next
	if next == nil {
		next = http.DefaultTransport
	}
	sent := time.Now()
	resp, err := next.RoundTrip(req)
	status := 0
	if err == nil {
		status = resp.StatusCode
	}
	r.l.mu.Lock()
	r.l.attempts = append(r.l.attempts, attempt{sent: sent, at: time.Now(), status: status})
	r.l.mu.Unlock()
	return resp, err
}

// startProbes verifies the codes past the workers', fresh ones, one every 50 ms, each once and
// without retry, until the load stops: when the service answers a shard again.
func (l *verifyLoad) startProbes(c *client.Client) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for code := l.n; code < len(l.values); code++ {
			select {
			case <-l.halt:
				return
			case <-tick.C:
			}
			l.verify(c, code, true)
		}
		l.t.Errorf("the probes ran out of codes")
	}()
}

// recoveredAt is when the probes sent since a moment began to succeed for good: the answer of
// the first success after the last probe that failed.
func (l *verifyLoad) recoveredAt(since time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var probes []verifyAnswer
	for _, a := range l.answers {
		if a.code >= l.n && !a.start.Before(since) {
			probes = append(probes, a)
		}
	}
	slices.SortFunc(probes, func(a, b verifyAnswer) int { return a.start.Compare(b.start) })
	var at time.Time
	ok := false
	for _, p := range probes {
		switch {
		case p.status != http.StatusOK || !p.success:
			ok = false
		case !ok:
			at, ok = p.end, true
		}
	}
	return at, ok
}

// stop ends the load once the requests in flight are answered.
func (l *verifyLoad) stop() {
	select {
	case <-l.halt:
		return
	default:
	}
	close(l.halt)
	l.wg.Wait()
	l.took = time.Since(l.began)
}

// result is every answer, once the load stopped.
func (l *verifyLoad) result() []verifyAnswer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.answers)
}

// failedAttemptsBetween counts the attempts sent in [from, to) that failed (5xx or no answer).
func (l *verifyLoad) failedAttemptsBetween(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := 0
	for _, a := range l.attempts {
		if (a.status == 0 || a.status >= 500) && !a.sent.Before(from) && a.sent.Before(to) {
			k++
		}
	}
	return k
}

// rates are the verifies answered per second before a, between a and b, and after b.
func (l *verifyLoad) rates(a, b time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var k [3]int
	for _, x := range l.answers {
		switch {
		case x.end.Before(a):
			k[0]++
		case x.end.Before(b):
			k[1]++
		default:
			k[2]++
		}
	}
	end := l.began.Add(l.took)
	return fmt.Sprintf("%.0f before, %.0f between, %.0f after", float64(k[0])/a.Sub(l.began).Seconds(),
		float64(k[1])/b.Sub(a).Seconds(), float64(k[2])/end.Sub(b).Seconds())
}

// attemptStatuses counts the attempts by HTTP status ("no answer" for 0), e.g. "200: 15990, 503: 10".
func (l *verifyLoad) attemptStatuses() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	by := map[int]int{}
	for _, a := range l.attempts {
		by[a.status]++
	}
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(by)) {
		name := strconv.Itoa(st)
		if st == 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", name, by[st]))
	}
	return "attempts " + strings.Join(parts, ", ")
}

// loadSummary is what the answers of a load add up to.
type loadSummary struct {
	acked          int                    // acknowledged successes
	successes      map[int]int            // code → successes acknowledged
	successAnswers map[int][]verifyAnswer // code → the answers that acknowledged them
	answered       map[int]bool           // codes that got a 200
	ranTwice       int                    // first attempts answered Idempotent-Replayed: run twice by the service
	failed         int                    // requests without a 200 after the retries
	failures       string                 // a few of them
}

func summarize(answers []verifyAnswer) loadSummary {
	s := loadSummary{successes: map[int]int{}, successAnswers: map[int][]verifyAnswer{}, answered: map[int]bool{}}
	var failures []string
	for _, a := range answers {
		if a.status != http.StatusOK {
			s.failed++
			if len(failures) < 5 {
				failures = append(failures, fmt.Sprintf("%d after %d attempts, plain %v (%s)", a.status, a.attempts, a.plain, a.err))
			}
			continue
		}
		s.answered[a.code] = true
		if a.replayed && a.attempts == 1 {
			s.ranTwice++
		}
		if a.success {
			s.acked++
			s.successes[a.code]++
			s.successAnswers[a.code] = append(s.successAnswers[a.code], a)
		}
	}
	for _, as := range s.successAnswers {
		slices.SortFunc(as, func(a, b verifyAnswer) int { return a.end.Compare(b.end) })
	}
	s.failures = strings.Join(failures, "; ")
	return s
}

// checkLogRows waits until the pipeline delivered every event and checks PostgreSQL: one log row
// for each verify answered 200 and at most one for each that was not (it may or may not have
// run), and one success row for each code a client was told it redeemed.
func checkLogRows(t *testing.T, s *testkit.Stack, projectID string, answers []verifyAnswer, within time.Duration) {
	t.Helper()
	testkit.WaitFor(t, within, "the outbox to drain", s.OutboxEmpty)
	answered := 0
	for _, a := range answers {
		if a.status == http.StatusOK {
			answered++
		}
	}
	if got := s.ProjectLogs(t, projectID); got < answered || got > len(answers) {
		t.Errorf("postgres holds %d verification logs, want one for each of the %d verifies answered, and at most %d", got, answered, len(answers))
	}
	if missing, doubled := unlogged(t, s, projectID, answers); missing > 0 || doubled > 0 {
		t.Errorf("%d acknowledged successes have no log row, %d codes have more than one success row", missing, doubled)
	}
}

// successRows counts the success rows of each code in PostgreSQL, by code id.
func successRows(t *testing.T, s *testkit.Stack, projectID string) map[string]int {
	t.Helper()
	rows, err := s.Deps.Store.Pool().Query(context.Background(),
		`SELECT encode(uuid_send(code_id), 'hex'), count(*) FROM verification_logs
		 WHERE project_id = $1 AND result = 'success' GROUP BY code_id`, projectID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	logged := map[string]int{}
	for rows.Next() {
		var id string
		var k int
		if err := rows.Scan(&id, &k); err != nil {
			t.Fatal(err)
		}
		logged[id] = k
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return logged
}

// unlogged counts the acknowledged successes without a success row in PostgreSQL, and the
// codes with more than one.
func unlogged(t *testing.T, s *testkit.Stack, projectID string, answers []verifyAnswer) (missing, doubled int) {
	t.Helper()
	logged := successRows(t, s, projectID)
	for _, a := range answers {
		if a.success && logged[a.codeID] == 0 {
			missing++
		}
	}
	for _, k := range logged {
		if k > 1 {
			doubled++
		}
	}
	return missing, doubled
}

// mastersNow are the cluster's masters now.
func mastersNow(t *testing.T, c *localenv.RedisCluster) []*localenv.ClusterNode {
	t.Helper()
	m, _, err := c.Masters()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// slotCount counts the slots of CLUSTER NODES ranges ("0-5460", "5461"); a slot in migration
// ("[93->-<id>]") is counted where it is assigned, not here.
func slotCount(ranges []string) int {
	k := 0
	for _, r := range ranges {
		if lo, hi, ok := slotRange(r); ok {
			k += hi - lo + 1
		}
	}
	return k
}

// slotIn tells whether slot is in CLUSTER NODES ranges.
func slotIn(ranges []string, slot int) bool {
	for _, r := range ranges {
		if lo, hi, ok := slotRange(r); ok && lo <= slot && slot <= hi {
			return true
		}
	}
	return false
}

// slotRange reads one range of CLUSTER NODES: "0-5460" or "5461".
func slotRange(r string) (lo, hi int, ok bool) {
	a, b, isRange := strings.Cut(r, "-")
	if !isRange {
		b = a
	}
	lo, errA := strconv.Atoi(a)
	hi, errB := strconv.Atoi(b)
	return lo, hi, errA == nil && errB == nil
}

// nodeClients are clients of the nodes at addrs, closed when the test ends.
func nodeClients(t *testing.T, addrs ...string) []*redis.Client {
	t.Helper()
	out := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		out[i] = redis.NewClient(&redis.Options{Addr: a})
		t.Cleanup(func() { out[i].Close() })
	}
	return out
}

// replyCounts counts error replies by their prefix (MOVED, ASK, TRYAGAIN, …).
type replyCounts map[string]int64

func (r replyCounts) minus(before replyCounts) replyCounts {
	out := replyCounts{}
	for k, v := range r {
		out[k] = v - before[k]
	}
	return out
}

// errorReplies sums every node's error replies by prefix, from INFO errorstats
// (errorstat_MOVED:count=12); a node that does not answer is left out.
func errorReplies(t *testing.T, addrs []string) replyCounts {
	t.Helper()
	out := replyCounts{}
	for _, c := range nodeClients(t, addrs...) {
		info, err := c.Info(context.Background(), "errorstats").Result()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(info, "\n") {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":count=")
			if !ok {
				continue
			}
			v, _ := strconv.ParseInt(rest, 10, 64)
			out[strings.TrimPrefix(name, "errorstat_")] += v
		}
	}
	return out
}

// failureCauses counts the causes the API replicas logged for the requests they failed,
// numbers left out ("MOVED N N.N.N.N:N").
func failureCauses(s *testkit.Stack) string {
	by := map[string]int{}
	for _, l := range s.Logs.Lines() {
		if !strings.Contains(l, `"msg":"request failed"`) {
			continue
		}
		_, cause, _ := strings.Cut(l, `"err":"`)
		cause, _, _ = strings.Cut(cause, `"`)
		by[digits.ReplaceAllString(strings.ReplaceAll(cause, "Service temporarily unavailable: ", ""), "N")]++
	}
	var out []string
	for c, k := range by {
		out = append(out, fmt.Sprintf("%d× %s", k, c))
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

var digits = regexp.MustCompile(`[0-9]+`)

// relayWarnings counts the relay's logged read, lease and remove failures.
func relayWarnings(s *testkit.Stack) int {
	k := 0
	for _, l := range s.Logs.Lines() {
		if strings.Contains(l, "outbox relay:") && strings.Contains(l, `"level":"WARN"`) {
			k++
		}
	}
	return k
}
