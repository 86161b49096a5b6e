package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
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
			return stopped(cmd.Context(), runTraced(cmd.Context(), cfg, nil))
		},
	}
}

func migrateCmd() *cobra.Command {
	var firstAdmin string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the database migrations to ACV_DATABASE_URL",
		Long: "Apply the database migrations to ACV_DATABASE_URL.\n\n" +
			"--admin NAME also creates the console's first account, an admin, when the database has no account\n" +
			"yet, and prints its one-time password: every other account and token is then made through the\n" +
			"admin API (acv login, acv admin create, acv token create).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := service.FromEnv()
			if err != nil {
				return err
			}
			if err := store.Migrate(cmd.Context(), cfg.DatabaseURL); err != nil {
				return err
			}
			if firstAdmin == "" {
				return nil
			}
			return createFirstAdmin(cmd.Context(), cfg.DatabaseURL, firstAdmin)
		},
	}
	cmd.Flags().StringVar(&firstAdmin, "admin", "", "create the first console account, an admin, with this name (when there is none)")
	return cmd
}

// createFirstAdmin creates the console's first account when it has none, recorded in the
// admin audit log as done by acv migrate.
func createFirstAdmin(ctx context.Context, databaseURL, username string) error {
	st, _, acc, err := firstAccount(ctx, databaseURL, "acv migrate", username)
	if err != nil {
		return err
	}
	defer st.Close()
	if acc == nil {
		fmt.Printf("the console has accounts already; no account created (an admin makes more: acv admin create)\n")
		return nil
	}
	fmt.Printf("account %s (admin) created\none-time password: %s\nit is shown once; the first login, in the console, must replace it (then acv login)\n",
		acc.Username, acc.OneTimePassword)
	return nil
}

// firstAccount opens the console's store and creates its first account, an admin named
// username, by the system actor by; acc is nil when the console has accounts already.
func firstAccount(ctx context.Context, databaseURL, by, username string) (st *store.Store, svc *console.Service, acc *console.NewAccount, err error) {
	if st, err = store.Open(ctx, databaseURL); err != nil {
		return nil, nil, nil, err
	}
	svc, err = console.NewService(console.Config{Store: st})
	var accounts []contract.AdminAccount
	if err == nil {
		accounts, err = st.AdminAccounts(ctx)
	}
	if err == nil && len(accounts) == 0 {
		var a console.NewAccount
		a, err = svc.CreateAccount(ctx, console.SystemActor(by), username, console.RoleAdmin)
		acc = &a
	}
	if err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	return st, svc, acc, nil
}

// stopped is a server command's result: a signal that stops it while it is still starting
// (connecting to its stores, starting local servers) cancels that work, and is a clean stop.
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
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
