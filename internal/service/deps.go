package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/acv/acv/cache"
	"github.com/acv/acv/store"
	"github.com/redis/go-redis/v9"
)

// Deps are the clients of the three stores, shared by the parts of one process.
type Deps struct {
	Config Config
	Redis  *redis.Client
	Cache  *cache.Cache
	Store  *store.Store
}

// Open connects to Redis and Postgres and loads the Lua scripts.
func Open(ctx context.Context, cfg Config) (*Deps, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("parse redis url: %w", err)
	}
	if cfg.RedisPoolSize > 0 {
		opt.PoolSize = cfg.RedisPoolSize
	}
	rdb := redis.NewClient(opt)
	c := cache.New(rdb)
	if err := c.Preload(ctx); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("prepare redis: %w", err)
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		rdb.Close()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	return &Deps{Config: cfg, Redis: rdb, Cache: c, Store: st}, nil
}

// Close releases the clients, Redis last so nothing still queued towards it is cut off early.
func (d *Deps) Close() {
	d.Store.Close()
	d.Redis.Close()
}

// KafkaReady checks that a broker accepts connections.
func KafkaReady(brokers []string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		for _, b := range brokers {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", b)
			if err == nil {
				c.Close()
				return nil
			}
			errs = append(errs, err)
		}
		return fmt.Errorf("no kafka broker reachable: %w", errors.Join(errs...))
	}
}
