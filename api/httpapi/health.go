package httpapi

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/gin-gonic/gin"
)

// healthz answers as long as the process serves HTTP.
func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// readyz probes every dependency; any failure makes the replica unready (503) so a load
// balancer stops sending it traffic.
func (s *Server) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	names := make([]string, 0, len(s.cfg.Ready))
	for n := range s.cfg.Ready {
		names = append(names, n)
	}
	sort.Strings(names)
	checks := gin.H{}
	ok := true
	for _, n := range names {
		if err := s.cfg.Ready[n](ctx); err != nil {
			s.cfg.Logger.WarnContext(ctx, "readiness check failed", "check", n, "err", err)
			checks[n] = "unavailable"
			ok = false
			continue
		}
		checks[n] = "ok"
	}
	if !ok {
		c.JSON(http.StatusServiceUnavailable, gin.H{"detail": "A dependency is unavailable", "checks": checks})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ok", "checks": checks})
}
