package console_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
)

// browser is a client of the web pages: it keeps the session cookie, does not follow
// redirects, and posts forms.
type browser struct {
	t      *testing.T
	base   string
	cookie string
}

func (e *env) browser() *browser { return &browser{t: e.t, base: e.http.URL} }

// page sends a request; form, when not nil, is posted as application/x-www-form-urlencoded.
func (b *browser) page(method, path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if b.cookie != "" {
		req.AddCookie(&http.Cookie{Name: console.CookieName, Value: b.cookie})
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := cl.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	for _, ck := range res.Cookies() {
		if ck.Name == console.CookieName {
			b.cookie = ck.Value
		}
	}
	return res, string(out)
}

// want checks a page's status (and, for a redirect, where it leads).
func (b *browser) want(what string, res *http.Response, body string, status int, location string) {
	b.t.Helper()
	if res.StatusCode != status {
		b.t.Fatalf("%s: status %d, want %d: %.400s", what, res.StatusCode, status, body)
	}
	if location != "" && !strings.HasPrefix(res.Header.Get("Location"), location) {
		b.t.Fatalf("%s: redirect to %q, want %q", what, res.Header.Get("Location"), location)
	}
}

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// csrf is the CSRF token a page's forms carry.
func csrf(t *testing.T, page string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf_token field in the page: %.400s", page)
	}
	return m[1]
}

// pageLogin logs a browser in through the login and password pages, as a person would.
func (e *env) pageLogin(username string, role console.Role) *browser {
	e.t.Helper()
	acc := e.bootstrap(username, role)
	b := e.browser()
	res, body := b.page("POST", "/login", url.Values{"username": {username}, "password": {acc.OneTimePassword}})
	b.want("login", res, body, http.StatusSeeOther, "/password")
	res, body = b.page("GET", "/", nil)
	b.want("dashboard before the change", res, body, http.StatusSeeOther, "/password")
	res, body = b.page("GET", "/password", nil)
	b.want("password page", res, body, http.StatusOK, "")
	res, body = b.page("POST", "/password", url.Values{"csrf_token": {csrf(e.t, body)},
		"current_password": {acc.OneTimePassword}, "new_password": {password}, "confirm_password": {password}})
	b.want("change password", res, body, http.StatusSeeOther, "/?done=password")
	return b
}

// postForms are the change forms of a page: every form posting somewhere but /logout.
var postForm = regexp.MustCompile(`<form method="post" action="([^"]+)"`)

func changeForms(page string) []string {
	var out []string
	for _, m := range postForm.FindAllStringSubmatch(page, -1) {
		if m[1] != "/logout" {
			out = append(out, m[1])
		}
	}
	return out
}

func TestConsolePagesPerRole(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	op := console.SystemActor("test")
	p, err := e.svc.CreateProject(ctx, op, contract.NewProject{Name: "Spring <b>sale</b>"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Import(ctx, op, p.ID, strings.NewReader("code\n<script>alert(1)</script>\nPLAIN-1\n"), false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateAPIKey(ctx, op, p.ID, 0, 0); err != nil {
		t.Fatal(err)
	}
	script := url.Values{"value": {"<script>alert(1)</script>"}}.Encode()
	pages := []string{"/", "/projects", "/projects/" + p.ID, "/projects/" + p.ID + "?tab=codes&search=script",
		"/projects/" + p.ID + "?tab=keys", "/projects/" + p.ID + "?tab=batches", "/projects/" + p.ID + "?tab=settings",
		"/projects/" + p.ID + "?range=7d", "/projects/" + p.ID + "?tab=nonsense", "/?range=30d", "/batches",
		"/projects/" + p.ID + "/code?" + script, "/audit", "/accounts", "/docs", "/docs/api",
		"/logs", "/logs?project_id=" + p.ID + "&code=" + url.QueryEscape("<script>alert(1)</script>"), "/audit?since=2026-01-01T00:00"}
	// What each role may post on those pages, at least.
	mustHave := map[console.Role][]string{
		console.RoleSupport: {"/projects/" + p.ID + "/code/disable", "/projects/" + p.ID + "/code/verify", "/projects/" + p.ID + "/code/reactivate"},
		console.RoleOperator: {"/projects", "/projects/" + p.ID + "/generate", "/projects/" + p.ID + "/keys", "/projects/" + p.ID + "/disable",
			"/projects/" + p.ID + "/import", "/projects/" + p.ID + "/expiry"},
		console.RoleAdmin: {"/accounts"},
	}
	for _, role := range []console.Role{console.RoleViewer, console.RoleSupport, console.RoleOperator, console.RoleAdmin} {
		t.Run(string(role), func(t *testing.T) {
			b := e.pageLogin("page-"+string(role), role)
			seen := map[string]bool{}
			for _, path := range pages {
				res, body := b.page("GET", path, nil)
				if path == "/accounts" && role != console.RoleAdmin {
					b.want(path, res, body, http.StatusForbidden, "")
					if !strings.Contains(body, "admin role") {
						t.Errorf("%s: the refusal should name the role: %.300s", path, body)
					}
					continue
				}
				b.want(path, res, body, http.StatusOK, "")
				if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
					t.Errorf("%s: Content-Type %q", path, ct)
				}
				if res.Header.Get("Content-Security-Policy") == "" {
					t.Errorf("%s: no Content-Security-Policy", path)
				}
				for _, want := range []string{`<a class="skip" href="#main">`, `<main id="main"`, `lang="en"`} {
					if !strings.Contains(body, want) {
						t.Errorf("%s: no %s", path, want)
					}
				}
				// User data is escaped wherever it lands.
				if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>sale</b>") {
					t.Errorf("%s: user data rendered unescaped", path)
				}
				forms := changeForms(body)
				if role == console.RoleViewer && len(forms) > 0 {
					t.Errorf("%s: a viewer's page has change controls: %v", path, forms)
				}
				for _, f := range forms {
					seen[f] = true
				}
			}
			for r, fs := range mustHave {
				for _, f := range fs {
					if role.Allows(r) != seen[f] {
						t.Errorf("form %s shown to %s: %v", f, role, seen[f])
					}
				}
			}
		})
	}
	// The code page shows the code escaped, and its links carry it percent-encoded.
	b := e.pageLogin("escaper", console.RoleViewer)
	_, body := b.page("GET", "/projects/"+p.ID+"/code?"+script, nil)
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("code page does not show the code escaped: %.2000s", body)
	}
	_, body = b.page("GET", "/projects/"+p.ID+"?tab=codes", nil)
	if !strings.Contains(body, "code?value=%3cscript%3ealert%281%29%3c%2fscript%3e") {
		t.Errorf("code link not percent-encoded: %.3000s", body)
	}
}

func TestConsolePagesRefuseForms(t *testing.T) {
	e := newEnv(t, nil)
	viewer := e.pageLogin("vic", console.RoleViewer)
	oper := e.pageLogin("opal", console.RoleOperator)

	// No session: a page sends the browser to log in; a form is refused.
	anon := e.browser()
	res, body := anon.page("GET", "/projects", nil)
	anon.want("page without a session", res, body, http.StatusSeeOther, "/login")
	res, body = anon.page("POST", "/projects", url.Values{"name": {"x"}})
	anon.want("form without a session", res, body, http.StatusUnauthorized, "")

	_, page := oper.page("GET", "/projects", nil)
	token := csrf(t, page)
	res, body = oper.page("POST", "/projects", url.Values{"name": {"no token"}})
	oper.want("form without csrf_token", res, body, http.StatusForbidden, "")
	if !strings.Contains(body, "CSRF") {
		t.Errorf("the refusal should name the CSRF token: %.500s", body)
	}
	res, body = oper.page("POST", "/projects", url.Values{"name": {"wrong token"}, "csrf_token": {token + "x"}})
	oper.want("form with a wrong csrf_token", res, body, http.StatusForbidden, "")
	// Another session's token does not do either.
	_, vpage := viewer.page("GET", "/projects", nil)
	res, body = oper.page("POST", "/projects", url.Values{"name": {"their token"}, "csrf_token": {csrf(t, vpage)}})
	oper.want("form with another session's csrf_token", res, body, http.StatusForbidden, "")

	res, body = oper.page("POST", "/projects", url.Values{"name": {"Launch"}, "csrf_token": {token}})
	oper.want("create project", res, body, http.StatusSeeOther, "/projects/")
	projectPath := strings.SplitN(res.Header.Get("Location"), "?", 2)[0]
	res, body = oper.page("GET", res.Header.Get("Location"), nil)
	oper.want("project page", res, body, http.StatusOK, "")
	if !strings.Contains(body, "Project created.") || !strings.Contains(body, "Launch") {
		t.Errorf("project page after create: %.1000s", body)
	}
	res, body = oper.page("POST", projectPath+"/generate", url.Values{"count": {"25"}, "csrf_token": {token}})
	oper.want("generate without a batch name", res, body, http.StatusBadRequest, "")
	if !strings.Contains(body, "A batch needs a name") {
		t.Errorf("generate without a name: %.2000s", body)
	}
	res, body = oper.page("POST", projectPath+"/generate", url.Values{"name": {"Launch cards"}, "count": {"25"}, "csrf_token": {token}})
	oper.want("generate", res, body, http.StatusSeeOther, projectPath+"?tab=batches&done=generate_started")
	waitBatchesDone(t, e, strings.TrimPrefix(projectPath, "/projects/"))
	_, body = oper.page("GET", projectPath+"?tab=batches&done=generated&n=25", nil)
	if !strings.Contains(body, `data-stat="total">25<`) || !strings.Contains(body, "Codes generated: 25.") ||
		!strings.Contains(body, `aria-label="Progress of batch Launch cards"`) || !strings.Contains(body, `max="25" value="25"`) {
		t.Errorf("project page after generate: %.6000s", body)
	}
	res, body = oper.page("POST", projectPath+"/keys", url.Values{"csrf_token": {token}})
	oper.want("create key", res, body, http.StatusOK, "")
	if !strings.Contains(body, `id="new-secret"`) {
		t.Errorf("new key's secret not shown: %.2000s", body)
	}
	_, body = oper.page("GET", projectPath, nil)
	if strings.Contains(body, `id="new-secret"`) {
		t.Error("the secret is shown again")
	}

	// A viewer's form with the right token is refused by role, as the API refuses it.
	vtoken := csrf(t, vpage)
	for _, path := range []string{"/projects", projectPath + "/generate", projectPath + "/disable", projectPath + "/keys",
		projectPath + "/code/disable", projectPath + "/code/verify", "/accounts"} {
		res, body = viewer.page("POST", path, url.Values{"csrf_token": {vtoken}, "name": {"x"}, "count": {"1"}, "value": {"X"}, "reason": {"r"}})
		viewer.want("viewer posts "+path, res, body, http.StatusForbidden, "")
	}
	res, body = viewer.page("GET", projectPath+"/export", nil)
	viewer.want("viewer exports", res, body, http.StatusForbidden, "")

	// A wrong password on the login page shows the form again with the refusal.
	res, body = anon.page("POST", "/login", url.Values{"username": {"opal"}, "password": {"not it"}})
	anon.want("wrong password", res, body, http.StatusUnauthorized, "")
	if !strings.Contains(body, "Invalid username or password") || !strings.Contains(body, `value="opal"`) {
		t.Errorf("login page after a wrong password: %.1500s", body)
	}
	// A form another site posts is refused, the login form too.
	req, _ := http.NewRequest("POST", e.http.URL+"/login", strings.NewReader(url.Values{"username": {"opal"}, "password": {password}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	cross, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cross.Body.Close()
	if cross.StatusCode != http.StatusForbidden || len(cross.Cookies()) != 0 {
		t.Errorf("cross-site login form: %d, cookies %v", cross.StatusCode, cross.Cookies())
	}
	// A page that does not exist is a page; the API's answer stays JSON.
	res, body = oper.page("GET", "/no-such-page", nil)
	oper.want("unknown page", res, body, http.StatusNotFound, "")
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Errorf("unknown page answered %s", res.Header.Get("Content-Type"))
	}
	res, _ = oper.page("GET", console.APIPrefix+"/no-such-route", nil)
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Errorf("unknown API route answered %s", res.Header.Get("Content-Type"))
	}
	// Logging out ends the session.
	res, body = viewer.page("POST", "/logout", url.Values{"csrf_token": {vtoken}})
	viewer.want("logout", res, body, http.StatusSeeOther, "/login")
	res, body = viewer.page("GET", "/", nil)
	viewer.want("after logout", res, body, http.StatusSeeOther, "/login")
}

// TestConsolePagesActions runs the code and account actions through their forms.
func TestConsolePagesActions(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	p, err := e.svc.CreateProject(ctx, console.SystemActor("test"), contract.NewProject{Name: "actions"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Import(ctx, console.SystemActor("test"), p.ID, strings.NewReader("code\nA/B+C\n"), false); err != nil {
		t.Fatal(err)
	}
	sup := e.pageLogin("sam", console.RoleSupport)
	codePage := "/projects/" + p.ID + "/code?" + url.Values{"value": {"A/B+C"}}.Encode()
	res, body := sup.page("GET", codePage, nil)
	sup.want("code page", res, body, http.StatusOK, "")
	token := csrf(t, body)
	post := func(action string, form url.Values) (*http.Response, string) {
		form.Set("csrf_token", token)
		form.Set("value", "A/B+C")
		return sup.page("POST", "/projects/"+p.ID+"/code/"+action, form)
	}
	follow := func(what string, res *http.Response, body, flash, state string) {
		t.Helper()
		sup.want(what, res, body, http.StatusSeeOther, codePage+"&done=")
		_, page := sup.page("GET", res.Header.Get("Location"), nil)
		if !strings.Contains(page, flash) || !strings.Contains(page, `data-state="`+state+`"`) {
			t.Errorf("%s: page lacks %q or state %s: %.3000s", what, flash, state, page)
		}
	}
	res, body = post("verify", url.Values{})
	sup.want("verify without a reason", res, body, http.StatusBadRequest, "")
	res, body = post("verify", url.Values{"reason": {"phoned in"}})
	follow("verify", res, body, "Code verified by hand", "used")
	res, body = post("verify", url.Values{"reason": {"again"}})
	follow("verify again", res, body, "The code was not verified: CODE_ALREADY_USED.", "used")
	res, body = post("reactivate", url.Values{"reason": {"order cancelled"}})
	follow("reactivate", res, body, "Code reactivated by hand", "unused")
	res, body = post("disable", url.Values{})
	follow("disable", res, body, "Code disabled.", "disabled")
	res, body = post("enable", url.Values{})
	follow("enable", res, body, "Code enabled.", "unused")
	rows, err := e.store.AdminAudit(ctx, contract.AuditFilter{Action: "code.", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 || rows[2].Action != "code.manual_reactivate" || !strings.Contains(string(rows[2].Detail), "order cancelled") {
		t.Errorf("audit rows of the code actions: %+v", rows)
	}

	// Accounts: create (the one-time password shown once), change a role, reset, disable.
	adm := e.pageLogin("ada", console.RoleAdmin)
	_, body = adm.page("GET", "/accounts", nil)
	token = csrf(t, body)
	res, body = adm.page("POST", "/accounts", url.Values{"csrf_token": {token}, "username": {"<newbie>"}, "role": {"viewer"}})
	adm.want("create an invalid account", res, body, http.StatusBadRequest, "")
	res, body = adm.page("POST", "/accounts", url.Values{"csrf_token": {token}, "username": {"newbie"}, "role": {"viewer"}})
	adm.want("create account", res, body, http.StatusOK, "")
	otp := regexp.MustCompile(`id="otp" class="mono" readonly value="([^"]+)"`).FindStringSubmatch(body)
	if otp == nil {
		t.Fatalf("no one-time password shown: %.3000s", body)
	}
	nb := e.browser()
	res, body = nb.page("POST", "/login", url.Values{"username": {"newbie"}, "password": {otp[1]}})
	nb.want("login with the shown password", res, body, http.StatusSeeOther, "/password")
	var id string
	accs, err := e.store.AdminAccounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range accs {
		if a.Username == "newbie" {
			id = a.ID
		}
	}
	res, body = adm.page("POST", "/accounts/"+id+"/role", url.Values{"csrf_token": {token}, "role": {"support"}})
	adm.want("set role", res, body, http.StatusSeeOther, "/accounts?done=role_changed")
	res, body = adm.page("POST", "/accounts/"+id+"/reset-password", url.Values{"csrf_token": {token}})
	adm.want("reset password", res, body, http.StatusOK, "")
	if !strings.Contains(body, `id="otp"`) || strings.Contains(body, otp[1]) {
		t.Error("reset: a new one-time password should be shown, not the old one")
	}
	res, body = adm.page("POST", "/accounts/"+id+"/disable", url.Values{"csrf_token": {token}})
	adm.want("disable", res, body, http.StatusSeeOther, "/accounts?done=account_disabled")
	_, body = adm.page("GET", "/accounts?done=account_disabled", nil)
	if !strings.Contains(body, "Account disabled") || !strings.Contains(body, "support") {
		t.Errorf("accounts page after the changes: %.3000s", body)
	}
}

// TestConsolePagesBulkDisable: the bulk-disable page shows the count before its confirm
// button, a confirm with an out-of-date count shows the new count instead of disabling, and a
// batch's revoke goes through the same page.
func TestConsolePagesBulkDisable(t *testing.T) {
	e := newEnv(t, nil)
	ctx, sys := context.Background(), console.SystemActor("test")
	p, err := e.svc.CreateProject(ctx, sys, contract.NewProject{Name: "Bulk"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.svc.StartGenerate(ctx, sys, p.ID, "Cards", contract.GenerateSpec{Count: 40, Length: 8, Prefix: "K-"})
	if err != nil {
		t.Fatal(err)
	}
	waitBatchesDone(t, e, p.ID)
	oper := e.pageLogin("page-operator", console.RoleOperator)
	projectPath := "/projects/" + p.ID
	res, body := oper.page("GET", projectPath+"?tab=batches", nil)
	oper.want("project page", res, body, http.StatusOK, "")
	_, codesTab := oper.page("GET", projectPath+"?tab=codes", nil)
	if !strings.Contains(body, `href="`+projectPath+`/bulk-disable?batch_id=`+b.ID+`"`) || !strings.Contains(codesTab, "Count codes to disable") {
		t.Fatalf("project page lacks revoke and bulk controls: %.6000s", body)
	}
	res, body = oper.page("GET", projectPath+"/bulk-disable?status=unused&search=k-", nil)
	oper.want("count page", res, body, http.StatusOK, "")
	if !strings.Contains(body, `data-count="40"`) || !strings.Contains(body, "Disable 40 codes") {
		t.Fatalf("count page: %.4000s", body)
	}
	token := csrf(t, body)
	// One code is disabled meanwhile: the confirm of 40 shows 39 instead.
	page, err := e.admin.ListCodes(ctx, p.ID, contract.ListQuery{PageSize: 1, Page: 1}, e.clock.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.SetCodeDisabled(ctx, sys, p.ID, page.Items[0].Code, true); err != nil {
		t.Fatal(err)
	}
	// The project's name must be typed: a wrong one is refused as an error and disables nothing.
	form := url.Values{"csrf_token": {token}, "status": {"unused"}, "search": {"k-"}, "expected_count": {"40"}, "confirm_name": {"bulk"}}
	res, body = oper.page("POST", projectPath+"/bulk-disable", form)
	oper.want("wrong name typed", res, body, http.StatusBadRequest, "")
	if !strings.Contains(body, `role="alert">The name typed does not match`) {
		t.Fatalf("wrong name typed: %.4000s", body)
	}
	form.Set("confirm_name", "Bulk")
	res, body = oper.page("POST", projectPath+"/bulk-disable", form)
	oper.want("stale confirm", res, body, http.StatusOK, "")
	if !strings.Contains(body, "The number of codes changed") || !strings.Contains(body, `data-count="39"`) {
		t.Fatalf("stale confirm: %.4000s", body)
	}
	// The batch's revoke: the same count first, then the confirm.
	res, body = oper.page("GET", projectPath+"/bulk-disable?batch_id="+b.ID, nil)
	oper.want("revoke page", res, body, http.StatusOK, "")
	if !strings.Contains(body, "Revoke batch Cards") || !strings.Contains(body, "Revoke batch: disable 39 codes") {
		t.Fatalf("revoke page: %.4000s", body)
	}
	res, body = oper.page("POST", projectPath+"/batches/"+b.ID+"/revoke", url.Values{"csrf_token": {token}, "expected_count": {"39"}})
	oper.want("revoke without the name", res, body, http.StatusBadRequest, "")
	res, body = oper.page("POST", projectPath+"/batches/"+b.ID+"/revoke", url.Values{"csrf_token": {token}, "expected_count": {"39"}, "confirm_name": {"Bulk"}})
	oper.want("revoke", res, body, http.StatusSeeOther, projectPath+"?tab=batches&done=batch_revoked&n=39")
	_, body = oper.page("GET", projectPath+"?tab=batches&done=batch_revoked&n=39", nil)
	if !strings.Contains(body, "Batch revoked; codes disabled: 39.") || !strings.Contains(body, `data-stat="disabled">40<`) ||
		!strings.Contains(body, "done</span> · revoked") {
		t.Fatalf("project page after revoke: %.8000s", body)
	}
	// A viewer gets none of it.
	viewer := e.pageLogin("page-viewer", console.RoleViewer)
	res, body = viewer.page("GET", projectPath+"/bulk-disable?batch_id="+b.ID, nil)
	viewer.want("viewer count page", res, body, http.StatusForbidden, "")
	_, body = viewer.page("GET", projectPath+"?tab=batches", nil)
	if strings.Contains(body, "bulk-disable") || strings.Contains(body, "/revoke") || !strings.Contains(body, "Progress of batch Cards") {
		t.Fatalf("viewer's project page: %.8000s", body)
	}
}
