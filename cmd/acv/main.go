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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/acv/acv/internal/settings"
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
	if err := rootCmd().ExecuteContext(ctx); err != nil {
		logs.Close()
		fmt.Fprintln(os.Stderr, "acv:", cleanError(err))
		os.Exit(1)
	}
}

// rootCmd is the acv command with every subcommand. Across them, -o (--output) is always an
// output format; a file to write is an argument, as a file to read is.
func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "acv",
		Short:         "Activation-code verification service",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(serveCmd(), migrateCmd(), projectCmd(), keyCmd(), codesCmd(), devCmd(), logsCmd(), adminCmd(),
		batchCmd(), loginCmd(), logoutCmd(), tokenCmd())
	return root
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(settings.Get("ACV_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}

// tuneGC applies GOGC and GOMEMLIMIT's defaults (internal/settings), which trade a little memory
// for CPU. The runtime has already applied a value set in the environment; one this does not
// parse (off, other units) is left as the runtime applied it.
func tuneGC() {
	if p, err := strconv.Atoi(settings.Get("GOGC")); err == nil {
		debug.SetGCPercent(p)
	}
	if n, err := parseBytes(settings.Get("GOMEMLIMIT")); err == nil {
		debug.SetMemoryLimit(n)
	}
}

// parseBytes reads a size as GOMEMLIMIT writes it: a number of bytes with an optional B, KiB,
// MiB, GiB or TiB.
func parseBytes(s string) (int64, error) {
	for i, unit := range []string{"TiB", "GiB", "MiB", "KiB", "B"} {
		if n, ok := strings.CutSuffix(s, unit); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			return v << (10 * (4 - i)), err
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

// cleanError is the last guard that no database driver text reaches the operator.
func cleanError(err error) string {
	r := strings.NewReplacer(": no rows in result set", "", "no rows in result set", "")
	return r.Replace(err.Error())
}
