package service

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"time"
)

// check is one readiness probe of a dependency.
type check func(ctx context.Context) error

// readyChecks are the dependencies a process needs to be ready: Redis, Postgres, and Kafka
// when the log events go through it (the direct pipeline never asks Kafka).
func readyChecks(d *Deps) map[string]check {
	ready := map[string]check{
		"redis":    d.Cache.Ping,
		"postgres": d.Store.Ping,
	}
	if d.Config.UsesKafka() && len(d.Config.KafkaBrokers) > 0 {
		ready["kafka"] = KafkaReady(d.Config.KafkaBrokers)
	}
	return ready
}

// readyHandler answers /readyz, on the API port and on the debug listener alike: 200 when
// every dependency answers its probe, 503 naming the ones that did not, so a load balancer
// stops sending the replica traffic.
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
		ok := true
		for _, n := range names {
			if err := checks[n](ctx); err != nil {
				d.Config.Logger.WarnContext(ctx, "readiness check failed", "check", n, "err", err)
				status[n] = "unavailable"
				ok = false
				continue
			}
			status[n] = "ok"
		}
		body := map[string]any{"status": "ok", "checks": status}
		code := http.StatusOK
		if !ok {
			body = map[string]any{"detail": "A dependency is unavailable", "checks": status}
			code = http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(body)
	})
}
