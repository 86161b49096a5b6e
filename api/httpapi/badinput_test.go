package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/acv/acv/internal/testkit"

	"github.com/acv/acv/api/contract"
)

// TestBadInput is internal/service's TestBadInput against the adapter alone: every kind of
// malformed request the contract names is refused with its status and a {"detail": sentence}
// body, and changes nothing: the hot path sees no verify, reactivate or admission for it, the
// code it names stays unused, and its X-Nonce is not spent, so the corrected request sent
// afterwards with the same nonce is accepted. The end-to-end version stays in internal/service.
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	vpath, rpath := verifyPath(projectA), reactPath(projectA)
	cases := testkit.BadBodies(vpath, rpath)
	values := make([]string, len(cases))
	for i := range cases {
		values[i] = testkit.BadBodyValue(i)
		e.addCode(contract.CodeRecord{ID: fmt.Sprintf("0190c0c00000700080000000000002%02d", i), ProjectID: projectA, Code: values[i], CreatedAt: now - 60})
	}
	nonces := make([]string, len(cases))

	t.Run("body", func(t *testing.T) {
		for i, c := range cases {
			t.Run(c.Name, func(t *testing.T) {
				body := []byte(c.Body)
				if strings.Contains(c.Body, "%[1]s") {
					body = []byte(fmt.Sprintf(c.Body, values[i]))
				}
				if c.Status == 413 && c.Name != "1 MiB body" && len(body) != contract.MaxBodyBytes+1 {
					t.Fatalf("test body is %d bytes, want %d", len(body), contract.MaxBodyBytes+1)
				}
				e.hot.reset()
				nonces[i] = newNonce()
				w := e.do(req{method: http.MethodPost, path: c.Path, body: body, nonce: nonces[i], chunked: c.Chunked})
				wantDetail(t, w, c.Status, c.Mention)
				wantNoOperation(t, e)
				if code, _ := e.hot.live(projectA, values[i]); code.VerifiedAtMs != 0 || code.Version != 0 {
					t.Fatalf("%s after a refused request: %+v", values[i], code)
				}
			})
		}
	})
	t.Run("nothing changed", func(t *testing.T) {
		// The corrected request with the nonce of the refused one is accepted and redeems the code.
		for i, v := range values {
			if nonces[i] == "" {
				continue
			}
			e.hot.reset()
			w := e.do(req{method: http.MethodPost, path: vpath, body: []byte(`{"code":"` + v + `"}`), nonce: nonces[i]})
			if o := decode[contract.VerifyResponse](t, w); !o.Success {
				t.Errorf("%s (%s): the corrected verify answered %s", v, cases[i].Name, w.Body)
			}
			if ops := e.hot.Calls("Verify"); len(ops) != 1 || ops[0].Op.ReplayKey != contract.ReplayIdentity("", nonces[i]) || ops[0].Op.Code != v {
				t.Errorf("%s: hot-path calls %+v", v, ops)
			}
		}
	})

	t.Run("limits accepted", func(t *testing.T) {
		// The limits count characters, not bytes, and are inclusive; a body of exactly 64 KiB
		// is accepted.
		code := strings.Repeat("é", contract.MaxCodeLen)
		by := strings.Repeat("ü", contract.MaxByLen)
		reason := strings.Repeat("ß", contract.MaxReasonLen)
		e.addCode(contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: code})
		e.addCode(contract.CodeRecord{ID: codeID2, ProjectID: projectA, Code: "BI-EXACT"})
		e.hot.reset()
		w := e.do(req{method: http.MethodPost, path: vpath, body: []byte(`{"code":"` + code + `","verified_by":"` + by + `"}`)})
		if o := decode[contract.VerifyResponse](t, w); !o.Success || o.Code != code {
			t.Fatalf("verify of a 100-character code: %s", w.Body)
		}
		w = e.do(req{method: http.MethodPost, path: rpath, body: []byte(`{"code":"` + code + `","reactivated_by":"` + by + `","reason":"` + reason + `"}`)})
		if o := decode[contract.ReactivateResponse](t, w); !o.Success {
			t.Fatalf("reactivate with 100-character reactivated_by and 500-character reason: %s", w.Body)
		}
		body := []byte(`{"code":"BI-EXACT"}`)
		body = append(body, bytes.Repeat([]byte(" "), contract.MaxBodyBytes-len(body))...)
		for _, chunked := range []bool{false, true} {
			w = e.do(req{method: http.MethodPost, path: vpath, body: body, nonce: newNonce(), chunked: chunked})
			if w.Code != http.StatusOK {
				t.Fatalf("verify with a body of exactly 64 KiB (chunked=%v): %d %s", chunked, w.Code, w.Body)
			}
		}
		ops := e.hot.Calls("Verify", "Reactivate")
		if len(ops) != 4 || ops[0].Op.By != by || ops[1].Op.By != by || ops[1].Op.Reason != reason || ops[2].Op.Code != "BI-EXACT" {
			t.Fatalf("operations %+v", ops)
		}
	})

	t.Run("query and path", func(t *testing.T) {
		list := projectPath(projectA) + "/codes"
		byCode := projectPath(projectA) + "/codes/by-code/"
		for _, c := range []struct {
			name, path, query, mention string
			status                     int
		}{
			{"unknown status", list, "status=active", "status", 400},
			{"status in upper case", list, "status=USED", "status", 400},
			// internal/service's TestBadInput refuses an empty status; the contract says "status=all
			// and an empty status mean no filter", and this file follows the contract.
			{"empty status", list, "status=", "", 200},
			{"status all", list, "status=all", "", 200},
			{"page 0", list, "page=0", "page", 400},
			{"negative page", list, "page=-1", "page", 400},
			{"page abc", list, "page=abc", "page", 400},
			{"fractional page", list, "page=1.5", "page", 400},
			{"empty page", list, "page=", "page", 400},
			{"page_size 0", list, "page_size=0", "page_size", 400},
			{"page_size 101", list, "page_size=101", "page_size", 400},
			{"page_size abc", list, "page_size=abc", "page_size", 400},
			{"search with a control character", list, "search=a%01b", "search", 400},
			{"search of 101 characters", list, "search=" + strings.Repeat("x", 101), "search", 400},
			{"by-code with U+0001", byCode + "A%01B", "", "control", 400},
			{"by-code with NUL", byCode + "%00", "", "control", 400},
			{"by-code of 101 characters", byCode + strings.Repeat("x", 101), "", "100", 400},
			{"by-code not UTF-8", byCode + "A%FFB", "", "UTF-8", 400},
		} {
			t.Run(c.name, func(t *testing.T) {
				e.hot.reset()
				e.rec.reset()
				nonce := newNonce()
				w := e.do(req{path: c.path, query: c.query, nonce: nonce})
				if c.status == http.StatusOK {
					decode[contract.CodePage](t, w)
					if q := e.rec.queries; len(q) != 1 || q[0].State != "" {
						t.Errorf("list queries %+v, want no state filter", q)
					}
					return
				}
				wantDetail(t, w, c.status, c.mention)
				wantNoOperation(t, e)
				wantNoRead(t, e)
				// The refused read did not spend its nonce.
				if w := e.do(req{path: list, query: "page=1", nonce: nonce}); w.Code != http.StatusOK {
					t.Fatalf("a correct read with the nonce of the refused one: %d %s", w.Code, w.Body)
				}
				if adm := e.hot.Calls("Admit"); len(adm) != 1 || adm[0].Adm.ReplayKey != contract.ReplayIdentity("", nonce) || !adm[0].Adm.CheckReplay {
					t.Errorf("admissions %+v", adm)
				}
			})
		}
	})
}
