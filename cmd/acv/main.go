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
	"runtime/debug"
	"syscall"
	"time"

	"github.com/acv/acv/internal/telemetry"
	"github.com/spf13/cobra"
)

func main() {
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logs := telemetry.NewLogWriter(os.Stderr, 200*time.Millisecond)
	defer logs.Close()
	slog.SetDefault(slog.New(telemetry.LogHandler{Handler: slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: logLevel()})}))
	root := &cobra.Command{
		Use:           "acv",
		Short:         "Activation-code verification service",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(serveCmd(), migrateCmd(), projectCmd(), keyCmd(), codesCmd(), devCmd(), logsCmd(), adminCmd())
	if err := root.ExecuteContext(ctx); err != nil {
		logs.Close()
		fmt.Fprintln(os.Stderr, "acv:", cleanError(err))
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

// tuneGC trades a little memory for CPU: the service's live heap is small (tens of MiB), so
// collecting at 4× instead of 2× of it halves the collector's share of a verify, while a soft
// limit of 120 MiB keeps the process within its memory budget. GOGC and GOMEMLIMIT, when set,
// win.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(120 << 20)
	}
}
