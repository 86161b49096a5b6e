package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"

	"github.com/acv/acv/internal/plural"

	"github.com/spf13/cobra"

	"github.com/acv/acv/api/adminclient"
	"github.com/acv/acv/api/contract"
)

// projectStatsCmd prints what the API's statistics endpoint answers for a project: its codes
// counted by state, the usage rate and the codes used most recently. JSON is that endpoint's
// body, so a script can read either.
func projectStatsCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "stats PROJECT_ID",
		Short: "Show a project's code statistics: counts by state, usage rate, recent verifications",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			return withAPI(cmd, "read projects", func(ctx context.Context, c *adminclient.Client) error {
				var st contract.ProjectStatistics
				if err := c.Do(ctx, http.MethodGet, adminclient.Path(nil, "projects", args[0], "statistics"), nil, &st); err != nil {
					return err
				}
				if out != "table" {
					return printJSON(st)
				}
				rows := [][]string{{"FIELD", "VALUE"}, {"project_id", st.ProjectID}}
				rows = append(rows, statisticsRows(st.Statistics)...)
				rows = append(rows, []string{"usage_rate", strconv.FormatFloat(st.UsageRate, 'f', -1, 64) +
					" (" + strconv.FormatFloat(st.UsageRate*100, 'f', 2, 64) + "% used)"})
				if err := printTable(os.Stdout, rows); err != nil {
					return err
				}
				fmt.Println()
				fmt.Printf("recent verifications (%s currently used, newest first)\n", plural.N(len(st.RecentVerifications), "code", "codes"))
				recent := [][]string{{"VERIFIED_AT", "CODE", "VERIFIED_BY"}}
				for _, v := range st.RecentVerifications {
					recent = append(recent, []string{fmtUnix(v.VerifiedAt), v.Code, fmtStr(v.VerifiedBy)})
				}
				return printTable(os.Stdout, recent)
			})
		},
	}
	outputFlag(cmd, &out)
	return cmd
}
