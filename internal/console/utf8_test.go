package console_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
)

// TestConsoleUTF8Refused sends invalid UTF-8, raw or percent-encoded, and JSON escapes of lone
// surrogates in the admin API's bodies and query strings and in the pages' queries and forms,
// and wants a 400 that says so before anything decodes them: encoding/json would have rewritten
// them to U+FFFD, so a project named "p\xff" was created as "p\uFFFD" and a manual verify's
// reason was audited rewritten. A refused request changes nothing: no project, no audit row, the
// code stays unused.
func TestConsoleUTF8Refused(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	p, err := e.svc.CreateProject(ctx, console.SystemActor("test"), contract.NewProject{Name: "utf8"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Import(ctx, console.SystemActor("test"), p.ID, strings.NewReader("code\nHAND-1\n"), false); err != nil {
		t.Fatal(err)
	}
	a := e.account("ada", console.RoleAdmin)
	b := e.pageLogin("paige", console.RoleAdmin)
	_, projectsPage := b.page("GET", "/projects", nil)
	token := csrf(t, projectsPage)

	// unchanged checks what a refused request could have changed.
	projects, audit := e.counts(t)
	unchanged := func(t *testing.T) {
		t.Helper()
		if np, na := e.counts(t); np != projects || na != audit {
			t.Fatalf("after a refused request: %d projects (was %d), %d audit rows (was %d)", np, projects, na, audit)
		}
		res, body := a.do("GET", "/projects/"+p.ID+"/codes/HAND-1", nil)
		expect(t, "code", res, body, http.StatusOK)
		var code struct {
			State contract.State `json:"state"`
		}
		decode(t, body, &code)
		if code.State != contract.StateUnused {
			t.Fatalf("HAND-1 after a refused request: %s", body)
		}
	}
	const (
		bodyDetail  = "Request body must be valid UTF-8"
		queryDetail = "Query string must be valid UTF-8 once percent-decoded"
		formDetail  = "Form fields must be valid UTF-8"
	)
	code := "/projects/" + p.ID + "/codes/HAND-1"
	for _, tc := range []struct {
		name, method, path, body, mention string
		anonymous                         bool
	}{
		{"project name with an invalid byte", "POST", "/projects", "{\"name\":\"p\xff\"}", bodyDetail + " (invalid byte at offset 10)", false},
		{"project description with a truncated sequence", "POST", "/projects", "{\"name\":\"p\",\"description\":\"x\xc3(y\"}", bodyDetail, false},
		{"project name with a lone surrogate escape", "POST", "/projects", `{"name":"p\ud800"}`, `the JSON escape \ud800 at offset 10`, false},
		{"verify reason with an invalid byte", "POST", code + "/verify", "{\"reason\":\"card \xfe\"}", bodyDetail, false},
		{"reactivate reason with a lone low surrogate", "POST", code + "/reactivate", `{"reason":"\udc00"}`, `\udc00`, false},
		{"login username with an invalid byte", "POST", "/session", "{\"username\":\"ada\xff\",\"password\":\"x\"}", bodyDetail, true},
		{"codes search", "GET", code[:strings.LastIndex(code, "/")] + "?search=%ff", "", queryDetail, false},
		{"logs verified_by", "GET", "/logs?verified_by=x%c3(y", "", queryDetail, false},
		{"audit admin", "GET", "/audit?admin=%ed%a0%80", "", queryDetail, false},
		{"a parameter no handler reads", "GET", "/projects?x=%ff", "", queryDetail, false},
		{"query of the OpenAPI document", "GET", "/openapi.yaml?x=%ff", "", queryDetail, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := a
			if tc.anonymous {
				c = e.client()
			}
			var body any
			if tc.body != "" {
				body = tc.body
			}
			res, out := c.do(tc.method, tc.path, body)
			expect(t, tc.name, res, out, http.StatusBadRequest)
			var d contract.ErrorBody
			decode(t, out, &d)
			if !strings.Contains(d.Detail, tc.mention) {
				t.Fatalf("detail %q does not mention %q", d.Detail, tc.mention)
			}
			unchanged(t)
		})
	}
	for _, tc := range []struct {
		name, method, path string
		form               url.Values
		mention            string
	}{
		{"page query", "GET", "/logs?code=%ff", nil, queryDetail},
		{"page form", "POST", "/projects", url.Values{"csrf_token": {token}, "name": {"p\xff"}}, formDetail},
		{"page form name", "POST", "/projects", url.Values{"csrf_token": {token}, "name": {"p"}, "\xfe": {"x"}}, formDetail},
		{"login form", "POST", "/login", url.Values{"username": {"ada\xff"}, "password": {"x"}}, formDetail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pb := b
			if tc.path == "/login" {
				pb = e.browser()
			}
			res, page := pb.page(tc.method, tc.path, tc.form)
			if res.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %.400s", res.StatusCode, page)
			}
			if !strings.Contains(html.UnescapeString(page), tc.mention) {
				t.Fatalf("page does not say %q: %.2000s", tc.mention, page)
			}
			unchanged(t)
		})
	}

	t.Run("accepted", func(t *testing.T) {
		// A surrogate pair is one character, U+FFFD spelled out a character like any other.
		res, out := a.do("POST", "/projects", `{"name":"p\ud83d\ude00\ufffd"}`)
		expect(t, "create", res, out, http.StatusCreated)
		var got contract.Project
		if err := json.Unmarshal(out, &got); err != nil || got.Name != "p😀\uFFFD" {
			t.Fatalf("project %s, %v", out, err)
		}
		res, out = a.do("GET", "/projects/"+p.ID+"/codes?search=%C3%A9", nil)
		expect(t, "search", res, out, http.StatusOK)
	})
}

// counts is how many projects and admin audit rows there are.
func (e *env) counts(t *testing.T) (projects, audit int) {
	t.Helper()
	ctx := context.Background()
	ps, err := e.store.Projects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := e.store.AdminAudit(ctx, contract.AuditFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(ps), len(rows)
}
