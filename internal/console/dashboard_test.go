package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/internal/console"
)

// TestConsoleDashboardChartAndHealth: the dashboard draws the verifies per hour as an SVG with
// a text alternative, and shows the pipeline's backlog, the relays alive and the age of the
// newest log.
func TestConsoleDashboardChartAndHealth(t *testing.T) {
	e, _, _ := logsEnvWith(t, func(c *console.Config, _ *console.ServerConfig) {
		c.Outbox = func(context.Context) (int64, time.Duration, error) { return 7, 3 * time.Second, nil }
		c.Relays = func(context.Context) (int64, error) { return 2, nil }
	})
	h := e.svc.Health(context.Background())
	if !h.Known || h.Backlog != 7 || !h.RelaysKnown || h.Relays != 2 || !h.HasLog || h.NewestLogAge > time.Minute {
		t.Fatalf("health %+v", h)
	}
	b := e.pageLogin("dana", console.RoleViewer)
	res, body := b.page("GET", "/", nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("dashboard %d", res.StatusCode)
	}
	for _, want := range []string{`<svg id="redemptions-chart" role="img"`, `<title id="chart-title">`, `id="redemptions-table"`,
		`Events waiting in Redis</dt><dd>7</dd>`, `<dd id="relays-alive">2</dd>`, "3 s", "Newest log in PostgreSQL"} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}
}
