package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/console"
)

// TestConsoleImportDryRunAndRowErrors imports through the admin API: a dry run reports every
// problem row and writes nothing (and, changing nothing, is not in the audit log); the import
// then creates the good rows, reports the same rows and is in the audit log with its totals.
func TestConsoleImportDryRunAndRowErrors(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	op := e.account("ivy", console.RoleOperator)
	p, err := e.svc.CreateProject(ctx, console.SystemActor("test"), contract.NewProject{Name: "import"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Import(ctx, console.SystemActor("test"), p.ID, strings.NewReader("OLD-1\n"), false); err != nil {
		t.Fatal(err)
	}
	csv := "code,expires_at\nNEW-1,\nNEW-2,yesterday\nNEW-1,\nOLD-1,\nNEW-3,1900000000\n"
	path := "/projects/" + p.ID + "/import"

	res, body := op.do("POST", path+"?dry_run=maybe", csv)
	expect(t, "dry_run=maybe", res, body, http.StatusBadRequest)

	var rep contract.ImportReport
	res, body = op.do("POST", path+"?dry_run=true", csv)
	expect(t, "dry run", res, body, http.StatusOK)
	decode(t, body, &rep)
	check := func(what string, rep contract.ImportReport, dry bool) {
		t.Helper()
		if rep.DryRun != dry || rep.Read != 5 || rep.Inserted != 2 || rep.Invalid != 1 || rep.Duplicates != 1 || rep.Existing != 1 || len(rep.Errors) != 3 {
			t.Fatalf("%s: %s", what, body)
		}
		for i, w := range []struct {
			line        int
			value, kind string
		}{{3, "NEW-2", admin.RowInvalid}, {4, "NEW-1", admin.RowDuplicate}, {5, "OLD-1", admin.RowExists}} {
			if g := rep.Errors[i]; g.Line != w.line || g.Value != w.value || g.Kind != w.kind || g.Reason == "" {
				t.Errorf("%s: row error %d %+v, want %+v", what, i, g, w)
			}
		}
	}
	check("dry run", rep, true)
	res, body = op.do("GET", "/projects/"+p.ID+"/codes/NEW-1", nil)
	expect(t, "code after the dry run", res, body, http.StatusNotFound)
	recs, err := e.store.AdminAudit(ctx, contract.AuditFilter{Action: "codes.import", ProjectID: p.ID})
	if err != nil || len(recs) != 1 { // the fixture's import only
		t.Fatalf("audit after the dry run: %d rows, %v", len(recs), err)
	}

	res, body = op.do("POST", path, csv)
	expect(t, "import", res, body, http.StatusOK)
	rep = contract.ImportReport{}
	decode(t, body, &rep)
	check("import", rep, false)
	for _, v := range []string{"NEW-1", "NEW-3"} {
		res, body = op.do("GET", "/projects/"+p.ID+"/codes/"+v, nil)
		expect(t, "imported "+v, res, body, http.StatusOK)
	}
	recs, err = e.store.AdminAudit(ctx, contract.AuditFilter{Action: "codes.import", ProjectID: p.ID})
	if err != nil || len(recs) != 2 || recs[0].AdminUsername != "ivy" {
		t.Fatalf("audit after the import: %+v, %v", recs, err)
	}
	var d map[string]any
	if err := json.Unmarshal(recs[0].Detail, &d); err != nil || d["inserted"] != 2.0 || d["invalid"] != 1.0 || d["existing"] != 1.0 {
		t.Errorf("audit detail %s", recs[0].Detail)
	}

	// A viewer may not even check a file.
	v := e.account("vera", console.RoleViewer)
	res, body = v.do("POST", path+"?dry_run=true", csv)
	expect(t, "viewer dry run", res, body, http.StatusForbidden)
	res, body = op.do("POST", "/projects/"+contract.NewID()+"/import?dry_run=true", csv)
	expect(t, "unknown project", res, body, http.StatusNotFound)
}

// TestConsoleCodesKeysetPaging pages through a project's codes with the admin API's cursor:
// every code once, filters and search kept, a bad cursor refused with a detail.
func TestConsoleCodesKeysetPaging(t *testing.T) {
	e := newEnv(t, nil)
	op := e.account("kay", console.RoleOperator)
	res, body := op.do("POST", "/projects", map[string]string{"name": "keyset"})
	expect(t, "project", res, body, http.StatusCreated)
	var p contract.Project
	decode(t, body, &p)
	const n = 523
	res, body = op.do("POST", "/projects/"+p.ID+"/generate", map[string]any{"name": "keyset", "count": n, "length": 10, "prefix": "KS"})
	expect(t, "generate", res, body, http.StatusAccepted)
	op.waitBatches(p.ID)

	walk := func(query string) ([]string, int64) {
		t.Helper()
		var got []string
		var total int64 = -1
		cursor := ""
		for pages := 0; pages < 1000; pages++ {
			res, body := op.do("GET", "/projects/"+p.ID+"/codes?page_size=50&cursor="+url.QueryEscape(cursor)+query, nil)
			expect(t, "page", res, body, http.StatusOK)
			var page contract.CursorPage
			decode(t, body, &page)
			if total >= 0 && page.Total != total {
				t.Fatalf("total changed from %d to %d", total, page.Total)
			}
			total = page.Total
			for _, c := range page.Items {
				got = append(got, c.Code)
			}
			if page.NextCursor == "" {
				return got, total
			}
			cursor = page.NextCursor
		}
		t.Fatal("paging does not end")
		return nil, 0
	}
	got, total := walk("")
	seen := map[string]bool{}
	for _, v := range got {
		if seen[v] {
			t.Fatalf("code %s twice", v)
		}
		seen[v] = true
	}
	if len(got) != n || total != n {
		t.Fatalf("paged %d codes, total %d, want %d", len(got), total, n)
	}
	// Disable one; the state filter pages to it alone.
	res, body = op.do("POST", "/projects/"+p.ID+"/codes/"+got[100]+"/disable", nil)
	expect(t, "disable", res, body, http.StatusOK)
	if d, total := walk("&status=disabled"); len(d) != 1 || d[0] != got[100] || total != 1 {
		t.Fatalf("disabled: %v (total %d)", d, total)
	}
	// A search keeps to its matches on every page.
	sub := got[7][2:5]
	found, total := walk("&search=" + url.QueryEscape(sub))
	if int64(len(found)) != total || len(found) == 0 {
		t.Fatalf("search %q: %d codes, total %d", sub, len(found), total)
	}
	for _, v := range found {
		if !strings.Contains(strings.ToLower(v), strings.ToLower(sub)) {
			t.Fatalf("search %q returned %s", sub, v)
		}
	}
	for _, bad := range []string{"cursor=abc", "cursor=-4", "cursor=&page_size=0", "cursor=&page_size=101"} {
		res, body = op.do("GET", "/projects/"+p.ID+"/codes?"+bad, nil)
		expect(t, bad, res, body, http.StatusBadRequest)
	}
	// Without a cursor the page-numbered answer stays as it was.
	res, body = op.do("GET", "/projects/"+p.ID+"/codes?page=6&page_size=100", nil)
	expect(t, "page 6", res, body, http.StatusOK)
	var numbered contract.CodePage
	decode(t, body, &numbered)
	if numbered.Page != 6 || len(numbered.Items) != n-500 || numbered.TotalPages != 6 {
		t.Fatalf("numbered page: page %d, %d items, %d pages", numbered.Page, len(numbered.Items), numbered.TotalPages)
	}
}

// upload posts a multipart form with one file field, as a browser's import form does.
func (b *browser) upload(path string, fields url.Values, file string) (*http.Response, string) {
	b.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, vs := range fields {
		for _, v := range vs {
			_ = w.WriteField(k, v)
		}
	}
	fw, err := w.CreateFormFile("file", "codes.csv")
	if err != nil {
		b.t.Fatal(err)
	}
	_, _ = io.WriteString(fw, file)
	_ = w.Close()
	req, err := http.NewRequest("POST", b.base+path, &buf)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.AddCookie(&http.Cookie{Name: console.CookieName, Value: b.cookie})
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res, string(out)
}

// TestConsoleProjectPageImportExpiryAndPaging runs the project page's import form (check,
// then import), its expiry forms and its keyset pager.
func TestConsoleProjectPageImportExpiryAndPaging(t *testing.T) {
	e := newEnv(t, nil)
	oper := e.pageLogin("opie", console.RoleOperator)
	viewer := e.pageLogin("vin", console.RoleViewer)
	p, err := e.svc.CreateProject(context.Background(), console.SystemActor("test"), contract.NewProject{Name: "page"})
	if err != nil {
		t.Fatal(err)
	}
	path := "/projects/" + p.ID
	_, page := oper.page("GET", path+"?tab=codes", nil)
	_, settings := oper.page("GET", path+"?tab=settings", nil)
	page += settings
	token := csrf(t, page)
	for _, want := range []string{`action="` + path + `/import"`, `enctype="multipart/form-data"`, `action="` + path + `/expiry"`, `type="datetime-local"`} {
		if !strings.Contains(page, want) {
			t.Errorf("operator's project page lacks %s", want)
		}
	}
	_, vpage := viewer.page("GET", path+"?tab=codes", nil)
	_, vsettings := viewer.page("GET", path+"?tab=settings", nil)
	if strings.Contains(vsettings, path+"/expiry") ||
		strings.Contains(vpage, path+"/import") || strings.Contains(vpage, path+"/expiry") {
		t.Error("a viewer's project page offers import or expiry")
	}

	file := "code\nPG-1\nPG 2\x01\nPG-3\n"
	res, body := oper.upload(path+"/import", url.Values{"csrf_token": {token}, "action": {"check"}}, file)
	oper.want("check file", res, body, http.StatusOK, "")
	for _, want := range []string{"Dry run: nothing was written.", `id="import-errors"`, "<th scope=\"row\">3</th>", "invalid", "2 new codes would be imported"} {
		if !strings.Contains(body, want) {
			t.Errorf("dry run page lacks %q: %.4000s", want, body)
		}
	}
	if strings.Contains(body, `data-stat="total">2<`) {
		t.Error("the dry run wrote codes")
	}
	res, body = oper.upload(path+"/import", url.Values{"csrf_token": {token}, "action": {"import"}}, file)
	oper.want("import", res, body, http.StatusOK, "")
	if !strings.Contains(body, "Import done.") || !strings.Contains(body, `data-stat="total">2<`) {
		t.Errorf("import page: %.4000s", body)
	}
	res, body = oper.upload(path+"/import", url.Values{"action": {"import"}}, file)
	oper.want("import without a token", res, body, http.StatusForbidden, "")
	res, body = viewer.upload(path+"/import", url.Values{"csrf_token": {csrf(t, vpage)}, "action": {"check"}}, file)
	viewer.want("viewer checks a file", res, body, http.StatusForbidden, "")
	res, body = oper.page("POST", path+"/import", url.Values{"csrf_token": {token}, "action": {"check"}})
	oper.want("import without a file", res, body, http.StatusBadRequest, "")

	// Expiry: the box must be ticked; then it is set, shown, recorded; then cleared.
	res, body = oper.page("POST", path+"/expiry", url.Values{"csrf_token": {token}, "expires_at": {"2031-02-03T04:05"}})
	oper.want("expiry unconfirmed", res, body, http.StatusBadRequest, "")
	res, body = oper.page("POST", path+"/expiry", url.Values{"csrf_token": {token}, "expires_at": {"soon"}, "confirm": {"yes"}})
	oper.want("expiry malformed", res, body, http.StatusBadRequest, "")
	res, body = oper.page("POST", path+"/expiry", url.Values{"csrf_token": {token}, "expires_at": {"2031-02-03T04:05"}, "confirm": {"yes"}})
	oper.want("set expiry", res, body, http.StatusSeeOther, path+"?tab=settings&done=expiry_set")
	_, body = oper.page("GET", path+"?tab=settings", nil)
	if !strings.Contains(body, "The project expires 2031-02-03 04:05:00 UTC") || !strings.Contains(body, `value="2031-02-03T04:05"`) {
		t.Errorf("project page after setting the expiry: %.3000s", body)
	}
	res, body = viewer.page("POST", path+"/expiry", url.Values{"csrf_token": {csrf(t, vpage)}, "expires_at": {"2031-02-03T04:05"}, "confirm": {"yes"}})
	viewer.want("viewer sets expiry", res, body, http.StatusForbidden, "")
	res, body = oper.page("POST", path+"/expiry/clear", url.Values{"csrf_token": {token}, "confirm": {"yes"}})
	oper.want("clear expiry", res, body, http.StatusSeeOther, path+"?tab=settings&done=expiry_cleared")
	_, body = oper.page("GET", path+"?tab=settings", nil)
	if !strings.Contains(body, "The project does not expire.") {
		t.Errorf("project page after clearing the expiry: %.3000s", body)
	}
	recs, err := e.store.AdminAudit(context.Background(), contract.AuditFilter{ProjectID: p.ID, Action: "project."})
	if err != nil || len(recs) < 2 {
		t.Fatalf("expiry changes not in the audit log: %+v, %v", recs, err)
	}

	// The pager: 120 codes, 50 a page, the search kept across pages.
	if _, err := e.svc.StartGenerate(context.Background(), console.SystemActor("test"), p.ID, "pager", contract.GenerateSpec{Count: 120, Length: 8, Prefix: "PG"}); err != nil {
		t.Fatal(err)
	}
	waitBatchesDone(t, e, p.ID)
	seen := map[string]bool{}
	next := path + "?tab=codes&search=PG&status="
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatal("pager does not end")
		}
		res, body = oper.page("GET", strings.ReplaceAll(next, "&amp;", "&"), nil)
		oper.want("codes page", res, body, http.StatusOK, "")
		for _, m := range codeLink.FindAllStringSubmatch(body, -1) {
			if seen[m[1]] {
				t.Fatalf("code %s on two pages", m[1])
			}
			seen[m[1]] = true
		}
		next = ""
		if m := nextLink.FindStringSubmatch(body); m != nil {
			next = m[1]
			if !strings.Contains(next, "search=PG") || !strings.Contains(next, "tab=codes") {
				t.Fatalf("next page link drops the search: %s", next)
			}
		}
	}
	if len(seen) != 122 {
		t.Fatalf("pager showed %d codes, want 122", len(seen))
	}
}

var (
	codeLink = regexp.MustCompile(`<th scope="row"><a class="mono" href="[^"]*code\?value=([^"]+)">`)
	nextLink = regexp.MustCompile(`<a href="([^"]+)" rel="next">`)
)

// TestConsoleImportTooLarge: a CSV over the console's limit is 413 with a detail, in the API
// (dry run or not) and on the page's upload form.
func TestConsoleImportTooLarge(t *testing.T) {
	e := newEnv(t, func(_ *console.Config, s *console.ServerConfig) { s.MaxImportBytes = 4 << 10 })
	op := e.account("lara", console.RoleOperator)
	p, err := e.svc.CreateProject(context.Background(), console.SystemActor("test"), contract.NewProject{Name: "big"})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("CODE-0123456789\n", 1000) // 16 KB
	for _, q := range []string{"?dry_run=true", ""} {
		res, body := op.do("POST", "/projects/"+p.ID+"/import"+q, big)
		expect(t, "too large"+q, res, body, http.StatusRequestEntityTooLarge)
	}
	b := e.pageLogin("lena", console.RoleOperator)
	_, page := b.page("GET", "/projects/"+p.ID, nil)
	res, body := b.upload("/projects/"+p.ID+"/import", url.Values{"csrf_token": {csrf(t, page)}, "action": {"check"}}, big+strings.Repeat("x", 70<<10))
	b.want("page upload too large", res, body, http.StatusRequestEntityTooLarge, "")
}
