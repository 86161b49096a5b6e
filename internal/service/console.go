package service

import (
	"context"
	"fmt"
	"time"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/cache"

	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/console"
)

// NewConsole builds the operator console over deps: its actions are internal/admin's, the
// ones the acv command runs, and manual verify and reactivate go through the same hot path as
// the client API.
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
