package contract_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/acv/acv/api/contract"
)

// The original SDKs' encodings, written out here from their languages' documentation rather
// than taken from the code under test.

// pyQuotePlus is Python's urllib.parse.quote_plus(s): letters, digits and "_.-~" unchanged, a
// space as '+', every other UTF-8 byte as %XX in upper case.
func pyQuotePlus(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("_.-~", c) >= 0:
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		}
	}
	return b.String()
}

// jsEncodeURIComponent is JavaScript's encodeURIComponent(s): letters, digits and "-_.!~*'()"
// unchanged, every other UTF-8 byte as %XX in upper case (a space is %20).
func jsEncodeURIComponent(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-_.!~*'()", c) >= 0:
			b.WriteByte(c)
		default:
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		}
	}
	return b.String()
}

type kv struct{ k, v string }

// pyURLEncode is urllib.parse.urlencode(pairs): quote_plus of each key and value.
func pyURLEncode(pairs []kv) string {
	var parts []string
	for _, p := range pairs {
		parts = append(parts, pyQuotePlus(p.k)+"="+pyQuotePlus(p.v))
	}
	return strings.Join(parts, "&")
}

// pySorted is sorted(params.items()): by key, then value.
func pySorted(pairs []kv) []kv {
	out := append([]kv(nil), pairs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].k != out[j].k {
			return out[i].k < out[j].k
		}
		return out[i].v < out[j].v
	})
	return out
}

// jsSigned is the TypeScript SDK's QUERY: the keys sorted, each key and value through
// encodeURIComponent, joined by '&'.
func jsSigned(pairs []kv) string {
	var parts []string
	for _, p := range pySorted(pairs) {
		parts = append(parts, jsEncodeURIComponent(p.k)+"="+jsEncodeURIComponent(p.v))
	}
	return strings.Join(parts, "&")
}

// jsSent is what the TypeScript SDK's fetch puts on the wire for the same pairs, in the
// caller's order: encodeURIComponent, then the URL parser percent-encodes "'" in a query.
func jsSent(pairs []kv) string {
	var parts []string
	for _, p := range pairs {
		parts = append(parts, strings.ReplaceAll(jsEncodeURIComponent(p.k)+"="+jsEncodeURIComponent(p.v), "'", "%27"))
	}
	return strings.Join(parts, "&")
}

// The helpers themselves, against the languages' known outputs.
func TestSDKEncodingHelpers(t *testing.T) {
	const s = "a b+c%d&e=f!'()*~é漢😀/"
	if got, want := pyQuotePlus(s), "a+b%2Bc%25d%26e%3Df%21%27%28%29%2A~%C3%A9%E6%BC%A2%F0%9F%98%80%2F"; got != want {
		t.Errorf("quote_plus(%q) = %q, want %q", s, got, want)
	}
	if got, want := jsEncodeURIComponent(s), "a%20b%2Bc%25d%26e%3Df!'()*~%C3%A9%E6%BC%A2%F0%9F%98%80%2F"; got != want {
		t.Errorf("encodeURIComponent(%q) = %q, want %q", s, got, want)
	}
}

// sdkSearches are the searches each SDK must be able to sign: every character the encodings
// treat differently, and non-ASCII.
var sdkSearches = []string{
	"a b", "a+b", "50%", "50%25", "x&y=z", "!'()*", "it's (really) *new*!", "~._-", "é漢😀", "a/b?c#d", " ", "%2B", "mixed é + 100% & more",
}

// TestVerifyAcceptsEachSDKsQueryEncoding signs as each original SDK does and sends as it does,
// and the server accepts every one; the same signature over other decoded values is refused.
func TestVerifyAcceptsEachSDKsQueryEncoding(t *testing.T) {
	secret := strings.Repeat("5", 64)
	const path = "/api/v1/projects/0190a0a0000070008000000000000a0a/codes"
	for _, search := range sdkSearches {
		params := []kv{{"status", "used"}, {"search", search}, {"page", "1"}, {"page_size", "20"}}
		forms := []struct {
			name, sent, signedPath, signedQuery string
		}{
			// Python SDK: requests sends urlencode(params) in the dict's order and the SDK signs
			// urlencode(sorted(params.items())).
			{"python SDK", pyURLEncode(params), path, pyURLEncode(pySorted(params))},
			// TypeScript SDK: signs encodeURIComponent pairs sorted by key; fetch sends them with
			// "'" percent-encoded.
			{"typescript SDK", jsSent(params), path, jsSigned(params)},
			// A TypeScript caller whose URL keeps "'" as is.
			{"typescript SDK, quote unescaped", strings.ReplaceAll(jsSent(params), "%27", "'"), path, jsSigned(params)},
			// The contract's own form: the pairs as sent, sorted by key.
			{"as sent", pyURLEncode(params), path, strings.Join(sortRaw(strings.Split(pyURLEncode(params), "&")), "&")},
			// The original server's canonical form: the path decoded, urlencode of the sorted pairs.
			{"original server", jsSent(params), path, pyURLEncode(pySorted(params))},
		}
		for _, f := range forms {
			sts := "GET\n" + f.signedPath + "\n" + f.signedQuery + "\n" + contract.EmptyBodySHA256 + "\n1800000000"
			sig := contract.Sign(secret, sts)
			v := contract.NewVerifier(secret)
			if !v.Verify(sig, "GET", path, f.sent, contract.EmptyBodySHA256, "1800000000", "") {
				t.Errorf("%s, search %q: sent %q signed %q: refused", f.name, search, f.sent, f.signedQuery)
			}
			// The same signature over a request naming another search is refused.
			other := []kv{{"status", "used"}, {"search", search + "x"}, {"page", "1"}, {"page_size", "20"}}
			for _, sent := range []string{pyURLEncode(other), jsSent(other)} {
				if v.Verify(sig, "GET", path, sent, contract.EmptyBodySHA256, "1800000000", "") {
					t.Errorf("%s, search %q: accepted for another search %q", f.name, search, sent)
				}
			}
		}
	}
}

func sortRaw(pairs []string) []string {
	sort.SliceStable(pairs, func(i, j int) bool {
		ki, _, _ := strings.Cut(pairs[i], "=")
		kj, _, _ := strings.Cut(pairs[j], "=")
		if ki != kj {
			return ki < kj
		}
		return pairs[i] < pairs[j]
	})
	return pairs
}

// TestVerifyRepeatedKeys: repeated keys are signed with all their values in each SDK encoding;
// the original server's form keeps the last value of a repeated key, and is accepted only when
// the values it drops equal the one it keeps (the handlers read the first value, which that
// form would not sign).
func TestVerifyRepeatedKeys(t *testing.T) {
	secret := strings.Repeat("7", 64)
	const path = "/p"
	check := func(name, sent, signedPath, signedQuery string, want bool) {
		t.Helper()
		sig := contract.Sign(secret, "GET\n"+signedPath+"\n"+signedQuery+"\n"+contract.EmptyBodySHA256+"\n1")
		if got := contract.NewVerifier(secret).Verify(sig, "GET", path, sent, contract.EmptyBodySHA256, "1", ""); got != want {
			t.Errorf("%s: sent %q signed %q: accepted=%v, want %v", name, sent, signedQuery, got, want)
		}
	}
	pairs := []kv{{"tag", "b c"}, {"page", "1"}, {"tag", "a!"}}
	sent := pyURLEncode(pairs)
	check("python, every value", sent, path, pyURLEncode(pySorted(pairs)), true)
	check("javascript, every value", jsSent(pairs), path, jsSigned(pairs), true)
	check("as sent", sent, path, "page=1&tag=a%21&tag=b+c", true)
	// Last value only, while the first differs: refused.
	check("original server, values differ", sent, path, "page=1&tag=a%21", false)
	check("original server, first value", sent, path, "page=1&tag=b+c", false)
	// The same value twice: the server's form names exactly what the handler reads.
	same := []kv{{"tag", "x y"}, {"page", "1"}, {"tag", "x y"}}
	check("original server, same value repeated", jsSent(same), path, "page=1&tag=x+y", true)
}

// TestVerifyDecodedPath: the original server signed the percent-decoded path; a line break in
// it is never accepted, and a decoded query is not one of the forms.
func TestVerifyDecodedPath(t *testing.T) {
	secret := strings.Repeat("9", 64)
	sign := func(p, q string) string {
		return contract.Sign(secret, "GET\n"+p+"\n"+q+"\n"+contract.EmptyBodySHA256+"\n1")
	}
	v := contract.NewVerifier(secret)
	const raw = "/api/v1/projects/p/codes/by-code/A%2FB%20C%C3%A9"
	if !v.Verify(sign("/api/v1/projects/p/codes/by-code/A/B Cé", ""), "GET", raw, "", contract.EmptyBodySHA256, "1", "") {
		t.Error("decoded path refused")
	}
	if !v.Verify(sign(raw, ""), "GET", raw, "", contract.EmptyBodySHA256, "1", "") {
		t.Error("path as sent refused")
	}
	if !v.Verify(sign("/c d", "a=x+y"), "GET", "/c%20d", "a=x%20y", contract.EmptyBodySHA256, "1", "") {
		t.Error("decoded path with the server's query refused")
	}
	if v.Verify(sign("/c d", "a=x y"), "GET", "/c%20d", "a=x%20y", contract.EmptyBodySHA256, "1", "") {
		t.Error("a query signed decoded, not encoded, was accepted")
	}
	if v.Verify(sign("/a\nb", ""), "GET", "/a%0Ab", "", contract.EmptyBodySHA256, "1", "") {
		t.Error("a decoded line break in the path was accepted")
	}
	if v.Verify(sign("/a%zz", ""), "GET", "/a%zz", "q=%zz", contract.EmptyBodySHA256, "1", "") {
		t.Error("a malformed escape in the query: only the as-sent form applies, over the whole query")
	}
}

// TestVerifyAllocatesNothing: once its buffers have grown, a Verifier trying every form
// allocates nothing.
func TestVerifyAllocatesNothing(t *testing.T) {
	secret := strings.Repeat("3", 64)
	v := contract.NewVerifier(secret)
	query := "search=it%27s+%C3%A9+100%25&status=used&page=1&tag=b&tag=a"
	bad := strings.Repeat("0", 64)
	good := contract.Sign(secret, "GET\n/a/b%20c\n"+"page=1&search=it%27s+%C3%A9+100%25&status=used&tag=a&tag=b"+"\n"+contract.EmptyBodySHA256+"\n1")
	v.Verify(bad, "GET", "/a/b%20c", query, contract.EmptyBodySHA256, "1", "")
	if n := testing.AllocsPerRun(100, func() {
		v.Verify(bad, "GET", "/a/b%20c", query, contract.EmptyBodySHA256, "1", "")
	}); n != 0 {
		t.Errorf("a refused signature: %v allocations per Verify, want 0", n)
	}
	if !v.Verify(good, "GET", "/a/b%20c", query, contract.EmptyBodySHA256, "1", "") {
		t.Fatal("python form refused")
	}
	if n := testing.AllocsPerRun(100, func() {
		v.Verify(good, "GET", "/a/b%20c", query, contract.EmptyBodySHA256, "1", "")
	}); n != 0 {
		t.Errorf("an accepted signature: %v allocations per Verify, want 0", n)
	}
}
