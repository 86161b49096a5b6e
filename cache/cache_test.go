package cache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// Every test of the hot path runs twice (testkit.OnEachRedis): on one redis-server and on a
// 3-master Redis Cluster, where each script call must name keys of one slot.
type fixture struct {
	t     *testing.T
	rdb   redis.UniversalClient
	c     *cache.Cache
	pid   string
	clock time.Time
}

func newFixture(t *testing.T, opts ...cache.Option) *fixture {
	t.Helper()
	return newFixtureOn(t, RedisClient(t), opts...)
}

// newFixtureOn is newFixture on a Redis of the test's choosing.
func newFixtureOn(t *testing.T, rdb redis.UniversalClient, opts ...cache.Option) *fixture {
	t.Helper()
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
	if err := f.c.PublishProject(context.Background(), contract.Project{ID: f.pid, Status: enabled, ExpiresAt: exp}, 0); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) code(value string, r contract.CodeRecord) string {
	f.t.Helper()
	r.Code = value
	r.ProjectID = f.pid
	if r.ID == "" {
		r.ID = contract.NewID()
	}
	ok, err := f.c.PutCode(context.Background(), f.pid, r)
	if err != nil || !ok {
		f.t.Fatalf("put code %q: stored=%v err=%v", value, ok, err)
	}
	return r.ID
}

func (f *fixture) call(a contract.Action, value string) contract.Operation {
	f.clock = f.clock.Add(time.Millisecond)
	return contract.Operation{Action: a, ProjectID: f.pid, KeyID: "k1", Code: value, IP: "127.0.0.1",
		ReplayKey: contract.NewID(), EventID: contract.NewID(), Now: f.clock}
}

// apply runs an operation that must be answered with an outcome: no refusal, no failure.
func (f *fixture) apply(op contract.Operation) contract.OperationResult {
	f.t.Helper()
	r, err := f.c.Apply(context.Background(), op)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) live(value string) (contract.CodeRecord, bool) {
	f.t.Helper()
	r, found, err := f.c.LiveCode(context.Background(), f.pid, value)
	if err != nil {
		f.t.Fatal(err)
	}
	return r, found
}

// outboxRaw reads every outbox, in shard order (one pipeline; on a cluster, one per master).
func (f *fixture) outboxRaw() []string {
	f.t.Helper()
	ctx := context.Background()
	outboxes := cache.Outboxes()
	cmds := make([]*redis.StringSliceCmd, len(outboxes))
	pipe := f.rdb.Pipeline()
	for i, s := range outboxes {
		cmds[i] = pipe.LRange(ctx, s, 0, -1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, c := range cmds {
		out = append(out, c.Val()...)
	}
	return out
}

// clearOutbox deletes every outbox, one DEL each: on a cluster, one command must not
// name keys of several slots.
func (f *fixture) clearOutbox() {
	f.t.Helper()
	ctx := context.Background()
	pipe := f.rdb.Pipeline()
	for _, s := range cache.Outboxes() {
		pipe.Del(ctx, s)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		f.t.Fatal(err)
	}
}

// codeKeys are the code hashes Redis holds (every test has a Redis of its own, emptied).
func (f *fixture) codeKeys() []string {
	f.t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var keys []string
	scan := func(ctx context.Context, c *redis.Client) error {
		k, err := c.Keys(ctx, "acv:{*}:c:*").Result()
		mu.Lock()
		keys = append(keys, k...)
		mu.Unlock()
		return err
	}
	var err error
	if cl, ok := f.rdb.(*redis.ClusterClient); ok {
		err = cl.ForEachMaster(ctx, scan)
	} else {
		err = scan(ctx, f.rdb.(*redis.Client))
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return keys
}

func (f *fixture) outbox() []contract.Event {
	f.t.Helper()
	var out []contract.Event
	for _, s := range f.outboxRaw() {
		e, _, err := contract.DecodeOutboxEntry(s)
		if err != nil {
			f.t.Fatalf("outbox entry %q: %v", s, err)
		}
		out = append(out, e)
	}
	return out
}

func ptr(v int64) *int64 { return &v }

// fakeLoader is the system of record in memory: Redis stays real, only Postgres is faked.
type fakeLoader struct {
	mu         sync.Mutex
	codes      map[string]contract.CodeRecord // by project id + "/" + value
	projects   map[string]contract.Project
	versions   map[string]int64 // of the projects: how many times each was added
	codeErr    error            // returned by CodeByValue when set
	projectErr error            // returned by ProjectState when set
	codeLoads  map[string]int
	projLoads  map[string]int
	keys       map[string]contract.APIKey
	keyLoads   map[string]int
	keyErr     error // returned by APIKey when set
}

func newFakeLoader() *fakeLoader {
	return &fakeLoader{codes: map[string]contract.CodeRecord{}, projects: map[string]contract.Project{}, versions: map[string]int64{},
		codeLoads: map[string]int{}, projLoads: map[string]int{}, keys: map[string]contract.APIKey{}, keyLoads: map[string]int{}}
}

func (l *fakeLoader) addCode(r contract.CodeRecord) contract.CodeRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.ID == "" {
		r.ID = contract.NewID()
	}
	l.codes[r.ProjectID+"/"+r.Code] = r
	return r
}

func (l *fakeLoader) addProject(p contract.Project) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.projects[p.ID] = p
	l.versions[p.ID]++
}

func (l *fakeLoader) setErrs(codeErr, projectErr error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.codeErr, l.projectErr = codeErr, projectErr
}

func (l *fakeLoader) codeCalls(projectID, value string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.codeLoads[projectID+"/"+value]
}

func (l *fakeLoader) projectCalls(projectID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.projLoads[projectID]
}

func (l *fakeLoader) CodeByValue(_ context.Context, projectID, value string) (contract.CodeRecord, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.codeLoads[projectID+"/"+value]++
	if l.codeErr != nil {
		return contract.CodeRecord{}, l.codeErr
	}
	r, ok := l.codes[projectID+"/"+value]
	if !ok {
		return contract.CodeRecord{}, fmt.Errorf("code %q: %w", value, contract.ErrNotFound)
	}
	return r, nil
}

func (l *fakeLoader) ProjectState(_ context.Context, id string) (contract.Project, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.projLoads[id]++
	if l.projectErr != nil {
		return contract.Project{}, 0, l.projectErr
	}
	p, ok := l.projects[id]
	if !ok {
		return contract.Project{}, 0, fmt.Errorf("project %s: %w", id, contract.ErrNotFound)
	}
	return p, l.versions[id], nil
}

// A code or project Redis misses is loaded through the Loader, once, and the operation then
// runs on it; a value the Loader does not know is answered CODE_NOT_FOUND and remembered as
// unknown; a Loader failure is an error that changes nothing. A miss alone never writes an
// outbox entry.
func TestMissesAreLoadedThroughTheLoader(t *testing.T) {
	testkit.OnEachRedis(t, testMissesAreLoadedThroughTheLoader)
}

func testMissesAreLoadedThroughTheLoader(t *testing.T) {
	ctx := context.Background()

	t.Run("code missing from redis is loaded once, then verified", func(t *testing.T) {
		l := newFakeLoader()
		f := newFixture(t, cache.WithLoader(l))
		rec := l.addCode(contract.CodeRecord{ProjectID: f.pid, Code: "A", Version: 3, VerifiedBy: "", ExpiresAt: ptr(1_900_000_000)})
		op := f.call(contract.ActionVerify, "A")
		op.By = "till-1"
		r := f.apply(op)
		if !r.Outcome.Success() || r.Replayed || r.Outcome.CodeID != rec.ID || r.Outcome.VerifiedAt != op.Now.UnixMilli() {
			t.Fatalf("verify of a loaded code: %+v", r)
		}
		if n := l.codeCalls(f.pid, "A"); n != 1 {
			t.Fatalf("loader asked %d times for the code, want 1", n)
		}
		if n := l.projectCalls(f.pid); n != 0 {
			t.Fatalf("loader asked %d times for a project redis holds", n)
		}
		s, found := f.live("A")
		if !found || s.ID != rec.ID || s.VerifiedAtMs != op.Now.UnixMilli() || s.VerifiedBy != "till-1" ||
			s.Version != 4 || s.ExpiresAt == nil || *s.ExpiresAt != *rec.ExpiresAt {
			t.Fatalf("state after verify of a loaded code: found=%v %+v", found, s)
		}
		// Redis now holds the code: a second attempt is answered without the loader.
		if r := f.apply(f.call(contract.ActionVerify, "A")); r.Outcome.Error != contract.CodeAlreadyUsed {
			t.Fatalf("second verify: %+v", r.Outcome)
		}
		if n := l.codeCalls(f.pid, "A"); n != 1 {
			t.Fatalf("loader asked %d times for the code after it was cached, want 1", n)
		}
		// One entry per operation that reached the code; the miss itself wrote none.
		if n := len(f.outbox()); n != 2 {
			t.Fatalf("%d outbox entries, want 2 (the miss must add none)", n)
		}
	})

	t.Run("project missing from redis is loaded", func(t *testing.T) {
		l := newFakeLoader()
		f := newFixture(t, cache.WithLoader(l))
		for _, tc := range []struct {
			name string
			p    contract.Project
			want contract.ErrorCode
		}{
			{"enabled", contract.Project{Status: true, ExpiresAt: ptr(1_900_000_000)}, ""},
			{"disabled", contract.Project{Status: false}, contract.ProjectDisabled},
			// A code without an expiry of its own takes its project's: CODE_EXPIRED.
			{"expired", contract.Project{Status: true, ExpiresAt: ptr(1_700_000_000)}, contract.CodeExpired},
		} {
			f.pid = contract.NewID() // a project Redis has never seen
			tc.p.ID = f.pid
			l.addProject(tc.p)
			f.code("A", contract.CodeRecord{})
			r := f.apply(f.call(contract.ActionVerify, "A"))
			if r.Outcome.Error != tc.want {
				t.Fatalf("%s project: outcome %+v, want %q", tc.name, r.Outcome, tc.want)
			}
			if n := l.projectCalls(f.pid); n != 1 {
				t.Fatalf("%s project: loader asked %d times, want 1", tc.name, n)
			}
			f.apply(f.call(contract.ActionVerify, "A"))
			if n := l.projectCalls(f.pid); n != 1 {
				t.Fatalf("%s project: loader asked %d times after it was cached, want 1", tc.name, n)
			}
		}
	})

	t.Run("code and project both missing are both loaded", func(t *testing.T) {
		l := newFakeLoader()
		f := newFixture(t, cache.WithLoader(l))
		f.pid = contract.NewID()
		l.addProject(contract.Project{ID: f.pid, Status: true})
		rec := l.addCode(contract.CodeRecord{ProjectID: f.pid, Code: "B", VerifiedAtMs: 1_750_000_000_000, VerifiedBy: "x", Version: 9})
		r := f.apply(f.call(contract.ActionReactivate, "B"))
		if !r.Outcome.Success() || r.Outcome.CodeID != rec.ID {
			t.Fatalf("reactivate: %+v", r.Outcome)
		}
		if l.codeCalls(f.pid, "B") != 1 || l.projectCalls(f.pid) != 1 {
			t.Fatalf("loads: code %d, project %d, want 1 each", l.codeCalls(f.pid, "B"), l.projectCalls(f.pid))
		}
		if s, _ := f.live("B"); s.VerifiedAtMs != 0 || s.VerifiedBy != "" || s.Version != 10 {
			t.Fatalf("state after reactivate: %+v", s)
		}
		if n := len(f.outbox()); n != 1 {
			t.Fatalf("%d outbox entries, want 1", n)
		}
	})

	t.Run("unknown value is CODE_NOT_FOUND and remembered", func(t *testing.T) {
		l := newFakeLoader()
		f := newFixture(t, cache.WithLoader(l))
		for i, a := range []contract.Action{contract.ActionVerify, contract.ActionVerify, contract.ActionReactivate} {
			r := f.apply(f.call(a, "NOPE"))
			if r.Outcome.Error != contract.CodeNotFound || r.Outcome.CodeID != "" || r.Replayed {
				t.Fatalf("attempt %d: %+v, want CODE_NOT_FOUND without a code id", i+1, r)
			}
			if n := l.codeCalls(f.pid, "NOPE"); n != 1 {
				t.Fatalf("attempt %d: loader asked %d times, want 1 (the value is marked unknown)", i+1, n)
			}
		}
		if _, found := f.live("NOPE"); found {
			t.Fatal("an unknown value reads as a live code")
		}
		// The marker is a negative cache: it must expire.
		keys := f.codeKeys()
		if len(keys) != 1 {
			t.Fatalf("code keys %q: want exactly the unknown marker", keys)
		}
		if ttl, err := f.rdb.TTL(ctx, keys[0]).Result(); err != nil || ttl <= 0 || ttl > 5*time.Minute {
			t.Fatalf("unknown marker ttl %s, %v: want a positive ttl of at most 5m", ttl, err)
		}
		// Every attempt is logged, with the value it named and no code id.
		evs := f.outbox()
		if len(evs) != 3 {
			t.Fatalf("3 attempts on an unknown value wrote %d outbox entries, want 3", len(evs))
		}
		for _, e := range evs {
			if e.CodeID != "" || e.Code != "NOPE" || e.ProjectID != f.pid || e.Result != contract.ResultFailed ||
				e.Reason != string(contract.CodeNotFound) || e.Changed {
				t.Fatalf("unknown-value event %+v", e)
			}
		}
	})

	t.Run("loader error is returned and changes nothing", func(t *testing.T) {
		l := newFakeLoader()
		f := newFixture(t, cache.WithLoader(l))
		down := errors.New("postgres is down")
		l.setErrs(down, nil)
		rec := l.addCode(contract.CodeRecord{ProjectID: f.pid, Code: "A"})
		op := f.call(contract.ActionVerify, "A")
		op.Limit = contract.RateLimit{Rate: 0.001, Burst: 1} // a spent token would refuse the retry
		op.IdempotencyKey, op.RequestHash = "order-1", "h1"
		for i := 1; i <= 2; i++ {
			if _, err := f.c.Apply(ctx, op); !errors.Is(err, down) {
				t.Fatalf("attempt %d with the loader down: err %v, want the loader's error", i, err)
			}
			if n := l.codeCalls(f.pid, "A"); n != i {
				t.Fatalf("attempt %d: loader asked %d times (an error must not be cached)", i, n)
			}
		}
		if _, found := f.live("A"); found {
			t.Fatal("a failed load stored a code")
		}
		if keys := f.codeKeys(); len(keys) != 0 {
			t.Fatalf("a failed load left code keys %q: an error is not an unknown value", keys)
		}
		// The project's loader failing also changes nothing.
		f.pid = contract.NewID()
		l.setErrs(nil, down)
		f.code("P", contract.CodeRecord{Version: 2})
		pop := f.call(contract.ActionVerify, "P")
		if _, err := f.c.Apply(ctx, pop); !errors.Is(err, down) {
			t.Fatalf("project load failed: err %v, want the loader's error", err)
		}
		if s, _ := f.live("P"); s.VerifiedAtMs != 0 || s.Version != 2 {
			t.Fatalf("a failed project load changed the code: %+v", s)
		}
		if n := len(f.outbox()); n != 0 {
			t.Fatalf("failed loads wrote %d outbox entries", n)
		}
		// The very same requests go through once the loader recovers: no replay marker, no
		// spent token and no idempotency record were left behind.
		l.setErrs(nil, nil)
		l.addProject(contract.Project{ID: f.pid, Status: true})
		if r := f.apply(pop); !r.Outcome.Success() {
			t.Fatalf("project-miss request after recovery: %+v", r.Outcome)
		}
		f.pid = rec.ProjectID
		r, err := f.c.Apply(ctx, op)
		if err != nil || !r.Outcome.Success() || r.Replayed || r.Outcome.CodeID != rec.ID {
			t.Fatalf("code-miss request after recovery: %+v %v", r, err)
		}
	})

	t.Run("without a loader a miss is an error", func(t *testing.T) {
		f := newFixture(t)
		if _, err := f.c.Apply(ctx, f.call(contract.ActionVerify, "NOPE")); err == nil {
			t.Fatal("code miss without a loader: no error")
		}
		f.pid = contract.NewID()
		f.code("A", contract.CodeRecord{})
		if _, err := f.c.Apply(ctx, f.call(contract.ActionVerify, "A")); err == nil {
			t.Fatal("project miss without a loader: no error")
		}
		if s, _ := f.live("A"); s.VerifiedAtMs != 0 || s.Version != 0 {
			t.Fatalf("a miss changed the code: %+v", s)
		}
		if n := len(f.outbox()); n != 0 {
			t.Fatalf("a miss wrote %d outbox entries", n)
		}
	})
}

func TestOutcomesInContractOrder(t *testing.T) { testkit.OnEachRedis(t, testOutcomesInContractOrder) }

func testOutcomesInContractOrder(t *testing.T) {
	past, future := ptr(1_700_000_000), ptr(1_900_000_000)
	cases := []struct {
		name      string
		projOn    bool
		projExp   *int64
		state     contract.CodeRecord
		unknown   bool
		action    contract.Action
		want      contract.ErrorCode
		wantLogs  int
		wantState bool // verified after
	}{
		{"verify unused", true, nil, contract.CodeRecord{}, false, contract.ActionVerify, "", 1, true},
		{"verify used", true, nil, contract.CodeRecord{VerifiedAtMs: 1}, false, contract.ActionVerify, contract.CodeAlreadyUsed, 1, true},
		{"reactivate used", true, nil, contract.CodeRecord{VerifiedAtMs: 1}, false, contract.ActionReactivate, "", 1, false},
		{"reactivate unused", true, nil, contract.CodeRecord{}, false, contract.ActionReactivate, contract.CodeAlreadyUnused, 1, false},
		{"unknown value", true, nil, contract.CodeRecord{}, true, contract.ActionVerify, contract.CodeNotFound, 1, false},
		{"project disabled before all", false, past, contract.CodeRecord{Disabled: true, VerifiedAtMs: 1}, false, contract.ActionVerify, contract.ProjectDisabled, 1, true},
		// An expired project: its expiry is the effective expiry of a code without one of its own
		// (state expired, CODE_EXPIRED, after the disabled and use checks); PROJECT_EXPIRED only
		// while the code's own later expiry still holds.
		{"code disabled before expired project", true, past, contract.CodeRecord{Disabled: true}, false, contract.ActionVerify, contract.CodeDisabled, 1, false},
		{"used before expired project", true, past, contract.CodeRecord{VerifiedAtMs: 1}, false, contract.ActionVerify, contract.CodeAlreadyUsed, 1, true},
		{"unused before expired project on reactivate", true, past, contract.CodeRecord{}, false, contract.ActionReactivate, contract.CodeAlreadyUnused, 1, false},
		{"expired project, code without own expiry", true, past, contract.CodeRecord{}, false, contract.ActionVerify, contract.CodeExpired, 1, false},
		{"expired project, reactivate code without own expiry", true, past, contract.CodeRecord{VerifiedAtMs: 1}, false, contract.ActionReactivate, contract.CodeExpired, 1, true},
		{"expired project, code's own expiry passed too", true, past, contract.CodeRecord{ExpiresAt: ptr(1_600_000_000)}, false, contract.ActionVerify, contract.CodeExpired, 1, false},
		{"expired project, code's own later expiry holds", true, past, contract.CodeRecord{ExpiresAt: future}, false, contract.ActionVerify, contract.ProjectExpired, 1, false},
		{"expired project, reactivate with own later expiry", true, past, contract.CodeRecord{ExpiresAt: future, VerifiedAtMs: 1}, false, contract.ActionReactivate, contract.ProjectExpired, 1, true},
		{"project disabled before code expired", false, past, contract.CodeRecord{ExpiresAt: past}, false, contract.ActionVerify, contract.ProjectDisabled, 1, false},
		{"code disabled before used", true, nil, contract.CodeRecord{Disabled: true, VerifiedAtMs: 1}, false, contract.ActionVerify, contract.CodeDisabled, 1, true},
		{"used before expired", true, nil, contract.CodeRecord{VerifiedAtMs: 1, ExpiresAt: past}, false, contract.ActionVerify, contract.CodeAlreadyUsed, 1, true},
		{"unused before expired on reactivate", true, nil, contract.CodeRecord{ExpiresAt: past}, false, contract.ActionReactivate, contract.CodeAlreadyUnused, 1, false},
		{"code expired", true, nil, contract.CodeRecord{ExpiresAt: past}, false, contract.ActionVerify, contract.CodeExpired, 1, false},
		{"reactivate expired", true, nil, contract.CodeRecord{ExpiresAt: past, VerifiedAtMs: 1}, false, contract.ActionReactivate, contract.CodeExpired, 1, true},
		{"code expiry overrides project", true, future, contract.CodeRecord{ExpiresAt: past}, false, contract.ActionVerify, contract.CodeExpired, 1, false},
		{"code not expiring, project later", true, future, contract.CodeRecord{}, false, contract.ActionVerify, "", 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.project(tc.projOn, tc.projExp)
			if tc.unknown {
				if err := f.c.MarkUnknown(context.Background(), f.pid, "C", time.Minute); err != nil {
					t.Fatal(err)
				}
			} else {
				f.code("C", tc.state)
			}
			call := f.call(tc.action, "C")
			r := f.apply(call)
			if r.Replayed || r.Outcome.Error != tc.want {
				t.Fatalf("replayed=%v error %q, want a new outcome with %q", r.Replayed, r.Outcome.Error, tc.want)
			}
			if tc.unknown && r.Outcome.CodeID != "" {
				t.Fatalf("unknown code has id %q", r.Outcome.CodeID)
			}
			logs := f.outbox()
			if len(logs) != tc.wantLogs {
				t.Fatalf("%d log events, want %d", len(logs), tc.wantLogs)
			}
			if tc.unknown {
				if e := logs[0]; e.ID != call.EventID || e.CodeID != "" || e.Code != "C" || e.Reason != string(contract.CodeNotFound) {
					t.Fatalf("unknown-value event %+v does not match the call", e)
				}
				return
			}
			s, found := f.live("C")
			if !found {
				t.Fatal("code not found after the operation")
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
	testkit.OnEachRedis(t, testVerifyRecordsVerifierAndReactivateClearsIt)
}

func testVerifyRecordsVerifierAndReactivateClearsIt(t *testing.T) {
	f := newFixture(t)
	f.code("C", contract.CodeRecord{})
	c := f.call(contract.ActionVerify, "C")
	c.By = "till-7"
	r := f.apply(c)
	if !r.Outcome.Success() || r.Outcome.VerifiedAt != c.Now.UnixMilli() {
		t.Fatalf("verify: %+v", r.Outcome)
	}
	s, _ := f.live("C")
	if s.VerifiedBy != "till-7" || s.VerifiedAtMs != c.Now.UnixMilli() || s.Version != 1 {
		t.Fatalf("state after verify: %+v", s)
	}
	rc := f.call(contract.ActionReactivate, "C")
	rc.By, rc.Reason = "support", "refund #12"
	if r := f.apply(rc); !r.Outcome.Success() || r.Outcome.At != rc.Now.UnixMilli() {
		t.Fatalf("reactivate: %+v", r.Outcome)
	}
	s, _ = f.live("C")
	if s.VerifiedBy != "" || s.VerifiedAtMs != 0 || s.Version != 2 {
		t.Fatalf("state after reactivate: %+v", s)
	}
	logs := f.outbox()
	if logs[1].Reason != "refund #12" || logs[1].VerifiedBy != "support" || logs[0].StateBy != "till-7" {
		t.Fatalf("logs: %+v", logs)
	}
}

func TestReplayRefusedAndRateLimitedRequestCanRetry(t *testing.T) {
	testkit.OnEachRedis(t, testReplayRefusedAndRateLimitedRequestCanRetry)
}

func testReplayRefusedAndRateLimitedRequestCanRetry(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.code("A", contract.CodeRecord{})
	f.code("B", contract.CodeRecord{})
	call := f.call(contract.ActionVerify, "A")
	call.Limit = contract.RateLimit{Rate: 1, Burst: 1}
	if r := f.apply(call); r.Replayed || !r.Outcome.Success() || r.Rate.Remaining != 0 {
		t.Fatalf("first: %+v", r)
	}
	// The replay check runs before the bucket: the refusal says so with Remaining -1.
	if r, err := f.c.Apply(ctx, call); !errors.Is(err, contract.ErrReplayed) || r.Rate.Remaining != -1 {
		t.Fatalf("replayed call: %+v, err %v, want ErrReplayed with the rate state filled", r, err)
	}
	second := f.call(contract.ActionVerify, "B")
	second.Limit = call.Limit
	r, err := f.c.Apply(ctx, second)
	if !errors.Is(err, contract.ErrRateLimited) || r.Rate.Wait <= 0 || r.Rate.Wait > time.Second {
		t.Fatalf("over the limit: %+v, err %v, want ErrRateLimited with a wait in (0, 1s]", r, err)
	}
	if s, _ := f.live("B"); s.VerifiedAtMs != 0 {
		t.Fatal("a rate-limited verify changed the code")
	}
	second.Now = second.Now.Add(time.Second)
	if r := f.apply(second); r.Replayed || !r.Outcome.Success() {
		t.Fatalf("the same request after a token refilled: %+v", r)
	}
	if n := len(f.outbox()); n != 2 {
		t.Fatalf("%d log events, want 2", n)
	}
}

func TestIdempotencyReplaysFirstOutcome(t *testing.T) {
	testkit.OnEachRedis(t, testIdempotencyReplaysFirstOutcome)
}

func testIdempotencyReplaysFirstOutcome(t *testing.T) {
	f := newFixture(t)
	f.code("A", contract.CodeRecord{})
	first := f.call(contract.ActionVerify, "A")
	first.IdempotencyKey, first.RequestHash = "order-1", "h1"
	r1 := f.apply(first)
	if r1.Replayed {
		t.Fatalf("first use of the key reported as a replay: %+v", r1)
	}
	retry := f.call(contract.ActionVerify, "A")
	retry.IdempotencyKey, retry.RequestHash = "order-1", "h1"
	r2 := f.apply(retry)
	if !r2.Replayed || r2.Outcome != r1.Outcome || !r2.Outcome.Success() {
		t.Fatalf("retry: %+v, first %+v", r2, r1)
	}
	other := f.call(contract.ActionVerify, "A")
	other.IdempotencyKey, other.RequestHash = "order-1", "h2"
	if r, err := f.c.Apply(context.Background(), other); !errors.Is(err, contract.ErrIdempotencyConflict) || r.Rate.Remaining != -1 {
		t.Fatalf("different body: %+v, err %v, want ErrIdempotencyConflict with the (unlimited) rate state", r, err)
	}
	if n := len(f.outbox()); n != 1 {
		t.Fatalf("%d log events, want 1", n)
	}

	// A retry writes once, so a WAIT after it covers the first request's writes: here the
	// record's TTL, cut short, comes back whole.
	ctx := context.Background()
	record := cache.ShardPrefix(cache.ShardOf(f.pid, "A")) + "ik:k1:order-1"
	if err := f.rdb.Expire(ctx, record, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	again := f.call(contract.ActionVerify, "A")
	again.IdempotencyKey, again.RequestHash = "order-1", "h1"
	if r := f.apply(again); !r.Replayed {
		t.Fatalf("second retry: %+v", r)
	}
	if ttl, err := f.rdb.TTL(ctx, record).Result(); err != nil || ttl < cache.IdempotencyTTL-time.Minute {
		t.Fatalf("the record's TTL after a retry: %s, %v; want it renewed to %s", ttl, err, cache.IdempotencyTTL)
	}
}

func TestPutCodeNeverOverwritesNewerState(t *testing.T) {
	testkit.OnEachRedis(t, testPutCodeNeverOverwritesNewerState)
}

func testPutCodeNeverOverwritesNewerState(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.c.MarkUnknown(ctx, f.pid, "A", time.Minute); err != nil {
		t.Fatal(err)
	}
	id := f.code("A", contract.CodeRecord{}) // replaces the unknown marker
	f.apply(f.call(contract.ActionVerify, "A"))
	stored, err := f.c.PutCode(ctx, f.pid, contract.CodeRecord{ID: id, ProjectID: f.pid, Code: "A"})
	if err != nil || stored {
		t.Fatalf("stale load stored=%v err=%v", stored, err)
	}
	s, _ := f.live("A")
	if s.VerifiedAtMs == 0 {
		t.Fatal("a stale load overwrote the verified state")
	}
	if err := f.c.MarkUnknown(ctx, f.pid, "A", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, found := f.live("A"); !found {
		t.Fatal("an unknown marker replaced a real code")
	}
}

// MarkUnknown without a usable ttl would store nothing (or a marker that never expires): it
// must refuse instead of silently doing either.
func TestMarkUnknownRequiresTTL(t *testing.T) { testkit.OnEachRedis(t, testMarkUnknownRequiresTTL) }

func testMarkUnknownRequiresTTL(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, ttl := range []time.Duration{0, -time.Second, 500 * time.Millisecond} {
		if err := f.c.MarkUnknown(ctx, f.pid, "A", ttl); err == nil {
			t.Fatalf("MarkUnknown with ttl %s: no error", ttl)
		}
	}
	if keys := f.codeKeys(); len(keys) != 0 {
		t.Fatalf("refused MarkUnknown calls left keys %q", keys)
	}
}

func TestSetDisabledBumpsVersion(t *testing.T) { testkit.OnEachRedis(t, testSetDisabledBumpsVersion) }

func testSetDisabledBumpsVersion(t *testing.T) {
	ctx := context.Background()
	t.Run("missing code without a loader", func(t *testing.T) {
		f := newFixture(t)
		if _, err := f.c.SetDisabled(ctx, f.pid, "A", true); err == nil {
			t.Fatal("missing code without a loader: no error")
		}
		if _, found := f.live("A"); found {
			t.Fatal("a refused disable stored a code")
		}
	})
	l := newFakeLoader()
	f := newFixture(t, cache.WithLoader(l))
	if _, err := f.c.SetDisabled(ctx, f.pid, "A", true); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("code unknown to the loader: %v, want ErrNotFound", err)
	}
	if _, found := f.live("A"); found {
		t.Fatal("a refused disable stored a code")
	}
	f.code("A", contract.CodeRecord{Version: 4})
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
	// A code Redis misses is loaded first, and the change is a new version of the loaded state.
	rec := l.addCode(contract.CodeRecord{ProjectID: f.pid, Code: "L", Version: 7, VerifiedAtMs: 1_750_000_000_000, VerifiedBy: "v"})
	s, err = f.c.SetDisabled(ctx, f.pid, "L", true)
	if err != nil || !s.Disabled || s.Version != 8 || s.VerifiedAtMs != rec.VerifiedAtMs || s.VerifiedBy != "v" {
		t.Fatalf("disable of a loaded code: %+v %v", s, err)
	}
	if n := l.codeCalls(f.pid, "L"); n != 1 {
		t.Fatalf("loader asked %d times, want 1", n)
	}
	if live, found := f.live("L"); !found || !live.Disabled || live.Version != 8 || live.ID != rec.ID {
		t.Fatalf("live state of the loaded, disabled code: found=%v %+v", found, live)
	}
}

func TestConcurrentVerifiesRedeemOnce(t *testing.T) {
	testkit.OnEachRedis(t, testConcurrentVerifiesRedeemOnce)
}

func testConcurrentVerifiesRedeemOnce(t *testing.T) {
	t.Run("one round trip each", func(t *testing.T) { concurrentVerifies(t, newFixture(t)) })
	t.Run("coalesced pipelines", func(t *testing.T) { concurrentVerifies(t, newFixture(t, cache.WithCoalescing(4, 64))) })
}

// concurrentVerifies races 500 verifies of one code: exactly one wins, every attempt is logged.
func concurrentVerifies(t *testing.T, f *fixture) {
	f.code("HOT", contract.CodeRecord{})
	const n = 500
	var wg sync.WaitGroup
	results := make(chan contract.OperationResult, n)
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
	testkit.OnEachRedis(t, testCoalescedCallsKeepTheirOwnReplies)
}

func testCoalescedCallsKeepTheirOwnReplies(t *testing.T) {
	f := newFixture(t, cache.WithCoalescing(2, 32))
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		f.code(fmt.Sprintf("C%d", i), contract.CodeRecord{})
	}
	flushFunctions(t, f.rdb)
	var wg sync.WaitGroup
	results := make([]contract.OperationResult, 100)
	errs := make([]error, 100)
	calls := make([]contract.Operation, 100)
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
				results[i], errs[i] = f.c.Apply(ctx, calls[i])
			}()
		}
		wg.Wait()
	}
	for i, r := range results {
		if i < 50 && (errs[i] != nil || r.Replayed || !r.Outcome.Success() || r.Outcome.Code != calls[i].Code) {
			t.Fatalf("call %d: %+v, err %v", i, r, errs[i])
		}
		if i >= 50 && !errors.Is(errs[i], contract.ErrReplayed) {
			t.Fatalf("replay %d: %+v, err %v, want ErrReplayed", i, r, errs[i])
		}
	}
}

// apply.lua treats every action but verify as a reactivation and writes the action and the ids
// into the event JSON unescaped: Apply must refuse such operations before Redis sees them.
func TestApplyRefusesMalformedOperations(t *testing.T) {
	testkit.OnEachRedis(t, testApplyRefusesMalformedOperations)
}

func testApplyRefusesMalformedOperations(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.code("A", contract.CodeRecord{VerifiedAtMs: 1_750_000_000_000, VerifiedBy: "till-7", Version: 3})
	for name, mutate := range map[string]func(*contract.Operation){
		"zero action":          func(op *contract.Operation) { op.Action = "" },
		"unknown action":       func(op *contract.Operation) { op.Action = "VERIFY" },
		"action with a quote":  func(op *contract.Operation) { op.Action = `verify","x":"` },
		"empty project id":     func(op *contract.Operation) { op.ProjectID = "" },
		"project id not hex":   func(op *contract.Operation) { op.ProjectID = `p"1` },
		"empty event id":       func(op *contract.Operation) { op.EventID = "" },
		"event id with quotes": func(op *contract.Operation) { op.EventID = `e","result":"success` },
	} {
		op := f.call(contract.ActionReactivate, "A")
		mutate(&op)
		if r, err := f.c.Apply(ctx, op); err == nil {
			t.Errorf("%s: applied %+v", name, r)
		}
	}
	if s, _ := f.live("A"); s.VerifiedAtMs != 1_750_000_000_000 || s.VerifiedBy != "till-7" || s.Version != 3 {
		t.Fatalf("a refused operation changed the code: %+v", s)
	}
	if n := len(f.outboxRaw()); n != 0 {
		t.Fatalf("refused operations wrote %d outbox entries", n)
	}
	if r := f.apply(f.call(contract.ActionReactivate, "A")); !r.Outcome.Success() {
		t.Fatalf("a well-formed reactivate after the refusals: %+v", r.Outcome)
	}
}

// Redis holds a code's id as the 16 bytes of its hex form, and apply.lua turns exactly 16 bytes
// back into the id it replies and logs: another id would break every verify of the code, or log
// it under another id. PutCode, PutCodes and a load refuse it and store nothing.
func TestPutCodeRefusesMalformedIDs(t *testing.T) {
	testkit.OnEachRedis(t, testPutCodeRefusesMalformedIDs)
}

func testPutCodeRefusesMalformedIDs(t *testing.T) {
	ctx := context.Background()
	l := newFakeLoader()
	f := newFixture(t, cache.WithLoader(l))
	bad := []string{"", "abc", "0123456789ABCDEF0123456789ABCDEF", "0123456789abcdef0123456789abcdef-x", "0123456789abcdef0123456789abcdeg"}
	for _, id := range bad {
		v := "V" + id
		if stored, err := f.c.PutCode(ctx, f.pid, contract.CodeRecord{ID: id, ProjectID: f.pid, Code: v}); err == nil || stored {
			t.Errorf("PutCode with id %q: stored=%v err=%v", id, stored, err)
		}
		if _, found := f.live(v); found {
			t.Errorf("PutCode with id %q stored the code", id)
		}
	}
	good := contract.CodeRecord{ID: contract.NewID(), ProjectID: f.pid, Code: "GOOD"}
	if err := f.c.PutCodes(ctx, f.pid, []contract.CodeRecord{good, {ID: "abc", ProjectID: f.pid, Code: "BAD"}}); err == nil {
		t.Error("PutCodes with a malformed id: no error")
	}
	if _, found := f.live("GOOD"); found {
		t.Error("PutCodes stored part of a batch it refused")
	}
	// A malformed record from the Loader is an error, not a stored code and not an unknown value.
	l.addCode(contract.CodeRecord{ID: "abc", ProjectID: f.pid, Code: "L"})
	if _, err := f.c.Apply(ctx, f.call(contract.ActionVerify, "L")); err == nil {
		t.Error("a loaded code with a malformed id was applied")
	}
	if keys := f.codeKeys(); len(keys) != 0 {
		t.Fatalf("refused codes left keys %q", keys)
	}
	if n := len(f.outboxRaw()); n != 0 {
		t.Fatalf("refused codes wrote %d outbox entries", n)
	}
}

func TestAdmitChecksReplayAndRateLimit(t *testing.T) {
	testkit.OnEachRedis(t, testAdmitChecksReplayAndRateLimit)
}

func testAdmitChecksReplayAndRateLimit(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := contract.Admission{ProjectID: f.pid, KeyID: "k1", ReplayKey: "r1", CheckReplay: true,
		Limit: contract.RateLimit{Rate: 1, Burst: 2}, Now: f.clock}
	if rs, err := f.c.Admit(ctx, a); err != nil || rs.Remaining != 1 || rs.Wait != 0 {
		t.Fatalf("first: %+v %v", rs, err)
	}
	if rs, err := f.c.Admit(ctx, a); !errors.Is(err, contract.ErrReplayed) || rs.Remaining != -1 {
		t.Fatalf("replay: %+v %v, want ErrReplayed", rs, err)
	}
	a.ReplayKey = "r2"
	if rs, err := f.c.Admit(ctx, a); err != nil || rs.Remaining != 0 {
		t.Fatalf("second: %+v %v", rs, err)
	}
	a.ReplayKey = "r3"
	rs, err := f.c.Admit(ctx, a)
	if !errors.Is(err, contract.ErrRateLimited) || rs.Wait <= 0 || rs.Wait > time.Second {
		t.Fatalf("over the limit: %+v %v, want ErrRateLimited with a wait in (0, 1s]", rs, err)
	}
	// A refused request recorded neither its replay key nor a token: it can be retried as is.
	a.Now = a.Now.Add(time.Second)
	if rs, err := f.c.Admit(ctx, a); err != nil || rs.Remaining != 0 {
		t.Fatalf("retry after a refill: %+v %v", rs, err)
	}
	// Without a replay check and without a limit, anything is admitted, and says so.
	free := contract.Admission{ProjectID: f.pid, KeyID: "k2", ReplayKey: "r1", Now: f.clock}
	for i := 0; i < 3; i++ {
		if rs, err := f.c.Admit(ctx, free); err != nil || rs.Remaining != -1 {
			t.Fatalf("unchecked, unlimited admission %d: %+v %v", i, rs, err)
		}
	}
}

func (l *fakeLoader) APIKey(_ context.Context, id string) (contract.APIKey, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keyLoads[id]++
	if l.keyErr != nil {
		return contract.APIKey{}, l.keyErr
	}
	k, ok := l.keys[id]
	if !ok {
		return contract.APIKey{}, fmt.Errorf("api key %s: %w", id, contract.ErrNotFound)
	}
	return k, nil
}

func (l *fakeLoader) keyCalls(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.keyLoads[id]
}
