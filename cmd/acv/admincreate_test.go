package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
	"github.com/acv/acv/internal/testkit"
	"github.com/acv/acv/store"
)

// TestCLIAdminCreate: `acv admin create` makes a console account with a one-time password
// that logs in (and must be changed), recorded in the admin audit log as done with the
// command's token.
func TestCLIAdminCreate(t *testing.T) {
	c := newCLI(t)
	out := c.ok("admin", "create", "Zed", "--role", "support")
	m := regexp.MustCompile(`(?m)^account zed \(support\) created\none-time password: (\S{20})$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output %q", out)
	}
	c.fails([]string{"admin", "create", "zed"}, `An account named "zed" already exists`)
	c.fails([]string{"admin", "create", "yan", "--role", "root"}, "Unknown role")
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
	rows, err := st.AdminAudit(ctx, contract.AuditFilter{Action: "account.create", TargetID: se.Account.ID})
	if err != nil || len(rows) != 1 || !regexp.MustCompile(`^root \(token test `).MatchString(rows[0].AdminUsername) {
		t.Fatalf("audit rows %+v, %v", rows, err)
	}
}

// TestCLIMigrateCreatesTheFirstAdmin: on a server, acv migrate --admin makes the console's first
// account (the admin API needs one to log in with), and only while there is none.
func TestCLIMigrateCreatesTheFirstAdmin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds acv and runs it against PostgreSQL")
	}
	c := &cli{t: t, bin: acvBinary(t)}
	c.env = append(devEnv(), "ACV_DATABASE_URL="+testkit.PostgresDB(t), "ACV_LOG_LEVEL=error")
	out := c.ok("migrate", "--admin", "boss")
	if !regexp.MustCompile(`(?m)^account boss \(admin\) created\none-time password: \S{20}$`).MatchString(out) {
		t.Fatalf("acv migrate --admin printed %q", out)
	}
	if out := c.ok("migrate", "--admin", "other"); !strings.Contains(out, "no account created") {
		t.Errorf("a second acv migrate --admin printed %q", out)
	}
}
