// Package cache is the hot path: Redis holds every code's live state, and each verify or
// reactivate is one Lua call (scripts/*.lua) that checks, transitions and appends its log
// event to the outbox atomically. layout.go is the data format.
package cache

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/redisscript"
	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFiles embed.FS

func scriptSrc(file string) string {
	b, err := scriptFiles.ReadFile("scripts/" + file)
	if err != nil {
		panic(err) // every name is a constant of this package
	}
	return string(b)
}

var (
	preludeSrc = scriptSrc("prelude.lua")

	applyScript      = newScript("apply")
	admitScript      = newScript("admit")
	putCodeScript    = newScript("putcode")
	unknownScript    = newScript("unknown")
	disableScript    = newScript("disable")
	putProjectScript = newScript("putproject")
	refundScript     = newScript("refund")
	putKeyScript     = newScript("putkey")
	revokeKeyScript  = newScript("revokekey")
	leaseScript      = newScript("lease")
	releaseScript    = newScript("release")

	allScripts = []*redisscript.Script{applyScript, admitScript, putCodeScript, unknownScript, disableScript,
		putProjectScript, refundScript, putKeyScript, revokeKeyScript, leaseScript, releaseScript}
)

// newScript is scripts/<name>.lua behind the prelude (layout.go).
func newScript(name string) *redisscript.Script {
	return redisscript.New("acv_"+name, luaPrelude(), scriptSrc(name+".lua"))
}

// Redis is what the cache needs of a client; *redis.Client and *redis.ClusterClient both fit.
type Redis interface {
	redisscript.Client
	HGetAll(ctx context.Context, key string) *redis.MapStringStringCmd
	HMGet(ctx context.Context, key string, fields ...string) *redis.SliceCmd
	Exists(ctx context.Context, keys ...string) *redis.IntCmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd
	Ping(ctx context.Context) *redis.StatusCmd
}

// cluster is what a Redis Cluster client offers beyond Redis (*redis.ClusterClient fits).
type cluster interface {
	ForEachMaster(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error
	MasterForKey(ctx context.Context, key string) (*redis.Client, error)
	ReloadState(ctx context.Context)
}

// Loader reads from Postgres what Redis does not hold yet; contract.ErrNotFound (wrapped) when
// nothing has the id or value. APIKey's Secret is sealed, as stored.
type Loader interface {
	CodeByValue(ctx context.Context, projectID, value string) (contract.CodeRecord, error)
	ProjectState(ctx context.Context, id string) (p contract.Project, version int64, err error)
	APIKey(ctx context.Context, id string) (contract.APIKey, error)
}

// Cache runs the hot-path scripts against Redis.
type Cache struct {
	rdb        Redis
	loader     Loader        // nil: a miss is an error
	co         *coalescer    // nil: every call is its own round trip
	unknownTTL time.Duration // how long a value unknown in Postgres is remembered
	wait       replicaWait   // WAIT after hot-path writes; none by default
	coWorkers  int           // coalescing senders (WithCoalescing)
	coBatch    int           // calls a coalesced pipeline holds at most
	limits     *limiter      // this replica's token leases
}

// Option tunes a Cache.
type Option func(*Cache)

// WithLoader lets Verify, Reactivate and SetDisabled load what Redis misses from l.
func WithLoader(l Loader) Option { return func(c *Cache) { c.loader = l } }

// WithCoalescing sends verify, reactivate and admission calls that arrive together in shared
// pipelines, from workers senders of up to maxBatch calls each. Close stops them.
func WithCoalescing(workers, maxBatch int) Option {
	return func(c *Cache) { c.coWorkers, c.coBatch = workers, maxBatch }
}

// New returns a Cache over rdb.
func New(rdb Redis, opts ...Option) *Cache {
	c := &Cache{rdb: rdb, unknownTTL: 5 * time.Minute}
	c.limits = &limiter{c: c, leases: make(map[string]*lease)}
	for _, o := range opts {
		o(c)
	}
	if c.coWorkers > 0 && c.coBatch > 1 {
		c.co = newCoalescer(c.rdb, c.wait, c.coWorkers, c.coBatch)
	}
	return c
}

// Close stops the coalescing senders, if any.
func (c *Cache) Close() {
	if c.co != nil {
		close(c.co.stop)
		c.co.wg.Wait()
	}
}

// call runs a hot-path script, through the coalescer when there is one; an unavailable Redis
// is a contract.KindUnavailable error. A script refused while a cluster moves slots (MOVED,
// ASK, TRYAGAIN) did not run, and go-redis never follows those inside a batch, so call resends
// it with growing pauses for up to slotMotionWait before it is a 503.
func (c *Cache) call(ctx context.Context, s *redisscript.Script, keys []string, args ...interface{}) (interface{}, error) {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		v, err := c.callOnce(ctx, s, keys, args...)
		moved, inMotion := slotInMotion(err)
		if !inMotion || time.Since(start) >= slotMotionWait {
			return v, translate(err)
		}
		if cl, ok := c.rdb.(cluster); ok && moved {
			cl.ReloadState(ctx)
		}
		pause := time.NewTimer(min(slotMotionPause<<min(attempt, 4), slotMotionWait-time.Since(start)))
		select {
		case <-ctx.Done():
			pause.Stop()
			return v, translate(err)
		case <-pause.C:
		}
	}
}

// How long call waits for a slot in motion: the first pause (doubling, up to 16 times) and
// the longest wait in all.
const (
	slotMotionPause = 5 * time.Millisecond
	slotMotionWait  = 5 * time.Second
)

func (c *Cache) callOnce(ctx context.Context, s *redisscript.Script, keys []string, args ...interface{}) (interface{}, error) {
	if c.co != nil {
		return c.co.run(ctx, s, keys, args...)
	}
	if c.wait.replicas > 0 {
		call := &redisscript.Call{Script: s, Keys: keys, Args: args}
		sendBatch(ctx, c.rdb, []*redisscript.Call{call}, c.wait)
		return call.Reply, call.Err
	}
	return s.Run(ctx, c.rdb, keys, args...)
}

// Preload loads every script into Redis so the first requests do not pay for loading one.
func (c *Cache) Preload(ctx context.Context) error {
	for _, s := range allScripts {
		if err := s.Load(ctx, c.rdb); err != nil {
			return fmt.Errorf("preload: %w", err)
		}
	}
	return nil
}

// Ping checks that Redis answers: on a cluster, every master (each holds some of every
// project's codes).
func (c *Cache) Ping(ctx context.Context) error {
	if cl, ok := c.rdb.(cluster); ok {
		return cl.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			if err := m.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("ping redis cluster: %s: %w", m.Options().Addr, err)
			}
			return nil
		})
	}
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping redis: %w", err)
	}
	return nil
}

// coalescer sends script calls that arrive together in one pipeline, so concurrent verifies
// share one write and one read. A call that arrives alone is sent at once.
type coalescer struct {
	rdb      Redis
	wait     replicaWait
	calls    chan *queuedCall
	maxBatch int
	stop     chan struct{}
	wg       sync.WaitGroup
}

type queuedCall struct {
	redisscript.Call
	done chan struct{}
}

// batchTimeout bounds one pipeline's round trip, whatever the callers' deadlines.
const batchTimeout = 10 * time.Second

func newCoalescer(rdb Redis, wait replicaWait, workers, maxBatch int) *coalescer {
	c := &coalescer{rdb: rdb, wait: wait, calls: make(chan *queuedCall, workers*maxBatch), maxBatch: maxBatch, stop: make(chan struct{})}
	for i := 0; i < workers; i++ {
		c.wg.Add(1)
		go c.work()
	}
	return c
}

// run queues one call and waits for its reply. A call whose caller gave up may still run:
// like a command already on the wire, its effect stands.
func (c *coalescer) run(ctx context.Context, s *redisscript.Script, keys []string, args ...interface{}) (interface{}, error) {
	call := &queuedCall{Call: redisscript.Call{Script: s, Keys: keys, Args: args}, done: make(chan struct{})}
	select {
	case c.calls <- call:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-call.done:
		return call.Reply, call.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *coalescer) work() {
	defer c.wg.Done()
	queued := make([]*queuedCall, 0, c.maxBatch)
	batch := make([]*redisscript.Call, 0, c.maxBatch)
	for {
		select {
		case <-c.stop:
			return
		case first := <-c.calls:
			queued = append(queued[:0], first)
		}
	fill:
		for len(queued) < c.maxBatch {
			select {
			case call := <-c.calls:
				queued = append(queued, call)
			default:
				break fill
			}
		}
		batch = batch[:0]
		for _, q := range queued {
			batch = append(batch, &q.Call)
		}
		c.send(batch)
		for _, q := range queued {
			close(q.done)
		}
	}
}

// send sends one batch, on its own deadline: its callers' may differ.
func (c *coalescer) send(batch []*redisscript.Call) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	if len(batch) == 1 && c.wait.replicas == 0 {
		call := batch[0]
		call.Reply, call.Err = call.Script.Run(ctx, c.rdb, call.Keys, call.Args...)
		return
	}
	sendBatch(ctx, c.rdb, batch, c.wait)
}

// unavailablePrefixes are the Redis error replies that mean "not now" rather than "never"
// ("BUSY " with its space, so BUSYGROUP and BUSYKEY stay what they are).
var unavailablePrefixes = []string{
	"LOADING", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "MOVED ", "ASK ", "BUSY ", "READONLY", "max number of clients reached",
}

// translate turns an error meaning Redis is unavailable into a contract.KindUnavailable (503)
// with the cause in its chain.
func translate(err error) error {
	if err == nil || !redisUnavailable(err) {
		return err
	}
	return contract.Unavailable(err)
}

// slotInMotion tells whether err refused a command, which then did not run, because its slot
// moved (MOVED: moved) or is migrating (ASK, TRYAGAIN).
func slotInMotion(err error) (moved, inMotion bool) {
	switch {
	case err == nil:
		return false, false
	case redis.HasErrorPrefix(err, "MOVED "):
		return true, true
	case redis.HasErrorPrefix(err, "ASK "), redis.HasErrorPrefix(err, "TRYAGAIN"):
		return false, true
	}
	return false, false
}

func redisUnavailable(err error) bool {
	for _, p := range unavailablePrefixes {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	if errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) || errors.Is(err, redis.ErrClosed) {
		return true
	}
	return contract.ConnectionLost(err)
}

// replicaWait is the WAIT that follows hot-path writes; zero replicas means none. Without it a
// failover can lose up to about a second of acknowledged redemptions.
type replicaWait struct {
	replicas int
	timeout  time.Duration
}

// WithReplicaWait makes Verify, Reactivate and Admit answer only once replicas replicas hold
// their writes (WAIT), for at most timeout; fewer is a contract.KindUnavailable error.
func WithReplicaWait(replicas int, timeout time.Duration) Option {
	return func(c *Cache) {
		if replicas > 0 {
			c.wait = replicaWait{replicas: replicas, timeout: max(timeout, time.Millisecond)}
		}
	}
}

// sendBatch runs calls in one pipeline, followed by a WAIT on the same connection when w asks
// for replicas. On a cluster each master gets a pipeline of its own: WAIT counts its node's
// replicas, and go-redis's cluster pipeline would resend a whole batch on TRYAGAIN, running
// scripts twice. A call refused with MOVED, ASK or TRYAGAIN did not run; Cache.call resends it.
func sendBatch(ctx context.Context, rdb Redis, batch []*redisscript.Call, w replicaWait) {
	if cl, ok := rdb.(cluster); ok {
		byMaster := map[*redis.Client][]*redisscript.Call{}
		for _, call := range batch {
			m, err := cl.MasterForKey(ctx, call.Keys[0])
			if err != nil {
				call.Err = err
				continue
			}
			byMaster[m] = append(byMaster[m], call)
		}
		var wg sync.WaitGroup
		for m, calls := range byMaster {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sendBatch(ctx, m, calls, w)
			}()
		}
		wg.Wait()
		return
	}
	redisscript.Send(ctx, rdb, batch, w.tail())
}

func (w replicaWait) tail() redisscript.Tail {
	if w.replicas == 0 {
		return nil
	}
	return func(ctx context.Context, p redis.Pipeliner) func() error {
		wait := p.Do(ctx, "WAIT", w.replicas, w.timeout.Milliseconds())
		return func() error {
			n, err := wait.Int64()
			if err != nil {
				return fmt.Errorf("wait for replicas: %w", err)
			}
			if n < int64(w.replicas) {
				return contract.Unavailable(fmt.Errorf("write acknowledged by %d of %d redis replicas in time", n, w.replicas))
			}
			return nil
		}
	}
}
