// Command acv is the activation-code verification service: the API replica, the audit relay
// and consumer (`acv serve`), and the operator commands (migrate, projects, keys, codes).
// `acv dev` runs the whole service locally on embedded defaults.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/acv/acv/internal/telemetry"
	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	slog.SetDefault(slog.New(telemetry.LogHandler{Handler: slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()})}))
	root := &cobra.Command{
		Use:           "acv",
		Short:         "Activation-code verification service",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(serveCmd(), migrateCmd(), projectCmd(), keyCmd(), codesCmd(), devCmd())
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "acv:", err)
		os.Exit(1)
	}
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("ACV_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}
