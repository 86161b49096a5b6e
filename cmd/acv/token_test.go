package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
	"github.com/acv/acv/store"
	"github.com/jackc/pgx/v5"
)

// openStore opens the console's database, for what a test checks behind the API.
func (c *cli) openStore() *store.Store {
	c.t.Helper()
	st, err := store.Open(context.Background(), c.db)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(st.Close)
	return st
}

// TestCLIChangeIsInTheAuditChain: a change made with the acv command is recorded in the admin
// audit log under the token's account and name, and the chain still verifies.
func TestCLIChangeIsInTheAuditChain(t *testing.T) {
	c := newCLI(t)
	var p contract.Project
	if err := json.Unmarshal([]byte(c.ok("project", "create", "--name", "Audited")), &p); err != nil {
		t.Fatal(err)
	}
	rows, err := c.openStore().AdminAudit(context.Background(), contract.AuditFilter{Action: "project.create"})
	if err != nil || len(rows) != 1 {
		t.Fatalf("audit rows %+v, %v", rows, err)
	}
	if r := rows[0]; r.AdminID != c.admin.ID || !strings.HasPrefix(r.AdminUsername, "root (token test ") || r.TargetID != p.ID {
		t.Errorf("project.create recorded as %q (admin %s) on %s; want root's token test on %s", r.AdminUsername, r.AdminID, r.TargetID, p.ID)
	}
	rep, err := c.svc.VerifyChain(context.Background())
	if err != nil || !rep.OK || rep.Rows < 2 {
		t.Errorf("audit chain after a CLI change: %+v, %v", rep, err)
	}
}

// TestCLIViewerTokenIsRefusedAChange: a viewer's token reads but may not change: the API
// answers 403, and the command exits non-zero saying which role it has and whom to ask.
func TestCLIViewerTokenIsRefusedAChange(t *testing.T) {
	c := newCLI(t)
	viewer := c.token("dashboards", console.RoleViewer, time.Hour)
	v := c.with("ACV_ADMIN_TOKEN=" + viewer)
	v.ok("project", "list")
	v.fails([]string{"project", "create", "--name", "Nope"}, "this token's role viewer may not create projects; ask an admin")

	req, _ := http.NewRequest(http.MethodPost, c.api+console.APIPrefix+"/projects", strings.NewReader(`{"name":"Nope"}`))
	req.Header.Set("Authorization", "Bearer "+viewer)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("viewer token creating a project: HTTP %d, want 403", res.StatusCode)
	}
	var ps []contract.Project
	if err := json.Unmarshal([]byte(c.ok("project", "list")), &ps); err != nil || len(ps) != 0 {
		t.Errorf("projects after the refusal: %+v %v", ps, err)
	}
}

// TestCLIExpiredAndRevokedTokensAreRefused: the API answers 401 to a token past its expiry or
// revoked, and the command says to log in again.
func TestCLIExpiredAndRevokedTokensAreRefused(t *testing.T) {
	c := newCLI(t)
	st := c.openStore()
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	hash := sha256.Sum256(raw)
	now := time.Now()
	if _, err := st.CreateAdminToken(context.Background(), contract.NewAdminToken{
		Hash: hash[:], Name: "old", AdminID: c.admin.ID, Role: "admin", Now: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	expired := console.TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	c.with("ACV_ADMIN_TOKEN="+expired).fails([]string{"project", "list"}, "expired, revoked or unknown", "acv login")

	revoked := c.token("leaked", console.RoleOperator, time.Hour)
	r := c.with("ACV_ADMIN_TOKEN=" + revoked)
	r.ok("project", "list")
	var ts []struct {
		ID, Name string
	}
	if err := json.Unmarshal([]byte(c.ok("token", "list")), &ts); err != nil {
		t.Fatal(err)
	}
	for _, tk := range ts {
		if tk.Name == "leaked" {
			c.ok("token", "revoke", tk.ID)
		}
	}
	r.fails([]string{"project", "list"}, "expired, revoked or unknown", "acv login")
	for _, tok := range []string{expired, revoked} {
		req, _ := http.NewRequest(http.MethodGet, c.api+console.APIPrefix+"/projects", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("expired or revoked token: HTTP %d, want 401", res.StatusCode)
		}
	}
	if table := c.ok("token", "list", "-o", "table"); !strings.Contains(table, "revoked") || !strings.Contains(table, "expired") {
		t.Errorf("token list table:\n%s", table)
	}
}

// TestTokenIsStoredHashed: the database holds a token's SHA-256, never its secret, in the
// tokens table or the audit log.
func TestTokenIsStoredHashed(t *testing.T) {
	c := newCLI(t)
	var nt struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal([]byte(c.ok("token", "create", "--name", "ci", "--role", "operator", "--expires", "720h")), &nt); err != nil || nt.Secret == "" {
		t.Fatalf("token create: %+v %v", nt, err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(nt.Secret, console.TokenPrefix))
	if err != nil || len(raw) != 32 {
		t.Fatalf("secret %q: %v", nt.Secret, err)
	}
	conn, err := pgx.Connect(context.Background(), c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var dump string
	if err := conn.QueryRow(context.Background(),
		`SELECT (SELECT string_agg(row_to_json(t)::text, ' ') FROM admin_tokens t) || (SELECT string_agg(row_to_json(a)::text, ' ') FROM admin_audit a)`).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	body := strings.TrimPrefix(nt.Secret, console.TokenPrefix)
	for _, s := range []string{body, hex.EncodeToString(raw), base64.StdEncoding.EncodeToString(raw)} {
		if strings.Contains(dump, s) {
			t.Errorf("the database holds the token's secret (%s)", s)
		}
	}
	var stored []byte
	if err := conn.QueryRow(context.Background(), `SELECT hash FROM admin_tokens WHERE id = $1`, nt.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256(raw); string(stored) != string(want[:]) {
		t.Errorf("stored hash %x, want the SHA-256 of the secret", stored)
	}
}

// TestCLILoginLogout: acv login trades an account's password for a token kept in a file only
// its user reads; the commands then use it; acv logout revokes it and removes the file. A
// token read from standard input logs in too, and without a login a command says how.
func TestCLILoginLogout(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	acc, err := c.svc.CreateAccount(ctx, console.SystemActor("cli:test"), "ops", console.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	se, _, err := c.svc.Login(ctx, "ops", acc.OneTimePassword, "test", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	const pw = "a long operator password"
	if _, _, err := c.svc.ChangePassword(ctx, se, acc.OneTimePassword, pw, "test", "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	cfgHome := t.TempDir()
	u := &cli{t: t, bin: c.bin, env: append(devEnv(), "XDG_CONFIG_HOME="+cfgHome, "ACV_LOG_LEVEL=error")}
	u.fails([]string{"project", "list"}, "acv login", "source .acv/env")

	out, errs, code := u.run([]byte("ops\n"+pw+"\n"), "login", "--url", c.api)
	if code != 0 || !strings.Contains(out, "logged in to "+c.api+" as ops (role operator)") {
		t.Fatalf("acv login: exit %d\n%s%s", code, out, errs)
	}
	path := filepath.Join(cfgHome, "acv", "credentials.json")
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %o", p, fi.Mode().Perm(), err, want)
		}
	}
	var saved credentials
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &saved); err != nil || saved.URL != c.api || !strings.HasPrefix(saved.Token, console.TokenPrefix) {
		t.Fatalf("credentials %s: %v", b, err)
	}
	u.ok("project", "create", "--name", "By ops")
	if sessions, err := c.openStore().AdminAudit(ctx, contract.AuditFilter{Action: "project.create"}); err != nil || len(sessions) != 1 ||
		!strings.HasPrefix(sessions[0].AdminUsername, "ops (token acv login ") {
		t.Errorf("project.create by the login's token recorded as %+v, %v", sessions, err)
	}

	if out := u.ok("logout"); !strings.Contains(out, "token revoked") {
		t.Errorf("acv logout printed %q", out)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("credentials file after logout: %v", err)
	}
	req, _ := http.NewRequest(http.MethodGet, c.api+console.APIPrefix+"/me", nil)
	req.Header.Set("Authorization", "Bearer "+saved.Token)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the logged-out token: %v, %v; want 401", res.Status, err)
	}
	u.fails([]string{"project", "list"}, "acv login")

	tok := c.token("ci", console.RoleViewer, time.Hour)
	if out, errs, code := u.run([]byte(tok+"\n"), "login", "--token", "--url", c.api); code != 0 || !strings.Contains(out, "as root (role viewer)") {
		t.Fatalf("acv login --token: exit %d\n%s%s", code, out, errs)
	}
	u.ok("project", "list")
	if _, errs, code := u.run([]byte("acv_not-a-token\n"), "login", "--token", "--url", c.api); code == 0 || !strings.Contains(errs, "run acv login") {
		t.Errorf("acv login with a bad token: exit %d: %s", code, errs)
	}
}

// TestCLIAdminResetPassword: an admin's acv admin reset-password gives the account a one-time
// password (drawn, or read from standard input) and ends its sessions.
func TestCLIAdminResetPassword(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	acc, err := c.svc.CreateAccount(ctx, console.SystemActor("cli:test"), "sam", console.RoleSupport)
	if err != nil {
		t.Fatal(err)
	}
	se, token, err := c.svc.Login(ctx, "sam", acc.OneTimePassword, "test", "127.0.0.1")
	if err != nil || se == nil {
		t.Fatal(err)
	}
	out := c.ok("admin", "reset-password", "sam")
	var pw string
	for _, l := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(l, "one-time password: "); ok {
			pw = p
		}
	}
	if pw == "" || pw == acc.OneTimePassword {
		t.Fatalf("reset-password printed %q", out)
	}
	if _, err := c.svc.SessionByToken(ctx, token); err == nil {
		t.Error("the account's session outlived the reset")
	}
	if se, _, err := c.svc.Login(ctx, "sam", pw, "test", "127.0.0.1"); err != nil || !se.Account.MustChangePassword {
		t.Errorf("login with the reset password: %+v, %v", se, err)
	}
	if _, errs, code := c.run([]byte("chosen by the admin\n"), "admin", "reset-password", "--password-stdin", "sam"); code != 0 {
		t.Fatalf("reset-password --password-stdin: exit %d: %s", code, errs)
	}
	if _, _, err := c.svc.Login(ctx, "sam", "chosen by the admin", "test", "127.0.0.1"); err != nil {
		t.Errorf("login with the password given on standard input: %v", err)
	}
	c.fails([]string{"admin", "reset-password", "nobody"}, `no account named "nobody"`)
	op := c.with("ACV_ADMIN_TOKEN=" + c.token("ops", console.RoleOperator, time.Hour))
	op.fails([]string{"admin", "reset-password", "sam"}, "this token's role operator may not")
}

// TestCLILogsThroughTheAPI: the log-partition commands run on the server: an admin's
// maintenance is audited, a viewer may list the partitions but not maintain them.
func TestCLILogsThroughTheAPI(t *testing.T) {
	c := newCLI(t)
	if out := c.ok("logs", "maintain", "--retention", "0", "--ahead", "2"); !strings.Contains(out, "created ") && !strings.Contains(out, "nothing done") {
		t.Errorf("logs maintain printed %q", out)
	}
	today := "verification_logs_p" + time.Now().UTC().Format("20060102")
	if out := c.ok("logs", "partitions"); !strings.Contains(out, today) || !strings.Contains(out, "(default)") {
		t.Errorf("logs partitions lacks %s and the default partition:\n%s", today, out)
	}
	rows, err := c.openStore().AdminAudit(context.Background(), contract.AuditFilter{Action: "logs.maintain"})
	if err != nil || len(rows) > 1 || len(rows) == 1 && !strings.HasPrefix(rows[0].AdminUsername, "root (token test ") {
		t.Errorf("logs.maintain audit rows %+v, %v", rows, err)
	}
	v := c.with("ACV_ADMIN_TOKEN=" + c.token("dash", console.RoleViewer, time.Hour))
	v.ok("logs", "partitions")
	v.fails([]string{"logs", "maintain"}, "this token's role viewer may not maintain the log partitions; ask an admin")
}
