package main

import (
	"context"
	"net"
	"time"

	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/internal/telemetry"
	"github.com/acv/acv/store"
	"github.com/spf13/cobra"
)

func serveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the roles named by ACV_ROLES (api, relay, consumer) until SIGTERM",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := service.FromEnv()
			if err != nil {
				return err
			}
			return runTraced(cmd.Context(), cfg, nil)
		},
	}
}

func migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply the database migrations to ACV_DATABASE_URL",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := service.FromEnv()
			if err != nil {
				return err
			}
			return store.Migrate(cmd.Context(), cfg.DatabaseURL)
		},
	}
}

// runTraced runs the service with the tracer cfg.Tracing (the OTEL_* variables) asks for, flushing its
// spans after the service stopped.
func runTraced(ctx context.Context, cfg service.Config, ln net.Listener) error {
	tp, shutdown, err := telemetry.Setup(ctx, cfg.Tracing, cfg.Instance)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(sctx)
	}()
	cfg.Tracer = tp
	return service.Run(ctx, cfg, ln)
}
