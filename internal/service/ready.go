package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	_ "net/http/pprof"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// probe is one readiness check of a dependency; gates says whether its failure makes the
// process unready rather than degraded (see ReadinessGates).
type probe struct {
	check func(ctx context.Context) error
	gates bool
}

// ReadinessGates tells, for each dependency a process reports on /readyz, whether losing it
// makes a process with c's roles unready (503) rather than degraded (200). An API replica needs
// Redis alone to redeem codes: PostgreSQL and Kafka are shared, so a 503 would only pull the
// replicas that still can. The relay needs Redis and its destination; the consumer Kafka and
// PostgreSQL, and nothing in the direct pipeline.
func (c Config) ReadinessGates() map[string]bool {
	r, kafka := c.Roles, c.UsesKafka()
	return map[string]bool{
		"redis":    r.API || r.Relay,
		"postgres": r.Relay && !kafka || r.Consumer && kafka,
		"kafka":    kafka && (r.Relay || r.Consumer),
	}
}

// readyChecks are the dependencies a process reports, each gating as ReadinessGates says. Kafka
// is asked only in the kafka pipeline.
func readyChecks(d *Deps) map[string]probe {
	gates := d.Config.ReadinessGates()
	ready := map[string]probe{
		"redis":    {d.Cache.Ping, gates["redis"]},
		"postgres": {d.Store.Ping, gates["postgres"]},
	}
	if d.Config.UsesKafka() && len(d.Config.KafkaBrokers) > 0 {
		ready["kafka"] = probe{KafkaReady(d.Config.KafkaBrokers), gates["kafka"]}
	}
	return ready
}

// readyHandler answers /readyz: 200 when every dependency the roles need answers its probe
// ("degraded" when one it can work without does not), else 503 naming those that did not.
func readyHandler(d *Deps) http.Handler {
	checks := readyChecks(d)
	names := slices.Sorted(maps.Keys(checks))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		status := map[string]string{}
		unready, degraded := false, false
		for _, n := range names {
			if err := checks[n].check(ctx); err != nil {
				d.Config.Logger.WarnContext(ctx, "readiness check failed", "check", n, "gates", checks[n].gates, "err", err)
				status[n] = "unavailable"
				unready = unready || checks[n].gates
				degraded = true
				continue
			}
			status[n] = "ok"
		}
		body := map[string]any{"status": "ok", "checks": status}
		code := http.StatusOK
		switch {
		case unready:
			body = map[string]any{"detail": "A dependency is unavailable", "checks": status}
			code = http.StatusServiceUnavailable
		case degraded:
			body["status"] = "degraded"
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(body)
	})
}

// serveDebug serves /metrics, /healthz, /readyz and the pprof profiles on ln (else a listener
// of addr), apart from the public port, so pipeline-only processes can be scraped too.
func serveDebug(ctx context.Context, addr string, ln net.Listener, d *Deps) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.Handle("/readyz", readyHandler(d))
	mux.Handle("/debug/pprof/", http.DefaultServeMux) // where net/http/pprof registers its handlers
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("listen debug %s: %w", addr, err)
		}
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve debug: %w", err)
	}
	return nil
}
