package console_test

import (
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
)

func newID(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// logEvent is a verification log as the pipeline writes it.
func logEvent(t *testing.T, code contract.CodeRecord, projectID string, at time.Time, result, reason, by, ip string) contract.Event {
	return contract.Event{ID: newID(t), CodeID: code.ID, ProjectID: projectID, Action: contract.ActionVerify,
		Result: result, Reason: reason, VerifiedBy: by, IP: ip, TS: at.UnixMilli(), Version: 1}
}

// logsEnv is a console with two projects and logs written through the store's pipeline sink.
func logsEnv(t *testing.T) (e *env, p1, p2 contract.Project) { return logsEnvWith(t, nil) }

// logsEnvWith is logsEnv with the console's configuration adjusted.
func logsEnvWith(t *testing.T, adjust func(*console.Config, *console.ServerConfig)) (e *env, p1, p2 contract.Project) {
	e = newEnv(t, adjust)
	ctx := context.Background()
	sys := console.SystemActor("test")
	var err error
	if p1, err = e.svc.CreateProject(ctx, sys, contract.NewProject{Name: "logs one"}); err != nil {
		t.Fatal(err)
	}
	if p2, err = e.svc.CreateProject(ctx, sys, contract.NewProject{Name: "logs two"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []contract.Project{p1, p2} {
		if _, err := e.svc.Import(ctx, sys, p.ID, strings.NewReader("code\nLOG-A\nLOG-B\n"), false); err != nil {
			t.Fatal(err)
		}
	}
	code := func(p contract.Project, v string) contract.CodeRecord {
		r, err := e.store.CodeByValue(ctx, p.ID, v)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	now := e.clock.Now()
	evs := []contract.Event{
		logEvent(t, code(p1, "LOG-A"), p1.ID, now.Add(-time.Minute), contract.ResultSuccess, "", "till-1", "10.0.0.1"),
		logEvent(t, code(p1, "LOG-A"), p1.ID, now.Add(-50*time.Second), contract.ResultFailed, "CODE_ALREADY_USED", "till-2", "10.0.0.2"),
		logEvent(t, code(p1, "LOG-B"), p1.ID, now.Add(-40*time.Second), contract.ResultFailed, "CODE_DISABLED", "=HYPERLINK(\"http://x\")", "10.0.0.1"),
		logEvent(t, code(p2, "LOG-A"), p2.ID, now.Add(-30*time.Second), contract.ResultSuccess, "", "till-1", "10.0.0.3"),
		// Two days ago: outside the default range of the last 24 hours.
		logEvent(t, code(p1, "LOG-B"), p1.ID, now.Add(-48*time.Hour), contract.ResultSuccess, "", "old", "10.0.0.9"),
	}
	if _, err := e.store.ApplyEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	return e, p1, p2
}

type logsBody struct {
	Items []struct {
		ID         string `json:"id"`
		Code       string `json:"code"`
		ProjectID  string `json:"project_id"`
		Result     string `json:"result"`
		Reason     string `json:"reason"`
		VerifiedBy string `json:"verified_by"`
		IP         string `json:"ip_address"`
		VerifiedAt int64  `json:"verified_at"`
	} `json:"items"`
	NextAfter string `json:"next_after"`
}

func TestConsoleLogSearch(t *testing.T) {
	e, p1, p2 := logsEnv(t)
	v := e.account("vera", console.RoleViewer)
	search := func(q url.Values) logsBody {
		t.Helper()
		res, body := v.do("GET", "/logs?"+q.Encode(), nil)
		expect(t, "logs "+q.Encode(), res, body, http.StatusOK)
		var b logsBody
		decode(t, body, &b)
		return b
	}
	all := search(url.Values{})
	if len(all.Items) != 4 {
		t.Fatalf("default range: %d logs, want the 4 of the last day: %+v", len(all.Items), all.Items)
	}
	for i := 1; i < len(all.Items); i++ {
		if all.Items[i].VerifiedAt > all.Items[i-1].VerifiedAt {
			t.Fatalf("not newest first: %+v", all.Items)
		}
	}
	if all.Items[0].ProjectID != p2.ID || all.Items[0].Code != "LOG-A" {
		t.Fatalf("newest %+v", all.Items[0])
	}
	for _, c := range []struct {
		q    url.Values
		want int
	}{
		{url.Values{"project_id": {p1.ID}}, 3},
		{url.Values{"project_id": {p1.ID}, "code": {"LOG-A"}}, 2},
		{url.Values{"project_id": {p1.ID}, "code": {"NO-SUCH"}}, 0},
		{url.Values{"result": {"failure"}}, 2},
		{url.Values{"result": {"success"}}, 2},
		{url.Values{"reason": {"CODE_DISABLED"}}, 1},
		{url.Values{"verified_by": {"till-1"}}, 2},
		{url.Values{"ip": {"10.0.0.1"}}, 2},
		{url.Values{"project_id": {p1.ID}, "from": {fmt.Sprint(e.clock.Now().Add(-72 * time.Hour).Unix())}}, 4},
		{url.Values{"from": {fmt.Sprint(e.clock.Now().Add(-72 * time.Hour).Unix())},
			"to": {fmt.Sprint(e.clock.Now().Add(-24 * time.Hour).Unix())}}, 1},
	} {
		if got := search(c.q); len(got.Items) != c.want {
			t.Errorf("%s: %d logs, want %d: %+v", c.q.Encode(), len(got.Items), c.want, got.Items)
		}
	}

	// Keyset paging: pages of 1 give the same rows in the same order, then no cursor.
	var paged []string
	q := url.Values{"limit": {"1"}}
	for i := 0; i < 10; i++ {
		b := search(q)
		for _, it := range b.Items {
			paged = append(paged, it.ID)
		}
		if b.NextAfter == "" {
			break
		}
		q.Set("after", b.NextAfter)
	}
	if len(paged) != 4 {
		t.Fatalf("paged %d rows", len(paged))
	}
	for i, it := range all.Items {
		if paged[i] != it.ID {
			t.Fatalf("page %d is %s, want %s", i, paged[i], it.ID)
		}
	}

	for _, bad := range []string{"result=maybe", "action=x", "code=LOG-A", "project_id=nope", "after=junk",
		"from=yesterday", "limit=0", "from=100&to=50", "from=0&to=" + fmt.Sprint(e.clock.Now().Unix())} {
		res, body := v.do("GET", "/logs?"+bad, nil)
		expect(t, bad, res, body, http.StatusBadRequest)
	}
	// Exports are the operator's.
	res, body := v.do("GET", "/logs.csv", nil)
	expect(t, "viewer export", res, body, http.StatusForbidden)
}

func TestConsoleLogExportIsSpreadsheetSafeAndAudited(t *testing.T) {
	e, p1, _ := logsEnv(t)
	op := e.account("olga", console.RoleOperator)
	res, body := op.do("GET", "/logs.csv?project_id="+p1.ID+"&result=failure", nil)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("export %d %s: %s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	rows, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0][0] != "verified_at" || rows[0][8] != "verified_by" {
		t.Fatalf("export rows %q", rows)
	}
	found := false
	for _, r := range rows[1:] {
		if r[6] != contract.ResultFailed || r[2] != p1.ID {
			t.Errorf("row %q outside the filter", r)
		}
		if strings.Contains(r[8], "HYPERLINK") {
			found = true
			if r[8] != `'=HYPERLINK("http://x")` {
				t.Errorf("formula cell %q not neutralised", r[8])
			}
		}
	}
	if !found {
		t.Fatalf("the formula row is missing: %q", rows)
	}
	audit, err := e.store.AdminAudit(context.Background(), contract.AuditFilter{Action: "logs.export"})
	if err != nil || len(audit) != 1 {
		t.Fatalf("export audit rows %d, %v", len(audit), err)
	}
	var d map[string]any
	if err := json.Unmarshal(audit[0].Detail, &d); err != nil || d["result"] != "failure" || audit[0].AdminUsername != "olga" ||
		audit[0].ProjectID != p1.ID {
		t.Fatalf("export audit row %+v %s", audit[0], audit[0].Detail)
	}
	res, body = op.do("GET", "/logs.csv?result=maybe", nil)
	expect(t, "bad export filter", res, body, http.StatusBadRequest)
	// A bad cursor is refused before the first byte, not a connection cut after the header.
	res, body = op.do("GET", "/logs.csv?after=junk", nil)
	expect(t, "bad export cursor", res, body, http.StatusBadRequest)
}

func TestConsoleAuditExport(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	if _, err := e.svc.CreateProject(ctx, console.SystemActor("-cli"), contract.NewProject{Name: "@audit"}); err != nil {
		t.Fatal(err)
	}
	op := e.account("otto", console.RoleOperator)
	res, body := op.do("GET", "/audit.csv?action=project.", nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("audit export %d %s", res.StatusCode, body)
	}
	rows, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0][3] != "admin_username" || rows[1][3] != "'-cli" || rows[1][5] != "project.create" {
		t.Fatalf("audit export %q", rows)
	}
	if len(rows[1][11]) != 64 {
		t.Fatalf("hash column %q", rows[1][11])
	}
	got, err := e.store.AdminAudit(ctx, contract.AuditFilter{Action: "audit.export"})
	if err != nil || len(got) != 1 || got[0].AdminUsername != "otto" || !strings.Contains(string(got[0].Detail), `"project."`) {
		t.Fatalf("audit export not audited: %+v %v", got, err)
	}
	rep, err := e.svc.VerifyChain(ctx)
	if err != nil || !rep.OK {
		t.Fatalf("chain after export %+v %v", rep, err)
	}
	// Time filters.
	res, body = op.do("GET", "/audit?since="+fmt.Sprint(e.clock.Now().Add(time.Hour).Unix()), nil)
	expect(t, "audit since future", res, body, http.StatusOK)
	if !strings.Contains(string(body), `"items":[]`) {
		t.Fatalf("future since: %s", body)
	}
	res, body = op.do("GET", "/audit?until=tomorrow", nil)
	expect(t, "audit bad until", res, body, http.StatusBadRequest)
}

// TestConsoleLogsPage: the page shows the logs with their codes, keeps the filters in its
// next-page and CSV links, offers the CSV to operators only, and a viewer downloading the
// CSV anyway is refused.
func TestConsoleLogsPage(t *testing.T) {
	e, p1, _ := logsEnv(t)
	op := e.pageLogin("ophelia", console.RoleOperator)
	res, body := op.page("GET", "/logs?limit=1&project_id="+p1.ID, nil)
	op.want("logs page", res, body, http.StatusOK, "")
	for _, want := range []string{`id="logs"`, "LOG-B", `rel="next"`, `id="logs-csv"`, "project_id=" + p1.ID, "after="} {
		if !strings.Contains(body, want) {
			t.Errorf("logs page lacks %q", want)
		}
	}
	res, body = op.page("GET", "/logs.csv?project_id="+p1.ID, nil)
	if res.StatusCode != http.StatusOK || strings.Count(body, "\n") != 4 {
		t.Fatalf("page CSV %d: %s", res.StatusCode, body)
	}
	v := e.pageLogin("victor", console.RoleViewer)
	_, body = v.page("GET", "/logs", nil)
	if strings.Contains(body, `id="logs-csv"`) {
		t.Error("a viewer is offered the CSV")
	}
	for _, path := range []string{"/logs.csv", "/audit.csv"} {
		res, body = v.page("GET", path, nil)
		v.want(path, res, body, http.StatusForbidden, "")
	}
	res, body = v.page("GET", "/logs?result=maybe", nil)
	v.want("bad filter", res, body, http.StatusBadRequest, "")
}
