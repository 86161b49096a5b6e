package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/acv/acv/api/adminclient"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/plural"
	"github.com/spf13/cobra"
)

func projectCmd() *cobra.Command {
	var name, desc, expires string
	var exp *int64
	parseExp := func(*cobra.Command, []string) (err error) {
		exp, err = parseTime(expires)
		return err
	}
	create := apiCmd(&cobra.Command{Use: "create", Short: "Create a project", PreRunE: parseExp}, "create projects",
		func(ctx context.Context, c *adminclient.Client, _ []string) error {
			return doJSON[contract.Project](ctx, c, http.MethodPost, "/projects", map[string]any{"name": name, "description": desc, "expires_at": exp})
		})
	create.Flags().StringVar(&name, "name", "", "project name (required)")
	create.Flags().StringVar(&desc, "description", "", "description")
	create.Flags().StringVar(&expires, "expires-at", "", "expiry (Unix seconds or RFC 3339)")
	_ = create.MarkFlagRequired("name")
	toggle := func(use string) *cobra.Command {
		return apiCmd(command(use+" PROJECT_ID", use+" a project (takes effect at once on verify, within seconds on reads)", cobra.ExactArgs(1)),
			use+" projects", func(ctx context.Context, c *adminclient.Client, args []string) error {
				return doPrint(ctx, c, http.MethodPost, adminclient.Path(nil, "projects", args[0], use), nil, "project %s %sd\n", args[0], use)
			})
	}
	setExp := apiCmd(&cobra.Command{
		Use:     "expire PROJECT_ID",
		Short:   "Set (or with --at '' clear) a project's expiry",
		Args:    cobra.ExactArgs(1),
		PreRunE: parseExp,
	}, "change projects", func(ctx context.Context, c *adminclient.Client, args []string) error {
		path := adminclient.Path(nil, "projects", args[0], "expiry")
		if exp == nil {
			return doPrint(ctx, c, http.MethodDelete, path, nil, "project %s: expiry cleared (never expires)\n", args[0])
		}
		return doPrint(ctx, c, http.MethodPut, path, map[string]any{"expires_at": *exp}, "project %s expires at %s\n", args[0], fmtTime(exp))
	})
	setExp.Flags().StringVar(&expires, "at", "", "expiry (Unix seconds or RFC 3339); empty clears")
	list := outputCmd(command("list", "List every project", cobra.NoArgs), "list projects",
		func([]string) string { return "/projects" }, func(ps items[contract.Project]) [][]string {
			rows := [][]string{{"ID", "NAME", "STATUS", "EXPIRES_AT", "CREATED_AT"}}
			for _, p := range ps {
				rows = append(rows, []string{p.ID, p.Name, enabledWord(p.Status), fmtTime(p.ExpiresAt), fmtUnix(p.CreatedAt)})
			}
			return rows
		})
	show := outputCmd(command("show PROJECT_ID", "Show a project with its code statistics", cobra.ExactArgs(1)), "read projects",
		func(a []string) string { return adminclient.Path(nil, "projects", a[0]) }, func(p contract.Project) [][]string {
			return append([][]string{
				{"FIELD", "VALUE"},
				{"id", p.ID}, {"name", p.Name}, {"description", p.Description},
				{"status", enabledWord(p.Status)}, {"expires_at", fmtTime(p.ExpiresAt)},
				{"created_at", fmtUnix(p.CreatedAt)},
			}, statisticsRows(*p.Statistics)...)
		})
	// JSON is the statistics endpoint's body, so a script can read either.
	stats := outputCmd(command("stats PROJECT_ID",
		"Show a project's code statistics: counts by state, usage rate, recent verifications", cobra.ExactArgs(1)), "read projects",
		func(a []string) string { return adminclient.Path(nil, "projects", a[0], "statistics") }, func(st contract.ProjectStatistics) [][]string {
			rows := append([][]string{{"FIELD", "VALUE"}, {"project_id", st.ProjectID}}, statisticsRows(st.Statistics)...)
			rows = append(rows, []string{"usage_rate", strconv.FormatFloat(st.UsageRate, 'f', -1, 64) +
				" (" + strconv.FormatFloat(st.UsageRate*100, 'f', 2, 64) + "% used)"},
				[]string{""}, []string{fmt.Sprintf("recent verifications (%s currently used, newest first)",
					plural.N(len(st.RecentVerifications), "code", "codes"))},
				[]string{"VERIFIED_AT", "CODE", "VERIFIED_BY"})
			for _, v := range st.RecentVerifications {
				rows = append(rows, []string{fmtUnix(v.VerifiedAt), v.Code, fmtStr(v.VerifiedBy)})
			}
			return rows
		})
	return group(&cobra.Command{Use: "project", Short: "Create, list, show, disable and enable projects"},
		create, toggle("disable"), toggle("enable"), setExp, list, show, stats)
}

func enabledWord(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

// statisticsRows are the table rows of a project's counts by state, for project show and stats.
func statisticsRows(s contract.Statistics) [][]string {
	return [][]string{
		{"total_codes", strconv.FormatInt(s.TotalCodes, 10)},
		{"unused_codes", strconv.FormatInt(s.UnusedCodes, 10)},
		{"used_codes", strconv.FormatInt(s.UsedCodes, 10)},
		{"disabled_codes", strconv.FormatInt(s.DisabledCodes, 10)},
		{"expired_codes", strconv.FormatInt(s.ExpiredCodes, 10)},
	}
}

func keyCmd() *cobra.Command {
	var project string
	var rate float64
	var burst int
	create := apiCmd(&cobra.Command{Use: "create", Short: "Create an API key; the secret is shown once"}, "create API keys",
		func(ctx context.Context, c *adminclient.Client, _ []string) error {
			return doJSON[json.RawMessage](ctx, c, http.MethodPost, adminclient.Path(nil, "projects", project, "keys"),
				map[string]any{"rate_per_sec": rate, "burst": burstOr(burst, rate)})
		})
	projectFlag(&project, create)
	revoke := apiCmd(command("revoke KEY_ID", "Revoke an API key (takes effect within the key cache TTL)", cobra.ExactArgs(1)),
		"revoke API keys", func(ctx context.Context, c *adminclient.Client, args []string) error {
			return doPrint(ctx, c, http.MethodPost, adminclient.Path(nil, "keys", args[0], "revoke"), nil,
				"api key %s revoked (refused everywhere within the key cache TTL)\n", args[0])
		})
	limit := apiCmd(command("limit KEY_ID", "Set or clear (--rate 0) a key's rate limit", cobra.ExactArgs(1)),
		"limit API keys", func(ctx context.Context, c *adminclient.Client, args []string) error {
			b := burstOr(burst, rate)
			msg := fmt.Sprintf("api key %s limited to %g requests per second, burst %d", args[0], rate, b)
			if rate <= 0 {
				msg = fmt.Sprintf("api key %s: rate limit cleared (unlimited)", args[0])
			}
			return doPrint(ctx, c, http.MethodPut, adminclient.Path(nil, "keys", args[0], "limit"), map[string]any{"rate_per_sec": rate, "burst": b}, "%s\n", msg)
		})
	for _, c := range []*cobra.Command{create, limit} {
		c.Flags().Float64Var(&rate, "rate", 0, "requests per second (0: unlimited)")
		c.Flags().IntVar(&burst, "burst", 0, "bucket size (default: rate rounded up)")
	}
	rewrap := apiCmd(command("rewrap",
		"Seal every API key's secret with the server's active master key (secrets in clear, or under an older master key); safe to run again", cobra.NoArgs),
		"rewrap API keys", func(ctx context.Context, c *adminclient.Client, _ []string) error {
			res, err := adminclient.Call[struct {
				ActiveMasterKey string `json:"active_master_key"`
				Sealed          int    `json:"sealed"`
				Rewrapped       int    `json:"rewrapped"`
				Current         int    `json:"current"`
				Failed          int    `json:"failed"`
				Error           string `json:"error,omitempty"`
			}](ctx, c, http.MethodPost, "/keys/rewrap", nil)
			if err != nil {
				return err
			}
			if err := printJSON(res); err != nil || res.Error == "" {
				return err
			}
			return errors.New(res.Error)
		})
	var listProject string
	list := outputCmd(command("list --project PROJECT_ID", "List a project's API keys (never their secrets)", cobra.NoArgs), "list API keys",
		func([]string) string { return adminclient.Path(nil, "projects", listProject, "keys") }, func(ks items[apiKey]) [][]string {
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
	projectFlag(&listProject, list)
	return group(&cobra.Command{Use: "key", Short: "Create, list, revoke and limit API keys; re-seal their secrets"},
		create, revoke, limit, rewrap, list)
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

// burstOr is the burst asked for, or by default the rate rounded up.
func burstOr(burst int, rate float64) int {
	if burst > 0 || rate <= 0 {
		return burst
	}
	return int(rate + 0.999999)
}

// adminCmd manages the operator console's accounts through the admin API (admin role). The
// first account is made by acv dev or acv migrate --admin, or by an admin through the console.
func adminCmd() *cobra.Command {
	var role string
	create := apiCmd(command("create USERNAME",
		"Create a console account; prints its one-time password, which the first login must change", cobra.ExactArgs(1)),
		"create accounts", func(ctx context.Context, c *adminclient.Client, args []string) error {
			acc, err := adminclient.Call[adminclient.NewAccount](ctx, c, http.MethodPost, "/accounts", map[string]string{"username": args[0], "role": role})
			if err != nil {
				return err
			}
			fmt.Printf("account %s (%s) created\none-time password: %s\n", acc.Username, acc.Role, acc.OneTimePassword)
			fmt.Println("it is shown once; the first login must replace it")
			return nil
		})
	create.Flags().StringVar(&role, "role", "admin", "viewer, support, operator or admin")
	var fromStdin bool
	var body map[string]string
	reset := apiCmd(&cobra.Command{
		Use:   "reset-password USERNAME",
		Short: "Give an account a one-time password (printed, or read with --password-stdin) and end its sessions",
		Args:  cobra.ExactArgs(1),
		PreRunE: func(*cobra.Command, []string) error {
			if !fromStdin {
				return nil
			}
			pw, err := readLine(os.Stdin)
			if err != nil {
				return fmt.Errorf("read the password from standard input: %w", err)
			}
			body = map[string]string{"password": pw}
			return nil
		},
	}, "reset passwords", func(ctx context.Context, c *adminclient.Client, args []string) error {
		as, err := adminclient.Call[items[adminclient.Account]](ctx, c, http.MethodGet, "/accounts", nil)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(as, func(a adminclient.Account) bool { return strings.EqualFold(a.Username, args[0]) })
		if i < 0 {
			return fmt.Errorf("no account named %q", args[0])
		}
		acc, err := adminclient.Call[adminclient.NewAccount](ctx, c, http.MethodPost, adminclient.Path(nil, "accounts", as[i].ID, "reset-password"), body)
		if err != nil {
			return err
		}
		fmt.Printf("account %s: password reset, its sessions ended\n", acc.Username)
		if !fromStdin {
			fmt.Printf("one-time password: %s\nit is shown once; the next login must replace it\n", acc.OneTimePassword)
		}
		return nil
	})
	reset.Flags().BoolVar(&fromStdin, "password-stdin", false, "read the one-time password from standard input instead of drawing one")
	return group(&cobra.Command{Use: "admin", Short: "Create console accounts and reset their passwords"}, create, reset)
}
