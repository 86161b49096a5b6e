// Package cache is the hot path: Redis holds the live state of every code, and each verify or
// reactivate is one Lua call that checks, transitions and appends its log event to the outbox
// atomically. A code or project Redis has not seen is loaded from the system of record through
// a Loader, inside Verify and Reactivate, so callers make one call. Scripts live in
// scripts/*.lua, one file each, with their KEYS, ARGV and reply, and run as Redis Functions
// (internal/redisscript); layout.go is the data format.
package cache

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/redisscript"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/prelude.lua
	preludeSrc string
	//go:embed scripts/apply.lua
	applySrc string
	//go:embed scripts/admit.lua
	admitSrc string
	//go:embed scripts/putcode.lua
	putCodeSrc string
	//go:embed scripts/unknown.lua
	unknownSrc string
	//go:embed scripts/disable.lua
	disableSrc string
	//go:embed scripts/putproject.lua
	putProjectSrc string
	//go:embed scripts/refund.lua
	refundSrc string
	//go:embed scripts/putkey.lua
	putKeySrc string
	//go:embed scripts/revokekey.lua
	revokeKeySrc string
	//go:embed scripts/lease.lua
	leaseSrc string
	//go:embed scripts/release.lua
	releaseSrc string

	applyScript      = newScript("apply", applySrc)
	admitScript      = newScript("admit", admitSrc)
	putCodeScript    = newScript("putcode", putCodeSrc)
	unknownScript    = newScript("unknown", unknownSrc)
	disableScript    = newScript("disable", disableSrc)
	putProjectScript = newScript("putproject", putProjectSrc)
	refundScript     = newScript("refund", refundSrc)
	putKeyScript     = newScript("putkey", putKeySrc)
	revokeKeyScript  = newScript("revokekey", revokeKeySrc)
	leaseScript      = newScript("lease", leaseSrc)
	releaseScript    = newScript("release", releaseSrc)

	allScripts = []*redisscript.Script{applyScript, admitScript, putCodeScript, unknownScript, disableScript,
		putProjectScript, refundScript, putKeyScript, revokeKeyScript, leaseScript, releaseScript}
)

// newScript is a script file of scripts/ behind the prelude (layout.go), as a Redis Function
// named acv_<name>_<digest>.
func newScript(name, src string) *redisscript.Script {
	return redisscript.New("acv_"+name, luaPrelude(), src)
}

// Redis is what the cache needs of a client; *redis.Client and *redis.ClusterClient both fit
// (every call names keys of one slot, so a cluster client routes it to the slot's master).
type Redis interface {
	redisscript.Client
	HGetAll(ctx context.Context, key string) *redis.MapStringStringCmd
	HMGet(ctx context.Context, key string, fields ...string) *redis.SliceCmd
	Exists(ctx context.Context, keys ...string) *redis.IntCmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd
	Ping(ctx context.Context) *redis.StatusCmd
}

// cluster is what a Redis Cluster client offers beyond Redis: its masters, each as a client of
// one node (*redis.ClusterClient fits).
type cluster interface {
	ForEachMaster(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error
	MasterForKey(ctx context.Context, key string) (*redis.Client, error)
	// ReloadState asks for the slot map to be read again (in the background).
	ReloadState(ctx context.Context)
}

// Loader reads from the system of record what Redis does not hold yet. The Postgres store
// implements it; the wiring connects the two.
type Loader interface {
	// CodeByValue returns contract.ErrNotFound (wrapped) when the project has no such code.
	CodeByValue(ctx context.Context, projectID, value string) (contract.CodeRecord, error)
	// ProjectState returns a project's flags and the version of its row, which every change
	// of the row increments (contract.ErrNotFound, wrapped, when no project has the id).
	ProjectState(ctx context.Context, id string) (p contract.Project, version int64, err error)
	// APIKey returns contract.ErrNotFound (wrapped) when no key has the id; its Secret is
	// sealed, as stored.
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
	limits     *limiter      // this replica's token leases (lease.go)
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
	c.limits = newLimiter(c)
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
		c.co.close()
	}
}

// call runs a hot-path script, through the coalescer when there is one. An unavailable Redis
// is reported as contract.KindUnavailable (translate).
//
// While a cluster moves slots (resharding), a script is refused when its slot moved (MOVED)
// or is being migrated (ASK, TRYAGAIN: its keys are split between two nodes until the last one
// moved, and a script naming keys of both runs on neither). go-redis follows such answers
// only a few times within some 100 ms (MaxRedirects), and not at all for a call of a batch
// (sendBatch). A refused script did not run, so call sends it again, after asking the client
// to reload its slot map (MOVED) or while the slot is in migration, after a pause growing from
// 5 to 80 ms, for up to slotMotionWait (or the caller's deadline); only then is it a 503.
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

// How long call waits for a slot in motion: the first pause before a refused call is sent
// again (each next one doubles, up to 16 times it), and the longest wait in all. A slot migrates in milliseconds to
// seconds, depending on the keys it holds (redis-cli moves them 10 to a MIGRATE).
const (
	slotMotionPause = 5 * time.Millisecond
	slotMotionWait  = 5 * time.Second
)

// callOnce sends a script call once.
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

// Ping checks that Redis answers: on a cluster, every master, since every master holds a
// share of every project's codes.
func (c *Cache) Ping(ctx context.Context) error {
	if cl, ok := c.rdb.(cluster); ok {
		err := cl.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			if err := m.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("%s: %w", m.Options().Addr, err)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("ping redis cluster: %w", err)
		}
		return nil
	}
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping redis: %w", err)
	}
	return nil
}
