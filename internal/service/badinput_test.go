package service_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/acv/acv/api/contract"
)

// TestBadInput sends every kind of malformed request the contract names to a running stack:
// each is refused with the contract's status and a {"detail": sentence} body, and changes
// nothing. The code it names stays unused, no verification log is written, and its X-Nonce is
// not spent: the corrected request, sent afterwards with the same nonce, is accepted.
func TestBadInput(t *testing.T) {
	s := newStack(t)
	base := s.startAPI()
	s.startRelay("relay", hooksNone)
	s.startConsumer(hooksNone)
	tn := s.newTenant(nil)
	sg := ctSignerFor(t, s, base, tn.Key)
	vpath, rpath := ctVerifyPath(tn.ProjectID), ctReactivatePath(tn.ProjectID)
	long := func(n int) string { return strings.Repeat("x", n) }

	type bodyCase struct {
		name    string
		path    string
		body    string // %[1]s is the code value of the case
		status  int
		mention string // a word the detail must contain
		chunked bool
	}
	cases := []bodyCase{
		{"malformed JSON", vpath, `{"code":"%[1]s",`, 400, "JSON", false},
		{"not JSON", vpath, `code=%[1]s`, 400, "JSON", false},
		{"JSON array", vpath, `["%[1]s"]`, 400, "object", false},
		{"JSON null", vpath, `null`, 400, "code", false},
		{"JSON string", vpath, `"%[1]s"`, 400, "object", false},
		{"JSON number", vpath, `42`, 400, "object", false},
		{"empty body", vpath, ``, 400, "code", false},
		{"missing code", vpath, `{"verified_by":"%[1]s"}`, 400, "code", false},
		{"code null", vpath, `{"code":null}`, 400, "code", false},
		{"code a number", vpath, `{"code":123}`, 400, "code", false},
		{"code an object", vpath, `{"code":{"value":"%[1]s"}}`, 400, "code", false},
		{"code a list", rpath, `{"code":["%[1]s"]}`, 400, "code", false},
		{"verified_by a number", vpath, `{"code":"%[1]s","verified_by":7}`, 400, "verified_by", false},
		{"reactivated_by a boolean", rpath, `{"code":"%[1]s","reactivated_by":true}`, 400, "reactivated_by", false},
		{"reason a number", rpath, `{"code":"%[1]s","reason":1}`, 400, "reason", false},
		{"empty code", vpath, `{"code":"","verified_by":"%[1]s"}`, 400, "code", false},
		{"code of 101 characters", vpath, `{"code":"%[1]s` + long(101-5) + `"}`, 400, "100", false},
		{"code with U+0001", vpath, `{"code":"%[1]s\u0001"}`, 400, "control", false},
		{"code with DEL", vpath, `{"code":"%[1]s\u007f"}`, 400, "control", false},
		{"code with a newline", rpath, `{"code":"%[1]s\n"}`, 400, "control", false},
		{"verified_by of 101 characters", vpath, `{"code":"%[1]s","verified_by":"` + long(101) + `"}`, 400, "verified_by", false},
		{"verified_by with a control character", vpath, `{"code":"%[1]s","verified_by":"a\u0007b"}`, 400, "verified_by", false},
		{"reactivated_by of 101 characters", rpath, `{"code":"%[1]s","reactivated_by":"` + long(101) + `"}`, 400, "reactivated_by", false},
		{"reason of 501 characters", rpath, `{"code":"%[1]s","reason":"` + long(501) + `"}`, 400, "reason", false},
		{"trailing object", vpath, `{"code":"%[1]s"} {"code":"%[1]s"}`, 400, "JSON", false},
		{"trailing brace", vpath, `{"code":"%[1]s"}}`, 400, "JSON", false},
		{"trailing bracket", vpath, `{"code":"%[1]s"}]`, 400, "JSON", false},
		{"1 MiB body", vpath, `{"code":"%[1]s","verified_by":"` + long(1<<20) + `"}`, 413, "64 KiB", false},
		{"just over 64 KiB", vpath, `{"code":"%[1]s"}` + strings.Repeat(" ", contract.MaxBodyBytes+1-len(`{"code":"BI-00"}`)), 413, "64 KiB", false},
		{"just over 64 KiB, chunked", vpath, `{"code":"%[1]s"}` + strings.Repeat(" ", contract.MaxBodyBytes+1-len(`{"code":"BI-00"}`)), 413, "64 KiB", true},
	}
	values := make([]string, len(cases))
	for i := range cases {
		values[i] = fmt.Sprintf("BI-%02d", i)
	}
	s.importCodes(tn.ProjectID, nil, values...)
	nonces := make([]string, len(cases))

	t.Run("body", func(t *testing.T) {
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				body := []byte(c.body)
				if strings.Contains(c.body, "%[1]s") {
					body = []byte(fmt.Sprintf(c.body, values[i]))
				}
				if c.status == 413 && c.name != "1 MiB body" && len(body) != contract.MaxBodyBytes+1 {
					t.Fatalf("test body is %d bytes, want %d", len(body), contract.MaxBodyBytes+1)
				}
				nonces[i] = ctNonce()
				r := sg.with(t).send(ctReq{Method: http.MethodPost, Path: c.path, Body: body, Nonce: nonces[i], Chunked: c.chunked})
				ctWantDetail(t, r, c.status, c.mention)
				if code := ctCode(t, sg, tn.ProjectID, values[i]); code.Status || code.VerifiedAt != nil {
					t.Fatalf("%s after a refused request: %+v", values[i], code)
				}
			})
		}
	})
	t.Run("nothing changed", func(t *testing.T) {
		// The corrected request with the nonce of the refused one is accepted and redeems the
		// code; once the pipeline delivered its log, that log is the code's only one.
		for i, v := range values {
			if nonces[i] == "" {
				continue
			}
			var o ctOutcome
			sg.with(t).send(ctReq{Method: http.MethodPost, Path: vpath, Body: []byte(`{"code":"` + v + `"}`), Nonce: nonces[i]}).
				decode(t, http.StatusOK, &o)
			if !o.Success {
				t.Errorf("%s (%s): the corrected verify answered %+v", v, cases[i].name, o)
			}
		}
		for i, v := range values {
			t.Run(cases[i].name, func(t *testing.T) { ctWaitLogs(t, s, ctCodeID(t, s, tn.ProjectID, v), 1) })
		}
	})

	t.Run("limits accepted", func(t *testing.T) {
		// The limits count characters, not bytes, and are inclusive; a body of exactly 64 KiB
		// is accepted.
		code := strings.Repeat("é", contract.MaxCodeLen)
		by := strings.Repeat("ü", contract.MaxByLen)
		reason := strings.Repeat("ß", contract.MaxReasonLen)
		s.importCodes(tn.ProjectID, nil, code, "BI-EXACT")
		var o ctOutcome
		sg.with(t).post(vpath, map[string]any{"code": code, "verified_by": by}, nil).decode(t, http.StatusOK, &o)
		if !o.Success {
			t.Fatalf("verify of a 100-character code: %+v", o)
		}
		sg.with(t).post(rpath, map[string]any{"code": code, "reactivated_by": by, "reason": reason}, nil).decode(t, http.StatusOK, &o)
		if !o.Success {
			t.Fatalf("reactivate with 100-character reactivated_by and 500-character reason: %+v", o)
		}
		body := []byte(`{"code":"BI-EXACT"}`)
		body = append(body, bytes.Repeat([]byte(" "), contract.MaxBodyBytes-len(body))...)
		sg.with(t).send(ctReq{Method: http.MethodPost, Path: vpath, Body: body, Nonce: ctNonce()}).decode(t, http.StatusOK, &o)
		if !o.Success {
			t.Fatalf("verify with a body of exactly 64 KiB: %+v", o)
		}
		ctWaitLogs(t, s, ctCodeID(t, s, tn.ProjectID, code), 2)
		c := ctCode(t, sg, tn.ProjectID, code)
		if l := c.VerificationLogs; len(l) != 2 || ctDeref(l[0].Reason) != reason || ctDeref(l[0].VerifiedBy) != by || ctDeref(l[1].VerifiedBy) != by {
			t.Fatalf("logs of the 100-character code: %+v", l)
		}
	})

	t.Run("query and path", func(t *testing.T) {
		list := ctProject(tn.ProjectID) + "/codes"
		byCode := ctProject(tn.ProjectID) + "/codes/by-code/"
		for _, c := range []struct {
			name, path, query, mention string
		}{
			{"unknown status", list, "status=active", "status"},
			{"status in upper case", list, "status=USED", "status"},
			{"empty status", list, "status=", "status"},
			{"page 0", list, "page=0", "page"},
			{"negative page", list, "page=-1", "page"},
			{"page abc", list, "page=abc", "page"},
			{"fractional page", list, "page=1.5", "page"},
			{"empty page", list, "page=", "page"},
			{"page_size 0", list, "page_size=0", "page_size"},
			{"page_size 101", list, "page_size=101", "page_size"},
			{"page_size abc", list, "page_size=abc", "page_size"},
			{"search with a control character", list, "search=a%01b", "search"},
			{"search of 101 characters", list, "search=" + long(101), "search"},
			{"by-code with U+0001", byCode + "A%01B", "", "control"},
			{"by-code with NUL", byCode + "%00", "", "control"},
			{"by-code of 101 characters", byCode + long(101), "", "100"},
			{"by-code not UTF-8", byCode + "A%FFB", "", "UTF-8"},
		} {
			t.Run(c.name, func(t *testing.T) {
				sg := sg.with(t)
				nonce := ctNonce()
				ctWantDetail(t, sg.send(ctReq{Method: http.MethodGet, Path: c.path, Query: c.query, Nonce: nonce}), http.StatusBadRequest, c.mention)
				// The refused read did not spend its nonce.
				if r := sg.send(ctReq{Method: http.MethodGet, Path: list, Query: "page=1", Nonce: nonce}); r.Status != http.StatusOK {
					t.Fatalf("a correct read with the nonce of the refused one: %d %s", r.Status, r.Body)
				}
			})
		}
	})
}
