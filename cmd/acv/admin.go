package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/internal/plural"

	"github.com/acv/acv/api/adminclient"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/admin"
	"github.com/spf13/cobra"
)

func printJSON(v interface{}) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// parseTime accepts Unix seconds or RFC 3339; "" is nil.
func parseTime(s string) (*int64, error) {
	if s == "" {
		return nil, nil
	}
	var v int64
	if _, err := fmt.Sscanf(s, "%d", &v); err == nil && fmt.Sprint(v) == s {
		return &v, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil, fmt.Errorf("time %q: use Unix seconds or RFC 3339", s)
	}
	v = t.Unix()
	return &v, nil
}

func projectCmd() *cobra.Command {
	cmd := group(&cobra.Command{Use: "project", Short: "Create, list, show, disable and enable projects"})
	var name, desc, expires string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a project",
		RunE: func(cmd *cobra.Command, _ []string) error {
			exp, err := parseTime(expires)
			if err != nil {
				return err
			}
			return withAPI(cmd, "create projects", func(ctx context.Context, c *adminclient.Client) error {
				var p contract.Project
				body := map[string]any{"name": name, "description": desc, "expires_at": exp}
				if err := c.Do(ctx, http.MethodPost, "/projects", body, &p); err != nil {
					return err
				}
				return printJSON(p)
			})
		},
	}
	create.Flags().StringVar(&name, "name", "", "project name (required)")
	create.Flags().StringVar(&desc, "description", "", "description")
	create.Flags().StringVar(&expires, "expires-at", "", "expiry (Unix seconds or RFC 3339)")
	_ = create.MarkFlagRequired("name")
	toggle := func(use string, enabled bool) *cobra.Command {
		return &cobra.Command{
			Use:   use + " PROJECT_ID",
			Short: use + " a project (takes effect at once on verify, within seconds on reads)",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return withAPI(cmd, use+" projects", func(ctx context.Context, c *adminclient.Client) error {
					if err := c.Do(ctx, http.MethodPost, adminclient.Path(nil, "projects", args[0], use), nil, nil); err != nil {
						return err
					}
					fmt.Printf("project %s %sd\n", args[0], use)
					return nil
				})
			},
		}
	}
	var expiry string
	setExp := &cobra.Command{
		Use:   "expire PROJECT_ID",
		Short: "Set (or with --at '' clear) a project's expiry",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			exp, err := parseTime(expiry)
			if err != nil {
				return err
			}
			return withAPI(cmd, "change projects", func(ctx context.Context, c *adminclient.Client) error {
				path := adminclient.Path(nil, "projects", args[0], "expiry")
				var err error
				if exp == nil {
					err = c.Do(ctx, http.MethodDelete, path, nil, nil)
				} else {
					err = c.Do(ctx, http.MethodPut, path, map[string]any{"expires_at": *exp}, nil)
				}
				if err != nil {
					return err
				}
				if exp == nil {
					fmt.Printf("project %s: expiry cleared (never expires)\n", args[0])
				} else {
					fmt.Printf("project %s expires at %s\n", args[0], fmtTime(exp))
				}
				return nil
			})
		},
	}
	setExp.Flags().StringVar(&expiry, "at", "", "expiry (Unix seconds or RFC 3339); empty clears")
	cmd.AddCommand(create, toggle("disable", false), toggle("enable", true), setExp, projectListCmd(), projectShowCmd(), projectStatsCmd())
	return cmd
}

func keyCmd() *cobra.Command {
	cmd := group(&cobra.Command{Use: "key", Short: "Create, list, revoke and limit API keys; re-seal their secrets"})
	var project string
	var rate float64
	var burst int
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an API key; the secret is shown once",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAPI(cmd, "create API keys", func(ctx context.Context, c *adminclient.Client) error {
				var k json.RawMessage
				body := map[string]any{"rate_per_sec": rate, "burst": burst}
				if err := c.Do(ctx, http.MethodPost, adminclient.Path(nil, "projects", project, "keys"), body, &k); err != nil {
					return err
				}
				return printJSON(k)
			})
		},
	}
	create.Flags().StringVar(&project, "project", "", "project id (required)")
	create.Flags().Float64Var(&rate, "rate", 0, "requests per second (0: unlimited)")
	create.Flags().IntVar(&burst, "burst", 0, "bucket size (default: rate rounded up)")
	_ = create.MarkFlagRequired("project")
	revoke := &cobra.Command{
		Use:   "revoke KEY_ID",
		Short: "Revoke an API key (takes effect within the key cache TTL)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAPI(cmd, "revoke API keys", func(ctx context.Context, c *adminclient.Client) error {
				if err := c.Do(ctx, http.MethodPost, adminclient.Path(nil, "keys", args[0], "revoke"), nil, nil); err != nil {
					return err
				}
				fmt.Printf("api key %s revoked (refused everywhere within the key cache TTL)\n", args[0])
				return nil
			})
		},
	}
	limit := &cobra.Command{
		Use:   "limit KEY_ID",
		Short: "Set or clear (--rate 0) a key's rate limit",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAPI(cmd, "limit API keys", func(ctx context.Context, c *adminclient.Client) error {
				b := burstOr(burst, rate)
				body := map[string]any{"rate_per_sec": rate, "burst": b}
				if err := c.Do(ctx, http.MethodPut, adminclient.Path(nil, "keys", args[0], "limit"), body, nil); err != nil {
					return err
				}
				if rate <= 0 {
					fmt.Printf("api key %s: rate limit cleared (unlimited)\n", args[0])
				} else {
					fmt.Printf("api key %s limited to %g requests per second, burst %d\n", args[0], rate, b)
				}
				return nil
			})
		},
	}
	limit.Flags().Float64Var(&rate, "rate", 0, "requests per second (0: unlimited)")
	limit.Flags().IntVar(&burst, "burst", 0, "bucket size (default: rate rounded up)")
	rewrap := &cobra.Command{
		Use:   "rewrap",
		Short: "Seal every API key's secret with the server's active master key (secrets in clear, or under an older master key); safe to run again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAPI(cmd, "rewrap API keys", func(ctx context.Context, c *adminclient.Client) error {
				var res struct {
					ActiveMasterKey string `json:"active_master_key"`
					Sealed          int    `json:"sealed"`
					Rewrapped       int    `json:"rewrapped"`
					Current         int    `json:"current"`
					Failed          int    `json:"failed"`
					Error           string `json:"error,omitempty"`
				}
				if err := c.Do(ctx, http.MethodPost, "/keys/rewrap", nil, &res); err != nil {
					return err
				}
				if err := printJSON(res); err != nil {
					return err
				}
				if res.Error != "" {
					return errors.New(res.Error)
				}
				return nil
			})
		},
	}
	cmd.AddCommand(create, revoke, limit, rewrap, keyListCmd())
	create.PreRun = func(*cobra.Command, []string) { burst = burstOr(burst, rate) }
	return cmd
}

func burstOr(burst int, rate float64) int {
	if burst > 0 || rate <= 0 {
		return burst
	}
	return int(rate + 0.999999)
}

func codesCmd() *cobra.Command {
	cmd := group(&cobra.Command{Use: "codes", Short: "Generate, import, export, list, show, disable and enable codes"})
	var project, expires, batchName string
	var dryRun bool
	var spec contract.GenerateSpec
	gen := &cobra.Command{
		Use:   "generate",
		Short: "Generate random codes, unique within the project",
		RunE: func(cmd *cobra.Command, _ []string) error {
			exp, err := parseTime(expires)
			if err != nil {
				return err
			}
			spec.ExpiresAt = exp
			return withAPI(cmd, "generate codes", func(ctx context.Context, c *adminclient.Client) error {
				return generate(ctx, c, project, batchName, spec)
			})
		},
	}
	gen.Flags().StringVar(&project, "project", "", "project id (required)")
	gen.Flags().IntVar(&spec.Count, "count", 100, "how many codes")
	gen.Flags().IntVar(&spec.Length, "length", 12, "random characters per code")
	gen.Flags().StringVar(&spec.Charset, "charset", admin.DefaultCharset, "characters to draw from")
	gen.Flags().StringVar(&spec.Prefix, "prefix", "", "text before the random part")
	gen.Flags().StringVar(&spec.Suffix, "suffix", "", "text after the random part")
	gen.Flags().StringVar(&expires, "expires-at", "", "code expiry (Unix seconds or RFC 3339)")
	gen.Flags().StringVar(&batchName, "batch", "cli", "the batch's name (shown in the console, revocable as a whole)")
	_ = gen.MarkFlagRequired("project")

	imp := &cobra.Command{
		Use:   "import FILE.csv",
		Short: "Import codes from CSV (code[,expires_at]); '-' reads standard input",
		Long: "Import codes from CSV (code[,expires_at]); '-' reads standard input.\n\n" +
			"Every row is checked: the good rows are imported, the invalid ones, repeats within the file and codes\n" +
			"the project already holds are skipped and listed by line. --dry-run writes nothing. The command\n" +
			"fails when a row is invalid, so a script notices.\n\n" +
			"Cells are read as acv codes export writes them: one apostrophe before a cell starting with = + - @,\n" +
			"a tab, CR, LF or another apostrophe is removed, so '=1+2 imports the code =1+2 and ''x the code 'x.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := os.Stdin
			if args[0] != "-" {
				var err error
				if f, err = os.Open(args[0]); err != nil {
					return err
				}
				defer f.Close()
			}
			return withAPI(cmd, "import codes", func(ctx context.Context, c *adminclient.Client) error {
				verb := "importing"
				if dryRun {
					verb = "checking"
				}
				fmt.Fprintf(os.Stderr, "%s %s\n", verb, args[0])
				q := url.Values{"dry_run": {strconv.FormatBool(dryRun)}}
				resp, err := c.Send(ctx, http.MethodPost, adminclient.Path(q, "projects", project, "import"), "text/csv", f)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				var rep contract.ImportReport
				if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
					return fmt.Errorf("read the import report: %w", err)
				}
				printImportReport(os.Stderr, rep)
				if rep.Invalid > 0 {
					return fmt.Errorf("%s not imported", plural.N(rep.Invalid, "invalid row", "invalid rows"))
				}
				return nil
			})
		},
	}
	exp := &cobra.Command{
		Use:   "export [FILE.csv]",
		Short: "Export the project's codes as CSV, to FILE.csv or (without it, or -) standard output",
		Args:  cobra.MaximumNArgs(1),
		Long: "Export the project's codes as CSV.\n\n" +
			"The file is safe to open in a spreadsheet: a cell starting with = + - @, a tab, CR, LF or an apostrophe\n" +
			"is written with an apostrophe before it, which a spreadsheet takes as \"text\" and does not show, so no\n" +
			"value runs as a formula. acv codes import removes it again: the file imports as the codes it holds.",
		RunE: func(cmd *cobra.Command, args []string) error {
			w := os.Stdout
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Create(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			return withAPI(cmd, "export codes", func(ctx context.Context, c *adminclient.Client) error {
				resp, err := c.Send(ctx, http.MethodGet, adminclient.Path(nil, "projects", project, "export"), "", nil)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				n, err := copyCSV(w, resp.Body)
				fmt.Fprintf(os.Stderr, "exported %s\n", plural.N(n, "code", "codes"))
				return err
			})
		},
	}
	imp.Flags().BoolVar(&dryRun, "dry-run", false, "check every row and report the problem rows without writing anything")
	toggle := func(use string, disabled bool) *cobra.Command {
		return &cobra.Command{
			Use:   use + " CODE...",
			Short: use + " codes (takes effect at once)",
			Args:  cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return withAPI(cmd, use+" codes", func(ctx context.Context, c *adminclient.Client) error {
					for _, v := range args {
						if err := c.Do(ctx, http.MethodPost, adminclient.Path(nil, "projects", project, "codes", v, use), nil, nil); err != nil {
							return err
						}
						fmt.Printf("code %s %sd in project %s\n", v, use, project)
					}
					return nil
				})
			},
		}
	}
	for _, c := range []*cobra.Command{imp, exp} {
		c.Flags().StringVar(&project, "project", "", "project id (required)")
		_ = c.MarkFlagRequired("project")
	}
	dis, en := toggle("disable", true), toggle("enable", false)
	for _, c := range []*cobra.Command{dis, en} {
		c.Flags().StringVar(&project, "project", "", "project id (required)")
		_ = c.MarkFlagRequired("project")
	}
	cmd.AddCommand(gen, imp, exp, dis, en, codesListCmd(), codesShowCmd())
	return cmd
}

// adminCmd manages the operator console's accounts through the admin API (admin role). The
// first account is made by acv dev, or by an admin through the console.
func adminCmd() *cobra.Command {
	cmd := group(&cobra.Command{Use: "admin", Short: "Create console accounts and reset their passwords"})
	var role string
	create := &cobra.Command{
		Use:   "create USERNAME",
		Short: "Create a console account; prints its one-time password, which the first login must change",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAPI(cmd, "create accounts", func(ctx context.Context, c *adminclient.Client) error {
				var acc adminclient.NewAccount
				if err := c.Do(ctx, http.MethodPost, "/accounts", map[string]string{"username": args[0], "role": role}, &acc); err != nil {
					return err
				}
				fmt.Printf("account %s (%s) created\none-time password: %s\n", acc.Username, acc.Role, acc.OneTimePassword)
				fmt.Println("it is shown once; the first login must replace it")
				return nil
			})
		},
	}
	create.Flags().StringVar(&role, "role", "admin", "viewer, support, operator or admin")
	var fromStdin bool
	reset := &cobra.Command{
		Use:   "reset-password USERNAME",
		Short: "Give an account a one-time password (printed, or read with --password-stdin) and end its sessions",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var body map[string]string
			if fromStdin {
				pw, err := readLine(os.Stdin)
				if err != nil {
					return fmt.Errorf("read the password from standard input: %w", err)
				}
				body = map[string]string{"password": pw}
			}
			return withAPI(cmd, "reset passwords", func(ctx context.Context, c *adminclient.Client) error {
				id, err := accountID(ctx, c, args[0])
				if err != nil {
					return err
				}
				var acc adminclient.NewAccount
				if err := c.Do(ctx, http.MethodPost, adminclient.Path(nil, "accounts", id, "reset-password"), body, &acc); err != nil {
					return err
				}
				fmt.Printf("account %s: password reset, its sessions ended\n", acc.Username)
				if !fromStdin {
					fmt.Printf("one-time password: %s\nit is shown once; the next login must replace it\n", acc.OneTimePassword)
				}
				return nil
			})
		},
	}
	reset.Flags().BoolVar(&fromStdin, "password-stdin", false, "read the one-time password from standard input instead of drawing one")
	cmd.AddCommand(create, reset)
	return cmd
}

// accountID finds an account's id by its username.
func accountID(ctx context.Context, c *adminclient.Client, username string) (string, error) {
	as, err := c.Accounts(ctx)
	if err != nil {
		return "", err
	}
	for _, a := range as {
		if strings.EqualFold(a.Username, username) {
			return a.ID, nil
		}
	}
	return "", fmt.Errorf("no account named %q", username)
}
