package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/acv/acv/api/adminclient"
	"github.com/acv/acv/internal/settings"
	"github.com/spf13/cobra"
)

// The acv commands that read or change projects, keys, codes, batches, accounts and tokens are
// clients of the admin API, which checks each call against the token's role and audits it: an
// operator's machine holds a token, never the database's address or the master key.

// credentials is what acv login keeps: the admin API's address and a token.
type credentials struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

func credentialsPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the configuration directory: %w", err)
	}
	return filepath.Join(dir, "acv", "credentials.json"), nil
}

// saveCredentials writes the credentials readable by their owner only (file 0600, directory
// 0700): the token acts with its account's role.
func saveCredentials(c credentials) (string, error) {
	path, err := credentialsPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// loadCredentials reads what acv login kept; the zero value when it kept nothing.
func loadCredentials() (credentials, error) {
	var c credentials
	path, err := credentialsPath()
	if err != nil {
		return c, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("read %s: %w (run acv login again)", path, err)
	}
	return c, nil
}

// withAPI runs fn with the admin API's client: ACV_ADMIN_URL and ACV_ADMIN_TOKEN when set, else
// what acv login kept. doing names what fn does ("create projects"), for a refusal's message.
func withAPI(cmd *cobra.Command, doing string, fn func(ctx context.Context, c *adminclient.Client) error) error {
	cr, err := loadCredentials()
	if err != nil {
		return err
	}
	if v := settings.Get("ACV_ADMIN_URL"); v != "" {
		cr.URL = v
	}
	if v := settings.Get("ACV_ADMIN_TOKEN"); v != "" {
		cr.Token = v
	}
	if cr.URL == "" || cr.Token == "" {
		return errors.New("not logged in to an admin API: run acv login (or, with make run's stack, source .acv/env), " +
			"or set ACV_ADMIN_URL and ACV_ADMIN_TOKEN")
	}
	c := &adminclient.Client{URL: cr.URL, Token: cr.Token}
	return explain(cmd.Context(), c, doing, fn(cmd.Context(), c))
}

// explain turns the refusals an operator can act on into what to do: a token refused (401) is
// to be replaced by logging in again, a role too low (403) is for an admin to raise.
func explain(ctx context.Context, c *adminclient.Client, doing string, err error) error {
	switch adminclient.StatusOf(err) {
	case 401:
		return fmt.Errorf("the admin API at %s refused the token: it is expired, revoked or unknown; run acv login", c.URL)
	case 403:
		var e *adminclient.Error
		errors.As(err, &e)
		me, merr := c.Me(ctx)
		if merr != nil || !strings.Contains(e.Detail, "role") {
			return errors.New(e.Detail)
		}
		return fmt.Errorf("this token's role %s may not %s; ask an admin (%s)", me.Account.Role, doing, e.Detail)
	}
	return err
}

func command(use, short string, args cobra.PositionalArgs) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: args}
}

// apiCmd makes cmd run fn against the admin API (see withAPI for doing).
func apiCmd(cmd *cobra.Command, doing string, fn func(ctx context.Context, c *adminclient.Client, args []string) error) *cobra.Command {
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return withAPI(cmd, doing, func(ctx context.Context, c *adminclient.Client) error { return fn(ctx, c, args) })
	}
	return cmd
}

// outputCmd makes cmd read the T at path(args) and print it, as JSON or (-o table) as the rows
// table makes of it, the first row being the header.
func outputCmd[T any](cmd *cobra.Command, doing string, path func(args []string) string, table func(T) [][]string) *cobra.Command {
	var out string
	cmd.Flags().StringVarP(&out, "output", "o", "json", "output format: json or table")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if out != "json" && out != "table" {
			return fmt.Errorf("--output %q: use json or table", out)
		}
		return withAPI(cmd, doing, func(ctx context.Context, c *adminclient.Client) error {
			v, err := adminclient.Call[T](ctx, c, http.MethodGet, path(args), nil)
			if err != nil {
				return err
			}
			if out == "json" {
				return printJSON(v)
			}
			return printTable(os.Stdout, table(v))
		})
	}
	return cmd
}

// items is a list answer, {"items": […]}, printed as its items.
type items[T any] []T

func (l *items[T]) UnmarshalJSON(b []byte) error {
	var v struct{ Items []T }
	err := json.Unmarshal(b, &v)
	*l = v.Items
	return err
}

// doPrint calls the admin API and, once it answered, prints format with a.
func doPrint(ctx context.Context, c *adminclient.Client, method, path string, body any, format string, a ...any) error {
	if err := c.Do(ctx, method, path, body, nil); err != nil {
		return err
	}
	fmt.Printf(format, a...)
	return nil
}

// doJSON calls the admin API and prints its answer, read as a T, as JSON.
func doJSON[T any](ctx context.Context, c *adminclient.Client, method, path string, body any) error {
	v, err := adminclient.Call[T](ctx, c, method, path, body)
	if err != nil {
		return err
	}
	return printJSON(v)
}

func projectFlag(p *string, cmds ...*cobra.Command) {
	for _, c := range cmds {
		c.Flags().StringVar(p, "project", "", "project id (required)")
		_ = c.MarkFlagRequired("project")
	}
}

// group makes a command that only holds subcommands fail, in words and with a non-zero exit,
// when it is run without one or with one it does not know (cobra would print the help and
// exit 0).
func group(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.AddCommand(subs...)
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

func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printTable aligns rows in columns. A row of one cell ends the columns above it: a blank row
// and a title start a second table.
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

// parseTime accepts Unix seconds or RFC 3339; "" is nil.
func parseTime(s string) (*int64, error) {
	if s == "" {
		return nil, nil
	}
	// Only the canonical decimal form: "+5" and "007" are refused, not read as 5 and 7.
	if v, err := strconv.ParseInt(s, 10, 64); err == nil && strconv.FormatInt(v, 10) == s {
		return &v, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil, fmt.Errorf("time %q: use Unix seconds or RFC 3339", s)
	}
	v := t.Unix()
	return &v, nil
}

// readLine reads one line, without its line end: a password or a token given on standard input.
func readLine(r io.Reader) (string, error) {
	s, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && s != "") {
		return "", err
	}
	return strings.TrimRight(s, "\r\n"), nil
}
