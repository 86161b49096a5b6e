package console_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
	"github.com/acv/acv/internal/testkit"
)

// ginParam is a path parameter as gin writes it (:project_id); the document writes {project_id}.
var ginParam = regexp.MustCompile(`:([a-z_]+)`)

// TestConsoleOpenAPICoversRoutes holds the admin API's document and Routes() to each other:
// every route is an operation of the document, and every operation is a route. Routes are
// added in several places; the failure names each one missing and where.
func TestConsoleOpenAPICoversRoutes(t *testing.T) {
	doc, err := libopenapi.NewDocument(console.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("build the model of internal/console/openapi.yaml: %v", err)
	}
	inDoc := map[string]bool{}
	for path, item := range m.Model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			inDoc[strings.ToUpper(method)+" "+path] = true
		}
	}
	e := newEnv(t, nil)
	inRoutes := map[string]bool{}
	for _, r := range e.srv.Routes() {
		inRoutes[r.Method+" "+ginParam.ReplaceAllString(r.Path, "{$1}")] = true
	}
	var missing, extra []string
	for k := range inRoutes {
		if !inDoc[k] {
			missing = append(missing, k)
		}
	}
	for k := range inDoc {
		if !inRoutes[k] {
			extra = append(extra, k)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	for _, k := range missing {
		t.Errorf("route %s (Server.Routes, internal/console/routes.go) is not in internal/console/openapi.yaml: add the operation under paths", k)
	}
	for _, k := range extra {
		t.Errorf("operation %s of internal/console/openapi.yaml is no route of Server.Routes: remove it or add the route", k)
	}
	if len(inRoutes) < 35 {
		t.Errorf("only %d routes", len(inRoutes))
	}
	// Every operation but the login and the document itself names the session and CSRF schemes
	// (the document's default) and answers errors as {"detail": …}.
	for path, item := range m.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			anon := op.Security != nil && len(op.Security) == 0
			if anon != (path == "/session" && method == "post" || path == "/openapi.yaml") {
				t.Errorf("%s %s: security %v", method, path, op.Security)
			}
			for code, res := range op.Responses.Codes.FromOldest() {
				if code >= "400" && res.GoLow().IsReference() == false && res.Content.GetOrZero("application/json") == nil {
					t.Errorf("%s %s answers %s without a {\"detail\"} body", method, path, code)
				}
			}
		}
	}
}

// TestConsoleOpenAPIServedAndMatchesAnswers fetches the document without a session and holds
// a run of real answers — successes and refusals of several routes — against it.
func TestConsoleOpenAPIServedAndMatchesAnswers(t *testing.T) {
	e := newEnv(t, nil)
	anon := e.client()
	res, body := anon.do("GET", "/openapi.yaml", nil)
	expect(t, "document", res, body, http.StatusOK)
	if ct := res.Header.Get("Content-Type"); ct != console.OpenAPIContentType || !strings.HasPrefix(string(body), "openapi: 3.1") {
		t.Fatalf("document: %s %.100s", ct, body)
	}

	check := testkit.NewOpenAPICheckOf(t, "internal/console/openapi.yaml", console.OpenAPI, nil)
	op := e.account("otto", console.RoleOperator)
	viewer := e.account("vick", console.RoleViewer)
	ctx := context.Background()
	p, err := e.svc.CreateProject(ctx, console.SystemActor("test"), contract.NewProject{Name: "doc"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Import(ctx, console.SystemActor("test"), p.ID, strings.NewReader("DOC-1\nDOC-2\n"), false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*client{op, viewer, anon} {
		c.transport = check
	}
	pid := "/projects/" + p.ID
	steps := []struct {
		c            *client
		method, path string
		body         any
		status       int
	}{
		{op, "GET", "/me", nil, 200},
		{op, "GET", "/projects", nil, 200},
		{op, "GET", pid, nil, 200},
		{op, "GET", pid + "/statistics", nil, 200},
		{op, "GET", pid + "/codes?cursor=&page_size=1", nil, 200},
		{op, "GET", pid + "/codes?page=1", nil, 200},
		{op, "GET", pid + "/codes/DOC-1", nil, 200},
		{op, "POST", pid + "/codes/DOC-1/disable", nil, 200},
		{op, "POST", pid + "/import?dry_run=true", "DOC-1\nDOC-3\nBAD\x01\n", 200},
		{op, "PUT", pid + "/expiry", map[string]any{"expires_at": 1900000000}, 200},
		{op, "DELETE", pid + "/expiry", nil, 200},
		{op, "POST", pid + "/keys", map[string]any{}, 201},
		{op, "GET", pid + "/keys", nil, 200},
		{op, "GET", "/audit?limit=5", nil, 200},
		{op, "GET", "/audit/verify", nil, 200},
		{op, "GET", pid + "/codes?cursor=zz", nil, 400},
		{op, "GET", "/projects/00000000000000000000000000000000", nil, 404},
		{viewer, "POST", pid + "/import", "X\n", 403},
		{anon, "GET", "/projects", nil, 401},
	}
	for _, s := range steps {
		res, body := s.c.do(s.method, s.path, s.body)
		expect(t, s.method+" "+s.path, res, body, s.status)
	}

	// Generation batches: a 202 with its Location, a batch read until it ends, the list, a
	// cancel of an ended batch, a bulk-disable count, a stale count refused 409 with the new
	// count, a revoke, and bad requests.
	b := op.startBatch(p.ID, map[string]any{"name": "doc batch", "count": 3, "length": 8, "prefix": "DB-", "expires_at": 1900000000})
	if end, _ := op.waitBatch(p.ID, b.ID); end.Status != contract.BatchDone {
		t.Fatalf("batch %+v", end)
	}
	bid := pid + "/batches/" + b.ID
	batchSteps := []struct {
		c            *client
		method, path string
		body         any
		status       int
	}{
		{viewer, "GET", pid + "/batches", nil, 200},
		{viewer, "GET", bid, nil, 200},
		{op, "POST", bid + "/cancel", nil, 200},
		{op, "GET", pid + "/bulk-disable?batch_id=" + b.ID + "&status=unused", nil, 200},
		{op, "GET", pid + "/bulk-disable?status=disabled", nil, 400},
		{op, "POST", pid + "/bulk-disable", map[string]any{"search": "DOC-", "expected_count": 99}, 409},
		{op, "POST", pid + "/bulk-disable", map[string]any{"search": "DOC-2", "expected_count": 1}, 200},
		{op, "POST", bid + "/revoke", map[string]any{"expected_count": 2}, 409},
		{op, "POST", bid + "/revoke", map[string]any{"expected_count": 3}, 200},
		{op, "POST", pid + "/generate", map[string]any{"count": 5}, 400},
		{viewer, "POST", pid + "/generate", map[string]any{"name": "x", "count": 5}, 403},
		{viewer, "GET", pid + "/batches/" + strings.Repeat("0", 32), nil, 404},
	}
	for _, s := range batchSteps {
		res, body := s.c.do(s.method, s.path, s.body)
		expect(t, s.method+" "+s.path, res, body, s.status)
	}
	// Verification logs and the audit log: a log search page (full, so with next_after), bad
	// filters, the CSV exports with their content type, the audit list's time bounds, and a key
	// list whose key has been used.
	code, err := e.store.CodeByValue(ctx, p.ID, "DOC-2")
	if err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	if _, err := e.store.ApplyEvents(ctx, []contract.Event{
		logEvent(t, code, p.ID, now.Add(-time.Minute), contract.ResultSuccess, "", "till-1", "10.0.0.1"),
		logEvent(t, code, p.ID, now.Add(-30*time.Second), contract.ResultFailed, "CODE_ALREADY_USED", "", "10.0.0.2"),
	}); err != nil {
		t.Fatal(err)
	}
	keys, err := e.store.ProjectAPIKeys(ctx, p.ID)
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys %v %v", keys, err)
	}
	if err := e.store.TouchAPIKeys(ctx, []string{keys[0].ID}, []time.Time{now}); err != nil {
		t.Fatal(err)
	}
	since, until := fmt.Sprint(now.Add(-time.Hour).Unix()), fmt.Sprint(now.Add(time.Hour).Unix())
	logSteps := []struct {
		c            *client
		method, path string
		body         any
		status       int
		contentType  string
	}{
		{viewer, "GET", "/logs?project_id=" + p.ID + "&limit=1", nil, 200, "application/json"},
		{viewer, "GET", "/logs?project_id=" + p.ID + "&result=failure&verified_by=&ip=10.0.0.2&from=" + since + "&to=" + until, nil, 200, "application/json"},
		{viewer, "GET", "/logs?code=DOC-2", nil, 400, "application/json"},
		{viewer, "GET", "/logs?result=maybe", nil, 400, "application/json"},
		{viewer, "GET", "/logs.csv", nil, 403, "application/json"},
		{op, "GET", "/logs.csv?project_id=" + p.ID + "&result=failure", nil, 200, "text/csv"},
		{op, "GET", "/logs.csv?after=junk", nil, 400, "application/json"},
		{op, "GET", "/audit.csv?action=project.&since=" + since, nil, 200, "text/csv"},
		{op, "GET", "/audit.csv?until=tomorrow", nil, 400, "application/json"},
		{viewer, "GET", "/audit?since=" + since + "&until=" + until + "&limit=2", nil, 200, "application/json"},
		{viewer, "GET", pid + "/keys", nil, 200, "application/json"},
	}
	for _, s := range logSteps {
		res, body := s.c.do(s.method, s.path, s.body)
		expect(t, s.method+" "+s.path, res, body, s.status)
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, s.contentType) {
			t.Errorf("%s %s: Content-Type %q, want %s", s.method, s.path, ct, s.contentType)
		}
		switch {
		case strings.HasPrefix(s.path, "/logs?project_id") && strings.Contains(s.path, "limit=1") && !strings.Contains(string(body), `"next_after":`):
			t.Errorf("a full page of logs has no next_after: %s", body)
		case strings.HasSuffix(s.path, "/keys") && !strings.Contains(string(body), fmt.Sprintf(`"last_used_at":%d`, now.Unix())):
			t.Errorf("key list without last_used_at: %s", body)
		}
	}
	if n, want := check.Checked(), int64(len(steps)+len(batchSteps)+len(logSteps)+2); n < want {
		t.Errorf("only %d of %d answers were checked against the document", n, want)
	}
}

// TestConsoleDocsPages: the docs page links both OpenAPI documents and the guide; the guide is
// docs/api.md with its headings as anchors, and the client document is the client API's.
func TestConsoleDocsPages(t *testing.T) {
	e := newEnv(t, nil)
	b := e.pageLogin("dora", console.RoleViewer)
	res, body := b.page("GET", "/docs", nil)
	b.want("docs", res, body, http.StatusOK, "")
	for _, want := range []string{`href="/docs/api#authentication"`, `href="/docs/client-openapi.yaml"`, `href="` + console.APIPrefix + `/openapi.yaml"`, `aria-current="page">Docs`} {
		if !strings.Contains(body, want) {
			t.Errorf("docs page lacks %s", want)
		}
	}
	res, body = b.page("GET", "/docs/api", nil)
	b.want("guide", res, body, http.StatusOK, "")
	for _, want := range []string{`<h2 id="authentication">Authentication</h2>`, `<h3 id="the-string-to-sign">`, `href="#worked-example"`, "<pre tabindex=\"0\"><code"} {
		if !strings.Contains(body, want) {
			t.Errorf("guide page lacks %s", want)
		}
	}
	res, body = b.page("GET", "/docs/api.md", nil)
	b.want("guide markdown", res, body, http.StatusOK, "")
	if !strings.HasPrefix(body, "# acv client API reference") {
		t.Errorf("guide markdown: %.80s", body)
	}
	res, body = b.page("GET", "/docs/client-openapi.yaml", nil)
	b.want("client document", res, body, http.StatusOK, "")
	if !strings.Contains(body, "title: acv client API") {
		t.Errorf("client document: %.200s", body)
	}
	res, body = e.browser().page("GET", "/docs", nil)
	b.want("docs without a session", res, body, http.StatusSeeOther, "/login")
}
