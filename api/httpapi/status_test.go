package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/api/httpapi"
)

// Every status the adapter can answer, with its body and headers.

func ptr[T any](v T) *T { return &v }

func wantHeader(t testing.TB, w *httptest.ResponseRecorder, name, want string) {
	t.Helper()
	if got := w.Header().Get(name); got != want {
		t.Errorf("%s: %q, want %q", name, got, want)
	}
}

// wantRateHeaders checks X-RateLimit-Limit, -Remaining and -Reset.
func wantRateHeaders(t testing.TB, w *httptest.ResponseRecorder, limit, remaining, reset int) {
	t.Helper()
	wantHeader(t, w, "X-RateLimit-Limit", strconv.Itoa(limit))
	wantHeader(t, w, "X-RateLimit-Remaining", strconv.Itoa(remaining))
	wantHeader(t, w, "X-RateLimit-Reset", strconv.Itoa(reset))
}

func TestVerifySuccess(t *testing.T) {
	e := newEnv(t)
	e.addCode(contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: "SPRING-1", CreatedAt: now - 60})
	nonce := newNonce()
	w := e.do(req{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":"SPRING-1","verified_by":"till 1"}`), nonce: nonce,
		header: map[string]string{"X-Forwarded-For": "203.0.113.9"}})
	want := `{"success":true,"code_id":"` + codeID1 + `","code":"SPRING-1","verified_at":1800000000,"message":"Code verified successfully","error_code":null}`
	if w.Code != http.StatusOK || w.Body.String() != want {
		t.Fatalf("%d %s\nwant 200 %s", w.Code, w.Body, want)
	}
	wantHeader(t, w, "Content-Type", "application/json; charset=utf-8")
	wantRateHeaders(t, w, 0, 0, 0)
	if w.Header().Get("Idempotent-Replayed") != "" {
		t.Error("a fresh verify is marked Idempotent-Replayed")
	}
	ops := e.hot.Calls("Verify", "Reactivate", "Admit")
	if len(ops) != 1 || ops[0].Method != "Verify" {
		t.Fatalf("hot-path calls %+v, want one Verify", ops)
	}
	op := ops[0].Op
	// Proxies are not trusted by default: the address is the peer's, not X-Forwarded-For.
	wantOp := contract.Operation{Action: contract.ActionVerify, ProjectID: projectA, KeyID: keyA.ID, Code: "SPRING-1", By: "till 1",
		IP: "192.0.2.1", ReplayKey: contract.ReplayIdentity("", nonce), EventID: eventID, Now: fixedNow}
	if op != wantOp {
		t.Errorf("operation\n%+v\nwant\n%+v", op, wantOp)
	}
	if c, _ := e.hot.live(projectA, "SPRING-1"); c.VerifiedAtMs != now*1000 {
		t.Errorf("code after verify: %+v", c)
	}
}

// A valid request whose outcome is a failure is still a 200: success false with the error
// code, and the hot path's stored time of use for a code already used.
func TestVerifyBusinessFailure(t *testing.T) {
	for _, ec := range []contract.ErrorCode{contract.CodeNotFound, contract.ProjectDisabled, contract.CodeDisabled,
		contract.CodeAlreadyUsed, contract.CodeExpired, contract.ProjectExpired} {
		t.Run(string(ec), func(t *testing.T) {
			e := newEnv(t)
			e.hot.operate = func(op contract.Operation) (contract.OperationResult, error) {
				o := contract.Outcome{Action: op.Action, Code: op.Code, Error: ec}
				if ec != contract.CodeNotFound {
					o.CodeID = codeID1
				}
				if ec == contract.CodeAlreadyUsed {
					o.VerifiedAt = (now - 100) * 1000
				}
				return contract.OperationResult{Outcome: o, Rate: contract.RateState{Remaining: -1}}, nil
			}
			w := e.do(req{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":"X-1"}`)})
			r := decode[contract.VerifyResponse](t, w)
			if r.Success || r.ErrorCode == nil || *r.ErrorCode != string(ec) || r.Code != "X-1" || r.Message != contract.Message(contract.ActionVerify, ec) {
				t.Fatalf("body %s", w.Body)
			}
			if (r.CodeID == nil) != (ec == contract.CodeNotFound) {
				t.Errorf("code_id %v for %s", r.CodeID, ec)
			}
			if (r.VerifiedAt != nil) != (ec == contract.CodeAlreadyUsed) || ec == contract.CodeAlreadyUsed && *r.VerifiedAt != now-100 {
				t.Errorf("verified_at %v for %s", r.VerifiedAt, ec)
			}
		})
	}
	t.Run("disabled project answers in the body", func(t *testing.T) {
		// Verify and reactivate report a disabled project as PROJECT_DISABLED, not as a 401.
		e := newEnv(t)
		e.hot.operate = func(op contract.Operation) (contract.OperationResult, error) {
			return contract.OperationResult{Outcome: contract.Outcome{Action: op.Action, Code: op.Code, CodeID: codeID1, Error: contract.ProjectDisabled}}, nil
		}
		w := e.do(req{method: http.MethodPost, path: reactPath(projectD), key: &keyDisabled, body: []byte(`{"code":"X-1"}`)})
		if r := decode[contract.ReactivateResponse](t, w); r.Success || *r.ErrorCode != "PROJECT_DISABLED" || r.ReactivatedAt != nil {
			t.Fatalf("body %s", w.Body)
		}
	})
}

func TestReactivate(t *testing.T) {
	e := newEnv(t)
	e.addCode(contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: "SPRING-1", VerifiedAtMs: (now - 60) * 1000, VerifiedBy: "till 1", CreatedAt: now - 600})
	w := e.do(req{method: http.MethodPost, path: reactPath(projectA), body: []byte(`{"code":"SPRING-1","reactivated_by":"desk","reason":"refund"}`)})
	want := `{"success":true,"code_id":"` + codeID1 + `","code":"SPRING-1","reactivated_at":1800000000,"message":"Code reactivated successfully","error_code":null}`
	if w.Code != http.StatusOK || w.Body.String() != want {
		t.Fatalf("%d %s\nwant 200 %s", w.Code, w.Body, want)
	}
	ops := e.hot.Calls("Verify", "Reactivate")
	if len(ops) != 1 || ops[0].Method != "Reactivate" {
		t.Fatalf("hot-path calls %+v", ops)
	}
	if op := ops[0].Op; op.Action != contract.ActionReactivate || op.By != "desk" || op.Reason != "refund" || op.Code != "SPRING-1" {
		t.Errorf("operation %+v", op)
	}
	// Reactivating again: a business failure, still 200.
	w = e.do(req{method: http.MethodPost, path: reactPath(projectA), body: []byte(`{"code":"SPRING-1"}`), nonce: newNonce()})
	if r := decode[contract.ReactivateResponse](t, w); r.Success || *r.ErrorCode != "CODE_ALREADY_UNUSED" || r.ReactivatedAt != nil {
		t.Fatalf("second reactivate: %s", w.Body)
	}
}

func TestGetProject(t *testing.T) {
	e := newEnv(t)
	w := e.do(req{path: projectPath(projectA)})
	want := `{"id":"` + projectA + `","name":"Shop","description":"Spring sale","status":true,"expires_at":1800003600,"created_at":1799913600,` +
		`"statistics":{"total_codes":10,"used_codes":3,"unused_codes":5,"disabled_codes":1,"expired_codes":1}}`
	if w.Code != http.StatusOK || w.Body.String() != want {
		t.Fatalf("%d %s\nwant 200 %s", w.Code, w.Body, want)
	}
	wantRateHeaders(t, w, 0, 0, 0)
	if calls := e.hot.Calls("Verify", "Reactivate"); len(calls) != 0 {
		t.Errorf("a read reached the hot path: %+v", calls)
	}
}

func TestListCodes(t *testing.T) {
	e := newEnv(t)
	codeExp := int64(now - 1)
	for i := 0; i < 7; i++ {
		c := contract.CodeRecord{ID: fmt.Sprintf("0190c0c00000700080000000000001%02d", i), ProjectID: projectA, Code: fmt.Sprintf("L-%d", i), CreatedAt: now - int64(i)}
		switch i {
		case 5:
			c.VerifiedAtMs, c.VerifiedBy = (now-5)*1000+999, "till 2"
		case 6:
			c.ExpiresAt = &codeExp
		}
		e.addCode(c)
	}
	e.addCode(contract.CodeRecord{ID: codeID2, ProjectID: projectB, Code: "B-1"})

	t.Run("a page with a filter", func(t *testing.T) {
		e.rec.reset()
		w := e.do(req{path: projectPath(projectA) + "/codes", query: "page=2&page_size=5&status=used&search=a%20b"})
		page := decode[contract.CodePage](t, w)
		if page.Total != 7 || page.Page != 2 || page.PageSize != 5 || page.TotalPages != 2 || len(page.Items) != 2 {
			t.Fatalf("page %s", w.Body)
		}
		// Status and is_expired are derived at the server's clock.
		if it := page.Items[0]; !it.Status || *it.VerifiedAt != now-5 || *it.VerifiedBy != "till 2" || it.IsExpired {
			t.Errorf("used code %+v", it)
		}
		if it := page.Items[1]; it.Status || !it.IsExpired || *it.ExpiresAt != codeExp {
			t.Errorf("expired code %+v", it)
		}
		if q := e.rec.queries; len(q) != 1 || q[0] != (contract.ListQuery{Page: 2, PageSize: 5, State: contract.StateUsed, Search: "a b"}) {
			t.Errorf("list queries %+v", q)
		}
		if strings.Contains(w.Body.String(), "verification_logs") {
			t.Errorf("the list shows verification logs: %s", w.Body)
		}
	})
	t.Run("defaults", func(t *testing.T) {
		e.rec.reset()
		page := decode[contract.CodePage](t, e.do(req{path: projectPath(projectA) + "/codes"}))
		if page.Page != 1 || page.PageSize != 20 || page.TotalPages != 1 || len(page.Items) != 7 {
			t.Errorf("page %+v", page)
		}
		if q := e.rec.queries; len(q) != 1 || q[0] != (contract.ListQuery{Page: 1, PageSize: 20}) {
			t.Errorf("list queries %+v", q)
		}
	})
	t.Run("status all and empty mean no filter", func(t *testing.T) {
		for _, query := range []string{"status=all", "status=", "status"} {
			e.rec.reset()
			w := e.do(req{path: projectPath(projectA) + "/codes", query: query})
			decode[contract.CodePage](t, w)
			if q := e.rec.queries; len(q) != 1 || q[0].State != "" {
				t.Errorf("%s: list queries %+v", query, q)
			}
		}
	})
	t.Run("past the end", func(t *testing.T) {
		w := e.do(req{path: projectPath(projectA) + "/codes", query: "page=9&page_size=3"})
		if w.Body.String() != `{"items":[],"total":7,"page":9,"page_size":3,"total_pages":3}` {
			t.Errorf("page past the end: %s", w.Body)
		}
	})
	t.Run("empty project", func(t *testing.T) {
		w := newEnv(t).do(req{path: projectPath(projectA) + "/codes"})
		if w.Body.String() != `{"items":[],"total":0,"page":1,"page_size":20,"total_pages":0}` {
			t.Errorf("empty list: %s", w.Body)
		}
	})
}

func TestGetCode(t *testing.T) {
	e := newEnv(t)
	projExp := int64(now - 10)
	// The records hold the code unused; the hot path knows it was verified since.
	e.rec.codes = append(e.rec.codes,
		contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: "A+B/C D", CreatedAt: now - 600},
		contract.CodeRecord{ID: codeID2, ProjectID: projectA, Code: "NO-LOGS", CreatedAt: now - 600})
	e.hot.put(contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: "A+B/C D", VerifiedAtMs: (now - 30) * 1000, VerifiedBy: "till 3", Version: 2})
	e.rec.logs[codeID1] = []contract.LogEntry{
		{ID: "l2", VerifiedAt: now - 30, VerifiedBy: ptr("till 3"), IPAddress: "192.0.2.7", Result: "success", Action: "verify"},
		{ID: "l1", VerifiedAt: now - 60, IPAddress: "192.0.2.7", Result: "failed", Action: "verify", Reason: ptr("CODE_EXPIRED")},
	}
	type codeBody struct {
		contract.Code
		Logs *[]contract.LogEntry `json:"verification_logs"`
	}

	for _, tc := range []struct{ name, path string }{
		{"by value", projectPath(projectA) + "/codes/by-code/A%2BB%2FC%20D"},
		{"by id", projectPath(projectA) + "/codes/" + codeID1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := e.do(req{path: tc.path})
			c := decode[codeBody](t, w)
			if c.ID != codeID1 || c.Code.Code != "A+B/C D" || !c.Status || *c.VerifiedAt != now-30 || *c.VerifiedBy != "till 3" || c.IsExpired {
				t.Errorf("code with its live state: %s", w.Body)
			}
			if c.Logs == nil || len(*c.Logs) != 2 || (*c.Logs)[0].ID != "l2" || *(*c.Logs)[1].Reason != "CODE_EXPIRED" {
				t.Errorf("verification_logs: %s", w.Body)
			}
		})
	}
	t.Run("verification_logs present when empty", func(t *testing.T) {
		e.hot.put(contract.CodeRecord{ID: codeID2, ProjectID: projectA, Code: "NO-LOGS"})
		for _, path := range []string{projectPath(projectA) + "/codes/by-code/NO-LOGS", projectPath(projectA) + "/codes/" + codeID2} {
			w := e.do(req{path: path})
			if c := decode[codeBody](t, w); c.Logs == nil || len(*c.Logs) != 0 || !strings.Contains(w.Body.String(), `"verification_logs":[]`) {
				t.Errorf("%s: %s", path, w.Body)
			}
		}
	})
	t.Run("no live state: the records' state, expired by the project", func(t *testing.T) {
		e2 := newEnv(t)
		k := keyA
		k.ProjectExpiresAt = &projExp
		e2.rec.keys[k.ID] = k
		e2.rec.codes = append(e2.rec.codes, contract.CodeRecord{ID: codeID2, ProjectID: projectA, Code: "COLD", CreatedAt: now - 600})
		w := e2.do(req{path: projectPath(projectA) + "/codes/" + codeID2})
		if c := decode[codeBody](t, w); c.Status || !c.IsExpired || c.ExpiresAt != nil {
			t.Errorf("code of an expired project: %s", w.Body)
		}
	})
	t.Run("logs limited", func(t *testing.T) {
		e2 := newEnv(t)
		e2.reconfigure(t, func(c *httpapi.Config) { c.LogsLimit = 1 })
		e2.rec.codes = append(e2.rec.codes, contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: "X"})
		e2.rec.logs[codeID1] = e.rec.logs[codeID1]
		if c := decode[codeBody](t, e2.do(req{path: projectPath(projectA) + "/codes/" + codeID1})); len(*c.Logs) != 1 {
			t.Errorf("logs with LogsLimit 1: %+v", *c.Logs)
		}
	})
}

func TestNotFound(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		// reads is whether the records were asked for the code.
		reads bool
	}{
		{"unknown code id", projectPath(projectA) + "/codes/" + codeID2, true},
		{"unknown code value", projectPath(projectA) + "/codes/by-code/NOPE", true},
		{"another project's code value", projectPath(projectA) + "/codes/by-code/B-1", true},
		{"another project's code id", projectPath(projectA) + "/codes/" + codeID1, true},
		{"code id too short", projectPath(projectA) + "/codes/0190c0c", false},
		{"code id in upper case", projectPath(projectA) + "/codes/" + strings.ToUpper(codeID2), false},
		{"code id not hex", projectPath(projectA) + "/codes/" + strings.Repeat("g", 32), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.addCode(contract.CodeRecord{ID: codeID1, ProjectID: projectB, Code: "B-1"})
			e.rec.reset()
			w := e.do(req{path: tc.path})
			wantDetail(t, w, http.StatusNotFound, "Code not found")
			if got := len(e.rec.Calls()) > 1; got != tc.reads {
				t.Errorf("records calls %v", e.rec.Calls())
			}
		})
	}
	for _, tc := range []struct{ name, method, path string }{
		{"root", "GET", "/"},
		{"no version", "GET", "/api/projects/" + projectA},
		{"unknown version", "GET", "/api/v2/projects/" + projectA},
		{"projects collection", "GET", "/api/v1/projects"},
		{"unknown sub-resource", "GET", projectPath(projectA) + "/keys"},
		{"unknown project sub-resource", "GET", projectPath(projectA) + "/settings"},
		{"too deep", "GET", projectPath(projectA) + "/codes/" + codeID1 + "/logs"},
		{"unknown POST", "POST", projectPath(projectA) + "/disable"},
		{"POST below a code", "POST", verifyPath(projectA) + "/again"},
		{"double slash", "GET", projectPath(projectA) + "//codes"},
	} {
		t.Run("route "+tc.name, func(t *testing.T) {
			e := newEnv(t)
			w := e.do(req{method: tc.method, path: tc.path})
			wantDetail(t, w, http.StatusNotFound, "Not found")
			// An unknown route is answered before authentication.
			if len(e.rec.Calls()) != 0 || len(e.hot.Calls()) != 0 {
				t.Errorf("unknown route reached the fakes: %v %+v", e.rec.Calls(), e.hot.Calls())
			}
		})
	}
}

func TestMethodNotAllowed(t *testing.T) {
	for _, tc := range []struct{ method, path, allow string }{
		{"DELETE", verifyPath(projectA), "POST"},
		{"PUT", reactPath(projectA), "POST"},
		{"GET", verifyPath(projectA), "POST"},
		{"GET", reactPath(projectA), "POST"},
		{"HEAD", verifyPath(projectA), "POST"},
		{"OPTIONS", reactPath(projectA), "POST"},
		{"PATCH", verifyPath(projectA), "POST"},
		{"TRACE", reactPath(projectA), "POST"},
		{"PROPFIND", verifyPath(projectA), "POST"},
		{"GET", verifyPath(projectB), "POST"},
		{"PUT", projectPath(projectA), "GET"},
		{"POST", projectPath(projectA), "GET"},
		{"DELETE", projectPath(projectA) + "/codes/" + codeID1, "GET"},
		{"PATCH", projectPath(projectA) + "/codes", "GET"},
		{"POST", "/healthz", "GET"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			e := newEnv(t)
			w := e.do(req{method: tc.method, path: tc.path, body: []byte(`{"code":"ABC"}`)})
			wantDetail(t, w, http.StatusMethodNotAllowed, "not allowed")
			wantHeader(t, w, "Allow", tc.allow)
			wantNoOperation(t, e)
		})
	}
}

func TestBadRequest(t *testing.T) {
	e := newEnv(t)
	w := e.do(req{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":42}`)})
	wantDetail(t, w, http.StatusBadRequest, "code")
	wantNoOperation(t, e)
	for _, idem := range []string{"", strings.Repeat("k", 256), "tab\there", "naïve"} {
		e.hot.reset()
		w := e.do(req{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":"ABC"}`), header: map[string]string{"Idempotency-Key": idem}})
		wantDetail(t, w, http.StatusBadRequest, "Idempotency-Key")
		wantNoOperation(t, e)
	}
}

func TestIdempotency(t *testing.T) {
	stored := contract.Outcome{Action: contract.ActionVerify, Code: "ABC", CodeID: codeID1, VerifiedAt: (now - 50) * 1000, At: (now - 50) * 1000}
	t.Run("replayed", func(t *testing.T) {
		e := newEnv(t)
		e.hot.operate = func(op contract.Operation) (contract.OperationResult, error) {
			return contract.OperationResult{Outcome: stored, Replayed: true, Rate: contract.RateState{Remaining: 7}}, nil
		}
		body := []byte(`{"code":"ABC"}`)
		w := e.do(req{method: http.MethodPost, path: verifyPath(projectA), key: &keyLimited, body: body, header: map[string]string{"Idempotency-Key": "order-42"}})
		if r := decode[contract.VerifyResponse](t, w); !r.Success || *r.VerifiedAt != now-50 {
			t.Fatalf("replayed result %s", w.Body)
		}
		wantHeader(t, w, "Idempotent-Replayed", "true")
		wantRateHeaders(t, w, 10, 7, 2)
		// The same body with another nonce is the same request; another body is not.
		e.do(req{method: http.MethodPost, path: verifyPath(projectA), key: &keyLimited, body: body, nonce: newNonce(), header: map[string]string{"Idempotency-Key": "order-42"}})
		e.do(req{method: http.MethodPost, path: verifyPath(projectA), key: &keyLimited, body: []byte(`{"code":"ABD"}`), header: map[string]string{"Idempotency-Key": "order-42"}})
		ops := e.hot.Calls("Verify")
		if len(ops) != 3 || ops[0].Op.IdempotencyKey != "order-42" || ops[0].Op.RequestHash == "" ||
			ops[0].Op.RequestHash != ops[1].Op.RequestHash || ops[0].Op.RequestHash == ops[2].Op.RequestHash {
			t.Errorf("idempotency of the operations: %+v", ops)
		}
		if ops[0].Op.Limit != (contract.RateLimit{Rate: 2, Burst: 10}) {
			t.Errorf("limit %+v", ops[0].Op.Limit)
		}
	})
	t.Run("without a key nothing is idempotent", func(t *testing.T) {
		e := newEnv(t)
		e.do(req{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":"ABC"}`)})
		if ops := e.hot.Calls("Verify"); len(ops) != 1 || ops[0].Op.IdempotencyKey != "" || ops[0].Op.RequestHash != "" {
			t.Errorf("operation %+v", ops)
		}
	})
	t.Run("conflict", func(t *testing.T) {
		e := newEnv(t)
		e.hot.operate = func(op contract.Operation) (contract.OperationResult, error) {
			return contract.OperationResult{Rate: contract.RateState{Remaining: 4}}, contract.ErrIdempotencyConflict
		}
		w := e.do(req{method: http.MethodPost, path: reactPath(projectA), key: &keyLimited, body: []byte(`{"code":"ABC"}`), header: map[string]string{"Idempotency-Key": "order-42"}})
		wantDetail(t, w, http.StatusConflict, "Idempotency-Key")
		wantRateHeaders(t, w, 10, 4, 3)
		if w.Header().Get("Idempotent-Replayed") != "" {
			t.Error("a conflict is marked replayed")
		}
	})
}

func TestTooLarge(t *testing.T) {
	big := append([]byte(`{"code":"ABC"}`), bytes.Repeat([]byte(" "), contract.MaxBodyBytes+1-len(`{"code":"ABC"}`))...)
	for _, chunked := range []bool{false, true} {
		t.Run("chunked="+strconv.FormatBool(chunked), func(t *testing.T) {
			e := newEnv(t)
			w := e.do(req{method: http.MethodPost, path: verifyPath(projectA), body: big, chunked: chunked})
			wantDetail(t, w, http.StatusRequestEntityTooLarge, "64 KiB")
			wantNoOperation(t, e)
		})
	}
	t.Run("before authentication", func(t *testing.T) {
		e := newEnv(t)
		w := e.do(req{method: http.MethodPost, path: verifyPath(projectB), body: big, sig: strings.Repeat("0", 64)})
		wantDetail(t, w, http.StatusRequestEntityTooLarge, "64 KiB")
	})
	t.Run("over the wire", func(t *testing.T) {
		// A real connection: a declared length and a chunked body of 100 KiB, neither read whole.
		// (Under the server's 256 KiB post-handler discard, so it keeps the connection instead of
		// closing it with a half-second linger.)
		e := newEnv(t)
		var mu sync.Mutex
		var seen []string
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, fmt.Sprint(r.ContentLength, r.TransferEncoding))
			mu.Unlock()
			e.srv.ServeHTTP(w, r)
		}))
		defer ts.Close()
		huge := bytes.Repeat([]byte("x"), 100<<10)
		for _, chunked := range []bool{false, true} {
			signed := req{method: http.MethodPost, path: verifyPath(projectA), body: huge}.build()
			hr, err := http.NewRequest(http.MethodPost, ts.URL+signed.URL.Path, bytes.NewReader(huge))
			if err != nil {
				t.Fatal(err)
			}
			hr.Header = signed.Header
			if chunked {
				hr.Body, hr.ContentLength, hr.GetBody = io.NopCloser(bytes.NewReader(huge)), -1, nil
			}
			resp, err := ts.Client().Do(hr)
			if err != nil {
				t.Fatalf("chunked=%v: %v", chunked, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "64 KiB") {
				t.Errorf("chunked=%v: %d %s", chunked, resp.StatusCode, b)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"102400 []", "-1 [chunked]"}; fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Errorf("the server saw bodies %q, want %q", seen, want)
		}
		wantNoOperation(t, e)
	})
}

func TestRateLimited(t *testing.T) {
	limited := func(rs contract.RateState) func(*env) {
		return func(e *env) {
			e.hot.operate = func(contract.Operation) (contract.OperationResult, error) {
				return contract.OperationResult{Rate: rs}, contract.ErrRateLimited
			}
			e.hot.admit = func(contract.Admission) (contract.RateState, error) { return rs, contract.ErrRateLimited }
		}
	}
	for _, tc := range []struct {
		name  string
		r     req
		wait  time.Duration
		after string
	}{
		{"verify", req{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":"ABC"}`)}, 1500 * time.Millisecond, "2"},
		{"reactivate", req{method: http.MethodPost, path: reactPath(projectA), body: []byte(`{"code":"ABC"}`)}, 2 * time.Second, "2"},
		{"a read", req{path: projectPath(projectA)}, 1500 * time.Millisecond, "2"},
		{"a list", req{path: projectPath(projectA) + "/codes"}, 10 * time.Millisecond, "1"},
		{"another project's path", req{path: projectPath(projectB)}, 1500 * time.Millisecond, "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			limited(contract.RateState{Remaining: 0, Wait: tc.wait})(e)
			tc.r.key = &keyLimited
			w := e.do(tc.r)
			wantDetail(t, w, http.StatusTooManyRequests, "Rate limit")
			wantHeader(t, w, "Retry-After", tc.after)
			wantRateHeaders(t, w, 10, 0, 5)
			if calls := e.rec.Calls(); len(calls) != 1 {
				t.Errorf("a limited request read the records: %v", calls)
			}
		})
	}
	t.Run("headers of an admitted request", func(t *testing.T) {
		e := newEnv(t)
		w := e.do(req{path: projectPath(projectA), key: &keyLimited})
		if w.Code != http.StatusOK {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
		wantRateHeaders(t, w, 10, 9, 1)
		if adm := e.hot.Calls("Admit"); len(adm) != 1 || adm[0].Adm.CheckReplay || adm[0].Adm.Limit != (contract.RateLimit{Rate: 2, Burst: 10}) || !adm[0].Adm.Now.Equal(fixedNow) {
			t.Errorf("admissions %+v", adm)
		}
	})
}

// timeoutErr is a network error that timed out, as a driver reports one.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "read tcp 10.0.0.3:6379: i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

// TestFaults: a fault of ours is a bare 500, a dependency down or slow a 503; neither shows
// the error's text, which goes to the log.
func TestFaults(t *testing.T) {
	const secret = "ERR secret-table-xyz at 10.0.0.3"
	plain := errors.New(secret)
	deadline := fmt.Errorf("evalsha %s: %w", secret, context.DeadlineExceeded)
	post := req{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":"ABC"}`)}
	for _, tc := range []struct {
		name   string
		setup  func(*env)
		r      req
		status int
	}{
		{"verify fails", func(e *env) {
			e.hot.operate = func(contract.Operation) (contract.OperationResult, error) { return contract.OperationResult{}, plain }
		}, post, 500},
		{"verify fails with an internal contract error", func(e *env) {
			e.hot.operate = func(contract.Operation) (contract.OperationResult, error) {
				return contract.OperationResult{}, &contract.Error{Kind: contract.KindInternal, Message: secret}
			}
		}, post, 500},
		{"verify panics", func(e *env) {
			e.hot.operate = func(contract.Operation) (contract.OperationResult, error) { panic(secret) }
		}, post, 500},
		{"key lookup fails", func(e *env) { e.rec.keyErr = plain }, req{path: projectPath(projectA)}, 500},
		{"project read fails", func(e *env) { e.rec.err = plain }, req{path: projectPath(projectA)}, 500},
		{"list fails", func(e *env) { e.rec.err = plain }, req{path: projectPath(projectA) + "/codes"}, 500},
		{"live state fails", func(e *env) {
			e.addCode(contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: "ABC"})
			e.hot.liveErr = plain
		}, req{path: projectPath(projectA) + "/codes/" + codeID1}, 500},
		{"admit fails", func(e *env) {
			e.hot.admit = func(contract.Admission) (contract.RateState, error) { return contract.RateState{}, plain }
		}, req{path: projectPath(projectA), nonce: newNonce()}, 500},
		{"verify times out", func(e *env) {
			e.hot.operate = func(contract.Operation) (contract.OperationResult, error) {
				return contract.OperationResult{}, deadline
			}
		}, post, 503},
		{"reactivate hits a network timeout", func(e *env) {
			e.hot.operate = func(contract.Operation) (contract.OperationResult, error) {
				return contract.OperationResult{}, fmt.Errorf("apply: %w", timeoutErr{})
			}
		}, req{method: http.MethodPost, path: reactPath(projectA), body: []byte(`{"code":"ABC"}`)}, 503},
		{"key lookup times out", func(e *env) { e.rec.keyErr = deadline }, post, 503},
		// An adapter that says its dependency is unavailable (Redis LOADING, Postgres starting
		// up) gets a 503 whose detail shows neither the cause nor the refusal's own message.
		{"verify refused: redis unavailable", func(e *env) {
			e.hot.operate = func(contract.Operation) (contract.OperationResult, error) {
				return contract.OperationResult{}, fmt.Errorf("run apply script: %w",
					&contract.Error{Kind: contract.KindUnavailable, Message: secret, Err: errors.New("LOADING Redis is loading the dataset in memory")})
			}
		}, post, 503},
		{"key lookup refused: postgres unavailable", func(e *env) {
			e.rec.keyErr = contract.Unavailable(errors.New("FATAL: the database system is starting up (SQLSTATE 57P03) at " + secret))
		}, req{path: projectPath(projectA)}, 503},
		{"statistics time out", func(e *env) { e.rec.err = deadline }, req{path: projectPath(projectA)}, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tc.setup(e)
			w := e.do(tc.r)
			mention := "Internal server error"
			if ra := w.Header().Get("Retry-After"); (tc.status == 503) != (ra == "1") {
				t.Errorf("status %d with Retry-After %q; a 503, and only a 503, says 1", w.Code, ra)
			}
			if tc.status == 503 {
				mention = "unavailable"
			}
			wantDetail(t, w, tc.status, mention)
			if strings.Contains(w.Body.String(), "secret") || strings.Contains(w.Body.String(), "10.0.0.3") {
				t.Errorf("the detail leaks the error: %s", w.Body)
			}
			if !strings.Contains(e.log.String(), "10.0.0.3") {
				t.Errorf("the error is not logged: %s", e.log)
			}
		})
	}
	t.Run("the request's deadline", func(t *testing.T) {
		// A hot path stuck past the request timeout is a 503, not a hang.
		e := newEnv(t)
		e.reconfigure(t, func(c *httpapi.Config) { c.HotPath, c.RequestTimeout = &stuckHot{e.hot}, 20*time.Millisecond })
		wantDetail(t, e.do(post), http.StatusServiceUnavailable, "unavailable")
	})
}

// stuckHot waits for the request's context on Verify.
type stuckHot struct{ *fakeHot }

func (s *stuckHot) Verify(ctx context.Context, _ contract.Operation) (contract.OperationResult, error) {
	<-ctx.Done()
	return contract.OperationResult{}, fmt.Errorf("evalsha: %w", ctx.Err())
}

func TestReplayedByTheHotPath(t *testing.T) {
	e := newEnv(t)
	e.hot.operate = func(contract.Operation) (contract.OperationResult, error) {
		return contract.OperationResult{Rate: contract.RateState{Remaining: 5}}, contract.ErrReplayed
	}
	w := e.do(req{method: http.MethodPost, path: verifyPath(projectA), key: &keyLimited, body: []byte(`{"code":"ABC"}`), nonce: newNonce()})
	if d := wantDetail(t, w, http.StatusUnauthorized, "Request replayed"); d != "Request replayed" {
		t.Errorf("replay with a nonce: detail %q", d)
	}
	wantRateHeaders(t, w, 10, 5, 3)
	// Without a nonce the detail tells the client to send X-Nonce to repeat a request.
	w = e.do(req{method: http.MethodPost, path: verifyPath(projectA), key: &keyLimited, body: []byte(`{"code":"ABC"}`)})
	if d := wantDetail(t, w, http.StatusUnauthorized, "Request replayed"); d != replayedNoNonce {
		t.Errorf("replay without a nonce: detail %q, want %q", d, replayedNoNonce)
	}
	wantRateHeaders(t, w, 10, 5, 3)
}

func TestHealthz(t *testing.T) {
	e := newEnv(t)
	w := httptest.NewRecorder()
	e.srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if w.Code != http.StatusOK || w.Body.String() != `{"status":"ok"}` {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}
