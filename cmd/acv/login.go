package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"time"

	"github.com/acv/acv/api/adminclient"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/settings"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// loginCmd keeps a token of the admin API in the user's configuration directory: with a
// password, the session it opens is traded for a token of the account's role and then ended;
// with --token, the token read from standard input is checked and kept.
func loginCmd() *cobra.Command {
	var (
		adminURL string
		token    bool
		ttl      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Log in to the admin API: keep a token in the user's configuration directory",
		Long: "Log in to the admin API (the console's address, e.g. http://127.0.0.1:8081).\n\n" +
			"With an account and password, the login is traded for an API token of the account's role, which\n" +
			"is kept in acv/credentials.json in the user's configuration directory (readable by the user only);\n" +
			"with --token, a token (acv token create) is read from standard input instead. ACV_ADMIN_URL and\n" +
			"ACV_ADMIN_TOKEN, when set, take precedence over what is kept.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := bufio.NewReader(cmd.InOrStdin())
			ctx := cmd.Context()
			var err error
			if adminURL = cmp.Or(adminURL, settings.Get("ACV_ADMIN_URL")); adminURL == "" {
				if adminURL, err = prompt(in, "Admin URL (the console's address): "); err != nil {
					return err
				}
			}
			adminURL = strings.TrimRight(adminURL, "/")
			var secret string
			if !token {
				secret, err = passwordLogin(ctx, in, adminURL, ttl)
			} else if secret, err = readLine(in); err != nil {
				err = fmt.Errorf("read the token from standard input: %w", err)
			}
			if err != nil {
				return err
			}
			secret = strings.TrimSpace(secret)
			c := &adminclient.Client{URL: adminURL, Token: secret}
			me, err := c.Me(ctx)
			if err != nil {
				return explain(ctx, c, "log in", err)
			}
			path, err := saveCredentials(credentials{URL: adminURL, Token: secret})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "logged in to %s as %s (role %s); token kept in %s\n", adminURL, me.Account.Username, me.Account.Role, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&adminURL, "url", "", "the admin API's address (default ACV_ADMIN_URL, else asked)")
	cmd.Flags().BoolVar(&token, "token", false, "read an API token from standard input instead of asking for a password")
	cmd.Flags().DurationVar(&ttl, "expires", 0, "how long the login's token lasts (default the server's, 30 days)")
	return cmd
}

// passwordLogin asks for an account and password, logs in, and trades the session for a
// token, ending the session.
func passwordLogin(ctx context.Context, in *bufio.Reader, adminURL string, ttl time.Duration) (string, error) {
	user, err := prompt(in, "Account: ")
	if err != nil {
		return "", err
	}
	fmt.Fprint(os.Stderr, "Password: ")
	var pw string
	if fd := int(os.Stdin.Fd()); term.IsTerminal(fd) {
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(os.Stderr)
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		pw = string(b)
	} else if pw, err = readLine(in); err != nil {
		return "", fmt.Errorf("read the password: %w", err)
	}
	jar, _ := cookiejar.New(nil)
	c := &adminclient.Client{URL: adminURL, HTTP: &http.Client{Jar: jar, Timeout: time.Minute}}
	se, err := adminclient.Call[adminclient.Session](ctx, c, http.MethodPost, "/session", map[string]string{"username": user, "password": pw})
	if err != nil {
		return "", err
	}
	c.Header = http.Header{"X-Csrf-Token": {se.CSRFToken}}
	host, _ := os.Hostname()
	t, err := c.CreateToken(ctx, "acv login "+host, "", ttl)
	if err != nil {
		return "", err
	}
	if err := c.Logout(ctx); err != nil {
		return "", fmt.Errorf("end the login's session: %w", err)
	}
	return t.Secret, nil
}

func prompt(in *bufio.Reader, q string) (string, error) {
	fmt.Fprint(os.Stderr, q)
	s, err := readLine(in)
	if err != nil {
		return "", fmt.Errorf("read the answer to %q: %w", strings.TrimSpace(q), err)
	}
	if s = strings.TrimSpace(s); s == "" {
		return "", fmt.Errorf("%s no answer", strings.TrimSpace(q))
	}
	return s, nil
}

// logoutCmd revokes the kept token on the server and removes the credentials file.
func logoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Revoke the kept token on the server and forget it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadCredentials()
			if err != nil {
				return err
			}
			path, err := credentialsPath()
			if err != nil {
				return err
			}
			if c.Token == "" {
				fmt.Fprintln(cmd.OutOrStdout(), "not logged in")
				return nil
			}
			api := &adminclient.Client{URL: c.URL, Token: c.Token}
			// A token the server already refuses (expired, revoked) is as good as revoked.
			if err := api.Logout(cmd.Context()); err != nil && adminclient.StatusOf(err) != http.StatusUnauthorized {
				return fmt.Errorf("revoke the token at %s: %w (the credentials are kept; try again)", c.URL, err)
			}
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "logged out of %s: token revoked, %s removed\n", c.URL, path)
			return nil
		},
	}
}

func tokenCmd() *cobra.Command {
	var name, role string
	var ttl time.Duration
	create := apiCmd(command("create --name NAME", "Create an API token of your account (the secret is shown once)", cobra.NoArgs),
		"create tokens", func(ctx context.Context, c *adminclient.Client, _ []string) error {
			t, err := c.CreateToken(ctx, name, role, ttl)
			if err != nil {
				return err
			}
			return printJSON(t)
		})
	create.Flags().StringVar(&name, "name", "", "what the token is for, e.g. ci (required)")
	create.Flags().StringVar(&role, "role", "", "viewer, support, operator or admin; at most your own (default your own)")
	create.Flags().DurationVar(&ttl, "expires", 720*time.Hour, "how long it lasts")
	_ = create.MarkFlagRequired("name")
	list := outputCmd(command("list", "List API tokens (an admin sees every account's); never their secrets", cobra.NoArgs), "list tokens",
		func([]string) string { return "/tokens" }, func(ts items[contract.APIToken]) [][]string { return tokenRows(ts, time.Now()) })
	revoke := apiCmd(command("revoke TOKEN_ID", "Revoke an API token at once", cobra.ExactArgs(1)),
		"revoke tokens", func(ctx context.Context, c *adminclient.Client, args []string) error {
			t, err := adminclient.Call[contract.APIToken](ctx, c, http.MethodPost, adminclient.Path(nil, "tokens", args[0], "revoke"), nil)
			if err != nil {
				return err
			}
			fmt.Printf("token %s (%s of %s) revoked\n", t.ID, t.Name, t.Owner)
			return nil
		})
	return group(&cobra.Command{Use: "token", Short: "Create, list and revoke admin API tokens"}, create, list, revoke)
}

func tokenRows(ts []contract.APIToken, now time.Time) [][]string {
	rows := [][]string{{"ID", "NAME", "OWNER", "ROLE", "STATE", "EXPIRES_AT", "LAST_USED_AT"}}
	for _, t := range ts {
		state := "active"
		switch {
		case t.RevokedAt != nil:
			state = "revoked"
		case now.Unix() >= t.ExpiresAt:
			state = "expired"
		}
		rows = append(rows, []string{t.ID, t.Name, t.Owner, t.Role, state, fmtUnix(t.ExpiresAt), fmtTime(t.LastUsedAt)})
	}
	return rows
}
