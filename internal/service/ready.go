package service

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"time"
)

// probe is one readiness check of a dependency. A gating probe that fails makes the process
// unready (503); a failing probe that does not gate only marks it degraded (200), because
// taking the process out of the load balancer would not help: the dependency is shared.
type probe struct {
	check func(ctx context.Context) error
	gates bool
}

// ReadinessGates tells, for each dependency a process reports on /readyz ("redis", "postgres",
// "kafka"), whether losing it makes a process with c's roles unready (503) rather than degraded
// (200). An API replica needs Redis alone for verify and reactivate; with PostgreSQL or Kafka down
// its lists and history fail, but every replica shares them, so a 503 would only make the load
// balancer pull the replicas that still redeem codes. The relay needs Redis and Kafka (or
// PostgreSQL, writing the logs itself in the direct pipeline); the consumer needs Kafka and
// PostgreSQL, and runs nothing in the direct pipeline, so there it gates nothing.
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

// readyHandler answers /readyz, on the API port and on the debug listener alike: 200 when
// every dependency the process's roles need answers its probe ("status": "degraded" when one
// it can work without does not), 503 naming the ones that did not, so a load balancer stops
// sending the replica traffic only when the replica cannot serve it.
func readyHandler(d *Deps) http.Handler {
	checks := readyChecks(d)
	names := make([]string, 0, len(checks))
	for n := range checks {
		names = append(names, n)
	}
	sort.Strings(names)
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
