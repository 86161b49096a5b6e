package httpapi_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/acv/acv/api/contract"
)

// The original SDKs' query encodings, written out by hand from their languages' definitions.

func sdkEscape(s string, keep string, spacePlus bool) string {
	const hexUpper = "0123456789ABCDEF"
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte(keep, c) >= 0:
			b.WriteByte(c)
		case c == ' ' && spacePlus:
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hexUpper[c>>4])
			b.WriteByte(hexUpper[c&15])
		}
	}
	return b.String()
}

// quotePlus is Python's urllib.parse.quote_plus; encodeURIComponent is JavaScript's.
func quotePlus(s string) string          { return sdkEscape(s, "_.-~", true) }
func encodeURIComponent(s string) string { return sdkEscape(s, "-_.!~*'()", false) }

type qp struct{ k, v string }

func joinPairs(pairs []qp, enc func(string) string) string {
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = enc(p.k) + "=" + enc(p.v)
	}
	return strings.Join(parts, "&")
}

func sortedPairs(pairs []qp) []qp {
	out := append([]qp(nil), pairs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].k != out[j].k {
			return out[i].k < out[j].k
		}
		return out[i].v < out[j].v
	})
	return out
}

func hmacSign(secret, s string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil))
}

func getSTS(path, query, nonce string) string {
	s := "GET\n" + path + "\n" + query + "\n" + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" + "\n" + "1800000000"
	if nonce != "" {
		s += "\n" + nonce
	}
	return s
}

// TestSDKQueryEncodings: a list request signed exactly as each original SDK signs it, and sent
// as it sends it, is accepted, and the handler reads the search the caller meant.
func TestSDKQueryEncodings(t *testing.T) {
	e := newEnv(t)
	path := projectPath(projectA) + "/codes"
	searches := []string{"a b", "a+b", "50%", "x&y=z", "!'()*", "it's (new)*!", "é漢😀", "a/b?c", "%2B", "one + two = 100% & more!"}
	for _, search := range searches {
		params := []qp{{"status", "used"}, {"search", search}, {"page", "1"}}
		sortedPy := joinPairs(sortedPairs(params), quotePlus)
		jsSigned := joinPairs(sortedPairs(params), encodeURIComponent)
		jsWire := strings.ReplaceAll(joinPairs(params, encodeURIComponent), "'", "%27")
		for _, f := range []struct{ name, sent, signed string }{
			{"python SDK", joinPairs(params, quotePlus), sortedPy},
			{"typescript SDK", jsWire, jsSigned},
			{"typescript SDK, quote as is", joinPairs(params, encodeURIComponent), jsSigned},
			{"original server form", jsWire, sortedPy},
		} {
			for _, nonce := range []string{"", newNonce()} {
				e.rec.reset()
				w := e.do(req{path: path, query: f.sent, nonce: nonce, sig: hmacSign(keyA.Secret, getSTS(path, f.signed, nonce))})
				if w.Code != http.StatusOK {
					t.Errorf("%s, search %q, nonce %q: sent %q signed %q: %d %s", f.name, search, nonce, f.sent, f.signed, w.Code, w.Body)
					continue
				}
				want := contract.ListQuery{Page: 1, PageSize: 20, State: contract.StateUsed, Search: search}
				if q := e.rec.queries; len(q) != 1 || q[0] != want {
					t.Errorf("%s, search %q: the handler read %+v, want %+v", f.name, search, q, want)
				}
			}
		}
		// A signature over the SDK's encoding of one search never passes for another.
		other := []qp{{"status", "used"}, {"search", search + " "}, {"page", "1"}}
		w := e.do(req{path: path, query: joinPairs(other, quotePlus), sig: hmacSign(keyA.Secret, getSTS(path, sortedPy, ""))})
		wantDetail(t, w, http.StatusUnauthorized, badCredentials)
	}
}

// TestSDKEncodingsShareOneReplayIdentity: a request accepted under one encoding and re-sent in
// another, with the same signature and nonce, is a replay: the identity comes from the
// verified signature (or the nonce), not from the encoding that matched.
func TestSDKEncodingsShareOneReplayIdentity(t *testing.T) {
	e := newEnv(t)
	path := projectPath(projectA) + "/codes"
	params := []qp{{"search", "it's a b"}, {"page", "1"}}
	nonce := newNonce()
	sig := hmacSign(keyA.Secret, getSTS(path, joinPairs(sortedPairs(params), quotePlus), nonce))
	if w := e.do(req{path: path, query: joinPairs(params, quotePlus), nonce: nonce, sig: sig}); w.Code != http.StatusOK {
		t.Fatalf("first: %d %s", w.Code, w.Body)
	}
	for _, sent := range []string{
		joinPairs(params, encodeURIComponent),
		strings.ReplaceAll(joinPairs(params, encodeURIComponent), "'", "%27"),
		"page=1&search=it%27s%20a%20b",
	} {
		wantDetail(t, e.do(req{path: path, query: sent, nonce: nonce, sig: sig}), http.StatusUnauthorized, "Request replayed")
	}
	adm := e.hot.Calls("Admit")
	for _, a := range adm {
		if a.Adm.ReplayKey != contract.ReplayIdentity(sig, nonce) {
			t.Errorf("replay key %q, want %q", a.Adm.ReplayKey, contract.ReplayIdentity(sig, nonce))
		}
	}
}

// TestRepeatedQueryKeys: every value of a repeated key is signed in the SDK encodings; the
// original server's form, which signs only the last value, is refused when the first value
// (the one the handler reads) differs from it.
func TestRepeatedQueryKeys(t *testing.T) {
	e := newEnv(t)
	path := projectPath(projectA) + "/codes"
	sent := "search=a+b&page=1&search=zz"
	for _, c := range []struct {
		name, signed string
		status       int
	}{
		{"as sent", "page=1&search=a+b&search=zz", 200},
		{"python, every value", "page=1&search=a+b&search=zz", 200},
		{"javascript, every value", "page=1&search=a%20b&search=zz", 200},
		{"last value only", "page=1&search=zz", 401},
		{"first value only", "page=1&search=a+b", 401},
	} {
		e.rec.reset()
		w := e.do(req{path: path, query: sent, sig: hmacSign(keyA.Secret, getSTS(path, c.signed, ""))})
		if w.Code != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, w.Code, w.Body, c.status)
			continue
		}
		if c.status == 200 {
			if q := e.rec.queries; len(q) != 1 || q[0].Search != "a b" {
				t.Errorf("%s: the handler read %+v", c.name, q)
			}
		}
	}
}

// TestDecodedPathForm: the original server signed the percent-decoded path.
func TestDecodedPathForm(t *testing.T) {
	e := newEnv(t)
	e.addCode(contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: "A/B Cé", CreatedAt: now - 60})
	raw := projectPath(projectA) + "/codes/by-code/A%2FB%20C%C3%A9"
	decoded := projectPath(projectA) + "/codes/by-code/A/B Cé"
	for _, signedPath := range []string{raw, decoded} {
		w := e.do(req{path: raw, sig: hmacSign(keyA.Secret, getSTS(signedPath, "", ""))})
		if c := decode[contract.Code](t, w); c.Code != "A/B Cé" {
			t.Errorf("signed over %q: %+v", signedPath, c)
		}
	}
	// Any other spelling of the path is not what was signed.
	w := e.do(req{path: raw, sig: hmacSign(keyA.Secret, getSTS(projectPath(projectA)+"/codes/by-code/A%2fB%20C%c3%a9", "", ""))})
	wantDetail(t, w, http.StatusUnauthorized, badCredentials)
}
