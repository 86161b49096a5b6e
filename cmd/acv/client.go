package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/acv/acv/api/adminclient"
	"github.com/acv/acv/internal/settings"
	"github.com/spf13/cobra"
)

// The acv commands that change or read projects, keys, codes, batches, accounts and tokens are
// clients of the admin API: the server checks each call against the token's role and records
// each change in the admin audit log, and an operator's machine holds a token, never the
// database's address or the master key.

// credentials is what acv login keeps: the admin API's address and a token.
type credentials struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// credentialsPath is where acv login keeps the credentials: acv/credentials.json in the user's
// configuration directory.
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
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
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

// errNotLoggedIn says what to do when the command has no admin API to call.
var errNotLoggedIn = errors.New("not logged in to an admin API: run acv login (or, with make run's stack, source .acv/env), " +
	"or set ACV_ADMIN_URL and ACV_ADMIN_TOKEN")

// adminClient is the client of the admin API the command calls: ACV_ADMIN_URL and
// ACV_ADMIN_TOKEN when set, else what acv login kept.
func adminClient() (*adminclient.Client, error) {
	c, err := loadCredentials()
	if err != nil {
		return nil, err
	}
	if v := settings.Get("ACV_ADMIN_URL"); v != "" {
		c.URL = v
	}
	if v := settings.Get("ACV_ADMIN_TOKEN"); v != "" {
		c.Token = v
	}
	if c.URL == "" || c.Token == "" {
		return nil, errNotLoggedIn
	}
	return &adminclient.Client{URL: c.URL, Token: c.Token}, nil
}

// withAPI runs fn with the admin API's client; doing names what fn does ("create projects"),
// for the message of a refusal.
func withAPI(cmd *cobra.Command, doing string, fn func(ctx context.Context, c *adminclient.Client) error) error {
	c, err := adminClient()
	if err != nil {
		return err
	}
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
