package service

import (
	"context"
	"time"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/cache"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
)

// NewRegistry is one process's metrics registry: Go runtime, process and build information,
// and the pool and outbox gauges that are read at scrape time.
func NewRegistry(d *Deps) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(),
		&poolCollector{rdb: d.Redis, pg: d.Store.Pool()},
		&dependencyCollector{checks: readyChecks(d)},
	)
	// The outbox and the group's lag are shared state: the processes that run the pipeline
	// report them, so a fleet of API replicas does not query them on every scrape.
	if d.Config.Roles.Relay {
		reg.MustRegister(&outboxCollector{rdb: d.Redis, outboxes: cache.Outboxes()})
	}
	return reg
}

var depUpDesc = prometheus.NewDesc("acv_dependency_up", "1 when the dependency answered a probe at scrape time.", []string{"dependency"}, nil)

// dependencyCollector probes Redis, Postgres and Kafka at scrape time, so an unreachable
// dependency is a series of its own, not an inference from errors.
type dependencyCollector struct {
	checks map[string]probe
}

func (c *dependencyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- depUpDesc }

func (c *dependencyCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for name, p := range c.checks {
		up := 1.0
		if p.check(ctx) != nil {
			up = 0
		}
		ch <- prometheus.MustNewConstMetric(depUpDesc, prometheus.GaugeValue, up, name)
	}
}

var (
	redisConnsDesc = prometheus.NewDesc("acv_redis_pool_connections", "Redis client connections by state (idle, in_use).", []string{"state"}, nil)
	redisPoolDesc  = prometheus.NewDesc("acv_redis_pool_events_total", "Redis pool events: hits, misses, timeouts.", []string{"event"}, nil)
	pgConnsDesc    = prometheus.NewDesc("acv_postgres_pool_connections", "Postgres pool connections by state (idle, acquired, max).", []string{"state"}, nil)
	pgAcquireDesc  = prometheus.NewDesc("acv_postgres_pool_acquires_total", "Postgres pool acquisitions, and those that waited (empty).", []string{"kind"}, nil)
	pgWaitDesc     = prometheus.NewDesc("acv_postgres_pool_acquire_wait_seconds_total", "Time spent waiting for a Postgres connection.", nil, nil)
	outboxLenDesc  = prometheus.NewDesc("acv_outbox_entries", "Verification-log events waiting in the Redis outboxes.", nil, nil)
	outboxAgeDesc  = prometheus.NewDesc("acv_outbox_oldest_age_seconds", "Age of the oldest outbox entry; 0 when empty.", nil, nil)
	outboxUpDesc   = prometheus.NewDesc("acv_outbox_scrape_ok", "1 when the outbox could be read at scrape time.", nil, nil)
)

type poolCollector struct {
	rdb redis.UniversalClient
	pg  *pgxpool.Pool
}

func (p *poolCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(p, ch) }

func (p *poolCollector) Collect(ch chan<- prometheus.Metric) {
	rs := p.rdb.PoolStats()
	ch <- prometheus.MustNewConstMetric(redisConnsDesc, prometheus.GaugeValue, float64(rs.IdleConns), "idle")
	ch <- prometheus.MustNewConstMetric(redisConnsDesc, prometheus.GaugeValue, float64(rs.TotalConns-rs.IdleConns), "in_use")
	ch <- prometheus.MustNewConstMetric(redisPoolDesc, prometheus.CounterValue, float64(rs.Hits), "hits")
	ch <- prometheus.MustNewConstMetric(redisPoolDesc, prometheus.CounterValue, float64(rs.Misses), "misses")
	ch <- prometheus.MustNewConstMetric(redisPoolDesc, prometheus.CounterValue, float64(rs.Timeouts), "timeouts")
	ps := p.pg.Stat()
	ch <- prometheus.MustNewConstMetric(pgConnsDesc, prometheus.GaugeValue, float64(ps.IdleConns()), "idle")
	ch <- prometheus.MustNewConstMetric(pgConnsDesc, prometheus.GaugeValue, float64(ps.AcquiredConns()), "acquired")
	ch <- prometheus.MustNewConstMetric(pgConnsDesc, prometheus.GaugeValue, float64(ps.MaxConns()), "max")
	ch <- prometheus.MustNewConstMetric(pgAcquireDesc, prometheus.CounterValue, float64(ps.AcquireCount()), "all")
	ch <- prometheus.MustNewConstMetric(pgAcquireDesc, prometheus.CounterValue, float64(ps.EmptyAcquireCount()), "empty")
	ch <- prometheus.MustNewConstMetric(pgWaitDesc, prometheus.CounterValue, ps.AcquireDuration().Seconds())
}

// outboxCollector reads the outbox depth and age at scrape time, from whichever replica is
// scraped: the outbox is shared, so every replica reports the same numbers.
type outboxCollector struct {
	rdb      redis.Cmdable
	outboxes []string
}

func (o *outboxCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- outboxLenDesc
	ch <- outboxAgeDesc
	ch <- outboxUpDesc
}

func (o *outboxCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, age, err := audit.OutboxLen(ctx, o.rdb, o.outboxes)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(outboxUpDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(outboxUpDesc, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(outboxLenDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(outboxAgeDesc, prometheus.GaugeValue, age.Seconds())
}
