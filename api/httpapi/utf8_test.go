package httpapi_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/api/httpapi"
)

// TestUTF8Refused sends invalid UTF-8, raw or percent-encoded, and JSON escapes of lone
// surrogates in every field and query a client sends, and wants a 400 that says so, before
// anything decodes them: encoding/json would have rewritten them to U+FFFD, so "X\xff\xfe"
// answered CODE_NOT_FOUND for the code "X\uFFFD\uFFFD" (which exists here, so a rewrite would
// show) and verified_by "x\xc3(y" was stored as "x\uFFFD(y". A refused request changes
// nothing: the hot path sees no verify, reactivate or admission, the records no read, the code
// stays unused and the X-Nonce stays unspent.
func TestUTF8Refused(t *testing.T) {
	e := newEnv(t)
	const value = "UTF-1"
	e.addCode(contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: value, CreatedAt: now - 60})
	e.addCode(contract.CodeRecord{ID: codeID2, ProjectID: projectA, Code: "X\uFFFD\uFFFD", CreatedAt: now - 60})
	vpath, rpath := verifyPath(projectA), reactPath(projectA)
	list := projectPath(projectA) + "/codes"
	const (
		body  = "Request body must be valid UTF-8"
		query = "Query string must be valid UTF-8 once percent-decoded"
	)
	for _, c := range []struct {
		name, method, path, query, body, mention string
	}{
		{"code with invalid bytes", "POST", vpath, "", "{\"code\":\"X\xff\xfe\"}", body + " (invalid byte at offset 10)"},
		{"code as the UTF-8 of a surrogate", "POST", vpath, "", "{\"code\":\"\xed\xa0\x80\"}", body},
		{"verified_by with a truncated sequence", "POST", vpath, "", "{\"code\":\"UTF-1\",\"verified_by\":\"x\xc3(y\"}", body + " (invalid byte at offset 32)"},
		{"reactivated_by with a truncated sequence", "POST", rpath, "", "{\"code\":\"UTF-1\",\"reactivated_by\":\"\xe2\x82\"}", body},
		{"reason with an invalid byte", "POST", rpath, "", "{\"code\":\"UTF-1\",\"reason\":\"refund \xff\"}", body},
		{"invalid byte outside any string", "POST", vpath, "", "{\"code\":\"UTF-1\"}\xff", body},
		{"code with a lone high surrogate escape", "POST", vpath, "", `{"code":"X\ud800"}`, body + `: the JSON escape \ud800 at offset 10 is half a surrogate pair`},
		{"verified_by with a lone low surrogate escape", "POST", vpath, "", `{"code":"UTF-1","verified_by":"\uDC00"}`, `\uDC00`},
		{"reactivated_by with two high surrogates", "POST", rpath, "", `{"code":"UTF-1","reactivated_by":"\ud83d\ud83d"}`, `\ud83d`},
		{"reason with a high surrogate then a letter", "POST", rpath, "", `{"code":"UTF-1","reason":"\ud83dx"}`, `\ud83d`},
		{"search percent-encoded", "GET", list, "search=%ff", "", query},
		{"search after good characters", "GET", list, "search=X%FF%FE", "", query},
		{"search as the UTF-8 of a surrogate", "GET", list, "search=%ed%a0%80", "", query},
		{"search as a raw byte", "GET", list, "search=X\xff", "", query},
		{"a parameter no handler reads", "GET", list, "page=1&foo=%c3(", "", query},
		{"a parameter name", "GET", list, "%ff=1", "", query},
		{"query of the statistics", "GET", projectPath(projectA) + "/statistics", "x=%ff", "", query},
		{"query of by-code", "GET", list + "/by-code/UTF-1", "x=%ff", "", query},
		{"query of verify", "POST", vpath, "x=%ff", `{"code":"UTF-1"}`, query},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.hot.reset()
			e.rec.reset()
			nonce := newNonce()
			r := req{method: c.method, path: c.path, query: c.query, nonce: nonce}
			if c.body != "" {
				r.body = []byte(c.body)
			}
			w := e.do(r)
			wantDetail(t, w, http.StatusBadRequest, c.mention)
			wantNoOperation(t, e)
			wantNoRead(t, e)
			for _, v := range []string{value, "X\uFFFD\uFFFD"} {
				if code, _ := e.hot.live(projectA, v); code.VerifiedAtMs != 0 || code.Version != 0 {
					t.Fatalf("%q after a refused request: %+v", v, code)
				}
			}
			// The refused request did not spend its nonce.
			if w := e.do(req{path: list, query: "page=1", nonce: nonce}); w.Code != http.StatusOK {
				t.Fatalf("a correct read with the nonce of the refused one: %d %s", w.Code, w.Body)
			}
		})
	}

	t.Run("accepted", func(t *testing.T) {
		// A surrogate pair is one character, an escaped backslash no escape, U+FFFD sent as
		// itself a character like any other; a percent-encoded UTF-8 search is read decoded.
		e.addCode(contract.CodeRecord{ID: "0190c0c0000070008000000000000003", ProjectID: projectA, Code: "X😀", CreatedAt: now - 60})
		e.hot.reset()
		w := e.do(req{method: http.MethodPost, path: vpath, body: []byte(`{"code":"X\ud83d\ude00","verified_by":"\u00e9\\ud800"}`)})
		if o := decode[contract.VerifyResponse](t, w); !o.Success || o.Code != "X😀" {
			t.Fatalf("verify with a surrogate pair: %s", w.Body)
		}
		w = e.do(req{method: http.MethodPost, path: vpath, body: []byte(`{"code":"X\ufffd\uFFFD"}`)})
		if o := decode[contract.VerifyResponse](t, w); !o.Success || o.Code != "X\uFFFD\uFFFD" {
			t.Fatalf("verify of a code spelling U+FFFD: %s", w.Body)
		}
		ops := e.hot.Calls("Verify")
		if len(ops) != 2 || ops[0].Op.Code != "X😀" || ops[0].Op.By != `é\ud800` || ops[1].Op.Code != "X\uFFFD\uFFFD" {
			t.Fatalf("operations %+v", ops)
		}
		e.rec.reset()
		w = e.do(req{path: list, query: "search=%C3%A9%F0%9F%98%80"})
		decode[contract.CodePage](t, w)
		if q := e.rec.queries; len(q) == 0 || q[len(q)-1].Search != "é😀" {
			t.Fatalf("list queries %+v", q)
		}
	})
}

// FuzzUTF8Verify sends arbitrary bytes as a verify body and as a percent-encoded search through
// the handler: whatever is not valid UTF-8 is a 400 saying so that reaches neither the hot path
// nor the records, and whatever reaches the hot path carries no U+FFFD the body did not spell
// out (nothing was rewritten on the way).
func FuzzUTF8Verify(f *testing.F) {
	for _, s := range []struct{ body, search string }{
		{`{"code":"UTF-1"}`, "UTF"}, {"{\"code\":\"X\xff\xfe\"}", "X\xff\xfe"},
		{"{\"code\":\"UTF-1\",\"verified_by\":\"x\xc3(y\"}", "x\xc3(y"}, {`{"code":"X\ud800"}`, "\xed\xa0\x80"},
		{`{"code":"X\ud83d\ude00","verified_by":"\\ud800"}`, "é😀"}, {`{"code":"\udc00\ud800"}`, ""},
	} {
		f.Add([]byte(s.body), s.search)
	}
	e := newEnv(f)
	// A long run answers millions of 400s: their log lines would pile up in memory.
	e.reconfigure(f, func(c *httpapi.Config) { c.Logger = slog.New(slog.DiscardHandler) })
	e.addCode(contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: "UTF-1", CreatedAt: now - 60})
	f.Fuzz(func(t *testing.T, body []byte, search string) {
		if len(body) > contract.MaxBodyBytes {
			return
		}
		e.hot.reset()
		e.rec.reset()
		w := e.do(req{method: http.MethodPost, path: verifyPath(projectA), body: body, nonce: newNonce()})
		ops := e.hot.Calls("Verify")
		if !utf8.Valid(body) {
			wantDetail(t, w, http.StatusBadRequest, "Request body must be valid UTF-8")
			wantNoOperation(t, e)
			wantNoRead(t, e)
		}
		if len(ops) == 1 && !bytes.Contains(bytes.ToLower(body), []byte("fffd")) && !bytes.Contains(body, []byte("\uFFFD")) {
			if op := ops[0].Op; strings.ContainsRune(op.Code+op.By+op.Reason, utf8.RuneError) {
				t.Fatalf("body %q reached the hot path rewritten: %+v", body, op)
			}
		}

		e.hot.reset()
		e.rec.reset()
		w = e.do(req{path: projectPath(projectA) + "/codes", query: "search=" + url.QueryEscape(search), nonce: newNonce()})
		if !utf8.ValidString(search) {
			wantDetail(t, w, http.StatusBadRequest, "Query string must be valid UTF-8")
			wantNoOperation(t, e)
			wantNoRead(t, e)
		} else if w.Code == http.StatusBadRequest && strings.Contains(w.Body.String(), "UTF-8") {
			t.Fatalf("search %q refused: %s", search, w.Body)
		}
	})
}
