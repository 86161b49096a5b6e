package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
)

func TestConsoleCSRF(t *testing.T) {
	e := newEnv(t, nil)
	c := e.account("olga", console.RoleOperator)
	token := c.csrf

	c.csrf = ""
	res, body := c.do("POST", "/projects", map[string]string{"name": "p"})
	expect(t, "no CSRF token", res, body, http.StatusForbidden)
	if !strings.Contains(string(body), "CSRF") {
		t.Errorf("detail should name the CSRF token: %s", body)
	}
	c.csrf = token[:len(token)-1] + "A"
	if c.csrf == token {
		c.csrf = token[:len(token)-1] + "B"
	}
	res, body = c.do("POST", "/projects", map[string]string{"name": "p"})
	expect(t, "wrong CSRF token", res, body, http.StatusForbidden)
	// Another session's token is wrong too.
	other := e.client()
	other.mustLogin("olga", password)
	c.csrf = other.csrf
	res, body = c.do("POST", "/projects", map[string]string{"name": "p"})
	expect(t, "another session's token", res, body, http.StatusForbidden)

	c.csrf = token
	res, body = c.do("POST", "/projects", map[string]string{"name": "p"})
	expect(t, "right CSRF token", res, body, http.StatusCreated)
	// Safe methods need none.
	c.csrf = ""
	res, body = c.do("GET", "/projects", nil)
	expect(t, "GET without token", res, body, http.StatusOK)
	// A form may send it as the csrf_token field (the JSON endpoints then refuse the form).
	req, _ := http.NewRequest("POST", c.base+"/projects", strings.NewReader(url.Values{"csrf_token": {token}, "name": {"p"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: console.CookieName, Value: c.cookie})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("form with the right csrf_token: %d, want 415 (past the CSRF check)", resp.StatusCode)
	}
	// Logout is an unsafe request too.
	res, body = c.do("DELETE", "/session", nil)
	expect(t, "logout without token", res, body, http.StatusForbidden)
}

// TestConsoleRolesRefused sends every route of the API as each role: a role below the route's
// need gets 403 with a detail, the role it needs does not.
func TestConsoleRolesRefused(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	clients := map[console.Role]*client{}
	for _, r := range []console.Role{console.RoleViewer, console.RoleSupport, console.RoleOperator, console.RoleAdmin} {
		clients[r] = e.account("as-"+string(r), r)
	}
	op := console.SystemActor("test")
	p, err := e.svc.CreateProject(ctx, op, contract.NewProject{Name: "roles"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := e.svc.CreateAPIKey(ctx, op, p.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Import(ctx, op, p.ID, strings.NewReader("code\nROLE-1\nROLE-2\n"), false); err != nil {
		t.Fatal(err)
	}
	b, err := e.svc.StartGenerate(ctx, op, p.ID, "roles", contract.GenerateSpec{Count: 3, Length: 8})
	if err != nil {
		t.Fatal(err)
	}
	waitBatchesDone(t, e, p.ID)
	target := e.bootstrap("target", console.RoleViewer)
	params := strings.NewReplacer(":project_id", p.ID, ":key_id", k.ID, ":code", "ROLE-1", ":admin_id", target.ID,
		":batch_id", b.ID)

	routes := e.srv.Routes()
	if len(routes) < 30 {
		t.Fatalf("only %d routes", len(routes))
	}
	ranks := []console.Role{console.RoleViewer, console.RoleSupport, console.RoleOperator, console.RoleAdmin}
	for _, rt := range routes {
		if rt.Anonymous {
			continue
		}
		path := params.Replace(rt.Path)
		body := any(nil)
		if rt.Method != http.MethodGet {
			body = "{}"
		}
		for _, role := range ranks {
			if role.Allows(rt.Need) {
				continue
			}
			res, out := clients[role].do(rt.Method, path, body)
			expect(t, string(role)+" "+rt.Method+" "+rt.Path, res, out, http.StatusForbidden)
			if !strings.Contains(string(out), "role") {
				t.Errorf("%s %s as %s: detail should name the role: %s", rt.Method, rt.Path, role, out)
			}
		}
		// The role the route needs passes the role check (the answer may still refuse the
		// empty body). Logging out and changing the password are left out: they would end
		// the session the loop goes on with.
		if rt.Path == "/session" || rt.Path == "/me/password" {
			continue
		}
		res, out := clients[rt.Need].do(rt.Method, path, body)
		if res.StatusCode == http.StatusForbidden || res.StatusCode == http.StatusUnauthorized || res.StatusCode >= 500 {
			t.Errorf("%s %s as %s: %d %s", rt.Method, rt.Path, rt.Need, res.StatusCode, out)
		}
	}
	// Roles are checked per request: a demoted account loses the right at once.
	var me struct {
		Account console.Account `json:"account"`
	}
	_, out := clients[console.RoleOperator].do("GET", "/me", nil)
	decode(t, out, &me)
	res, out := clients[console.RoleAdmin].do("PUT", "/accounts/"+me.Account.ID+"/role", map[string]string{"role": "viewer"})
	expect(t, "demote", res, out, http.StatusOK)
	res, out = clients[console.RoleOperator].do("POST", "/projects", map[string]string{"name": "x"})
	expect(t, "demoted operator", res, out, http.StatusForbidden)
	// An admin cannot demote or disable themselves.
	_, out = clients[console.RoleAdmin].do("GET", "/me", nil)
	decode(t, out, &me)
	res, out = clients[console.RoleAdmin].do("PUT", "/accounts/"+me.Account.ID+"/role", map[string]string{"role": "viewer"})
	expect(t, "self-demotion", res, out, http.StatusConflict)
}

// TestConsoleTrustedProxies: the client address and the cookie's Secure flag come from
// forwarding headers only when the peer is a trusted proxy.
func TestConsoleTrustedProxies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trusted []string
		wantIP  string
		secure  bool
	}{
		{"untrusted peer", nil, "127.0.0.1", false},
		{"trusted proxy", []string{"127.0.0.0/8"}, "203.0.113.9", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(_ *console.Config, s *console.ServerConfig) { s.TrustedProxies = tc.trusted })
			acc := e.bootstrap("pat", console.RoleViewer)
			c := e.client()
			// The client forged the first entry; the proxy appended the address it saw.
			c.header.Set("X-Forwarded-For", "198.51.100.1, 203.0.113.9")
			c.header.Set("X-Forwarded-Proto", "https")
			res, body := c.login("pat", acc.OneTimePassword)
			expect(t, "login", res, body, http.StatusOK)
			for _, ck := range res.Cookies() {
				if ck.Name == console.CookieName && ck.Secure != tc.secure {
					t.Errorf("cookie Secure = %v, want %v", ck.Secure, tc.secure)
				}
			}
			rows, err := e.store.AdminAudit(context.Background(), contract.AuditFilter{Action: "login"})
			if err != nil || len(rows) != 1 || rows[0].ClientIP != tc.wantIP {
				t.Fatalf("login rows %+v, %v; want client ip %s", rows, err, tc.wantIP)
			}
		})
	}
}

func TestConsoleBadRequests(t *testing.T) {
	e := newEnv(t, nil)
	c := e.account("quinn", console.RoleAdmin)
	for _, tc := range []struct {
		what, method, path string
		body               any
		status             int
	}{
		{"not JSON", "POST", "/projects", []byte("name=p"), http.StatusBadRequest},
		{"unknown field", "POST", "/projects", map[string]any{"name": "p", "owner": "x"}, http.StatusBadRequest},
		{"two objects", "POST", "/projects", `{"name":"p"}{"name":"q"}`, http.StatusBadRequest},
		{"too large", "POST", "/projects", `{"name":"` + strings.Repeat("x", 70<<10) + `"}`, http.StatusRequestEntityTooLarge},
		{"unknown project", "GET", "/projects/00000000000000000000000000000000", nil, http.StatusNotFound},
		{"bad role", "POST", "/accounts", map[string]string{"username": "x", "role": "root"}, http.StatusBadRequest},
		{"bad username", "POST", "/accounts", map[string]string{"username": "a b", "role": "viewer"}, http.StatusBadRequest},
		{"unknown route", "GET", "/nothing", nil, http.StatusNotFound},
		{"wrong method", "PATCH", "/projects", "{}", http.StatusMethodNotAllowed},
	} {
		res, body := c.do(tc.method, tc.path, tc.body)
		expect(t, tc.what, res, body, tc.status)
	}
	res, body := c.do("POST", "/accounts", map[string]string{"username": "dup", "role": "viewer"})
	expect(t, "create", res, body, http.StatusCreated)
	res, body = c.do("POST", "/accounts", map[string]string{"username": "DUP", "role": "viewer"})
	expect(t, "duplicate", res, body, http.StatusConflict)
}
