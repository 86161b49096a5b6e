package contract_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/acv/acv/api/contract"
)

// TestValidateBodyUTF8 names the bodies the servers refuse before decoding, and the ones they
// must still take: a surrogate pair is one character, an escaped backslash is no escape.
func TestValidateBodyUTF8(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		detail     string // "" when accepted
	}{
		{"ASCII", `{"code":"X1"}`, ""},
		{"UTF-8 letters", `{"code":"é😀"}`, ""},
		{"empty", ``, ""},
		{"surrogate pair", `{"code":"\ud83d\ude00"}`, ""},
		{"surrogate pair in upper case", `{"code":"\uD83D\uDE00"}`, ""},
		{"escaped replacement character", `{"code":"\ufffd"}`, ""},
		{"escaped backslash before ud800", `{"code":"\\ud800"}`, ""},
		{"escaped quote then pair", `{"code":"\"\ud83d\ude00"}`, ""},
		{"invalid bytes", "{\"code\":\"X\xff\xfe\"}", "Request body must be valid UTF-8 (invalid byte at offset 10)"},
		{"truncated sequence", "{\"verified_by\":\"x\xc3(y\"}", "Request body must be valid UTF-8 (invalid byte at offset 17)"},
		{"UTF-8 of a surrogate", "{\"code\":\"\xed\xa0\x80\"}", "Request body must be valid UTF-8 (invalid byte at offset 9)"},
		{"overlong slash", "{\"code\":\"\xc0\xaf\"}", "Request body must be valid UTF-8 (invalid byte at offset 9)"},
		{"past U+10FFFF", "{\"code\":\"\xf4\x90\x80\x80\"}", "Request body must be valid UTF-8 (invalid byte at offset 9)"},
		{"invalid byte outside strings", "{\"code\":\"X\"}\xff", "Request body must be valid UTF-8 (invalid byte at offset 12)"},
		{"lone high surrogate", `{"code":"X\ud800"}`, `Request body must be valid UTF-8: the JSON escape \ud800 at offset 10 is half a surrogate pair without the other half`},
		{"lone low surrogate", `{"code":"\uDC00X"}`, `the JSON escape \uDC00 at offset 9`},
		{"high surrogate at the end", `{"code":"\ud83d`, `the JSON escape \ud83d at offset 9`},
		{"high then high then low", `{"code":"\ud800\ud83d\ude00"}`, `the JSON escape \ud800 at offset 9`},
		{"high then letter", `{"code":"\ud83dx"}`, `the JSON escape \ud83d at offset 9`},
		{"high then other escape", `{"code":"\ud83d\u0041"}`, `the JSON escape \ud83d at offset 9`},
		{"low then high", `{"code":"\ude00\ud83d"}`, `the JSON escape \ude00 at offset 9`},
		{"lone surrogate in a key", `{"\udfff":"x"}`, `the JSON escape \udfff at offset 2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := contract.ValidateBodyUTF8([]byte(tc.body))
			if tc.detail == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want %q", tc.detail)
			}
			if contract.KindOf(err) != contract.KindInvalid || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("refused with %v (%s), want a 400 saying %q", err, contract.KindOf(err), tc.detail)
			}
		})
	}
}

// FuzzValidateBodyUTF8 holds the body check to utf8.Valid and to what encoding/json makes of a
// body: whatever is not valid UTF-8 is refused; a body without escapes is refused exactly when
// it is not valid UTF-8; and an accepted JSON body decodes without a U+FFFD it did not spell
// out, while a valid JSON body refused for its escapes decodes with one (the refusal is never
// wider than the rewrite it prevents).
func FuzzValidateBodyUTF8(f *testing.F) {
	for _, s := range []string{
		`{"code":"X1"}`, "{\"code\":\"X\xff\xfe\"}", "{\"verified_by\":\"x\xc3(y\"}", `{"code":"\ud800"}`,
		`{"code":"\ud83d\ude00"}`, `{"code":"\\ud800"}`, `{"a":"\udc00","b":"\ud800\udc00"}`, `["\ud800\ud800\udc00"]`,
		"\xed\xa0\x80", `"\u00e9\uDBFF\uDFFF"`, `{"code":"é","reason":"\"\\\u0041"}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		err := contract.ValidateBodyUTF8(body)
		if err != nil && contract.KindOf(err) != contract.KindInvalid {
			t.Fatalf("refusal of kind %s: %v", contract.KindOf(err), err)
		}
		if !utf8.Valid(body) {
			if err == nil {
				t.Fatalf("accepted invalid UTF-8 %q", body)
			}
			return
		}
		if !bytes.Contains(body, []byte(`\`)) && err != nil {
			t.Fatalf("refused valid UTF-8 without escapes %q: %v", body, err)
		}
		var v any
		if json.Unmarshal(body, &v) != nil || spellsReplacement(body) {
			return
		}
		if rewritten := holdsReplacement(v); rewritten != (err != nil) {
			t.Fatalf("body %q: encoding/json rewrote a string: %v, refused: %v", body, rewritten, err)
		}
	})
}

// spellsReplacement tells whether a body names U+FFFD itself, raw or escaped (loosely: any
// "fffd" counts), so a U+FFFD in its decoding proves nothing.
func spellsReplacement(body []byte) bool {
	return bytes.Contains(body, []byte("\uFFFD")) || bytes.Contains(bytes.ToLower(body), []byte("fffd"))
}

// holdsReplacement tells whether a decoded JSON value holds U+FFFD in a string or a key.
func holdsReplacement(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, utf8.RuneError)
	case []any:
		for _, e := range v {
			if holdsReplacement(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, utf8.RuneError) || holdsReplacement(e) {
				return true
			}
		}
	}
	return false
}

// TestValidateQueryUTF8 names the query strings refused: percent-encoded or raw bytes that do
// not decode to UTF-8, in a name or a value, known parameter or not.
func TestValidateQueryUTF8(t *testing.T) {
	for _, tc := range []struct {
		query string
		ok    bool
	}{
		{"", true},
		{"search=abc&page=2", true},
		{"search=%C3%A9%F0%9F%98%80", true},
		{"search=a+b%2Bc", true},
		{"search=%zz", true}, // not UTF-8's business: the parser drops the pair
		{"search=%", true},
		{"search=%ff", false},
		{"search=%FF", false},
		{"search=X%ff%fe", false},
		{"search=%c3(", false},
		{"search=%ed%a0%80", false}, // a surrogate's UTF-8
		{"%ff=1", false},
		{"page=1&unknown=%e2%82", false},
		{"search=\xff", false},
		{"search=%zz%ff", false}, // a pair the parser would drop is refused all the same
	} {
		err := contract.ValidateQueryUTF8(tc.query)
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok=%v", tc.query, err, tc.ok)
		}
		if err != nil && (contract.KindOf(err) != contract.KindInvalid || !strings.Contains(err.Error(), "Query string must be valid UTF-8")) {
			t.Errorf("%q: refused with %v", tc.query, err)
		}
	}
}

// FuzzValidateQueryUTF8 holds the query check to utf8.Valid of the decoded query and to what
// the handlers read (url.ParseQuery, under gin's c.Query): an accepted query gives them only
// UTF-8, a query without escapes is refused exactly when it is not UTF-8, and a query that
// decodes whole is refused exactly when its decoding is not UTF-8.
func FuzzValidateQueryUTF8(f *testing.F) {
	for _, s := range []string{"search=%ff", "search=%C3%A9", "a=%e2%82&b=1", "%zz%ff", "x=\xff", "", "page=1&search=abc", "search=%ED%A0%80", "q=a+b&%2B=%25"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		err := contract.ValidateQueryUTF8(raw)
		if err == nil {
			vs, _ := url.ParseQuery(raw)
			for k, v := range vs {
				if !utf8.ValidString(k) || !utf8.ValidString(strings.Join(v, "")) {
					t.Fatalf("accepted %q: the handlers read %q=%q", raw, k, v)
				}
			}
		}
		if !strings.Contains(raw, "%") && (err == nil) != utf8.ValidString(raw) {
			t.Fatalf("%q without escapes: %v", raw, err)
		}
		if dec, uerr := url.QueryUnescape(raw); uerr == nil && (err == nil) != utf8.ValidString(dec) {
			t.Fatalf("%q decodes to %q: %v", raw, dec, err)
		}
	})
}

// TestValidateFormUTF8 refuses a decoded form with a name or value that is not UTF-8.
func TestValidateFormUTF8(t *testing.T) {
	if err := contract.ValidateFormUTF8(url.Values{"name": {"é"}, "reason": {"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	for _, form := range []url.Values{{"name": {"p\xff"}}, {"reason": {"ok", "x\xc3("}}, {"\xfe": {"v"}}} {
		if err := contract.ValidateFormUTF8(form); contract.KindOf(err) != contract.KindInvalid {
			t.Errorf("%q: %v", form, err)
		}
	}
}
