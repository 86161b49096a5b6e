package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/store"
)

// logsCmd groups the operator commands of the verification-log store.
func logsCmd() *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "logs",
		Short: "Verification-log partitions: list them, create the days ahead, drop the days past the retention",
	})
	cmd.AddCommand(logsMaintainCmd(), logsPartitionsCmd())
	return cmd
}

// logsMaintainCmd runs one partition maintenance, as the relay and consumer processes do hourly.
func logsMaintainCmd() *cobra.Command {
	var (
		retention string
		ahead     int
	)
	cmd := &cobra.Command{
		Use:   "maintain",
		Short: "Create the log partitions of the days ahead and drop those past ACV_LOG_RETENTION",
		Long: "Creates verification_logs' day partitions from today to --ahead days after, moves rows the\n" +
			"default partition holds into their day's partition, and drops the partitions wholly older\n" +
			"than the retention (ACV_LOG_RETENTION days, default 400; 0 keeps every day). The relay and\n" +
			"consumer processes run the same every hour; an advisory lock makes concurrent runs take turns.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := service.FromEnv()
			if err != nil {
				return err
			}
			policy := service.LogPolicy(cfg)
			if cmd.Flags().Changed("retention") {
				if policy.RetentionDays, err = service.ParseLogRetention(retention); err != nil {
					return fmt.Errorf("--retention: %w", err)
				}
			}
			policy.Ahead = ahead
			st, err := openLogStore(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			res, err := st.MaintainLogPartitions(cmd.Context(), time.Now(), policy)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if res.Busy {
				fmt.Fprintln(out, "another process is maintaining the log partitions; nothing done")
				return nil
			}
			fmt.Fprintf(out, "created %d partition(s) %v, dropped %d %v; moved %d row(s) out of the default partition, purged %d\n",
				len(res.Created), res.Created, len(res.Dropped), res.Dropped, res.Moved, res.Purged)
			return nil
		},
	}
	cmd.Flags().StringVar(&retention, "retention", "", "days of logs kept (overrides ACV_LOG_RETENTION; 0 keeps every day)")
	cmd.Flags().IntVar(&ahead, "ahead", contract.DefaultLogPartitionsAhead, "days after today that get their partition")
	return cmd
}

// logsPartitionsCmd lists the partitions of verification_logs.
func logsPartitionsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "partitions",
		Short: "List the verification-log partitions and their ranges",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openLogStore(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			parts, err := st.LogPartitions(cmd.Context())
			if err != nil {
				return err
			}
			rows := [][]string{{"PARTITION", "FROM", "TO"}}
			for _, p := range parts {
				if p.Default {
					rows = append(rows, []string{p.Name, "(default)", ""})
					continue
				}
				rows = append(rows, []string{p.Name, p.From.Format(time.RFC3339), p.To.Format(time.RFC3339)})
			}
			return printTable(cmd.OutOrStdout(), rows)
		},
	}
}

// openLogStore opens the store at ACV_DATABASE_URL; the log commands need nothing else.
func openLogStore(cmd *cobra.Command) (*store.Store, error) {
	cfg, err := service.FromEnv()
	if err != nil {
		return nil, err
	}
	if cfg.DatabaseURL == "" {
		return nil, fmt.Errorf("ACV_DATABASE_URL is required")
	}
	return store.Open(cmd.Context(), cfg.DatabaseURL)
}
