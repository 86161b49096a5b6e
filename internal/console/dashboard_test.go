package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/internal/console"
)

// TestConsoleDashboardTimelineAndHealth: the dashboard counts the successful verifies of the
// last 24 hours per hour, draws them as an SVG with a text alternative, and shows the
// pipeline's backlog and the age of the newest log.
func TestConsoleDashboardTimelineAndHealth(t *testing.T) {
	e, _, _ := logsEnvWith(t, func(c *console.Config, _ *console.ServerConfig) {
		c.Outbox = func(context.Context) (int64, time.Duration, error) { return 7, 3 * time.Second, nil }
		c.Relays = func(context.Context) (int64, error) { return 2, nil }
	})
	tl, h, err := e.svc.Dashboard(context.Background(), console.SystemActor("test"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Hours) != 24 || tl.Total != 2 {
		t.Fatalf("timeline: %d hours, %d redemptions; want 24 hours and the 2 successes of the last day", len(tl.Hours), tl.Total)
	}
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
