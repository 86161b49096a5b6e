package service_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/internal/testkit"
)

// trafficOp is one request of the fault tests' traffic and its answer. Its by (verified_by or
// reactivated_by) is unique, so the request's verification log can be found by it.
type trafficOp struct {
	action  contract.Action
	value   string
	by      string
	known   bool // the code exists, so the attempt must be logged
	success bool
	errCode string
	codeID  string
}

// traffic sends verifies and reactivates on a tenant's codes (and a few unknown values)
// through every replica and records every answer.
type traffic struct {
	t      *testing.T
	tn     *testkit.Tenant
	values []string
	seq    atomic.Int64

	mu  sync.Mutex
	ops []trafficOp
}

// wave sends n requests from n goroutines released at once, mixing actions and codes at
// random, and returns when all are answered.
func (f *traffic) wave(n int) {
	f.t.Helper()
	start := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		seq := f.seq.Add(1)
		op := trafficOp{action: contract.ActionVerify, by: fmt.Sprintf("op-%d", seq), known: true}
		if rand.IntN(100) < 45 {
			op.action = contract.ActionReactivate
		}
		if rand.IntN(100) < 5 {
			op.value, op.known = fmt.Sprintf("NO-SUCH-%d", seq), false
		} else {
			op.value = f.values[rand.IntN(len(f.values))]
		}
		c := f.tn.Clients[int(seq)%len(f.tn.Clients)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ctx := context.Background()
			if op.action == contract.ActionVerify {
				r, _, err := c.Verify(ctx, f.tn.ProjectID, contract.VerifyRequest{Code: op.value, VerifiedBy: &op.by}, client.Options{})
				if err != nil {
					errs <- fmt.Errorf("verify %s: %w", op.value, err)
					return
				}
				op.success, op.errCode, op.codeID = r.Success, Deref(r.ErrorCode), Deref(r.CodeID)
			} else {
				reason := "fault test"
				r, _, err := c.Reactivate(ctx, f.tn.ProjectID, contract.ReactivateRequest{Code: op.value, ReactivatedBy: &op.by, Reason: &reason}, client.Options{})
				if err != nil {
					errs <- fmt.Errorf("reactivate %s: %w", op.value, err)
					return
				}
				op.success, op.errCode, op.codeID = r.Success, Deref(r.ErrorCode), Deref(r.CodeID)
			}
			f.mu.Lock()
			f.ops = append(f.ops, op)
			f.mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		f.t.Error(err)
	}
}

// background sends waves until stop is called, which returns once the last wave is answered.
func (f *traffic) background(size int) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			default:
			}
			f.wave(size)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-finished }) }
}

// logged counts the answered attempts, on existing codes and on unknown values alike: the
// logs Postgres must end up with.
func (f *traffic) logged() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.ops)
}

// checkLogs checks that every attempt on an existing code has exactly one verification log
// that matches its answer, that each attempt on an unknown value has exactly one, without a
// code id, and that nothing else is logged. It also checks each code's answers against its live state, and that Postgres holds
// each code's final state and version.
func (f *traffic) checkLogs(s *testkit.Stack) {
	t := f.t
	t.Helper()
	ctx := context.Background()
	type logRow struct {
		id, codeID, action, result, reason string
	}
	rows, err := s.Deps.Store.Pool().Query(ctx,
		`SELECT encode(uuid_send(id), 'hex'), coalesce(encode(uuid_send(code_id), 'hex'), ''), action, result, coalesce(reason, ''), coalesce(verified_by, '')
		 FROM verification_logs WHERE project_id = $1`, f.tn.ProjectID)
	if err != nil {
		t.Fatal(err)
	}
	byOp := map[string][]logRow{}
	total := 0
	for rows.Next() {
		var r logRow
		var by string
		if err := rows.Scan(&r.id, &r.codeID, &r.action, &r.result, &r.reason, &by); err != nil {
			t.Fatal(err)
		}
		byOp[by] = append(byOp[by], r)
		total++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	type codeTally struct {
		id                 string
		verified, reactive int
	}
	codes := map[string]*codeTally{}
	successes, known, bad := 0, 0, 0
	for _, op := range f.ops {
		logs := byOp[op.by]
		delete(byOp, op.by)
		if !op.known {
			want := logRow{action: string(op.action), result: contract.ResultFailed, reason: string(contract.CodeNotFound)}
			if op.success || op.errCode != string(contract.CodeNotFound) || op.codeID != "" || len(logs) != 1 ||
				logs[0].codeID != "" || logs[0].action != want.action || logs[0].result != want.result || logs[0].reason != want.reason {
				t.Errorf("attempt on unknown code %s: success=%v error=%s code_id=%q, logs %+v", op.value, op.success, op.errCode, op.codeID, logs)
			}
			continue
		}
		known++
		ct := codes[op.value]
		if ct == nil {
			ct = &codeTally{id: op.codeID}
			codes[op.value] = ct
		}
		want := logRow{codeID: op.codeID, action: string(op.action), result: contract.ResultFailed, reason: op.errCode}
		if op.success {
			successes++
			if op.action == contract.ActionVerify {
				want.result, want.reason = contract.ResultSuccess, ""
				ct.verified++
			} else {
				want.result, want.reason = contract.ResultReactivated, "fault test"
				ct.reactive++
			}
		}
		switch {
		case op.codeID != ct.id:
			t.Errorf("%s answered code_id %s and %s", op.value, ct.id, op.codeID)
		case len(logs) != 1:
			bad++
			if bad <= 10 {
				t.Errorf("%s %s by %s (success=%v %s): %d logs, want exactly 1", op.action, op.value, op.by, op.success, op.errCode, len(logs))
			}
		default:
			got := logs[0]
			got.id = ""
			if got != want {
				t.Errorf("%s %s by %s: log %+v, want %+v", op.action, op.value, op.by, got, want)
			}
		}
	}
	if bad > 10 {
		t.Errorf("... %d attempts in all without exactly one log", bad)
	}
	for by, logs := range byOp {
		t.Errorf("logs of no request: verified_by %q: %+v", by, logs)
	}
	if total != len(f.ops) {
		t.Errorf("postgres holds %d logs, want %d (one per attempt: %d on existing codes, the rest on unknown values)", total, len(f.ops), known)
	}
	if successes == 0 {
		t.Errorf("no attempt succeeded: the traffic tested nothing")
	}

	// Per code: the successes alternate, so they tell its state, which every layer must show.
	for value, ct := range codes {
		used := ct.verified - ct.reactive
		if used != 0 && used != 1 {
			t.Errorf("%s: %d verifies and %d reactivations succeeded", value, ct.verified, ct.reactive)
			continue
		}
		live, found, err := s.Deps.Cache.LiveCode(ctx, f.tn.ProjectID, value)
		if err != nil || !found {
			t.Fatalf("%s in redis: found=%v err=%v", value, found, err)
		}
		row, err := s.Deps.Store.CodeByValue(ctx, f.tn.ProjectID, value)
		if err != nil {
			t.Fatal(err)
		}
		version := int64(ct.verified + ct.reactive)
		if (live.VerifiedAtMs > 0) != (used == 1) || live.Version != version ||
			row.Version != version || row.VerifiedAtMs != live.VerifiedAtMs || row.VerifiedBy != live.VerifiedBy {
			t.Errorf("%s after %d verifies and %d reactivations: redis verified_at %dms by %q version %d; postgres verified_at %dms by %q version %d",
				value, ct.verified, ct.reactive, live.VerifiedAtMs, live.VerifiedBy, live.Version,
				row.VerifiedAtMs, row.VerifiedBy, row.Version)
		}
	}
}

// newTraffic starts three replicas and makes a tenant with codes for the traffic.
func newTraffic(t *testing.T, s *testkit.Stack, nCodes int) *traffic {
	bases := s.StartAPIs(3)
	tn := s.NewTenant(nil, bases...)
	f := &traffic{t: t, tn: tn}
	// Every code in one shard, so every event goes to one outbox: a crashed batch and the
	// events after it wait in one list, in order, for the relay that takes it over.
	for i := 0; len(f.values) < nCodes; i++ {
		v := fmt.Sprintf("FAULT-%02d", i)
		if len(f.values) == 0 || cache.ShardOf(tn.ProjectID, v) == cache.ShardOf(tn.ProjectID, f.values[0]) {
			f.values = append(f.values, v)
		}
	}
	s.ImportCodes(tn.ProjectID, nil, f.values...)
	return f
}

// crashOn returns a hook that fails its first call from the nth on for which worth (nil:
// any) holds, and every call after that one, and a channel closed at the failing call; ids
// receives the arguments of that call (the relay's entry ids of the crashed batch).
func crashOn(n int64, worth func(entries []string) bool) (crashed chan struct{}, hook func([]string) error, entries *[]string) {
	var calls atomic.Int64
	var dead atomic.Bool
	crashed = make(chan struct{})
	entries = new([]string)
	hook = func(batch []string) error {
		if dead.Load() {
			return testkit.ErrInjected
		}
		if calls.Add(1) < n || (worth != nil && !worth(batch)) {
			return nil
		}
		dead.Store(true)
		*entries = append([]string(nil), batch...)
		close(crashed)
		return testkit.ErrInjected
	}
	return crashed, hook, entries
}

// changesState tells whether any of the outbox entries records a state change: a crash on
// such a batch leaves a stale snapshot to be published again after newer ones.
func changesState(entries []string) bool {
	for _, e := range entries {
		ev, _, err := contract.DecodeOutboxEntry(e)
		if err == nil && ev.Changed {
			return true
		}
	}
	return false
}

// inOutbox counts the entries among entries that the outboxes still hold.
func inOutbox(t *testing.T, s *testkit.Stack, entries []string) int {
	t.Helper()
	ctx := context.Background()
	outboxes := cache.Outboxes()
	cmds := make([]*redis.StringSliceCmd, len(outboxes))
	if _, err := s.Deps.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range outboxes {
			cmds[i] = p.LRange(ctx, k, 0, -1)
		}
		return nil
	}); err != nil {
		t.Fatalf("read the outboxes: %v", err)
	}
	held := map[string]bool{}
	for _, c := range cmds {
		for _, e := range c.Val() {
			held[e] = true
		}
	}
	n := 0
	for _, e := range entries {
		if held[e] {
			n++
		}
	}
	return n
}

// groupOffsets returns, per partition of the topic, the consumer group's committed offset (0
// when none) and the partition's end offset, and their sums.
func groupOffsets(t *testing.T, s *testkit.Stack) (committed, end int64, perCommitted map[int]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(s.Kafka.Brokers...)}
	parts := []int{0, 1, 2, 3}
	of, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: s.Config.ConsumerGroup, Topics: map[string][]int{s.Config.KafkaTopic: parts}})
	if err != nil {
		t.Fatalf("fetch committed offsets: %v", err)
	}
	perCommitted = map[int]int64{}
	for _, p := range of.Topics[s.Config.KafkaTopic] {
		if p.CommittedOffset > 0 {
			committed += p.CommittedOffset
			perCommitted[p.Partition] = p.CommittedOffset
		}
	}
	reqs := make([]kafka.OffsetRequest, len(parts))
	for i, p := range parts {
		reqs[i] = kafka.LastOffsetOf(p)
	}
	lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{s.Config.KafkaTopic: reqs}})
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	for _, p := range lo.Topics[s.Config.KafkaTopic] {
		end += p.LastOffset
	}
	return committed, end, perCommitted
}

// storedUncommitted counts the project's logs in Postgres whose event is in no message
// below the committed offsets: stored by a batch the consumer never committed.
func storedUncommitted(t *testing.T, s *testkit.Stack, projectID string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, committed := groupOffsets(t, s)
	seen := map[string]bool{}
	for part, upto := range committed {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: s.Kafka.Brokers, Topic: s.Config.KafkaTopic, Partition: part, MaxWait: 100 * time.Millisecond})
		if err := r.SetOffset(0); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("read partition %d: %v", part, err)
			}
			if m.Offset >= upto {
				break
			}
			ev, _, err := contract.DecodeOutboxEntry(string(m.Value))
			if err != nil {
				t.Fatalf("partition %d offset %d: %v", part, m.Offset, err)
			}
			seen[ev.ID] = true
			if m.Offset == upto-1 {
				break
			}
		}
		r.Close()
	}
	rows, err := s.Deps.Store.Pool().Query(ctx,
		`SELECT encode(uuid_send(id), 'hex') FROM verification_logs WHERE project_id = $1`, projectID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		if !seen[id] {
			n++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// faultScenario says which parts of the pipeline die during the traffic.
type faultScenario struct {
	relayCrash    bool
	restartName   string        // the replacement relay's name
	lease         time.Duration // relay Lease (0: the default 5 s)
	consumerCrash bool
	drainWithin   time.Duration
}

// runFaults runs traffic while the relay dies between Kafka's acknowledgement and the outbox
// removal of a batch (its 3rd or a later one that changes a code's state) and/or the consumer
// dies between the Postgres write and the offset commit of its 2nd batch; replacements start
// while the traffic goes on. In the end every attempt on an existing code has exactly one log,
// nothing else is logged, Postgres holds each code's final state and version, the outbox is
// empty and every Kafka message is committed.
func runFaults(t *testing.T, sc faultScenario) {
	s := testkit.NewStack(t)
	if sc.lease > 0 {
		s.Config.RelayLease = sc.lease
	}
	f := newTraffic(t, s, 12)

	var relayHooks, consumerHooks service.Hooks
	relayCrashed, relayHook, crashIDs := crashOn(3, changesState)
	if sc.relayCrash {
		relayHooks.RelayAfterPublish = relayHook
	}
	consumerCrashed, consumerHook, _ := crashOn(2, nil)
	if sc.consumerCrash {
		consumerHooks.ConsumerBeforeCommit = func() error { return consumerHook(nil) }
	}
	relay := s.Go(func(ctx context.Context) error {
		return service.RunWithHooks(ctx, s.RelayConfig("relay-a"), nil, relayHooks)
	})
	consumer := s.Go(func(ctx context.Context) error {
		return service.RunWithHooks(ctx, s.ConsumerConfig(), nil, consumerHooks)
	})

	stopTraffic := f.background(150)
	defer stopTraffic()

	if sc.relayCrash {
		testkit.WaitFor(t, 30*time.Second, "the relay's crash", testkit.Closed(relayCrashed))
		if err := relay.Stop(); !errors.Is(err, testkit.ErrInjected) {
			t.Fatalf("crashed relay returned %v, want the injected fault", err)
		}
		// The crashed batch is in Kafka and still in the outbox.
		if n := inOutbox(t, s, *crashIDs); n != len(*crashIDs) {
			t.Fatalf("%d of the crashed batch's %d entries left the outbox", len(*crashIDs)-n, len(*crashIDs))
		}
		f.wave(200) // no relay runs: these wait in the outbox
		s.StartRelay(sc.restartName)
	}
	if sc.consumerCrash {
		testkit.WaitFor(t, 30*time.Second, "the consumer's 2nd batch", testkit.Closed(consumerCrashed))
		if err := consumer.Stop(); !errors.Is(err, testkit.ErrInjected) {
			t.Fatalf("crashed consumer returned %v, want the injected fault", err)
		}
		// Its last batch is in Postgres but not committed: the replacement gets it again.
		if n := storedUncommitted(t, s, f.tn.ProjectID); n == 0 {
			t.Fatal("after the consumer crash: every stored log is below the committed offsets; want the crashed batch stored, not committed")
		}
		f.wave(200) // no consumer runs: these wait in Kafka
		s.StartConsumer()
	}
	f.wave(100)
	stopTraffic()
	if sc.relayCrash && sc.restartName != "relay-a" {
		// The other relay takes the dead one's outboxes only once its lease ran out, maybe
		// after the traffic: their stale snapshots reach Postgres after newer ones, which version
		// order must ignore.
		if inOutbox(t, s, *crashIDs) == 0 {
			t.Logf("the crashed batch was published again before the traffic ended: stale snapshots were not last this run")
		}
	}

	want := f.logged()
	s.WaitDrained(t, f.tn.ProjectID, want, sc.drainWithin)
	if ok, what := s.OutboxEmpty(); !ok {
		t.Errorf("after the drain: %s", what)
	}
	testkit.WaitFor(t, 10*time.Second, "every kafka message committed", func() (bool, string) {
		committed, end, _ := groupOffsets(t, s)
		return committed == end, fmt.Sprintf("committed %d of %d", committed, end)
	})
	_, end, _ := groupOffsets(t, s)
	switch {
	case sc.relayCrash && end < int64(want+len(*crashIDs)):
		t.Errorf("kafka holds %d messages for %d events: the crashed batch of %d was not published again", end, want, len(*crashIDs))
	case !sc.relayCrash && end != int64(want):
		t.Errorf("kafka holds %d messages for %d events, want one each", end, want)
	}
	f.checkLogs(s)
	t.Logf("%d requests, %d logged attempts, %d kafka messages, crashed relay batch of %d", len(f.ops), want, end, len(*crashIDs))
}

// TestRelayCrashAfterPublish kills the relay after Kafka acknowledged a batch but before the
// batch left the outbox, under concurrent traffic. A relay restarted under the same name takes
// its outboxes back at once (the drain deadline is below what a lease of another name would
// cost); a relay under another name takes them once the dead relay's lease ran out. The consumer writes each event
// once however often it arrives.
func TestRelayCrashAfterPublish(t *testing.T) {
	t.Run("same name", func(t *testing.T) {
		runFaults(t, faultScenario{relayCrash: true, restartName: "relay-a", drainWithin: 20 * time.Second})
	})
	t.Run("other name", func(t *testing.T) {
		runFaults(t, faultScenario{relayCrash: true, restartName: "relay-b", lease: 3 * time.Second, drainWithin: 30 * time.Second})
	})
}

// TestConsumerCrashBeforeCommit kills the consumer after it stored a batch in Postgres but
// before it committed the batch's offsets, under concurrent traffic; its replacement in the same
// group receives the batch again and writes nothing twice.
func TestConsumerCrashBeforeCommit(t *testing.T) {
	runFaults(t, faultScenario{consumerCrash: true, drainWithin: 30 * time.Second})
}

// TestRelayAndConsumerCrash combines both faults in one run, with the relay replaced by
// another replica.
func TestRelayAndConsumerCrash(t *testing.T) {
	runFaults(t, faultScenario{relayCrash: true, restartName: "relay-b", lease: 3 * time.Second, consumerCrash: true, drainWithin: 30 * time.Second})
}
