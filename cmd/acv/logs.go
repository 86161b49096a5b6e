package main

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/acv/acv/api/adminclient"
	"github.com/acv/acv/internal/plural"
	"github.com/acv/acv/internal/service"
	"github.com/spf13/cobra"
)

// logsCmd has the server maintain the verification-log partitions, as the relay and consumer
// processes do hourly, and lists them, through the admin API.
func logsCmd() *cobra.Command {
	var retention string
	var ahead int
	body := map[string]any{}
	maintain := apiCmd(&cobra.Command{
		Use:   "maintain",
		Short: "Create the log partitions of the days ahead and drop those past the server's retention (admin)",
		Long: "Has the server create verification_logs' day partitions from today to --ahead days after, move\n" +
			"rows the default partition holds into their day's partition, and drop the partitions wholly older\n" +
			"than the retention (the server's ACV_LOG_RETENTION days, default 400, or --retention; 0 keeps every\n" +
			"day). The relay and consumer processes run the same every hour; an advisory lock makes concurrent\n" +
			"runs take turns.",
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("retention") {
				days, err := service.ParseLogRetention(retention)
				if err != nil {
					return fmt.Errorf("--retention: %w", err)
				}
				body["retention_days"] = days
			}
			if cmd.Flags().Changed("ahead") {
				body["ahead"] = ahead
			}
			return nil
		},
	}, "maintain the log partitions", func(ctx context.Context, c *adminclient.Client, _ []string) error {
		res, err := adminclient.Call[struct {
			Busy             bool
			Created, Dropped []string
			Moved, Purged    int64
		}](ctx, c, http.MethodPost, "/logs/maintain", body)
		if err != nil {
			return err
		}
		if res.Busy {
			fmt.Println("another process is maintaining the log partitions; nothing done")
			return nil
		}
		fmt.Printf("created %s %v, dropped %d %v; moved %s out of the default partition, purged %d\n",
			plural.N(len(res.Created), "partition", "partitions"), res.Created, len(res.Dropped), res.Dropped,
			plural.N(res.Moved, "row", "rows"), res.Purged)
		return nil
	})
	maintain.Flags().StringVar(&retention, "retention", "", "days of logs kept (overrides the server's ACV_LOG_RETENTION; 0 keeps every day)")
	maintain.Flags().IntVar(&ahead, "ahead", 0, "days after today that get their partition (default the server's)")
	partitions := apiCmd(command("partitions", "List the verification-log partitions and their ranges", cobra.NoArgs),
		"read the log partitions", func(ctx context.Context, c *adminclient.Client, _ []string) error {
			ps, err := adminclient.Call[items[struct {
				Name     string
				From, To *int64
				Default  bool
			}]](ctx, c, http.MethodGet, "/logs/partitions", nil)
			if err != nil {
				return err
			}
			rows := [][]string{{"PARTITION", "FROM", "TO"}}
			for _, p := range ps {
				if p.Default {
					rows = append(rows, []string{p.Name, "(default)", ""})
				} else {
					rows = append(rows, []string{p.Name, fmtTime(p.From), fmtTime(p.To)})
				}
			}
			return printTable(os.Stdout, rows)
		})
	return group(&cobra.Command{
		Use:   "logs",
		Short: "Verification-log partitions: list them, create the days ahead, drop the days past the retention",
	}, maintain, partitions)
}
