package main

import (
	"context"
	"fmt"
	"net"

	"github.com/acv/acv/internal/console"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/store"
)

// devConsole prepares acv dev's operator console: its listener (ACV_ADMIN_ADDR, else the
// address this data directory used last, else a free port) and, on a stack without any console account, an
// "admin" account whose one-time password it returns for the banner. It returns a nil
// listener when ACV_ADMIN_ADDR is empty.
func devConsole(ctx context.Context, cfg service.Config, ports *devPorts) (net.Listener, string, error) {
	if cfg.AdminAddr == "" {
		return nil, "", nil
	}
	ln, err := ports.listen("console", "", cfg.AdminAddr)
	if err != nil {
		return nil, "", err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		ln.Close()
		return nil, "", err
	}
	defer st.Close()
	accounts, err := st.AdminAccounts(ctx)
	if err != nil || len(accounts) > 0 {
		if err != nil {
			ln.Close()
		}
		return ln, "", err
	}
	svc, err := console.NewService(console.Config{Store: st})
	if err != nil {
		ln.Close()
		return nil, "", err
	}
	acc, err := svc.CreateAccount(ctx, console.SystemActor("acv dev"), "admin", console.RoleAdmin)
	if err != nil {
		ln.Close()
		return nil, "", err
	}
	return ln, fmt.Sprintf("console account %q, one-time password %s (shown once; the first login must change it)",
		acc.Username, acc.OneTimePassword), nil
}
