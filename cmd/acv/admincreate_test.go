package main

import (
	"context"
	"regexp"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
	"github.com/acv/acv/store"
)

// TestCLIAdminCreate: `acv admin create` makes a console account with a one-time password
// that logs in (and must be changed), recorded in the admin audit log as done from the command
// line.
func TestCLIAdminCreate(t *testing.T) {
	c := newCLI(t)
	out := c.ok("admin", "create", "Zed", "--role", "support")
	m := regexp.MustCompile(`(?m)^account zed \(support\) created\none-time password: (\S{20})$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output %q", out)
	}
	c.fails([]string{"admin", "create", "zed"}, `An account named "zed" already exists`)
	c.fails([]string{"admin", "create", "yan", "--role", "root"}, "unknown role")
	c.fails([]string{"admin"}, "needs a subcommand")

	ctx := context.Background()
	st, err := store.Open(ctx, c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc, err := console.NewService(console.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	se, _, err := svc.Login(ctx, "zed", m[1], "test", "127.0.0.1")
	if err != nil || !se.Account.MustChangePassword || se.Account.Role != "support" {
		t.Fatalf("login with the one-time password: %+v, %v", se, err)
	}
	rows, err := st.AdminAudit(ctx, contract.AuditFilter{Action: "account.create"})
	if err != nil || len(rows) != 1 || !regexp.MustCompile(`^cli:`).MatchString(rows[0].AdminUsername) {
		t.Fatalf("audit rows %+v, %v", rows, err)
	}
}
