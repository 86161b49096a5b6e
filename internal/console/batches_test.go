package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
)

// waitBatch polls a batch through the API until it ends, and returns it with every done
// count seen on the way.
func (c *client) waitBatch(projectID, batchID string) (contract.Batch, []int) {
	c.t.Helper()
	var seen []int
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, body := c.do("GET", "/projects/"+projectID+"/batches/"+batchID, nil)
		expect(c.t, "read batch", res, body, http.StatusOK)
		var b contract.Batch
		decode(c.t, body, &b)
		if len(seen) == 0 || seen[len(seen)-1] != b.Done {
			seen = append(seen, b.Done)
		}
		if b.Final() {
			return b, seen
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("batch %s still %s after 2 minutes: %+v", batchID, b.Status, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitBatches waits until every batch of the project has ended.
func (c *client) waitBatches(projectID string) {
	c.t.Helper()
	res, body := c.do("GET", "/projects/"+projectID+"/batches", nil)
	expect(c.t, "list batches", res, body, http.StatusOK)
	var list struct{ Items []contract.Batch }
	decode(c.t, body, &list)
	for _, b := range list.Items {
		if end, _ := c.waitBatch(projectID, b.ID); end.Status != contract.BatchDone {
			c.t.Fatalf("batch %+v did not complete", end)
		}
	}
}

// waitBatchesDone waits, through the admin service, until every batch of the project has ended
// done.
func waitBatchesDone(t *testing.T, e *env, projectID string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		bs, err := e.admin.Batches(ctx, projectID, 100)
		if err != nil {
			t.Fatal(err)
		}
		running := false
		for _, b := range bs {
			if b.Final() && b.Status != contract.BatchDone {
				t.Fatalf("batch %+v did not complete", b)
			}
			running = running || !b.Final()
		}
		if !running {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("batches still running after 2 minutes: %+v", bs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// newProject creates a project through the API.
func (c *client) newProject(name string) contract.Project {
	c.t.Helper()
	res, body := c.do("POST", "/projects", map[string]string{"name": name})
	expect(c.t, "create project", res, body, http.StatusCreated)
	var p contract.Project
	decode(c.t, body, &p)
	return p
}

// startBatch starts a generation batch through the API and returns it as answered (202).
func (c *client) startBatch(projectID string, spec map[string]any) contract.Batch {
	c.t.Helper()
	res, body := c.do("POST", "/projects/"+projectID+"/generate", spec)
	expect(c.t, "generate", res, body, http.StatusAccepted)
	var b contract.Batch
	decode(c.t, body, &b)
	if want := console.APIPrefix + "/projects/" + projectID + "/batches/" + b.ID; res.Header.Get("Location") != want {
		c.t.Errorf("Location %q, want %q", res.Header.Get("Location"), want)
	}
	return b
}

// TestConsoleBatchProgress: generation answers 202 with a queued batch at once; its progress
// is in PostgreSQL, read by another console instance too, and it ends done with exactly the
// requested count, every code tied to the batch.
func TestConsoleBatchProgress(t *testing.T) {
	e := newEnv(t, func(c *console.Config, _ *console.ServerConfig) { c.GenerateStep = 5_000 })
	op := e.account("olive", console.RoleOperator)
	p := op.newProject("progress")
	const n = 40_000
	started := time.Now()
	b := op.startBatch(p.ID, map[string]any{"name": "  Spring packs ", "count": n, "length": 10, "prefix": "SP-"})
	if b.Name != "Spring packs" || b.Requested != n || b.Status != contract.BatchQueued || b.Done != 0 ||
		b.CreatedBy != "olive" || b.Spec.Prefix != "SP-" || b.Spec.Length != 10 {
		t.Fatalf("answered batch %+v", b)
	}
	end, seen := op.waitBatch(p.ID, b.ID)
	t.Logf("%d codes in %s; done counts seen: %v", n, time.Since(started).Round(time.Millisecond), seen)
	if end.Status != contract.BatchDone || end.Done != n || end.Error != "" || end.StartedAt == nil || end.FinishedAt == nil {
		t.Fatalf("ended batch %+v", end)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] || seen[i]%5_000 != 0 {
			t.Errorf("progress went %v: rounds are 5,000 codes and never go back", seen)
		}
	}
	st, err := e.admin.Statistics(context.Background(), p.ID, e.clock.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	if st.TotalCodes != n || st.UnusedCodes != n {
		t.Fatalf("project holds %+v, want %d unused codes", st, n)
	}
	// Every code is the batch's: the count a revoke would disable is all of them.
	res, body := op.do("GET", "/projects/"+p.ID+"/bulk-disable?batch_id="+b.ID, nil)
	expect(t, "count the batch", res, body, http.StatusOK)
	var cnt struct {
		Count  int64          `json:"count"`
		Filter map[string]any `json:"filter"`
	}
	decode(t, body, &cnt)
	if cnt.Count != n || cnt.Filter["batch_id"] != b.ID {
		t.Fatalf("batch count %s", body)
	}
	// Another instance on the same database reads the same batch.
	_, srv2 := e.build(console.ServerConfig{})
	other := e.client()
	other.base = startServer(t, srv2) + console.APIPrefix
	other.cookie, other.csrf = op.cookie, op.csrf
	res, body = other.do("GET", "/projects/"+p.ID+"/batches", nil)
	expect(t, "list on another instance", res, body, http.StatusOK)
	var list struct{ Items []contract.Batch }
	decode(t, body, &list)
	if len(list.Items) != 1 || list.Items[0].ID != b.ID || list.Items[0].Done != n || list.Items[0].Status != contract.BatchDone {
		t.Fatalf("batches on another instance: %s", body)
	}

	// Bad input is refused with a detail, and nothing is queued.
	for _, bad := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"count": 5}, "A batch needs a name"},
		{map[string]any{"name": "x", "count": 0}, "Count and length must be at least 1"},
		{map[string]any{"name": "x", "count": console.MaxGenerate + 1}, "Count must be at most"},
		{map[string]any{"name": strings.Repeat("n", 201), "count": 1}, "Name must be at most 200"},
		{map[string]any{"name": "x", "count": 5, "charset": "A"}, "Charset needs 2 to 256 characters"},
	} {
		res, body := op.do("POST", "/projects/"+p.ID+"/generate", bad.body)
		expect(t, "bad generate", res, body, http.StatusBadRequest)
		if !strings.Contains(string(body), bad.want) || !strings.Contains(string(body), `"detail"`) {
			t.Errorf("generate %v: %s, want %q", bad.body, body, bad.want)
		}
	}
	res, body = op.do("POST", "/projects/"+strings.Repeat("0", 32)+"/generate", map[string]any{"name": "x", "count": 5})
	expect(t, "generate in no project", res, body, http.StatusNotFound)
	res, body = op.do("GET", "/projects/"+p.ID+"/batches/"+strings.Repeat("0", 32), nil)
	expect(t, "no such batch", res, body, http.StatusNotFound)
	res, body = op.do("GET", "/projects/"+p.ID+"/batches/nonsense", nil)
	expect(t, "malformed batch id", res, body, http.StatusNotFound)
	res, body = op.do("GET", "/projects/"+p.ID+"/batches", nil)
	decode(t, body, &list)
	if len(list.Items) != 1 {
		t.Fatalf("refused requests queued batches: %s", body)
	}
}

// TestConsoleBatchCancel: a running batch stops when cancelled; the codes it made stay, tied
// to it, and exactly as many as it says.
func TestConsoleBatchCancel(t *testing.T) {
	e := newEnv(t, func(c *console.Config, _ *console.ServerConfig) { c.GenerateStep = 2_000 })
	op := e.account("olive", console.RoleOperator)
	p := op.newProject("cancel")
	b := op.startBatch(p.ID, map[string]any{"name": "too many", "count": console.MaxGenerate, "length": 12})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		res, body := op.do("GET", "/projects/"+p.ID+"/batches/"+b.ID, nil)
		expect(t, "read batch", res, body, http.StatusOK)
		decode(t, body, &b)
		if b.Done > 0 {
			break
		}
		if time.Now().After(deadline) || b.Final() {
			t.Fatalf("batch did not start: %+v", b)
		}
	}
	res, body := op.do("POST", "/projects/"+p.ID+"/batches/"+b.ID+"/cancel", nil)
	expect(t, "cancel", res, body, http.StatusOK)
	end, _ := op.waitBatch(p.ID, b.ID)
	if end.Status != contract.BatchCancelled || end.Done == 0 || end.Done >= console.MaxGenerate || end.FinishedAt == nil {
		t.Fatalf("cancelled batch %+v", end)
	}
	st, err := e.admin.Statistics(context.Background(), p.ID, e.clock.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	if st.TotalCodes != int64(end.Done) {
		t.Fatalf("the batch says %d codes, the project holds %d", end.Done, st.TotalCodes)
	}
	// A batch that ended is not cancelled again; the log has the one cancel.
	res, body = op.do("POST", "/projects/"+p.ID+"/batches/"+b.ID+"/cancel", nil)
	expect(t, "cancel again", res, body, http.StatusOK)
	decode(t, body, &b)
	if b.Status != contract.BatchCancelled || b.Done != end.Done {
		t.Fatalf("cancel of an ended batch changed it: %+v", b)
	}
	var log auditPage
	_, body = op.do("GET", "/audit?action=batch.cancel", nil)
	decode(t, body, &log)
	if len(log.Items) < 1 || log.Items[0].TargetID != b.ID {
		t.Fatalf("cancel not in the audit log: %s", body)
	}
}

// TestConsoleBatchInterrupted: a batch whose instance stops is marked failed, not resumed —
// at once when the instance shuts down cleanly, and by whichever instance reads it next when
// the one running it vanished without a word (its heartbeat went stale).
func TestConsoleBatchInterrupted(t *testing.T) {
	e := newEnv(t, func(c *console.Config, _ *console.ServerConfig) { c.GenerateStep = 2_000 })
	ctx, op := context.Background(), console.SystemActor("test")
	p, err := e.svc.CreateProject(ctx, op, contract.NewProject{Name: "restart"})
	if err != nil {
		t.Fatal(err)
	}
	// A clean shutdown of the instance running it.
	svc2, _ := e.build(console.ServerConfig{})
	b, err := svc2.StartGenerate(ctx, op, p.ID, "shutdown", contract.GenerateSpec{Count: console.MaxGenerate, Length: 12})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if b, err = e.admin.Batch(ctx, p.ID, b.ID); err != nil {
			t.Fatal(err)
		}
		if b.Done > 0 || time.Now().After(deadline) {
			break
		}
	}
	svc2.Close()
	if b, err = e.admin.Batch(ctx, p.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	if b.Status != contract.BatchFailed || !strings.Contains(b.Error, "interrupted") || b.Done == 0 || b.FinishedAt == nil {
		t.Fatalf("batch after its instance stopped: %+v", b)
	}
	// A stopped instance starts no batch, and leaves none queued.
	if _, err := svc2.StartGenerate(ctx, op, p.ID, "too late", contract.GenerateSpec{Count: 5, Length: 8}); contract.KindOf(err) != contract.KindUnavailable {
		t.Fatalf("generate on a stopped instance: %v", err)
	}
	all, err := e.admin.Batches(ctx, p.ID, 100)
	if err != nil || len(all) != 2 || all[0].Name != "too late" || all[0].Status != contract.BatchCancelled {
		t.Fatalf("batches after a refused start: %+v %v", all, err)
	}
	// An instance that vanished: its batch is running with a stale heartbeat.
	lost, err := e.store.CreateBatch(ctx, contract.NewBatch{ProjectID: p.ID, Name: "lost", Requested: 10, Spec: contract.BatchSpec{Length: 8}})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := e.store.StartBatch(ctx, lost.ID); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if lost, err = e.admin.Batch(ctx, p.ID, lost.ID); err != nil || lost.Status != contract.BatchRunning {
		t.Fatalf("a live batch was marked: %+v %v", lost, err)
	}
	if _, err := e.store.Pool().Exec(ctx, `UPDATE code_batches SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`, lost.ID); err != nil {
		t.Fatal(err)
	}
	if lost, err = e.admin.Batch(ctx, p.ID, lost.ID); err != nil {
		t.Fatal(err)
	}
	if lost.Status != contract.BatchFailed || !strings.Contains(lost.Error, "interrupted") {
		t.Fatalf("stale batch %+v", lost)
	}
}

// TestConsoleBatchRevoke: revoking a batch disables every code it made, in Redis (a verify
// through the hot path answers CODE_DISABLED) and in PostgreSQL, and no other code; a stale
// count is refused with 409 and the new count; the log has the count.
func TestConsoleBatchRevoke(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	op := e.account("olive", console.RoleOperator)
	sup := e.account("sue", console.RoleSupport)
	p := op.newProject("revoke")
	a := op.startBatch(p.ID, map[string]any{"name": "A", "count": 3_000, "length": 10, "prefix": "A-"})
	b := op.startBatch(p.ID, map[string]any{"name": "B", "count": 700, "length": 10, "prefix": "B-"})
	op.waitBatches(p.ID)

	// A code of A verified before the revoke stays used, and is disabled too.
	codesOf := func(prefix string) []contract.Code {
		page, err := e.admin.ListCodes(ctx, p.ID, contract.ListQuery{Search: prefix, PageSize: contract.MaxPageSize, Page: 1}, e.clock.Now().Unix())
		if err != nil {
			t.Fatal(err)
		}
		return page.Items
	}
	aCodes, bCodes := codesOf("A-"), codesOf("B-")
	if len(aCodes) == 0 || len(bCodes) == 0 {
		t.Fatalf("%d and %d codes", len(aCodes), len(bCodes))
	}
	res, body := sup.do("POST", "/projects/"+p.ID+"/codes/"+aCodes[0].Code+"/verify", map[string]string{"reason": "customer call"})
	expect(t, "verify", res, body, http.StatusOK)

	res, body = sup.do("POST", "/projects/"+p.ID+"/batches/"+a.ID+"/revoke", nil)
	expect(t, "support revokes", res, body, http.StatusForbidden)
	res, body = op.do("POST", "/projects/"+p.ID+"/batches/"+a.ID+"/revoke", map[string]any{"expected_count": 2_999})
	expect(t, "stale count", res, body, http.StatusConflict)
	var changed struct {
		Detail string `json:"detail"`
		Count  int64  `json:"count"`
	}
	decode(t, body, &changed)
	if changed.Count != 3_000 || !strings.Contains(changed.Detail, "3000 codes match now") {
		t.Fatalf("409 body %s", body)
	}
	res, body = op.do("POST", "/projects/"+p.ID+"/batches/"+a.ID+"/revoke", map[string]any{"expected_count": 3_000})
	expect(t, "revoke", res, body, http.StatusOK)
	var out struct{ Disabled int }
	decode(t, body, &out)
	if out.Disabled != 3_000 {
		t.Fatalf("revoke disabled %d", out.Disabled)
	}
	for _, c := range aCodes[:50] {
		live, found, err := e.admin.Cache.LiveCode(ctx, p.ID, c.Code)
		if err != nil || !found || !live.Disabled {
			t.Fatalf("code %s in redis: %+v found=%v err=%v", c.Code, live, found, err)
		}
		rec, err := e.store.CodeByValue(ctx, p.ID, c.Code)
		if err != nil || !rec.Disabled || rec.Version != live.Version {
			t.Fatalf("code %s in postgres: %+v (redis version %d) err=%v", c.Code, rec, live.Version, err)
		}
	}
	res, body = sup.do("POST", "/projects/"+p.ID+"/codes/"+aCodes[1].Code+"/verify", map[string]string{"reason": "after revoke"})
	expect(t, "verify revoked", res, body, http.StatusOK)
	var mr console.ManualResult
	decode(t, body, &mr)
	if mr.Success || mr.ErrorCode != "CODE_DISABLED" {
		t.Fatalf("verify of a revoked code: %s", body)
	}
	for _, c := range bCodes[:50] {
		if live, _, err := e.admin.Cache.LiveCode(ctx, p.ID, c.Code); err != nil || live.Disabled {
			t.Fatalf("code %s of the other batch disabled: %+v %v", c.Code, live, err)
		}
	}
	st, err := e.admin.Statistics(ctx, p.ID, e.clock.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	if st.DisabledCodes != 3_000 || st.TotalCodes != 3_700 {
		t.Fatalf("statistics after revoke %+v", st)
	}
	res, body = op.do("GET", "/projects/"+p.ID+"/batches/"+a.ID, nil)
	decode(t, body, &a)
	if a.RevokedAt == nil || a.RevokedBy != "olive" {
		t.Fatalf("revoked batch %+v", a)
	}
	res, body = op.do("GET", "/projects/"+p.ID+"/bulk-disable?batch_id="+b.ID, nil)
	expect(t, "count B", res, body, http.StatusOK)
	if !strings.Contains(string(body), `"count":700`) {
		t.Fatalf("batch B after revoking A: %s", body)
	}
	var log auditPage
	_, body = op.do("GET", "/audit?action=batch.revoke", nil)
	decode(t, body, &log)
	if len(log.Items) != 1 || log.Items[0].TargetID != a.ID || !strings.Contains(string(log.Items[0].Detail), `"disabled":3000`) {
		t.Fatalf("revoke in the audit log: %s", body)
	}
}

// TestConsoleBulkDisable: the count comes first; a disable whose confirmed count is out of
// date is refused with 409 and the new count; the right count disables exactly those codes,
// and the log records the filter and the count.
func TestConsoleBulkDisable(t *testing.T) {
	e := newEnv(t, nil)
	op := e.account("olive", console.RoleOperator)
	sup := e.account("sue", console.RoleSupport)
	p := op.newProject("bulk")
	op.startBatch(p.ID, map[string]any{"name": "X", "count": 400, "length": 10, "prefix": "X-"})
	op.startBatch(p.ID, map[string]any{"name": "Y", "count": 100, "length": 10, "prefix": "Y-"})
	op.waitBatches(p.ID)

	count := func(query string) int64 {
		t.Helper()
		res, body := op.do("GET", "/projects/"+p.ID+"/bulk-disable?"+query, nil)
		expect(t, "count "+query, res, body, http.StatusOK)
		var c struct{ Count int64 }
		decode(t, body, &c)
		return c.Count
	}
	if n := count("search=x-&status=unused"); n != 400 {
		t.Fatalf("count %d, want 400", n)
	}
	// Someone disables one of them meanwhile.
	page, err := e.admin.ListCodes(context.Background(), p.ID, contract.ListQuery{Search: "X-", PageSize: 1, Page: 1}, e.clock.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	res, body := sup.do("POST", "/projects/"+p.ID+"/codes/"+page.Items[0].Code+"/disable", nil)
	expect(t, "disable one", res, body, http.StatusOK)
	req := map[string]any{"search": "x-", "status": "unused", "expected_count": 400}
	res, body = op.do("POST", "/projects/"+p.ID+"/bulk-disable", req)
	expect(t, "stale count", res, body, http.StatusConflict)
	if !strings.Contains(string(body), `"count":399`) || !strings.Contains(string(body), `"detail"`) {
		t.Fatalf("409 body %s", body)
	}
	res, body = sup.do("POST", "/projects/"+p.ID+"/bulk-disable", req)
	expect(t, "support", res, body, http.StatusForbidden)
	req["expected_count"] = 399
	res, body = op.do("POST", "/projects/"+p.ID+"/bulk-disable", req)
	expect(t, "bulk disable", res, body, http.StatusOK)
	if !strings.Contains(string(body), `"disabled":399`) {
		t.Fatalf("bulk disable answered %s", body)
	}
	if n := count("search=x-"); n != 0 {
		t.Fatalf("%d X codes still enabled", n)
	}
	if n := count(""); n != 100 {
		t.Fatalf("%d codes enabled, want Y's 100", n)
	}
	var log auditPage
	_, body = op.do("GET", "/audit?action=codes.bulk_disable", nil)
	decode(t, body, &log)
	if len(log.Items) != 1 {
		t.Fatalf("bulk disable in the audit log: %s", body)
	}
	var detail struct {
		Filter    map[string]any `json:"filter"`
		Confirmed int64          `json:"confirmed"`
		Disabled  int            `json:"disabled"`
	}
	if err := json.Unmarshal(log.Items[0].Detail, &detail); err != nil {
		t.Fatal(err)
	}
	if detail.Disabled != 399 || detail.Confirmed != 399 || detail.Filter["search"] != "x-" || detail.Filter["status"] != "unused" {
		t.Fatalf("audit detail %s", log.Items[0].Detail)
	}

	// Bad input: a detail and the right status.
	for _, bad := range []struct {
		method, query string
		body          any
		status        int
		want          string
	}{
		{"GET", "status=bogus", nil, http.StatusBadRequest, "Status must be"},
		{"GET", "status=disabled", nil, http.StatusBadRequest, "Disabled codes are disabled already"},
		{"GET", "batch_id=" + strings.Repeat("0", 32), nil, http.StatusOK, `"count":0`},
		{"GET", "batch_id=nonsense", nil, http.StatusNotFound, "Batch nonsense not found"},
		{"POST", "", map[string]any{"search": "y-"}, http.StatusBadRequest, "Field expected_count is required"},
		{"POST", "", map[string]any{"status": "bogus", "expected_count": 1}, http.StatusBadRequest, "Status must be"},
		{"POST", "", "not json", http.StatusBadRequest, "detail"},
	} {
		res, body := op.do(bad.method, "/projects/"+p.ID+"/bulk-disable?"+bad.query, bad.body)
		expect(t, bad.method+" "+bad.query, res, body, bad.status)
		if !strings.Contains(string(body), bad.want) {
			t.Errorf("%s %s %v: %s, want %q", bad.method, bad.query, bad.body, body, bad.want)
		}
	}
}

// TestConsoleBatchFailure: a batch that cannot finish ends failed with the reason an
// operator can act on, keeping the codes it made.
func TestConsoleBatchFailure(t *testing.T) {
	e := newEnv(t, nil)
	op := e.account("olive", console.RoleOperator)
	p := op.newProject("small space")
	b := op.startBatch(p.ID, map[string]any{"name": "tiny", "count": 5, "length": 1, "charset": "AB"})
	end, _ := op.waitBatch(p.ID, b.ID)
	if end.Status != contract.BatchFailed || end.Done != 2 || !strings.Contains(end.Error, "code space is exhausted") {
		t.Fatalf("batch over a 2-code space: %+v", end)
	}
}
