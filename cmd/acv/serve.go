package main

import (
	"github.com/acv/acv/internal/service"
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
			return service.Run(cmd.Context(), cfg, nil)
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
