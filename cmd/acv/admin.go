package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/spf13/cobra"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/console"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/store"
)

// withAdmin opens both stores for one operator command.
func withAdmin(ctx context.Context, fn func(a *admin.Admin) error) error {
	cfg, err := service.FromEnv()
	if err != nil {
		return err
	}
	if err := cfg.RequireMasterKeys(); err != nil {
		return err
	}
	d, err := service.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(&admin.Admin{Store: d.Store, Cache: d.Cache, Keys: cfg.MasterKeys})
}

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
			return withAdmin(cmd.Context(), func(a *admin.Admin) error {
				p, err := a.CreateProject(cmd.Context(), contract.NewProject{Name: name, Description: desc, ExpiresAt: exp})
				if err != nil {
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
				return withAdmin(cmd.Context(), func(a *admin.Admin) error {
					if err := a.SetProjectEnabled(cmd.Context(), args[0], enabled); err != nil {
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
			return withAdmin(cmd.Context(), func(a *admin.Admin) error {
				if err := a.SetProjectExpiry(cmd.Context(), args[0], exp); err != nil {
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
			return withAdmin(cmd.Context(), func(a *admin.Admin) error {
				k, err := a.CreateAPIKey(cmd.Context(), project, rate, burst)
				if err != nil {
					return err
				}
				return printJSON(map[string]interface{}{
					"key_id": k.ID, "secret": k.Secret, "project_id": k.ProjectID,
					"rate_per_sec": k.RatePerSec, "burst": k.Burst,
				})
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
			return withAdmin(cmd.Context(), func(a *admin.Admin) error {
				if err := a.RevokeAPIKey(cmd.Context(), args[0]); err != nil {
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
			return withAdmin(cmd.Context(), func(a *admin.Admin) error {
				b := burstOr(burst, rate)
				if err := a.SetAPIKeyRateLimit(cmd.Context(), args[0], rate, b); err != nil {
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
		Short: "Seal every API key's secret with the active master key (secrets in clear, or under an older master key); safe to run again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdmin(cmd.Context(), func(a *admin.Admin) error {
				res, err := a.RewrapKeys(cmd.Context())
				if perr := printJSON(map[string]interface{}{
					"active_master_key": a.Keys.ActiveID(), "sealed": res.Sealed, "rewrapped": res.Rewrapped,
					"current": res.Current, "failed": res.Failed,
				}); perr != nil && err == nil {
					err = perr
				}
				return err
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
	var project, expires, out, batchName string
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
			return withAdmin(cmd.Context(), func(a *admin.Admin) error {
				bar := newProgress("generating", int64(spec.Count))
				if batchName == "" {
					n, err := a.Generate(cmd.Context(), project, spec, bar.Set)
					bar.Finish()
					fmt.Fprintf(os.Stderr, "generated %d codes\n", n)
					return err
				}
				// A named batch, as the console makes: the console shows it, and it can be
				// revoked as a whole.
				b, err := a.CreateBatch(cmd.Context(), project, batchName, spec, "cli")
				if err != nil {
					return err
				}
				end, err := a.RunBatch(cmd.Context(), project, b.ID, 0, bar.Set)
				bar.Finish()
				fmt.Fprintf(os.Stderr, "generated %d codes in batch %s (%s)\n", end.Done, b.ID, end.Status)
				return err
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
	gen.Flags().StringVar(&batchName, "batch", "", "name the codes as a batch (shown in the console, revocable as a whole)")
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
			return withAdmin(cmd.Context(), func(a *admin.Admin) error {
				verb := "importing"
				if dryRun {
					verb = "checking"
				}
				bar := newProgress(verb, -1)
				rep, err := a.ImportCSV(cmd.Context(), project, f, contract.ImportOptions{DryRun: dryRun, Progress: bar.Set})
				bar.Finish()
				if err != nil {
					return err
				}
				printImportReport(os.Stderr, rep)
				if rep.Invalid > 0 {
					return fmt.Errorf("%d invalid row(s) not imported", rep.Invalid)
				}
				return nil
			})
		},
	}
	exp := &cobra.Command{
		Use:   "export",
		Short: "Export the project's codes as CSV",
		Long: "Export the project's codes as CSV.\n\n" +
			"The file is safe to open in a spreadsheet: a cell starting with = + - @, a tab, CR, LF or an apostrophe\n" +
			"is written with an apostrophe before it, which a spreadsheet takes as \"text\" and does not show, so no\n" +
			"value runs as a formula. acv codes import removes it again: the file imports as the codes it holds.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := os.Stdout
			if out != "" && out != "-" {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			return withAdmin(cmd.Context(), func(a *admin.Admin) error {
				n, err := a.ExportCSV(cmd.Context(), project, time.Now().Unix(), w)
				fmt.Fprintf(os.Stderr, "exported %d codes\n", n)
				return err
			})
		},
	}
	imp.Flags().BoolVar(&dryRun, "dry-run", false, "check every row and report the problem rows without writing anything")
	exp.Flags().StringVarP(&out, "output", "o", "", "file to write (default standard output)")
	toggle := func(use string, disabled bool) *cobra.Command {
		return &cobra.Command{
			Use:   use + " CODE...",
			Short: use + " codes (takes effect at once)",
			Args:  cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return withAdmin(cmd.Context(), func(a *admin.Admin) error {
					for _, v := range args {
						if err := a.SetCodeDisabled(cmd.Context(), project, v, disabled); err != nil {
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

// adminCmd manages the operator console's accounts from the server: the first account is made
// here, since the console has no default one.
func adminCmd() *cobra.Command {
	cmd := group(&cobra.Command{Use: "admin", Short: "Create operator console accounts"})
	var role string
	create := &cobra.Command{
		Use:   "create USERNAME",
		Short: "Create a console account; prints its one-time password, which the first login must change",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := console.ParseRole(role)
			if err != nil {
				return err
			}
			acc, err := createConsoleAccount(cmd.Context(), args[0], r)
			if err != nil {
				return err
			}
			fmt.Printf("account %s (%s) created\none-time password: %s\n", acc.Username, acc.Role, acc.OneTimePassword)
			fmt.Println("it is shown once; the first login must replace it")
			return nil
		},
	}
	create.Flags().StringVar(&role, "role", string(console.RoleAdmin), "viewer, support, operator or admin")
	cmd.AddCommand(create)
	return cmd
}

// createConsoleAccount creates an account through the console's own service, which records it
// in the admin audit log as done by "cli:<user>". It needs PostgreSQL only.
func createConsoleAccount(ctx context.Context, username string, role console.Role) (console.NewAccount, error) {
	cfg, err := service.FromEnv()
	if err != nil {
		return console.NewAccount{}, err
	}
	if cfg.DatabaseURL == "" {
		return console.NewAccount{}, errors.New("ACV_DATABASE_URL is required")
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return console.NewAccount{}, err
	}
	defer st.Close()
	svc, err := console.NewService(console.Config{Store: st})
	if err != nil {
		return console.NewAccount{}, err
	}
	return svc.CreateAccount(ctx, console.SystemActor("cli:"+osUser()), username, role)
}

// osUser names who ran the command, for the audit log.
func osUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}
