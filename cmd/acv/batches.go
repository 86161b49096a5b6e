package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/acv/acv/api/adminclient"
)

// batchCmd reads and stops the code generation batches (acv codes generate, the console's
// generation) and revokes a batch's codes as a whole.
func batchCmd() *cobra.Command {
	cmd := group(&cobra.Command{Use: "batch", Short: "List, show, cancel and revoke code generation batches"})
	var project, out string
	list := &cobra.Command{
		Use:   "list --project PROJECT_ID",
		Short: "List a project's generation batches, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			return withAPI(cmd, "list batches", func(ctx context.Context, c *adminclient.Client) error {
				var body struct {
					Items []json.RawMessage `json:"items"`
				}
				if err := c.Do(ctx, http.MethodGet, adminclient.Path(nil, "projects", project, "batches"), nil, &body); err != nil {
					return err
				}
				return render(out, body.Items, func() [][]string {
					rows := [][]string{{"ID", "NAME", "STATUS", "DONE", "REQUESTED", "CREATED_BY", "CREATED_AT", "REVOKED_AT"}}
					for _, raw := range body.Items {
						var b struct {
							batch
							Name      string `json:"name"`
							CreatedBy string `json:"created_by"`
							CreatedAt int64  `json:"created_at"`
							RevokedAt *int64 `json:"revoked_at"`
						}
						_ = json.Unmarshal(raw, &b)
						rows = append(rows, []string{b.ID, b.Name, b.Status, strconv.Itoa(b.Done), strconv.Itoa(b.Requested),
							b.CreatedBy, fmtUnix(b.CreatedAt), fmtTime(b.RevokedAt)})
					}
					return rows
				})
			})
		},
	}
	outputFlag(list, &out)
	show := &cobra.Command{
		Use:   "show --project PROJECT_ID BATCH_ID",
		Short: "Show a batch and its progress (JSON)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAPI(cmd, "read batches", func(ctx context.Context, c *adminclient.Client) error {
				var b json.RawMessage
				if err := c.Do(ctx, http.MethodGet, adminclient.Path(nil, "projects", project, "batches", args[0]), nil, &b); err != nil {
					return err
				}
				return printJSON(b)
			})
		},
	}
	cancel := &cobra.Command{
		Use:   "cancel --project PROJECT_ID BATCH_ID",
		Short: "Stop a running batch (the codes already made stay)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAPI(cmd, "cancel batches", func(ctx context.Context, c *adminclient.Client) error {
				var b batch
				if err := c.Do(ctx, http.MethodPost, adminclient.Path(nil, "projects", project, "batches", args[0], "cancel"), nil, &b); err != nil {
					return err
				}
				fmt.Printf("batch %s: %s, made %d of %d\n", b.ID, b.Status, b.Done, b.Requested)
				return nil
			})
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke --project PROJECT_ID BATCH_ID",
		Short: "Disable every code of a batch (takes effect at once)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAPI(cmd, "revoke batches", func(ctx context.Context, c *adminclient.Client) error {
				var res struct {
					Disabled int64 `json:"disabled"`
				}
				if err := c.Do(ctx, http.MethodPost, adminclient.Path(nil, "projects", project, "batches", args[0], "revoke"), nil, &res); err != nil {
					return err
				}
				fmt.Printf("batch %s revoked; codes disabled: %d\n", args[0], res.Disabled)
				return nil
			})
		},
	}
	for _, c := range []*cobra.Command{list, show, cancel, revoke} {
		c.Flags().StringVar(&project, "project", "", "project id (required)")
		_ = c.MarkFlagRequired("project")
	}
	cmd.AddCommand(list, show, cancel, revoke)
	return cmd
}
