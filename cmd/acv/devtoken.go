package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/store"
)

// devTokenTTL is how long acv dev's token lasts; a later start makes a new one when it ends.
const devTokenTTL = 30 * 24 * time.Hour

// devAdminToken is the admin API token acv dev gives the acv command, so that `source
// .acv/env` is all it takes to run acv project list: a token of the bootstrap "admin" account,
// kept in dir/admin.token (0600) and reused while the server still accepts it. "" when the
// stack has no "admin" account (removed or disabled by its operator).
func devAdminToken(ctx context.Context, cfg service.Config, dir string) (string, error) {
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return "", err
	}
	defer st.Close()
	svc, err := console.NewService(console.Config{Store: st})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "admin.token")
	if b, err := os.ReadFile(path); err == nil {
		if _, err := svc.SessionByAPIToken(ctx, strings.TrimSpace(string(b))); err == nil {
			return strings.TrimSpace(string(b)), nil
		}
	}
	acc, err := st.AdminAccountByUsername(ctx, "admin")
	if errors.Is(err, contract.ErrNotFound) || err == nil && acc.Disabled {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	t, err := svc.CreateToken(ctx, console.Actor{AdminID: acc.ID, Username: "acv dev", Role: console.Role(acc.Role)},
		"acv dev", "", devTokenTTL)
	if err != nil {
		return "", fmt.Errorf("create the dev stack's admin API token: %w", err)
	}
	if err := os.WriteFile(path, []byte(t.Secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return t.Secret, nil
}
