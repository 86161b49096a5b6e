package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/acv/acv/api/httpapi"
	"github.com/acv/acv/audit"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/console"
)

// keyUseFlush is how often an API process flushes its keys' last use to PostgreSQL.
const keyUseFlush = 10 * time.Second

// runOptions are what a test changes in a run (export_test.go): Run runs with the zero value.
type runOptions struct {
	// relayAfterPublish and consumerBeforeCommit inject faults into the relay and the consumer
	// (audit.RelayConfig.AfterPublish, audit.ConsumerConfig.BeforeCommit).
	relayAfterPublish    func(entries []string) error
	consumerBeforeCommit func() error
	// keyUseFlush, when set, replaces the package's keyUseFlush.
	keyUseFlush time.Duration
}

// NewAPI builds an API replica over deps.
func NewAPI(d *Deps) (*httpapi.Server, error) {
	if d.Config.MasterKeys == nil {
		return nil, errMasterKeyRequired
	}
	if d.KeyUses == nil {
		d.KeyUses = httpapi.NewKeyUses(d.Store, d.Config.Logger)
	}
	return httpapi.New(httpapi.Config{
		KeyUses:        d.KeyUses,
		Records:        apiRecords{Store: d.Store, mirror: d.Cache, keys: d.Config.MasterKeys},
		HotPath:        d.Cache,
		Ready:          readyHandler(d),
		Logger:         d.Config.Logger,
		KeyCacheTTL:    d.Config.KeyCacheTTL,
		RequestTimeout: d.Config.RequestTimeout,
		TrustedProxies: d.Config.TrustedProxies,
		Registerer:     d.Registry,
		Tracer:         d.Config.Tracer,
	})
}

// NewConsole builds the operator console over deps: internal/admin's actions, and verify and
// reactivate through the client API's hot path.
func NewConsole(d *Deps) (*console.Server, error) {
	svc, err := console.NewService(console.Config{
		Store:     d.Store,
		Admin:     &admin.Admin{Store: d.Store, Cache: d.Cache, Keys: d.Config.MasterKeys},
		HotPath:   d.Cache,
		Logger:    d.Config.Logger,
		LogPolicy: LogPolicy(d.Config),
		Outbox: func(ctx context.Context) (int64, time.Duration, error) {
			return audit.OutboxLen(ctx, d.Redis, cache.Outboxes())
		},
		Relays: func(ctx context.Context) (int64, error) {
			return audit.LiveRelays(ctx, d.Redis, cache.Outboxes(), time.Now())
		},
	})
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	return console.NewServer(svc, console.ServerConfig{TrustedProxies: d.Config.AdminTrustedProxies, Logger: d.Config.Logger})
}

// runRelay moves outbox entries to Kafka or, in the direct pipeline, straight into Postgres
// until ctx ends, then flushes its in-flight batches.
func runRelay(ctx context.Context, d *Deps, o runOptions) error {
	cfg := audit.RelayConfig{
		Outboxes: cache.Outboxes(),
		Name:     d.Config.Instance, Logger: d.Config.Logger, AfterPublish: o.relayAfterPublish,
		Metrics: d.Audit, Tracer: d.Config.Tracer, Lease: d.Config.RelayLease,
	}
	var pub audit.Publisher
	if d.Config.UsesKafka() {
		w := audit.NewWriter(d.Config.KafkaBrokers, d.Config.KafkaTopic)
		defer w.Close()
		pub = w
	} else {
		pub = &audit.SinkPublisher{Sink: d.Store, Logger: d.Config.Logger, Metrics: d.Audit, Tracer: d.Config.Tracer}
		// No produce requests to keep few: two workers overlap one's transaction with a poll.
		cfg.Workers = 2
	}
	r := audit.NewRelay(d.Redis, pub, cfg)
	return r.Run(ctx)
}

func runConsumer(ctx context.Context, d *Deps, o runOptions) error {
	c := audit.NewConsumer(audit.ConsumerConfig{
		Brokers: d.Config.KafkaBrokers, Topic: d.Config.KafkaTopic, GroupID: d.Config.ConsumerGroup,
		Logger: d.Config.Logger, BeforeCommit: o.consumerBeforeCommit, Metrics: d.Audit,
		Tracer: d.Config.Tracer, SessionTimeout: d.Config.KafkaSessionTimeout,
	}, d.Store)
	defer c.Close()
	return c.Run(ctx)
}

// Run runs the configured roles until ctx ends or one of them fails. What can fail at start is
// prepared before any part starts, so a failed start leaves nothing running. Shutdown order:
// drain requests, let the relay flush what it read, then close Kafka, Redis and Postgres.
func Run(ctx context.Context, cfg Config, ln net.Listener) error {
	return run(ctx, cfg, ln, runOptions{})
}

func run(ctx context.Context, cfg Config, ln net.Listener, o runOptions) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	d, err := Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	if cfg.UsesKafka() && (cfg.Roles.Relay || cfg.Roles.Consumer) {
		if err := audit.EnsureTopic(ctx, cfg.KafkaBrokers, cfg.KafkaTopic, cfg.Partitions); err != nil {
			return fmt.Errorf("prepare kafka: %w", err)
		}
	}
	var srv *httpapi.Server
	if cfg.Roles.API {
		if srv, err = NewAPI(d); err != nil {
			return fmt.Errorf("build api: %w", err)
		}
		reportSecrets(ctx, d, cfg.Logger)
		// Keys missing from the mirror (lost with Redis's data) are mirrored before the first request.
		a := admin.Admin{Store: d.Store, Cache: d.Cache}
		if n, err := a.SyncKeys(ctx); err != nil {
			cfg.Logger.Warn("mirror api keys to redis", "keys", n, "err", err)
		}
		if ln == nil {
			if ln, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
				return fmt.Errorf("listen %s: %w", cfg.HTTPAddr, err)
			}
		}
	}
	// The operator console runs beside the API, on a listener of its own.
	var cons *console.Server
	adminLn := cfg.AdminListener
	if cfg.Roles.API && (cfg.AdminAddr != "" || adminLn != nil) {
		if cons, err = NewConsole(d); err != nil {
			return fmt.Errorf("build console: %w", err)
		}
		if adminLn == nil {
			if adminLn, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
				return fmt.Errorf("listen %s (ACV_ADMIN_ADDR): %w", cfg.AdminAddr, err)
			}
		}
	}

	// The pipeline stops only after the last request drained, so every acknowledged event is
	// relayed before exit; both groups end before the deferred Close.
	pipeCtx, stopPipe := context.WithCancel(context.WithoutCancel(ctx))
	apiCtx, stopAPI := context.WithCancel(ctx)
	var apiWG, pipeWG sync.WaitGroup
	shutdown := func() {
		stopAPI()
		apiWG.Wait()
		stopPipe()
		pipeWG.Wait()
	}
	defer shutdown()
	errc := make(chan error, 8)
	start := func(wg *sync.WaitGroup, name string, c context.Context, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(c); err != nil && !errors.Is(err, context.Canceled) {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	if cfg.Roles.Relay {
		start(&pipeWG, "relay", pipeCtx, func(c context.Context) error { return runRelay(c, d, o) })
	}
	if cfg.Roles.Consumer && !cfg.UsesKafka() {
		cfg.Logger.Info("direct pipeline: the relay writes the logs to postgres; the consumer role has nothing to read")
	}
	if cfg.Roles.Consumer && cfg.UsesKafka() {
		start(&pipeWG, "consumer", pipeCtx, func(c context.Context) error { return runConsumer(c, d, o) })
	}
	if cfg.Roles.Relay || cfg.Roles.Consumer {
		start(&pipeWG, "log maintenance", pipeCtx, func(c context.Context) error { return RunLogMaintenance(c, d) })
	}
	if srv != nil && d.KeyUses != nil {
		// In the pipeline's group: it stops after the API drained, so its last flush holds
		// every request's use.
		every := cmp.Or(o.keyUseFlush, keyUseFlush)
		start(&pipeWG, "api key last use", pipeCtx, func(c context.Context) error { return d.KeyUses.Run(c, every) })
	}
	if cfg.DebugAddr != "" || cfg.DebugListener != nil {
		start(&apiWG, "debug", apiCtx, func(c context.Context) error { return serveDebug(c, cfg.DebugAddr, cfg.DebugListener, d) })
	}
	if srv != nil {
		cfg.Logger.Info("api listening", "addr", ln.Addr().String(), "instance", cfg.Instance)
		start(&apiWG, "api", apiCtx, func(c context.Context) error { return srv.Serve(c, ln, cfg.Drain) })
	}
	if cons != nil {
		cfg.Logger.Info("operator console listening", "addr", adminLn.Addr().String())
		start(&apiWG, "console", apiCtx, func(c context.Context) error { return cons.Serve(c, adminLn, cfg.Drain) })
		keep := time.Duration(cfg.AdminAuditRetentionDays) * 24 * time.Hour
		start(&apiWG, "admin audit retention", apiCtx, func(c context.Context) error {
			return cons.Service().RunAuditRetention(c, keep, console.AuditRetentionEvery)
		})
	}
	select {
	case <-ctx.Done():
		// A part that failed as ctx ended still reports its failure.
		shutdown()
		select {
		case err := <-errc:
			return err
		default:
			return nil
		}
	case err := <-errc:
		cfg.Logger.Error("part failed; shutting down", "err", err)
		return err
	}
}
