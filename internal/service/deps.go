package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/httpapi"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Deps are the clients of the three stores, shared by the parts of one process.
type Deps struct {
	Config Config
	// Redis is a *redis.Client, or a *redis.ClusterClient when ACV_REDIS_URL names a cluster.
	Redis redis.UniversalClient
	Cache *cache.Cache
	Store *store.Store
	// Registry holds every metric of the process; Audit the pipeline's part of them.
	Registry *prometheus.Registry
	Audit    *audit.Metrics
	// KeyUses is the API keys' last use, noted by the API replica (NewAPI) and flushed by Run.
	KeyUses *httpapi.KeyUses
}

// Open connects to Redis and Postgres and loads the Lua scripts.
func Open(ctx context.Context, cfg Config) (*Deps, error) {
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	rdb, err := NewRedisClient(cfg.RedisURL, cfg.RedisPoolSize)
	if err != nil {
		return nil, err
	}
	var opts []store.Option
	if cfg.Tracer != nil {
		opts = append(opts, store.WithTracer(cfg.Tracer))
	}
	if err := store.CheckSchema(ctx, cfg.DatabaseURL); err != nil {
		rdb.Close()
		return nil, err
	}
	st, err := store.Open(ctx, withPoolSize(cfg.DatabaseURL, cfg.PGMaxConns), opts...)
	if err != nil {
		rdb.Close()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	// The cache loads codes and projects Redis has not seen from Postgres.
	c := cache.New(rdb, cache.WithLoader(st), cache.WithCoalescing(cfg.RedisCoalesce, 128),
		cache.WithReplicaWait(cfg.RedisWaitReplicas, cfg.RedisWaitTimeout))
	if err := c.Preload(ctx); err != nil {
		c.Close()
		rdb.Close()
		st.Close()
		return nil, fmt.Errorf("prepare redis: %w", err)
	}
	d := &Deps{Config: cfg, Redis: rdb, Cache: c, Store: st}
	d.Registry = NewRegistry(d)
	d.Audit = audit.NewMetrics(d.Registry)
	if cfg.Roles.Consumer && cfg.UsesKafka() && len(cfg.KafkaBrokers) > 0 && cfg.ConsumerGroup != "" {
		d.Registry.MustRegister(&audit.LagCollector{Brokers: cfg.KafkaBrokers, Topic: cfg.KafkaTopic, Group: cfg.ConsumerGroup})
	}
	return d, nil
}

// clusterStateReload is how old a cluster client's slot map may grow before it is read again:
// it bounds how long calls still go to a master that died after its replica took over.
const clusterStateReload = time.Second

// NewRedisClient connects to the Redis that rawURL names (ACV_REDIS_URL): redis:// or
// rediss:// one Redis (go-redis's ParseURL); redis-cluster:// or rediss-cluster://, or a
// redis:// URL with addr options, a Redis Cluster found from any of the nodes named
// (ParseClusterURL). poolSize, when above 0, caps the connections (on a cluster, per node).
func NewRedisClient(rawURL string, poolSize int) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse redis url: %w", err)
	}
	scheme, isCluster := strings.CutSuffix(u.Scheme, "-cluster")
	if isCluster || u.Query().Has("addr") {
		if p := strings.TrimPrefix(u.Path, "/"); p != "" && p != "0" {
			return nil, fmt.Errorf("parse redis url: a cluster has database 0 only, not %q", p)
		}
		u.Scheme, u.Path = scheme, ""
		opt, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, fmt.Errorf("parse redis cluster url: %w", err)
		}
		if poolSize > 0 {
			opt.PoolSize = poolSize
		}
		// A master that died never answers MOVED: until the slot map is read again, calls for
		// its slots go to its address (go-redis reads it every minute by default).
		opt.ClusterStateReloadInterval = clusterStateReload
		return redis.NewClusterClient(opt), nil
	}
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse redis url: %w", err)
	}
	if poolSize > 0 {
		opt.PoolSize = poolSize
	}
	return redis.NewClient(opt), nil
}

// withPoolSize sets pgxpool's pool_max_conns on the URL unless the URL sets it already.
func withPoolSize(dbURL string, n int) string {
	if n <= 0 || strings.Contains(dbURL, "pool_max_conns=") {
		return dbURL
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL // store.Open reports the bad URL
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(n))
	u.RawQuery = q.Encode()
	return u.String()
}

// Close releases the clients in the shutdown order: Redis, then Postgres.
func (d *Deps) Close() {
	d.Cache.Close()
	d.Redis.Close()
	d.Store.Close()
}

// KafkaReady checks that a broker accepts connections.
func KafkaReady(brokers []string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		for _, b := range brokers {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", b)
			if err == nil {
				c.Close()
				return nil
			}
			errs = append(errs, err)
		}
		return fmt.Errorf("no kafka broker reachable: %w", errors.Join(errs...))
	}
}
