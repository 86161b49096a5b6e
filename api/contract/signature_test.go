package contract_test

import (
	"strings"
	"testing"

	"github.com/acv/acv/api/contract"
)

// The expected signatures were computed independently with Python's hmac and hashlib, the way
// the original SDK computes them.
func TestSignatureMatchesOriginalSDK(t *testing.T) {
	secret := "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	cases := []struct {
		name, method, path, query, body, ts, nonce, want string
	}{
		{"five lines, POST", "POST", "/api/v1/projects/p1/codes/verify", "", `{"code": "ABC"}`, "1700000000", "",
			"141402c837d0c22320b144128e33b4e7ecdc6f1942e6eeb49efef5e5109ce0c4"},
		{"six lines, sorted query", "GET", "/api/v1/projects/p1/codes", "status=used&search=a+b&page=1", "", "1700000000", "nonce-1234567890abcdef",
			"e1e02795fbd31614b8fa9caf9013d49aa248ebda759a37c93fafe24603a19e05"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := contract.Sign(secret, contract.StringToSign(tc.method, tc.path, tc.query, contract.BodySHA256([]byte(tc.body)), tc.ts, tc.nonce))
			if got != tc.want {
				t.Fatalf("signature %s, want %s", got, tc.want)
			}
			if !contract.NewVerifier(secret).Verify(tc.want, tc.method, tc.path, tc.query, contract.BodySHA256([]byte(tc.body)), tc.ts, tc.nonce) {
				t.Fatal("VerifySignature refused the SDK's signature")
			}
			if contract.NewVerifier(secret).Verify(tc.want, tc.method, tc.path+"x", tc.query, contract.BodySHA256([]byte(tc.body)), tc.ts, tc.nonce) {
				t.Fatal("VerifySignature accepted a signature over another path")
			}
		})
	}
}

func TestCanonicalQuery(t *testing.T) {
	cases := map[string]string{
		"":                                  "",
		"b=2&a=1":                           "a=1&b=2",
		"search=x&status=used&search=a%25b": "search=a%25b&search=x&status=used",
		"a&b=&a=1":                          "a&a=1&b=",
		"k=1&&j=2":                          "j=2&k=1",
	}
	for in, want := range cases {
		if got := contract.CanonicalQuery(in); got != want {
			t.Errorf("CanonicalQuery(%q) = %q, want %q", in, got, want)
		}
	}
}

// Some clients sort whole "k=v" strings instead of keys; both orders are accepted.
func TestVerifyAcceptsWholeStringOrder(t *testing.T) {
	secret := "s"
	q := "a-=1&a=2"
	sts := "GET\n/p\n" + "a-=1&a=2" + "\n" + contract.EmptyBodySHA256 + "\n1"
	if contract.CanonicalQuery(q) == "a-=1&a=2" {
		t.Fatal("test needs a query whose two orders differ")
	}
	if !contract.NewVerifier(secret).Verify(contract.Sign(secret, sts), "GET", "/p", q, contract.EmptyBodySHA256, "1", "") {
		t.Fatal("whole-string order refused")
	}
}

func TestValidNonce(t *testing.T) {
	for n, want := range map[string]bool{
		"abcdefghijklmnop": true, "short": false, "has space in it!!": false,
		"A-_0123456789abcdefXYZ": true, string(make([]byte, 65)): false,
	} {
		if got := contract.ValidNonce(n); got != want {
			t.Errorf("ValidNonce(%q) = %v", n, got)
		}
	}
}

// TestExplainSignature pins the words a refused signature's detail uses after "Invalid API key
// or signature: ": the string to sign quoted with its line breaks as \n, its lines named, the
// nonce line present exactly when X-Nonce was sent, and nothing that depends on a secret.
func TestExplainSignature(t *testing.T) {
	const legend = " (METHOD, PATH as sent, QUERY as sent with its pairs sorted by key, SHA-256 hex of the body, X-Timestamp"
	const head = "X-Signature must be the lowercase hex HMAC-SHA256, keyed with the API secret, of "
	bodyHash := contract.BodySHA256([]byte(`{"code":"ABC"}`))
	cases := []struct {
		name, method, path, query, nonce, want string
	}{
		{"POST without a nonce", "POST", "/api/v1/projects/p1/codes/verify", "", "",
			head + `"POST\n/api/v1/projects/p1/codes/verify\n\n` + bodyHash + `\n1700000000"` + legend + "; no X-Nonce line, as none was sent)"},
		{"GET with a query and a nonce, method in lower case", "get", "/api/v1/projects/p1/codes", "status=used&search=a%20b&page=2", "nonce-1234567890abcdef",
			head + `"GET\n/api/v1/projects/p1/codes\npage=2&search=a%20b&status=used\n` + bodyHash + `\n1700000000\nnonce-1234567890abcdef"` + legend + ", X-Nonce)"},
		{"a quote and a raw byte in the path are escaped", "GET", "/a\"b\xff", "", "",
			head + `"GET\n/a\"b\xff\n\n` + bodyHash + `\n1700000000"` + legend + "; no X-Nonce line, as none was sent)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := contract.ExplainSignature(tc.method, tc.path, tc.query, bodyHash, "1700000000", tc.nonce); got != tc.want {
				t.Errorf("ExplainSignature\n got %s\nwant %s", got, tc.want)
			}
		})
	}
	// A request line far past what a sentence should hold is cut, and the text says so.
	long := contract.ExplainSignature("GET", "/"+strings.Repeat("p", 5000), "q="+strings.Repeat("x", 5000), bodyHash, "1", "")
	if len(long) > 4096+len(head)+300 || !strings.HasSuffix(long, "; PATH and QUERY are shown up to 2048 bytes each") {
		t.Errorf("a 10 KB request line explained in %d bytes: ...%s", len(long), long[len(long)-120:])
	}
}
