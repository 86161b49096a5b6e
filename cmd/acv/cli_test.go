package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/console"
	"github.com/acv/acv/internal/testkit"
	"github.com/acv/acv/store"
)

func TestMain(m *testing.M) { testkit.Main(m) }

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// acvBinary builds the acv command once per test binary.
func acvBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "acv-clitest-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "acv")
		if out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput(); err != nil {
			buildErr = err
			builtBin = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/acv: %v\n%s", buildErr, builtBin)
	}
	return builtBin
}

// cli runs acv commands against an admin API (a console over a fresh Redis and PostgreSQL),
// logged in with an admin token of the account "root".
type cli struct {
	t   *testing.T
	bin string
	env []string
	db  string // the console's PostgreSQL URL
	// api is the console's address, svc its service, admin the account "root".
	api   string
	svc   *console.Service
	admin contract.AdminAccount
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	if testing.Short() {
		t.Skip("builds acv and runs it against real servers")
	}
	ctx := context.Background()
	a, url, _ := testkit.NewAdmin(t)
	st := a.Store.(*store.Store)
	svc, err := console.NewService(console.Config{Store: st, Admin: a, HotPath: a.Cache.(*cache.Cache), Passwords: console.PasswordParams{MemoryKiB: 1024, Time: 1, Threads: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	srv, err := console.NewServer(svc, console.ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	if _, err := svc.CreateAccount(ctx, console.SystemActor("cli:test"), "root", console.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	root, err := st.AdminAccountByUsername(ctx, "root")
	if err != nil {
		t.Fatal(err)
	}
	c := &cli{t: t, bin: acvBinary(t), db: url, api: hs.URL, svc: svc, admin: root}
	c.env = append(devEnv(), "XDG_CONFIG_HOME="+t.TempDir(), "ACV_LOG_LEVEL=error", "ACV_ADMIN_URL="+hs.URL,
		"ACV_ADMIN_TOKEN="+c.token("test", console.RoleAdmin, time.Hour))
	return c
}

// token makes an API token of the account "root" with role, lasting ttl.
func (c *cli) token(name string, role console.Role, ttl time.Duration) string {
	c.t.Helper()
	t, err := c.svc.CreateToken(context.Background(), console.Actor{AdminID: c.admin.ID, Username: c.admin.Username, Role: console.RoleAdmin}, name, role, ttl)
	if err != nil {
		c.t.Fatal(err)
	}
	return t.Secret
}

// with is a copy of c whose commands run with the variables vars added (NAME=value).
func (c *cli) with(vars ...string) *cli {
	d := *c
	d.env = append(append([]string(nil), c.env...), vars...)
	return &d
}

// run runs acv with args (stdin, when not nil) and returns its stdout, stderr and exit code.
func (c *cli) run(stdin []byte, args ...string) (string, string, int) {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// ok runs acv and fails the test unless it exits 0.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	out, errs, code := c.run(nil, args...)
	if code != 0 {
		c.t.Fatalf("acv %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// fails runs acv, wants a non-zero exit and a message on stderr that mentions each of want and
// no database driver text.
func (c *cli) fails(args []string, want ...string) {
	c.t.Helper()
	out, errs, code := c.run(nil, args...)
	if code == 0 {
		c.t.Errorf("acv %s exited 0; want an error\nstdout: %s", strings.Join(args, " "), out)
	}
	for _, w := range want {
		if !strings.Contains(errs, w) {
			c.t.Errorf("acv %s: stderr %q lacks %q", strings.Join(args, " "), errs, w)
		}
	}
	for _, driver := range []string{"no rows", "pgx", "SQLSTATE"} {
		if strings.Contains(errs, driver) {
			c.t.Errorf("acv %s: stderr leaks driver text %q: %s", strings.Join(args, " "), driver, errs)
		}
	}
}

func TestCLIUnknownCommandsFail(t *testing.T) {
	c := &cli{t: t, bin: acvBinary(t), env: devEnv()}
	c.fails([]string{"bogus"}, "unknown command", "bogus")
	c.fails([]string{"project", "bogus"}, "unknown command", "bogus", "list")
	c.fails([]string{"codes"}, "needs a subcommand")
	c.fails([]string{"key", "lst"}, "unknown command", "lst")
}

func TestCLIReadsAndReports(t *testing.T) {
	c := newCLI(t)
	var p contract.Project
	if err := json.Unmarshal([]byte(c.ok("project", "create", "--name", "Shop")), &p); err != nil || p.ID == "" {
		t.Fatalf("project create: %+v %v", p, err)
	}
	missing := contract.NewID()
	c.fails([]string{"project", "disable", missing}, "Project "+missing+" not found")
	c.fails([]string{"project", "show", missing}, "Project "+missing+" not found")
	c.fails([]string{"key", "list", "--project", missing}, "Project "+missing+" not found")
	c.fails([]string{"codes", "list", "--project", missing}, "not found")
	c.fails([]string{"key", "create", "--project", missing}, "not found")
	missingKey := contract.NewKeyID()
	c.fails([]string{"key", "revoke", missingKey}, "API key "+missingKey+" not found")
	c.fails([]string{"codes", "disable", "--project", p.ID, "NOPE-1"}, `Code "NOPE-1" not found`)

	if out := c.ok("project", "disable", p.ID); !strings.Contains(out, "project "+p.ID+" disabled") {
		t.Errorf("project disable printed %q", out)
	}
	if out := c.ok("project", "enable", p.ID); !strings.Contains(out, "project "+p.ID+" enabled") {
		t.Errorf("project enable printed %q", out)
	}

	var k struct {
		KeyID, Secret string `json:"-"`
	}
	var km map[string]interface{}
	if err := json.Unmarshal([]byte(c.ok("key", "create", "--project", p.ID, "--rate", "5")), &km); err != nil {
		t.Fatal(err)
	}
	k.KeyID, _ = km["key_id"].(string)
	k.Secret, _ = km["secret"].(string)
	out := c.ok("key", "list", "--project", p.ID)
	var keys []map[string]interface{}
	if err := json.Unmarshal([]byte(out), &keys); err != nil || len(keys) != 1 || keys[0]["key_id"] != k.KeyID {
		t.Fatalf("key list: %s %v", out, err)
	}
	table := c.ok("key", "list", "--project", p.ID, "--output", "table")
	if !strings.Contains(table, k.KeyID) || !strings.Contains(table, "active") {
		t.Errorf("key list table:\n%s", table)
	}
	if strings.Contains(out+table, k.Secret) || strings.Contains(out+table, "v1:") {
		t.Errorf("key list prints a secret:\n%s\n%s", out, table)
	}
	if out := c.ok("key", "revoke", k.KeyID); !strings.Contains(out, "api key "+k.KeyID+" revoked") {
		t.Errorf("key revoke printed %q", out)
	}
	if table := c.ok("key", "list", "--project", p.ID, "-o", "table"); !strings.Contains(table, "revoked") {
		t.Errorf("revoked key listed as:\n%s", table)
	}

	c.ok("codes", "generate", "--project", p.ID, "--count", "5", "--length", "8", "--prefix", "T-")
	var page contract.CodePage
	if err := json.Unmarshal([]byte(c.ok("codes", "list", "--project", p.ID)), &page); err != nil || page.Total != 5 || len(page.Items) != 5 {
		t.Fatalf("codes list: %+v %v", page, err)
	}
	code := page.Items[0].Code
	if out := c.ok("codes", "disable", "--project", p.ID, code); !strings.Contains(out, "code "+code+" disabled") {
		t.Errorf("codes disable printed %q", out)
	}
	if table := c.ok("codes", "list", "--project", p.ID, "--status", "disabled", "--output", "table"); !strings.Contains(table, code) || strings.Count(table, "\n") != 2 {
		t.Errorf("disabled codes table:\n%s", table)
	}
	if err := json.Unmarshal([]byte(c.ok("codes", "list", "--project", p.ID, "--search", code[2:6], "--page", "1")), &page); err != nil || page.Total < 1 {
		t.Errorf("codes list --search: %+v %v", page, err)
	}
	var shown struct {
		Code             string              `json:"code"`
		State            string              `json:"state"`
		VerificationLogs []contract.LogEntry `json:"verification_logs"`
	}
	out = c.ok("codes", "show", "--project", p.ID, code)
	if err := json.Unmarshal([]byte(out), &shown); err != nil || shown.Code != code || shown.State != "disabled" || shown.VerificationLogs == nil {
		t.Errorf("codes show: %s %v", out, err)
	}
	if table := c.ok("codes", "show", "--project", p.ID, code, "-o", "table"); !strings.Contains(table, "verification history") {
		t.Errorf("codes show table:\n%s", table)
	}
	c.fails([]string{"codes", "show", "--project", p.ID, "NOPE-2"}, `Code "NOPE-2" not found in project `+p.ID)

	var shownP contract.Project
	if err := json.Unmarshal([]byte(c.ok("project", "show", p.ID)), &shownP); err != nil || shownP.Statistics == nil ||
		shownP.Statistics.TotalCodes != 5 || shownP.Statistics.DisabledCodes != 1 {
		t.Errorf("project show: %+v %v", shownP, err)
	}
	var ps []contract.Project
	if err := json.Unmarshal([]byte(c.ok("project", "list")), &ps); err != nil || len(ps) != 1 || ps[0].ID != p.ID {
		t.Errorf("project list: %+v %v", ps, err)
	}
	if table := c.ok("project", "list", "--output", "table"); !strings.Contains(table, p.ID) || !strings.Contains(table, "Shop") {
		t.Errorf("project list table:\n%s", table)
	}
	c.fails([]string{"project", "list", "--output", "yaml"}, "json or table")

	// What export writes, import reads.
	exported := c.ok("codes", "export", "--project", p.ID)
	if rows, err := csv.NewReader(strings.NewReader(exported)).ReadAll(); err != nil || len(rows) != 6 {
		t.Fatalf("export: %v\n%s", err, exported)
	}
	var q contract.Project
	if err := json.Unmarshal([]byte(c.ok("project", "create", "--name", "Copy")), &q); err != nil {
		t.Fatal(err)
	}
	_, errs, rc := c.run([]byte(exported), "codes", "import", "--project", q.ID, "-")
	if rc != 0 || !strings.Contains(errs, "read 5 rows: 5 new codes imported") {
		t.Errorf("import of an export: exit %d\n%s", rc, errs)
	}
	bad := []byte("code,expires_at\nG1,\nG2,someday\nG3,\n")
	_, errs, rc = c.run(bad, "codes", "import", "--dry-run", "--project", q.ID, "-")
	if rc == 0 || !strings.Contains(errs, "line 3: invalid \"G2\"") || !strings.Contains(errs, "2 new codes would be imported (dry run") {
		t.Errorf("dry run of a bad row: exit %d\n%s", rc, errs)
	}
	_, errs, rc = c.run(bad, "codes", "import", "--project", q.ID, "-")
	if rc == 0 || !strings.Contains(errs, "line 3: invalid") || !strings.Contains(errs, "2 new codes imported") ||
		!strings.Contains(errs, "1 invalid row not imported") {
		t.Errorf("import of a bad row: exit %d\n%s", rc, errs)
	}
	_, errs, rc = c.run(nil, "codes", "generate", "--project", q.ID, "--count", "3")
	if rc != 0 || !strings.Contains(errs, "generating: 3 of 3 codes (100%)") || !strings.Contains(errs, "codes/s") {
		t.Errorf("generate progress: exit %d\n%s", rc, errs)
	}
	// A named batch, as the console makes one; a batch needs a name that is not blank.
	_, errs, rc = c.run(nil, "codes", "generate", "--project", q.ID, "--count", "4", "--batch", "CLI run")
	if rc != 0 || !strings.Contains(errs, "generated 4 codes in batch ") || !strings.Contains(errs, "(done)") {
		t.Errorf("generate a batch: exit %d\n%s", rc, errs)
	}
	m := regexp.MustCompile(`in batch ([0-9a-f]{32}) `).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("no batch id in %q", errs)
	}
	if table := c.ok("batch", "list", "--project", q.ID, "-o", "table"); !strings.Contains(table, m[1]) || !strings.Contains(table, "CLI run") {
		t.Errorf("batch list table:\n%s", table)
	}
	if out := c.ok("batch", "revoke", "--project", q.ID, m[1]); !strings.Contains(out, "codes disabled: 4") {
		t.Errorf("batch revoke printed %q", out)
	}
	_, errs, rc = c.run(nil, "codes", "generate", "--project", q.ID, "--count", "4", "--batch", "   ")
	if rc == 0 || !strings.Contains(errs, "needs a name") {
		t.Errorf("generate a blank-named batch: exit %d\n%s", rc, errs)
	}
}

// TestCLIProjectStats: acv project stats prints what the API's statistics endpoint answers
// (the same JSON body), counts that agree with project show, and a table with the usage rate
// and the codes used most recently, newest first. Codes are verified here as the audit
// pipeline records a verify in PostgreSQL, which is what the statistics read.
func TestCLIProjectStats(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	var p contract.Project
	if err := json.Unmarshal([]byte(c.ok("project", "create", "--name", "Stats")), &p); err != nil || p.ID == "" {
		t.Fatalf("project create: %+v %v", p, err)
	}
	var empty contract.ProjectStatistics
	if err := json.Unmarshal([]byte(c.ok("project", "stats", p.ID)), &empty); err != nil || empty.ProjectID != p.ID ||
		empty.TotalCodes != 0 || empty.UsageRate != 0 || empty.RecentVerifications == nil {
		t.Errorf("stats of a project without codes: %+v %v", empty, err)
	}

	c.ok("codes", "generate", "--project", p.ID, "--count", "4", "--length", "8", "--prefix", "S-")
	var page contract.CodePage
	if err := json.Unmarshal([]byte(c.ok("codes", "list", "--project", p.ID)), &page); err != nil || len(page.Items) != 4 {
		t.Fatalf("codes list: %+v %v", page, err)
	}
	c.ok("codes", "disable", "--project", p.ID, page.Items[0].Code)
	st, err := store.Open(ctx, c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	older, newer := page.Items[1], page.Items[2]
	verifiedAt := time.Now().Add(-time.Hour).Truncate(time.Second)
	var events []contract.Event
	for i, v := range []struct {
		code contract.Code
		by   string
	}{{older, "till-7"}, {newer, ""}} {
		at := verifiedAt.Add(time.Duration(i) * time.Minute).UnixMilli()
		events = append(events, contract.Event{
			ID: contract.NewID(), CodeID: v.code.ID, ProjectID: p.ID, Action: contract.ActionVerify, Result: contract.ResultSuccess,
			VerifiedBy: v.by, IP: "192.0.2.1", TS: at, Version: 1 << 20, Changed: true, VerifiedAt: at, StateBy: v.by,
		})
	}
	if _, err := st.ApplyEvents(ctx, events); err != nil {
		t.Fatal(err)
	}

	var stats contract.ProjectStatistics
	out := c.ok("project", "stats", p.ID)
	if err := json.Unmarshal([]byte(out), &stats); err != nil {
		t.Fatalf("project stats: %v\n%s", err, out)
	}
	want := contract.Statistics{TotalCodes: 4, UsedCodes: 2, UnusedCodes: 1, DisabledCodes: 1}
	if stats.ProjectID != p.ID || stats.Statistics != want || stats.UsageRate != 0.5 {
		t.Errorf("project stats: %+v, want %+v and usage rate 0.5", stats, want)
	}
	if r := stats.RecentVerifications; len(r) != 2 || r[0].Code != newer.Code || r[1].Code != older.Code ||
		r[1].VerifiedAt != verifiedAt.Unix() || r[0].VerifiedBy != nil || r[1].VerifiedBy == nil || *r[1].VerifiedBy != "till-7" {
		t.Errorf("recent verifications, newest first: %+v", r)
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal([]byte(out), &fields)
	for _, f := range []string{"project_id", "total_codes", "used_codes", "unused_codes", "disabled_codes", "expired_codes", "usage_rate", "recent_verifications"} {
		if fields[f] == nil {
			t.Errorf("project stats JSON lacks %s, a field of the statistics endpoint: %s", f, out)
		}
	}
	var shown contract.Project
	if err := json.Unmarshal([]byte(c.ok("project", "show", p.ID)), &shown); err != nil || shown.Statistics == nil || *shown.Statistics != stats.Statistics {
		t.Errorf("project show counts %+v, project stats %+v", shown.Statistics, stats.Statistics)
	}

	table := c.ok("project", "stats", p.ID, "--output", "table")
	for _, w := range []string{"usage_rate", "0.5 (50.00% used)", "used_codes", "recent verifications (2 codes currently used, newest first)", "till-7"} {
		if !strings.Contains(table, w) {
			t.Errorf("project stats table lacks %q:\n%s", w, table)
		}
	}
	if i, j := strings.Index(table, newer.Code), strings.Index(table, older.Code); i < 0 || j < 0 || i > j {
		t.Errorf("project stats table does not list %s before %s:\n%s", newer.Code, older.Code, table)
	}

	missing := contract.NewID()
	c.fails([]string{"project", "stats", missing}, "Project "+missing+" not found")
	c.fails([]string{"project", "stats", "not-an-id"}, "Project not-an-id not found")
	c.fails([]string{"project", "stats"}, "accepts 1 arg")
	c.fails([]string{"project", "stats", p.ID, "-o", "yaml"}, "json or table")
}
