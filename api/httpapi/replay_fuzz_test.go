package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/acv/acv/api/contract"
)

// respell is a captured request re-sent by someone without the secret: the same signature, its
// letters' case flipped where mask says, the timestamp re-spelled, the query pairs reordered, a
// header sent twice. None of it may make the server accept the request a second time.
type respell struct {
	caseMask uint64
	tsPrefix string // written before the timestamp digits
	tsSuffix string // written after them
	perm     uint8  // reorders the query pairs
	dup      string // a header name to send twice
	nonceMod uint8  // 1: flip the nonce's case, 2: pad it with '-'
}

// signedReq is one request exactly as it goes on the wire, with what it signed.
type signedReq struct {
	method, path, query, ts, nonce, sig string
	body                                []byte
}

func (r signedReq) httpRequest() *http.Request {
	target := r.path
	if r.query != "" {
		target += "?" + r.query
	}
	var hr *http.Request
	if r.body != nil {
		hr = httptest.NewRequest(r.method, target, strings.NewReader(string(r.body)))
		hr.Header.Set("Content-Type", "application/json")
	} else {
		hr = httptest.NewRequest(r.method, target, nil)
	}
	hr.Header.Set("X-API-Key", keyA.ID)
	hr.Header.Set("X-Timestamp", r.ts)
	hr.Header.Set("X-Signature", r.sig)
	if r.nonce != "" {
		hr.Header.Set("X-Nonce", r.nonce)
	}
	return hr
}

// stringToSign is what the server verifies the request against.
func (r signedReq) stringToSign() string {
	return contract.StringToSign(r.method, r.path, r.query, contract.BodySHA256(r.body), r.ts, r.nonce)
}

func (r signedReq) signed(secret string) signedReq {
	r.sig = contract.Sign(secret, r.stringToSign())
	return r
}

func (v respell) apply(r signedReq) (signedReq, *http.Request) {
	b := []byte(r.sig)
	for i := range b {
		if v.caseMask&(1<<(i%64)) != 0 && unicode.IsLetter(rune(b[i])) {
			b[i] ^= 0x20
		}
	}
	r.sig = string(b)
	r.ts = v.tsPrefix + r.ts + v.tsSuffix
	if pairs := strings.Split(r.query, "&"); r.query != "" && len(pairs) > 1 {
		for i := 0; i < int(v.perm)%7; i++ {
			j := (i + int(v.perm)) % len(pairs)
			pairs[0], pairs[j] = pairs[j], pairs[0]
		}
		r.query = strings.Join(pairs, "&")
	}
	switch v.nonceMod % 3 {
	case 1:
		r.nonce = strings.Map(func(c rune) rune {
			if unicode.IsLower(c) {
				return unicode.ToUpper(c)
			}
			return c
		}, r.nonce)
	case 2:
		if r.nonce != "" {
			r.nonce += "-"
		}
	}
	hr := r.httpRequest()
	if name := http.CanonicalHeaderKey(v.dup); name != "" && len(hr.Header[name]) == 1 {
		hr.Header[name] = append(hr.Header[name], hr.Header[name][0])
	}
	return r, hr
}

// FuzzReplayIdentity sends a signed request, then variants of it. A variant re-spelled by
// someone without the secret is never accepted: it is either refused as a replay or as a bad
// signature. A request the key's holder signs anew (another nonce or timestamp) is accepted
// once, under a replay identity of its own: no two distinct accepted requests share one.
// The seed corpus starts with the finding that made this test: the signature's hex letters
// in upper case were accepted, under an identity of their own, so a captured verify or
// reactivate could be redeemed again once per case variant.
func FuzzReplayIdentity(f *testing.F) {
	f.Add(uint64(0xffffffffffffffff), "", "", uint8(0), "", uint8(0), false, "", int64(0))
	f.Add(uint64(1), "", "", uint8(0), "", uint8(0), false, "", int64(0))
	f.Add(uint64(0), "0", "", uint8(0), "", uint8(0), false, "", int64(0))
	f.Add(uint64(0), "+", "", uint8(0), "", uint8(0), true, "", int64(0))
	f.Add(uint64(0), "", " ", uint8(3), "", uint8(0), true, "", int64(0))
	f.Add(uint64(0), "", "", uint8(1), "X-Signature", uint8(1), true, "", int64(0))
	f.Add(uint64(0), "", "", uint8(0), "x-nonce", uint8(2), true, "other-nonce-0000001", int64(1))
	f.Add(uint64(0), "", "", uint8(0), "", uint8(0), false, "", int64(-5))
	f.Fuzz(func(t *testing.T, caseMask uint64, tsPrefix, tsSuffix string, perm uint8, dup string, nonceMod uint8,
		read bool, resignNonce string, resignSkew int64) {
		e := newEnv(t)
		e.addCode(contract.CodeRecord{ID: codeID1, ProjectID: projectA, Code: "ABC", CreatedAt: now - 60})
		base := signedReq{method: http.MethodPost, path: verifyPath(projectA), body: []byte(`{"code":"ABC"}`), ts: strconv.FormatInt(now, 10)}
		if read {
			// A GET is replay-checked only with a nonce.
			base = signedReq{method: http.MethodGet, path: projectPath(projectA) + "/codes",
				query: "page=1&search=AB&status=unused", ts: base.ts, nonce: "fuzz-base-nonce-0001"}
		}
		base = base.signed(keyA.Secret)
		accepted := map[string]string{} // replay identity -> the string it signed
		send := func(what string, r signedReq, hr *http.Request) bool {
			t.Helper()
			w := httptest.NewRecorder()
			e.srv.ServeHTTP(w, hr)
			if w.Code != http.StatusOK {
				return false
			}
			id := contract.ReplayIdentity(strings.ToLower(r.sig), r.nonce)
			if prev, ok := accepted[id]; ok {
				t.Fatalf("%s accepted under the replay identity of an earlier request (%q, signed %q; now %q)", what, id, prev, r.stringToSign())
			}
			accepted[id] = r.stringToSign()
			return true
		}
		if !send("the original request", base, base.httpRequest()) {
			t.Fatal("the original request was refused")
		}
		v := respell{caseMask: caseMask, tsPrefix: tsPrefix, tsSuffix: tsSuffix, perm: perm, dup: dup, nonceMod: nonceMod}
		for i := 0; i < 2; i++ {
			if r, hr := v.apply(base); send("a re-spelled copy", r, hr) {
				t.Fatalf("a copy re-spelled without the secret was accepted: sig %q ts %q query %q nonce %q, duplicated %q",
					r.sig, r.ts, r.query, r.nonce, dup)
			}
		}
		// The key's holder signs a new request: accepted once, however it is spelled after.
		fresh := base
		fresh.ts = strconv.FormatInt(now+resignSkew%300, 10)
		if read {
			fresh.nonce = resignNonce
			if !contract.ValidNonce(fresh.nonce) {
				fresh.nonce = "fuzz-fresh-nonce-0002"
			}
		}
		fresh = fresh.signed(keyA.Secret)
		if fresh.stringToSign() == base.stringToSign() {
			return // the same signed request: covered above
		}
		if !send("a newly signed request", fresh, fresh.httpRequest()) {
			if !read {
				// Without a nonce, a new verify must differ in its timestamp to be new.
				t.Fatalf("a newly signed request was refused (ts %s)", fresh.ts)
			}
			t.Fatalf("a newly signed request was refused (nonce %q)", fresh.nonce)
		}
		if r, hr := v.apply(fresh); send("a re-spelled copy of the new request", r, hr) {
			t.Fatalf("a re-spelled copy of the new request was accepted: sig %q ts %q nonce %q", r.sig, r.ts, r.nonce)
		}
	})
}
