package console_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
)

type auditPage struct {
	Items []struct {
		Seq           int64           `json:"seq"`
		At            int64           `json:"at"`
		AdminUsername string          `json:"admin_username"`
		Action        string          `json:"action"`
		TargetKind    string          `json:"target_kind"`
		TargetID      string          `json:"target_id"`
		ProjectID     string          `json:"project_id"`
		Detail        json.RawMessage `json:"detail"`
		ClientIP      string          `json:"client_ip"`
		Hash          string          `json:"hash"`
	} `json:"items"`
	NextBefore int64 `json:"next_before"`
}

// TestConsoleAuditRecordsChanges does the changes of every kind through the API, then reads
// the audit log: each is there with who, when, from where and on what, and no row holds a
// secret, a password, a session token or a CSRF token.
func TestConsoleAuditRecordsChanges(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	boot := e.bootstrap("root", console.RoleAdmin)
	adm := e.client()
	adm.mustLogin("root", boot.OneTimePassword)
	res, body := adm.do("POST", "/me/password", map[string]string{"current_password": boot.OneTimePassword, "new_password": password})
	expect(t, "change", res, body, http.StatusOK)
	adm.adopt(res, body)
	secrets := []string{boot.OneTimePassword, password, adm.cookie, adm.csrf}

	res, body = adm.do("POST", "/projects", map[string]any{"name": "Shop", "expires_at": 1798761600})
	expect(t, "create project", res, body, http.StatusCreated)
	var p contract.Project
	decode(t, body, &p)
	res, body = adm.do("POST", "/projects/"+p.ID+"/keys", map[string]any{"rate_per_sec": 5, "burst": 10})
	expect(t, "create key", res, body, http.StatusCreated)
	var key struct {
		KeyID  string `json:"key_id"`
		Secret string `json:"secret"`
	}
	decode(t, body, &key)
	if len(key.Secret) != 64 {
		t.Fatalf("the secret must be shown once at creation: %s", body)
	}
	secrets = append(secrets, key.Secret)
	res, body = adm.do("GET", "/projects/"+p.ID+"/keys", nil)
	expect(t, "list keys", res, body, http.StatusOK)
	if strings.Contains(string(body), key.Secret) {
		t.Fatal("listing keys shows a secret")
	}
	steps := []struct{ method, path string }{
		{"PUT", "/keys/" + key.KeyID + "/limit"},
		{"POST", "/keys/" + key.KeyID + "/revoke"},
		{"POST", "/projects/" + p.ID + "/generate"},
		{"POST", "/projects/" + p.ID + "/disable"},
		{"POST", "/projects/" + p.ID + "/enable"},
		{"PUT", "/projects/" + p.ID + "/expiry"},
		{"DELETE", "/projects/" + p.ID + "/expiry"},
	}
	bodies := []any{map[string]any{"rate_per_sec": 50, "burst": 100}, nil, map[string]any{"name": "A series", "count": 20, "length": 8, "prefix": "A-"},
		nil, nil, map[string]any{"expires_at": 1830297600}, nil}
	for i, s := range steps {
		res, body := adm.do(s.method, s.path, bodies[i])
		if res.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", s.method, s.path, res.StatusCode, body)
		}
	}
	adm.waitBatches(p.ID)
	res, body = adm.do("GET", "/projects/"+p.ID+"/codes?page_size=1", nil)
	expect(t, "list codes", res, body, http.StatusOK)
	var page contract.CodePage
	decode(t, body, &page)
	if page.Total != 20 || len(page.Items) != 1 {
		t.Fatalf("codes page %+v", page)
	}
	code := page.Items[0].Code
	for _, s := range []string{"disable", "enable"} {
		res, body = adm.do("POST", "/projects/"+p.ID+"/codes/"+code+"/"+s, nil)
		expect(t, s+" code", res, body, http.StatusOK)
	}
	res, body = adm.do("GET", "/projects/"+p.ID+"/export", nil)
	expect(t, "export", res, body, http.StatusOK)
	res, body = adm.do("POST", "/accounts", map[string]string{"username": "sam", "role": "support"})
	expect(t, "create account", res, body, http.StatusCreated)
	var sam console.NewAccount
	decode(t, body, &sam)
	secrets = append(secrets, sam.OneTimePassword)
	res, body = adm.do("POST", "/accounts/"+sam.ID+"/reset-password", nil)
	expect(t, "reset password", res, body, http.StatusOK)
	var reset console.NewAccount
	decode(t, body, &reset)
	secrets = append(secrets, reset.OneTimePassword)
	e.client().login("root", "a wrong password")
	// A name no account has may be a password typed into the wrong field: not recorded.
	e.client().login("hunter2hunter2", "root")
	secrets = append(secrets, "hunter2hunter2")

	var all auditPage
	res, body = adm.do("GET", "/audit?limit=1000", nil)
	expect(t, "audit", res, body, http.StatusOK)
	decode(t, body, &all)
	for _, s := range secrets {
		if strings.Contains(string(body), s) {
			t.Errorf("the audit log holds a secret or token %q", s)
		}
	}
	// Directly from the table too: nothing hides in a column the API does not show.
	rows, err := e.store.Pool().Query(ctx, `SELECT admin_audit::text FROM admin_audit`)
	if err != nil {
		t.Fatal(err)
	}
	texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range texts {
		for _, s := range secrets {
			if strings.Contains(row, s) {
				t.Errorf("audit row %s holds a secret", row)
			}
		}
	}
	want := []string{"account.create", "login", "account.change_password", "project.create", "api_key.create",
		"api_key.limit", "api_key.revoke", "codes.generate", "project.disable", "project.enable", "project.expire",
		"project.clear_expiry", "code.disable", "code.enable", "codes.export", "account.create",
		"account.reset_password", "login.failed", "login.failed"}
	var got []string
	for i := len(all.Items) - 1; i >= 0; i-- {
		it := all.Items[i]
		got = append(got, it.Action)
		if it.At == 0 || it.Hash == "" || (it.Action != "account.create" || it.AdminUsername != "cli:test") && it.ClientIP != "127.0.0.1" {
			t.Errorf("row %+v: missing when, from where or hash", it)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("audit actions\n got %v\nwant %v", got, want)
	}
	// Filters and keyset paging.
	var f auditPage
	res, body = adm.do("GET", "/audit?project_id="+p.ID+"&action=project.&limit=2", nil)
	expect(t, "filtered", res, body, http.StatusOK)
	decode(t, body, &f)
	if len(f.Items) != 2 || f.Items[0].Action != "project.clear_expiry" || f.NextBefore == 0 {
		t.Fatalf("filtered page %+v", f)
	}
	res, body = adm.do("GET", fmt.Sprintf("/audit?project_id=%s&action=project.&before=%d", p.ID, f.NextBefore), nil)
	expect(t, "next page", res, body, http.StatusOK)
	decode(t, body, &f)
	if len(f.Items) != 3 || f.Items[2].Action != "project.create" {
		t.Fatalf("next page %+v", f)
	}
	for _, it := range f.Items {
		if it.AdminUsername != "root" || it.ProjectID != p.ID {
			t.Errorf("row %+v", it)
		}
	}
	var failed auditPage
	_, body = adm.do("GET", "/audit?action=login.failed", nil)
	decode(t, body, &failed)
	if len(failed.Items) != 2 || string(failed.Items[1].Detail) != `{"account_exists":true}` ||
		string(failed.Items[0].Detail) != `{"account_exists":false}` || failed.Items[0].AdminUsername != "" {
		t.Fatalf("failed login row %+v", failed)
	}

	// The chain verifies.
	res, body = adm.do("GET", "/audit/verify", nil)
	expect(t, "verify", res, body, http.StatusOK)
	var rep console.ChainReport
	decode(t, body, &rep)
	if !rep.OK || rep.Rows != int64(len(want)) || len(rep.HeadHash) != 64 {
		t.Fatalf("chain report %+v", rep)
	}
}

// TestConsoleAuditChainDetectsTampering: the table refuses UPDATE and DELETE; a superuser who
// gets past the trigger changes a row, and VerifyChain names that row; a row removed is found
// at the row after it.
func TestConsoleAuditChainDetectsTampering(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	a := console.SystemActor("test")
	for i := 0; i < 5; i++ {
		if _, err := e.svc.CreateProject(ctx, a, contract.NewProject{Name: fmt.Sprintf("p%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := e.svc.VerifyChain(ctx)
	if err != nil || !rep.OK || rep.Rows != 5 {
		t.Fatalf("clean chain: %+v, %v", rep, err)
	}
	pool := e.store.Pool()
	var third int64
	if err := pool.QueryRow(ctx, `SELECT seq FROM admin_audit ORDER BY seq OFFSET 2 LIMIT 1`).Scan(&third); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE admin_audit SET admin_username = 'someone else' WHERE seq = $1`,
		`DELETE FROM admin_audit WHERE seq = $1`,
		`UPDATE admin_audit_anchor SET seq = $1`,
	} {
		if _, err := pool.Exec(ctx, q, third); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Fatalf("%s: %v, want refused", q, err)
		}
	}
	if _, err := pool.Exec(ctx, `TRUNCATE admin_audit`); err == nil {
		t.Fatal("TRUNCATE must be refused")
	}

	// The superuser bypasses the trigger and edits the third row's detail.
	tamper := func(q string, args ...any) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tamper(`UPDATE admin_audit SET detail = '{"name": "innocent", "expires_at": null}' WHERE seq = $1`, third)
	rep, err = e.svc.VerifyChain(ctx)
	if err != nil || rep.OK || rep.BrokenSeq != third || !strings.Contains(rep.Problem, "content") || rep.Rows != 2 {
		t.Fatalf("edited row: %+v, %v", rep, err)
	}
	// Fixing the hash too does not help: the next row's link breaks.
	var fourth int64
	if err := pool.QueryRow(ctx, `SELECT seq FROM admin_audit ORDER BY seq OFFSET 3 LIMIT 1`).Scan(&fourth); err != nil {
		t.Fatal(err)
	}
	tamper(`UPDATE admin_audit SET hash = sha256(hash) WHERE seq = $1`, third)
	rep, _ = e.svc.VerifyChain(ctx)
	if rep.OK || rep.BrokenSeq != third {
		t.Fatalf("edited hash: %+v", rep)
	}
	// Removing the row is found at the row after it.
	tamper(`DELETE FROM admin_audit WHERE seq = $1`, third)
	rep, _ = e.svc.VerifyChain(ctx)
	if rep.OK || rep.BrokenSeq != fourth || !strings.Contains(rep.Problem, "prev_hash") {
		t.Fatalf("removed row: %+v", rep)
	}
}

// TestConsoleExportStreamsEveryCode generates codes through the API and exports them: every
// code is in the file, once, and the export is in the audit log.
func TestConsoleExportStreamsEveryCode(t *testing.T) {
	e := newEnv(t, nil)
	op := e.account("olive", console.RoleOperator)
	res, body := op.do("POST", "/projects", map[string]string{"name": "export"})
	expect(t, "project", res, body, http.StatusCreated)
	var p contract.Project
	decode(t, body, &p)
	const n = 30_000
	res, body = op.do("POST", "/projects/"+p.ID+"/generate", map[string]any{"name": "all", "count": n, "length": 12})
	expect(t, "generate", res, body, http.StatusAccepted)
	op.waitBatches(p.ID)
	res, body = op.do("POST", "/projects/"+p.ID+"/import", nil)
	expect(t, "import nothing", res, body, http.StatusOK)

	res, body = op.do("GET", "/projects/"+p.ID+"/export", nil)
	expect(t, "export", res, body, http.StatusOK)
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") ||
		!strings.Contains(res.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("export headers %v", res.Header)
	}
	recs, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n+1 || recs[0][1] != "code" {
		t.Fatalf("export has %d rows (header %v), want %d codes", len(recs)-1, recs[0], n)
	}
	seen := map[string]bool{}
	for _, r := range recs[1:] {
		if seen[r[1]] || len(r[1]) != 12 || r[2] != "unused" {
			t.Fatalf("row %v", r)
		}
		seen[r[1]] = true
	}
	rows, err := e.store.AdminAudit(context.Background(), contract.AuditFilter{Action: "codes.export", ProjectID: p.ID})
	if err != nil || len(rows) != 1 || rows[0].AdminUsername != "olive" {
		t.Fatalf("export audit rows %+v, %v", rows, err)
	}
	// A viewer may not export; an unknown project is a 404 before any byte.
	v := e.account("vic", console.RoleViewer)
	res, body = v.do("GET", "/projects/"+p.ID+"/export", nil)
	expect(t, "viewer export", res, body, http.StatusForbidden)
	res, body = op.do("GET", "/projects/"+contract.NewID()+"/export", nil)
	expect(t, "unknown project export", res, body, http.StatusNotFound)
}

// TestConsoleManualVerifyAndReactivate goes through the client API's hot path: the code's live
// state names the account as verifier, the business outcomes are the contract's, and the
// reason is in the audit log.
func TestConsoleManualVerifyAndReactivate(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	p, err := e.svc.CreateProject(ctx, console.SystemActor("test"), contract.NewProject{Name: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Import(ctx, console.SystemActor("test"), p.ID, strings.NewReader("code\nHAND-1\nA/B+C\n"), false); err != nil {
		t.Fatal(err)
	}
	s := e.account("sue", console.RoleSupport)
	path := "/projects/" + p.ID + "/codes/HAND-1"

	res, body := s.do("POST", path+"/verify", map[string]string{})
	expect(t, "no reason", res, body, http.StatusBadRequest)
	var r console.ManualResult
	res, body = s.do("POST", path+"/verify", map[string]string{"reason": "customer called, card unreadable"})
	expect(t, "verify", res, body, http.StatusOK)
	decode(t, body, &r)
	if !r.Success || r.VerifiedAt == nil || !contract.ValidID(r.EventID) {
		t.Fatalf("verify result %+v", r)
	}
	res, body = s.do("POST", path+"/verify", map[string]string{"reason": "again"})
	expect(t, "verify again", res, body, http.StatusOK)
	decode(t, body, &r)
	if r.Success || r.ErrorCode != "CODE_ALREADY_USED" {
		t.Fatalf("second verify %+v", r)
	}
	var code struct {
		VerifiedBy *string        `json:"verified_by"`
		State      contract.State `json:"state"`
	}
	res, body = s.do("GET", path, nil)
	expect(t, "get code", res, body, http.StatusOK)
	decode(t, body, &code)
	if code.State != contract.StateUsed || code.VerifiedBy == nil || *code.VerifiedBy != "console:sue" {
		t.Fatalf("code after manual verify %s", body)
	}
	res, body = s.do("POST", path+"/reactivate", map[string]string{"reason": "refund #42"})
	expect(t, "reactivate", res, body, http.StatusOK)
	decode(t, body, &r)
	if !r.Success {
		t.Fatalf("reactivate %+v", r)
	}
	// A value with '/' and '+' travels percent-encoded in the path.
	res, body = s.do("POST", "/projects/"+p.ID+"/codes/A%2FB%2BC/verify", map[string]string{"reason": "odd value"})
	expect(t, "encoded value", res, body, http.StatusOK)
	decode(t, body, &r)
	if !r.Success || r.Code != "A/B+C" {
		t.Fatalf("encoded value %+v", r)
	}
	res, body = s.do("POST", "/projects/"+p.ID+"/codes/NOPE/verify", map[string]string{"reason": "x"})
	expect(t, "unknown code", res, body, http.StatusOK)
	decode(t, body, &r)
	if r.Success || r.ErrorCode != "CODE_NOT_FOUND" {
		t.Fatalf("unknown code %+v", r)
	}

	rows, err := e.store.AdminAudit(ctx, contract.AuditFilter{Action: "code.", ProjectID: p.ID})
	if err != nil || len(rows) != 5 {
		t.Fatalf("manual rows %d, %v", len(rows), err)
	}
	var d struct {
		Reason  string `json:"reason"`
		Success bool   `json:"success"`
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal(rows[2].Detail, &d); err != nil || rows[2].Action != "code.manual_reactivate" ||
		d.Reason != "refund #42" || !d.Success || !contract.ValidID(d.EventID) || rows[2].TargetID != "HAND-1" {
		t.Fatalf("reactivate row %+v (%s), %v", rows[2], rows[2].Detail, err)
	}
}
