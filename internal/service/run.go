package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/acv/acv/api/httpapi"
	"github.com/acv/acv/audit"
)

// Hooks inject faults in tests; production leaves them nil.
type Hooks struct {
	RelayAfterPublish    func(entryIDs []string) error
	ConsumerBeforeCommit func() error
}

// readyChecks are the dependencies a process needs to be ready: Redis, Postgres, and Kafka
// when it is configured.
func readyChecks(d *Deps) map[string]httpapi.Check {
	ready := map[string]httpapi.Check{
		"redis":    d.Cache.Ping,
		"postgres": d.Store.Ping,
	}
	if len(d.Config.KafkaBrokers) > 0 {
		ready["kafka"] = KafkaReady(d.Config.KafkaBrokers)
	}
	return ready
}

// NewAPI builds an API replica over deps.
func NewAPI(d *Deps) (*httpapi.Server, error) {
	return httpapi.New(httpapi.Config{
		Records:        d.Store,
		HotPath:        d.Cache,
		Ready:          readyChecks(d),
		Logger:         d.Config.Logger,
		KeyCacheTTL:    d.Config.KeyCacheTTL,
		RequestTimeout: d.Config.RequestTimeout,
		TrustedProxies: d.Config.TrustedProxies,
		Registerer:     d.Registry,
		Gatherer:       d.Registry,
		Tracer:         d.Config.Tracer,
	})
}

// RunRelay moves outbox entries to Kafka until ctx ends, then flushes its in-flight batches.
func RunRelay(ctx context.Context, d *Deps, h Hooks) error {
	w := audit.NewWriter(d.Config.KafkaBrokers, d.Config.KafkaTopic)
	defer w.Close()
	r := audit.NewRelay(d.Redis, w, audit.RelayConfig{
		Name: d.Config.Instance, Logger: d.Config.Logger, AfterPublish: h.RelayAfterPublish, Metrics: d.Audit,
		Tracer:    d.Config.Tracer,
		ClaimIdle: d.Config.RelayClaimIdle, ClaimEvery: d.Config.RelayClaimEvery,
	})
	return r.Run(ctx)
}

// RunConsumer writes log events from Kafka to Postgres until ctx ends.
func RunConsumer(ctx context.Context, d *Deps, h Hooks) error {
	c := audit.NewConsumer(audit.ConsumerConfig{
		Brokers: d.Config.KafkaBrokers, Topic: d.Config.KafkaTopic, GroupID: d.Config.ConsumerGroup,
		Logger: d.Config.Logger, BeforeCommit: h.ConsumerBeforeCommit, Metrics: d.Audit,
		Tracer: d.Config.Tracer,
	}, d.Store)
	defer c.Close()
	return c.Run(ctx)
}

// Run runs the configured roles until ctx ends. Shutdown order: stop accepting and drain
// requests, then let the relay flush what it read, then close Kafka, Redis and Postgres.
func Run(ctx context.Context, cfg Config, ln net.Listener) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d, err := Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	if cfg.Roles.Relay || cfg.Roles.Consumer {
		if err := audit.EnsureTopic(ctx, cfg.KafkaBrokers, cfg.KafkaTopic, cfg.Partitions); err != nil {
			return fmt.Errorf("prepare kafka: %w", err)
		}
	}
	// The pipeline outlives the API: it stops only after the last request drained, so every
	// acknowledged event is relayed before the process exits.
	pipeCtx, stopPipe := context.WithCancel(context.Background())
	defer stopPipe()
	apiCtx, stopAPI := context.WithCancel(ctx)
	defer stopAPI()
	var apiWG, pipeWG sync.WaitGroup
	errc := make(chan error, 3)
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
		start(&pipeWG, "relay", pipeCtx, func(c context.Context) error { return RunRelay(c, d, Hooks{}) })
	}
	if cfg.Roles.Consumer {
		start(&pipeWG, "consumer", pipeCtx, func(c context.Context) error { return RunConsumer(c, d, Hooks{}) })
	}
	if cfg.DebugAddr != "" {
		start(&apiWG, "debug", apiCtx, func(c context.Context) error { return serveDebug(c, cfg.DebugAddr, d) })
	}
	if cfg.Roles.API {
		srv, err := NewAPI(d)
		if err != nil {
			return err
		}
		if ln == nil {
			if ln, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
				return fmt.Errorf("listen %s: %w", cfg.HTTPAddr, err)
			}
		}
		cfg.Logger.Info("api listening", "addr", ln.Addr().String(), "instance", cfg.Instance)
		start(&apiWG, "api", apiCtx, func(c context.Context) error { return srv.Serve(c, ln, cfg.Drain) })
	}
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
		cfg.Logger.Error("part failed; shutting down", "err", runErr)
	}
	stopAPI()
	apiWG.Wait()
	stopPipe()
	pipeWG.Wait()
	return runErr
}
