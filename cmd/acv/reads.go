package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/acv/acv/internal/plural"

	"github.com/spf13/cobra"

	"github.com/acv/acv/api/adminclient"
	"github.com/acv/acv/api/contract"
)

// group makes a command that only holds subcommands fail, in words and with a non-zero exit,
// when it is run without one or with one it does not know (cobra would print the help and
// exit 0).
func group(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		var names []string
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		sort.Strings(names)
		if len(args) == 0 {
			return fmt.Errorf("%s needs a subcommand: one of %s (see %s --help)", c.CommandPath(), strings.Join(names, ", "), c.CommandPath())
		}
		msg := fmt.Sprintf("unknown command %q for %q: use one of %s", args[0], c.CommandPath(), strings.Join(names, ", "))
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, ", "))
		}
		return errors.New(msg)
	}
	return cmd
}

// outputFlag adds --output (json or table) to cmd.
func outputFlag(cmd *cobra.Command, out *string) {
	cmd.Flags().StringVarP(out, "output", "o", "json", "output format: json or table")
}

func checkOutput(out string) error {
	if out != "json" && out != "table" {
		return fmt.Errorf("--output %q: use json or table", out)
	}
	return nil
}

// render prints v as JSON, or as the table rows() gives (the first row is the header).
func render(out string, v interface{}, rows func() [][]string) error {
	if out == "table" {
		return printTable(os.Stdout, rows())
	}
	return printJSON(v)
}

func printTable(w io.Writer, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func fmtTime(v *int64) string {
	if v == nil {
		return "-"
	}
	return time.Unix(*v, 0).UTC().Format(time.RFC3339)
}

func fmtUnix(v int64) string { return fmtTime(&v) }

func fmtStr(v *string) string {
	if v == nil || *v == "" {
		return "-"
	}
	return *v
}

func enabledWord(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

func projectListCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every project",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			return withAPI(cmd, "list projects", func(ctx context.Context, c *adminclient.Client) error {
				ps, err := c.Projects(ctx)
				if err != nil {
					return err
				}
				return render(out, ps, func() [][]string {
					rows := [][]string{{"ID", "NAME", "STATUS", "EXPIRES_AT", "CREATED_AT"}}
					for _, p := range ps {
						rows = append(rows, []string{p.ID, p.Name, enabledWord(p.Status), fmtTime(p.ExpiresAt), fmtUnix(p.CreatedAt)})
					}
					return rows
				})
			})
		},
	}
	outputFlag(cmd, &out)
	return cmd
}

func projectShowCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "show PROJECT_ID",
		Short: "Show a project with its code statistics",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			return withAPI(cmd, "read projects", func(ctx context.Context, c *adminclient.Client) error {
				var p contract.Project
				if err := c.Do(ctx, http.MethodGet, adminclient.Path(nil, "projects", args[0]), nil, &p); err != nil {
					return err
				}
				return render(out, p, func() [][]string {
					return append([][]string{
						{"FIELD", "VALUE"},
						{"id", p.ID}, {"name", p.Name}, {"description", p.Description},
						{"status", enabledWord(p.Status)}, {"expires_at", fmtTime(p.ExpiresAt)},
						{"created_at", fmtUnix(p.CreatedAt)},
					}, statisticsRows(*p.Statistics)...)
				})
			})
		},
	}
	outputFlag(cmd, &out)
	return cmd
}

// statisticsRows are the table rows of a project's counts by state, shared by project show and
// project stats so both print them alike.
func statisticsRows(s contract.Statistics) [][]string {
	return [][]string{
		{"total_codes", strconv.FormatInt(s.TotalCodes, 10)},
		{"unused_codes", strconv.FormatInt(s.UnusedCodes, 10)},
		{"used_codes", strconv.FormatInt(s.UsedCodes, 10)},
		{"disabled_codes", strconv.FormatInt(s.DisabledCodes, 10)},
		{"expired_codes", strconv.FormatInt(s.ExpiredCodes, 10)},
	}
}

func keyListCmd() *cobra.Command {
	var out, project string
	cmd := &cobra.Command{
		Use:   "list --project PROJECT_ID",
		Short: "List a project's API keys (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			return withAPI(cmd, "list API keys", func(ctx context.Context, c *adminclient.Client) error {
				var body struct {
					Items []apiKey `json:"items"`
				}
				if err := c.Do(ctx, http.MethodGet, adminclient.Path(nil, "projects", project, "keys"), nil, &body); err != nil {
					return err
				}
				ks := body.Items
				return render(out, ks, func() [][]string {
					rows := [][]string{{"KEY_ID", "STATUS", "RATE_PER_SEC", "BURST", "CREATED_AT", "REVOKED_AT"}}
					for _, k := range ks {
						st := "active"
						if k.Revoked {
							st = "revoked"
						}
						rate, burst := "unlimited", "-"
						if k.RatePerSec > 0 {
							rate, burst = strconv.FormatFloat(k.RatePerSec, 'g', -1, 64), strconv.Itoa(k.Burst)
						}
						rows = append(rows, []string{k.ID, st, rate, burst, fmtUnix(k.CreatedAt), fmtTime(k.RevokedAt)})
					}
					return rows
				})
			})
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project id (required)")
	_ = cmd.MarkFlagRequired("project")
	outputFlag(cmd, &out)
	return cmd
}

func codesListCmd() *cobra.Command {
	var out, project, status, search string
	var page, pageSize int
	cmd := &cobra.Command{
		Use:   "list --project PROJECT_ID",
		Short: "List a project's codes, a page at a time, optionally by status or a search",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			q := contract.ListQuery{Page: page, PageSize: pageSize, Search: search}
			if page < 1 {
				return errors.New("--page must be at least 1")
			}
			if pageSize < 1 || pageSize > contract.MaxPageSize {
				return fmt.Errorf("--page-size must be 1 to %d", contract.MaxPageSize)
			}
			if status != "" && status != "all" {
				st, err := contract.ParseState(status)
				if err != nil {
					return fmt.Errorf("--status %q: use unused, used, disabled, expired or all", status)
				}
				q.State = st
			}
			return withAPI(cmd, "list codes", func(ctx context.Context, c *adminclient.Client) error {
				v := url.Values{"page": {strconv.Itoa(q.Page)}, "page_size": {strconv.Itoa(q.PageSize)}}
				if q.Search != "" {
					v.Set("search", q.Search)
				}
				if q.State != "" {
					v.Set("status", string(q.State))
				}
				var pg contract.CodePage
				if err := c.Do(ctx, http.MethodGet, adminclient.Path(v, "projects", project, "codes"), nil, &pg); err != nil {
					return err
				}
				if out == "table" {
					fmt.Fprintf(os.Stderr, "page %d of %d (%s)\n", pg.Page, pg.TotalPages, plural.N(pg.Total, "code", "codes"))
				}
				return render(out, pg, func() [][]string {
					rows := [][]string{{"CODE", "STATE", "EXPIRES_AT", "VERIFIED_AT", "VERIFIED_BY", "ID"}}
					for _, c := range pg.Items {
						rows = append(rows, []string{c.Code, codeState(c), fmtTime(c.ExpiresAt), fmtTime(c.VerifiedAt), fmtStr(c.VerifiedBy), c.ID})
					}
					return rows
				})
			})
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project id (required)")
	cmd.Flags().StringVar(&status, "status", "", "only codes in this state: unused, used, disabled, expired (or all)")
	cmd.Flags().StringVar(&search, "search", "", "only codes whose value contains this text (case-insensitive)")
	cmd.Flags().IntVar(&page, "page", 1, "page number, from 1")
	cmd.Flags().IntVar(&pageSize, "page-size", contract.DefaultPageSize, "codes per page")
	_ = cmd.MarkFlagRequired("project")
	outputFlag(cmd, &out)
	return cmd
}

// apiKey is a key as the API lists it, never with its secret.
type apiKey struct {
	ID         string  `json:"key_id"`
	Revoked    bool    `json:"revoked"`
	RevokedAt  *int64  `json:"revoked_at"`
	RatePerSec float64 `json:"rate_per_sec"`
	Burst      int     `json:"burst"`
	CreatedAt  int64   `json:"created_at"`
}

// codeState names a listed code's state from its flags.
func codeState(c contract.Code) string {
	switch {
	case c.IsDisabled:
		return string(contract.StateDisabled)
	case c.Status:
		return string(contract.StateUsed)
	case c.IsExpired:
		return string(contract.StateExpired)
	}
	return string(contract.StateUnused)
}

func codesShowCmd() *cobra.Command {
	var out, project string
	cmd := &cobra.Command{
		Use:   "show --project PROJECT_ID CODE",
		Short: "Show one code with its verification history",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out); err != nil {
				return err
			}
			return withAPI(cmd, "read codes", func(ctx context.Context, ac *adminclient.Client) error {
				var c contract.CodeWithHistory
				if err := ac.Do(ctx, http.MethodGet, adminclient.Path(nil, "projects", project, "codes", args[0]), nil, &c); err != nil {
					return err
				}
				if out == "table" {
					if err := printTable(os.Stdout, [][]string{
						{"FIELD", "VALUE"},
						{"code", c.Code.Code}, {"id", c.ID}, {"state", string(c.State)},
						{"expires_at", fmtTime(c.ExpiresAt)}, {"verified_at", fmtTime(c.VerifiedAt)},
						{"verified_by", fmtStr(c.VerifiedBy)}, {"created_at", fmtUnix(c.CreatedAt)},
					}); err != nil {
						return err
					}
					fmt.Println()
					noun := "entries"
					if len(c.VerificationLogs) == 1 {
						noun = "entry"
					}
					fmt.Printf("verification history (%d %s, newest first)\n", len(c.VerificationLogs), noun)
					rows := [][]string{{"AT", "ACTION", "RESULT", "BY", "IP", "REASON"}}
					for _, l := range c.VerificationLogs {
						rows = append(rows, []string{fmtUnix(l.VerifiedAt), l.Action, l.Result, fmtStr(l.VerifiedBy), l.IPAddress, fmtStr(l.Reason)})
					}
					return printTable(os.Stdout, rows)
				}
				return printJSON(c)
			})
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "project id (required)")
	_ = cmd.MarkFlagRequired("project")
	outputFlag(cmd, &out)
	return cmd
}

// cleanError is the last guard that no database driver text reaches the operator.
func cleanError(err error) string {
	s := err.Error()
	for _, driver := range []string{": no rows in result set", "no rows in result set"} {
		s = strings.ReplaceAll(s, driver, "")
	}
	return s
}
