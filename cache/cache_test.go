package cache_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/localenv"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { localenv.Main(m) }

type fixture struct {
	t     *testing.T
	rdb   *redis.Client
	c     *cache.Cache
	pid   string
	clock time.Time
}

func newFixture(t *testing.T, opts ...cache.Option) *fixture {
	t.Helper()
	srv := localenv.RedisServer(t, localenv.RedisOptions{})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 64})
	t.Cleanup(func() { rdb.Close() })
	c := cache.New(rdb, opts...)
	t.Cleanup(c.Close)
	f := &fixture{t: t, rdb: rdb, c: c, pid: contract.NewID(), clock: time.Unix(1_800_000_000, 0)}
	if err := f.c.Preload(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.project(true, nil)
	return f
}

func (f *fixture) project(enabled bool, exp *int64) {
	f.t.Helper()
	if err := f.c.PutProject(context.Background(), cache.ProjectState{ID: f.pid, Enabled: enabled, ExpiresAt: exp}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) code(value string, s cache.CodeState) string {
	f.t.Helper()
	s.Code = value
	if s.ID == "" {
		s.ID = contract.NewID()
	}
	ok, err := f.c.PutCode(context.Background(), f.pid, s)
	if err != nil || !ok {
		f.t.Fatalf("put code %q: stored=%v err=%v", value, ok, err)
	}
	return s.ID
}

func (f *fixture) call(a contract.Action, value string) cache.Call {
	f.clock = f.clock.Add(time.Millisecond)
	return cache.Call{Action: a, ProjectID: f.pid, KeyID: "k1", Code: value, IP: "127.0.0.1",
		ReplayKey: contract.NewID(), EventID: contract.NewID(), Now: f.clock}
}

func (f *fixture) apply(call cache.Call) cache.Result {
	f.t.Helper()
	r, err := f.c.Apply(context.Background(), call)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) outbox() []contract.Event {
	f.t.Helper()
	msgs, err := f.rdb.XRange(context.Background(), contract.OutboxKey(contract.Shard(f.pid)), "-", "+").Result()
	if err != nil {
		f.t.Fatal(err)
	}
	var out []contract.Event
	for _, m := range msgs {
		var e contract.Event
		if err := json.Unmarshal([]byte(m.Values["e"].(string)), &e); err != nil {
			f.t.Fatalf("outbox entry %v: %v", m.Values, err)
		}
		out = append(out, e)
	}
	return out
}

func ptr(v int64) *int64 { return &v }

func TestMissesChangeNothing(t *testing.T) {
	f := newFixture(t)
	r := f.apply(f.call(contract.ActionVerify, "NOPE"))
	if r.Status != cache.StatusCodeMiss {
		t.Fatalf("status %d, want code miss", r.Status)
	}
	other := newFixture(t)
	other.pid = contract.NewID() // a project Redis has never seen
	other.code("A", cache.CodeState{})
	if r := other.apply(other.call(contract.ActionVerify, "A")); r.Status != cache.StatusProjectMiss {
		t.Fatalf("status %d, want project miss", r.Status)
	}
	if n := len(f.outbox()) + len(other.outbox()); n != 0 {
		t.Fatalf("a miss wrote %d outbox entries", n)
	}
}

func TestOutcomesInContractOrder(t *testing.T) {
	past, future := ptr(1_700_000_000), ptr(1_900_000_000)
	cases := []struct {
		name      string
		projOn    bool
		projExp   *int64
		state     cache.CodeState
		unknown   bool
		action    contract.Action
		want      contract.ErrorCode
		wantLogs  int
		wantState bool // verified after
	}{
		{"verify unused", true, nil, cache.CodeState{}, false, contract.ActionVerify, "", 1, true},
		{"verify used", true, nil, cache.CodeState{VerifiedAtMs: 1}, false, contract.ActionVerify, contract.CodeAlreadyUsed, 1, true},
		{"reactivate used", true, nil, cache.CodeState{VerifiedAtMs: 1}, false, contract.ActionReactivate, "", 1, false},
		{"reactivate unused", true, nil, cache.CodeState{}, false, contract.ActionReactivate, contract.CodeAlreadyUnused, 1, false},
		{"unknown value", true, nil, cache.CodeState{}, true, contract.ActionVerify, contract.CodeNotFound, 0, false},
		{"project disabled before all", false, past, cache.CodeState{Disabled: true, VerifiedAtMs: 1}, false, contract.ActionVerify, contract.ProjectDisabled, 1, true},
		{"project expired", true, past, cache.CodeState{Disabled: true}, false, contract.ActionVerify, contract.ProjectExpired, 1, false},
		{"code disabled before used", true, nil, cache.CodeState{Disabled: true, VerifiedAtMs: 1}, false, contract.ActionVerify, contract.CodeDisabled, 1, true},
		{"used before expired", true, nil, cache.CodeState{VerifiedAtMs: 1, ExpiresAt: past}, false, contract.ActionVerify, contract.CodeAlreadyUsed, 1, true},
		{"unused before expired on reactivate", true, nil, cache.CodeState{ExpiresAt: past}, false, contract.ActionReactivate, contract.CodeAlreadyUnused, 1, false},
		{"code expired", true, nil, cache.CodeState{ExpiresAt: past}, false, contract.ActionVerify, contract.CodeExpired, 1, false},
		{"reactivate expired", true, nil, cache.CodeState{ExpiresAt: past, VerifiedAtMs: 1}, false, contract.ActionReactivate, contract.CodeExpired, 1, true},
		{"code expiry overrides project", true, future, cache.CodeState{ExpiresAt: past}, false, contract.ActionVerify, contract.CodeExpired, 1, false},
		{"code not expiring, project later", true, future, cache.CodeState{}, false, contract.ActionVerify, "", 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.project(tc.projOn, tc.projExp)
			if tc.unknown {
				if err := f.c.MarkUnknown(context.Background(), f.pid, "C", 0); err != nil {
					t.Fatal(err)
				}
			} else {
				f.code("C", tc.state)
			}
			call := f.call(tc.action, "C")
			r := f.apply(call)
			if r.Status != cache.StatusOK || r.Outcome.Error != tc.want {
				t.Fatalf("status %d error %q, want %q", r.Status, r.Outcome.Error, tc.want)
			}
			if tc.unknown && r.Outcome.CodeID != "" {
				t.Fatalf("unknown code has id %q", r.Outcome.CodeID)
			}
			logs := f.outbox()
			if len(logs) != tc.wantLogs {
				t.Fatalf("%d log events, want %d", len(logs), tc.wantLogs)
			}
			if tc.unknown {
				return
			}
			s, found, err := f.c.Code(context.Background(), f.pid, "C")
			if err != nil || !found {
				t.Fatal(found, err)
			}
			if (s.VerifiedAtMs != 0) != tc.wantState {
				t.Fatalf("verified_at %d after, want verified=%v", s.VerifiedAtMs, tc.wantState)
			}
			e := logs[0]
			if e.ID != call.EventID || e.CodeID != s.ID || e.ProjectID != f.pid || e.Action != tc.action || e.TS != call.Now.UnixMilli() {
				t.Fatalf("event %+v does not match the call", e)
			}
			wantResult := map[contract.Action]string{contract.ActionVerify: contract.ResultSuccess, contract.ActionReactivate: contract.ResultReactivated}[tc.action]
			if tc.want != "" {
				wantResult = contract.ResultFailed
				if e.Reason != string(tc.want) {
					t.Fatalf("reason %q, want %q", e.Reason, tc.want)
				}
			}
			if e.Result != wantResult || e.Changed != (tc.want == "") || e.Version != s.Version {
				t.Fatalf("event %+v, want result %s, version %d", e, wantResult, s.Version)
			}
		})
	}
}

func TestVerifyRecordsVerifierAndReactivateClearsIt(t *testing.T) {
	f := newFixture(t)
	f.code("C", cache.CodeState{})
	c := f.call(contract.ActionVerify, "C")
	c.By = "till-7"
	r := f.apply(c)
	if !r.Outcome.Success() || r.Outcome.VerifiedAt != c.Now.UnixMilli() {
		t.Fatalf("verify: %+v", r.Outcome)
	}
	s, _, _ := f.c.Code(context.Background(), f.pid, "C")
	if s.VerifiedBy != "till-7" || s.VerifiedAtMs != c.Now.UnixMilli() || s.Version != 1 {
		t.Fatalf("state after verify: %+v", s)
	}
	rc := f.call(contract.ActionReactivate, "C")
	rc.By, rc.Reason = "support", "refund #12"
	if r := f.apply(rc); !r.Outcome.Success() || r.Outcome.At != rc.Now.UnixMilli() {
		t.Fatalf("reactivate: %+v", r.Outcome)
	}
	s, _, _ = f.c.Code(context.Background(), f.pid, "C")
	if s.VerifiedBy != "" || s.VerifiedAtMs != 0 || s.Version != 2 {
		t.Fatalf("state after reactivate: %+v", s)
	}
	logs := f.outbox()
	if logs[1].Reason != "refund #12" || logs[1].VerifiedBy != "support" || logs[0].StateBy != "till-7" {
		t.Fatalf("logs: %+v", logs)
	}
}

func TestReplayRefusedAndRateLimitedRequestCanRetry(t *testing.T) {
	f := newFixture(t)
	f.code("A", cache.CodeState{})
	f.code("B", cache.CodeState{})
	call := f.call(contract.ActionVerify, "A")
	call.Limit = cache.Limit{Rate: 1, Burst: 1}
	if r := f.apply(call); r.Status != cache.StatusOK || r.Rate.Remaining != 0 {
		t.Fatalf("first: %+v", r)
	}
	if r := f.apply(call); r.Status != cache.StatusReplayed {
		t.Fatalf("replayed call: status %d", r.Status)
	}
	second := f.call(contract.ActionVerify, "B")
	second.Limit = call.Limit
	r := f.apply(second)
	if r.Status != cache.StatusRateLimited || r.Rate.Wait <= 0 || r.Rate.Wait > time.Second {
		t.Fatalf("over the limit: %+v", r)
	}
	if s, _, _ := f.c.Code(context.Background(), f.pid, "B"); s.VerifiedAtMs != 0 {
		t.Fatal("a rate-limited verify changed the code")
	}
	second.Now = second.Now.Add(time.Second)
	if r := f.apply(second); r.Status != cache.StatusOK || !r.Outcome.Success() {
		t.Fatalf("the same request after a token refilled: %+v", r)
	}
	if n := len(f.outbox()); n != 2 {
		t.Fatalf("%d log events, want 2", n)
	}
}

func TestIdempotencyReplaysFirstOutcome(t *testing.T) {
	f := newFixture(t)
	f.code("A", cache.CodeState{})
	first := f.call(contract.ActionVerify, "A")
	first.IdempotencyKey, first.RequestHash = "order-1", "h1"
	r1 := f.apply(first)
	retry := f.call(contract.ActionVerify, "A")
	retry.IdempotencyKey, retry.RequestHash = "order-1", "h1"
	r2 := f.apply(retry)
	if r2.Status != cache.StatusIdemReplayed || r2.Outcome != r1.Outcome || !r2.Outcome.Success() {
		t.Fatalf("retry: %+v, first %+v", r2, r1)
	}
	other := f.call(contract.ActionVerify, "A")
	other.IdempotencyKey, other.RequestHash = "order-1", "h2"
	if r := f.apply(other); r.Status != cache.StatusIdemConflict {
		t.Fatalf("different body: status %d", r.Status)
	}
	if n := len(f.outbox()); n != 1 {
		t.Fatalf("%d log events, want 1", n)
	}
}

func TestPutCodeNeverOverwritesNewerState(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.c.MarkUnknown(ctx, f.pid, "A", time.Minute); err != nil {
		t.Fatal(err)
	}
	id := f.code("A", cache.CodeState{}) // replaces the unknown marker
	f.apply(f.call(contract.ActionVerify, "A"))
	stored, err := f.c.PutCode(ctx, f.pid, cache.CodeState{ID: id, Code: "A"})
	if err != nil || stored {
		t.Fatalf("stale load stored=%v err=%v", stored, err)
	}
	s, _, _ := f.c.Code(ctx, f.pid, "A")
	if s.VerifiedAtMs == 0 {
		t.Fatal("a stale load overwrote the verified state")
	}
	if err := f.c.MarkUnknown(ctx, f.pid, "A", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := f.c.Code(ctx, f.pid, "A"); !found {
		t.Fatal("an unknown marker replaced a real code")
	}
}

func TestSetDisabledBumpsVersion(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.c.SetDisabled(ctx, f.pid, "A", true); err != cache.ErrNotCached {
		t.Fatalf("missing code: %v", err)
	}
	f.code("A", cache.CodeState{Version: 4})
	s, err := f.c.SetDisabled(ctx, f.pid, "A", true)
	if err != nil || !s.Disabled || s.Version != 5 {
		t.Fatalf("%+v %v", s, err)
	}
	if r := f.apply(f.call(contract.ActionVerify, "A")); r.Outcome.Error != contract.CodeDisabled {
		t.Fatalf("verify of disabled code: %+v", r.Outcome)
	}
	if s, err = f.c.SetDisabled(ctx, f.pid, "A", false); err != nil || s.Version != 6 {
		t.Fatalf("%+v %v", s, err)
	}
	if r := f.apply(f.call(contract.ActionVerify, "A")); !r.Outcome.Success() {
		t.Fatalf("verify after enable: %+v", r.Outcome)
	}
}

func TestConcurrentVerifiesRedeemOnce(t *testing.T) {
	t.Run("one round trip each", func(t *testing.T) { concurrentVerifies(t, newFixture(t)) })
	t.Run("coalesced pipelines", func(t *testing.T) { concurrentVerifies(t, newFixture(t, cache.WithCoalescing(4, 64))) })
}

// concurrentVerifies races 500 verifies of one code: exactly one wins, every attempt is logged.
func concurrentVerifies(t *testing.T, f *fixture) {
	f.code("HOT", cache.CodeState{})
	const n = 500
	var wg sync.WaitGroup
	results := make(chan cache.Result, n)
	for i := 0; i < n; i++ {
		c := f.call(contract.ActionVerify, "HOT")
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := f.c.Apply(context.Background(), c)
			if err != nil {
				t.Error(err)
			}
			results <- r
		}()
	}
	wg.Wait()
	close(results)
	wins := 0
	for r := range results {
		if r.Outcome.Success() {
			wins++
		} else if r.Outcome.Error != contract.CodeAlreadyUsed {
			t.Fatalf("unexpected outcome %+v", r)
		}
	}
	if wins != 1 {
		t.Fatalf("%d successes, want exactly 1", wins)
	}
	if got := len(f.outbox()); got != n {
		t.Fatalf("%d log events, want %d", got, n)
	}
}

// A coalesced pipeline must keep each call's own reply, including refusals, and survive Redis
// forgetting its scripts.
func TestCoalescedCallsKeepTheirOwnReplies(t *testing.T) {
	f := newFixture(t, cache.WithCoalescing(2, 32))
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		f.code(fmt.Sprintf("C%d", i), cache.CodeState{})
	}
	if err := f.rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]cache.Result, 100)
	calls := make([]cache.Call, 100)
	for i := range calls {
		calls[i] = f.call(contract.ActionVerify, fmt.Sprintf("C%d", i%50))
		if i >= 50 {
			calls[i].ReplayKey = calls[i-50].ReplayKey // the second half are replays
		}
	}
	// All first calls at once, then all their replays at once.
	for _, half := range [][2]int{{0, 50}, {50, 100}} {
		for i := half[0]; i < half[1]; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := f.c.Apply(ctx, calls[i])
				if err != nil {
					t.Error(err)
				}
				results[i] = r
			}()
		}
		wg.Wait()
	}
	for i, r := range results {
		if i < 50 && (r.Status != cache.StatusOK || !r.Outcome.Success() || r.Outcome.Code != calls[i].Code) {
			t.Fatalf("call %d: %+v", i, r)
		}
		if i >= 50 && r.Status != cache.StatusReplayed {
			t.Fatalf("replay %d: status %d", i, r.Status)
		}
	}
}
