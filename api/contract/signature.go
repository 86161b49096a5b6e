package contract

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"sort"
	"strings"
)

// EmptyBodySHA256 is the hex SHA-256 of the empty string, the body hash of a request without body.
const EmptyBodySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// StringToSign builds the contract's string to sign: METHOD, PATH (still percent-encoded),
// QUERY (pairs as sent, sorted by key), BODY_SHA256_HEX and TIMESTAMP on five lines, and a sixth
// line with the nonce when one is sent. rawQuery is the query exactly as sent, without '?'.
func StringToSign(method, rawPath, rawQuery string, bodySHA256Hex, timestamp, nonce string) string {
	q := CanonicalQuery(rawQuery)
	b := make([]byte, 0, len(method)+len(rawPath)+len(q)+len(bodySHA256Hex)+len(timestamp)+len(nonce)+6)
	return string(appendStringToSign(b, method, rawPath, q, bodySHA256Hex, timestamp, nonce))
}

// appendStringToSign appends the string to sign, with query already in its signed order, to b.
// StringToSign and Verifier share it, so the signed form is written once.
func appendStringToSign(b []byte, method, rawPath, query, bodySHA256Hex, timestamp, nonce string) []byte {
	for i := 0; i < len(method); i++ {
		c := method[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		b = append(b, c)
	}
	b = append(b, '\n')
	b = append(b, rawPath...)
	b = append(b, '\n')
	b = append(b, query...)
	b = append(b, '\n')
	b = append(b, bodySHA256Hex...)
	b = append(b, '\n')
	b = append(b, timestamp...)
	if nonce != "" {
		b = append(b, '\n')
		b = append(b, nonce...)
	}
	return b
}

// CanonicalQuery sorts the key=value pairs of a raw query by key (then value, so repeated keys
// have one order), leaving their encoding untouched, and joins them with '&'.
func CanonicalQuery(rawQuery string) string {
	if rawQuery == "" {
		return ""
	}
	pairs := splitQuery(rawQuery)
	sort.SliceStable(pairs, func(i, j int) bool {
		ki, vi := splitPair(pairs[i])
		kj, vj := splitPair(pairs[j])
		if ki != kj {
			return ki < kj
		}
		return vi < vj
	})
	return strings.Join(pairs, "&")
}

// plainSortedQuery sorts the pairs as whole strings, as some original clients do; it differs
// from CanonicalQuery only when one key is a prefix of another followed by a byte below '='.
func plainSortedQuery(rawQuery string) string {
	if rawQuery == "" {
		return ""
	}
	pairs := splitQuery(rawQuery)
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

func splitQuery(rawQuery string) []string {
	parts := strings.Split(rawQuery, "&")
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

func splitPair(p string) (string, string) {
	k, v, _ := strings.Cut(p, "=")
	return k, v
}

// Sign returns the lowercase hex HMAC-SHA256 of the string to sign, keyed with the secret's
// 64-character hex text, as the original SDKs do.
func Sign(secret, stringToSign string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(stringToSign))
	return hex.EncodeToString(m.Sum(nil))
}

// BodySHA256 is the lowercase hex SHA-256 of a body.
func BodySHA256(body []byte) string {
	if len(body) == 0 {
		return EmptyBodySHA256
	}
	s := sha256.Sum256(body)
	return hex.EncodeToString(s[:])
}

// Verifier checks signatures made with one secret. It keeps its HMAC state and buffers between
// calls, so a key's verifications allocate nothing; it is not safe for concurrent use (pool it).
type Verifier struct {
	mac hash.Hash
	buf []byte
	sum []byte
	got [sha256.Size]byte
}

// NewVerifier prepares a Verifier for secret.
func NewVerifier(secret string) *Verifier {
	return &Verifier{mac: hmac.New(sha256.New, []byte(secret)), buf: make([]byte, 0, 256), sum: make([]byte, 0, sha256.Size)}
}

// Verify checks a signature in constant time. It accepts the canonical query order and, when
// it differs, the whole-string order of older clients.
func (v *Verifier) Verify(signature, method, rawPath, rawQuery, bodySHA256Hex, timestamp, nonce string) bool {
	// Only the contract's encoding (64 lowercase hex characters) is accepted: a signature has
	// one spelling, so it can serve as the request's replay identity. Decoding it once lets the
	// MACs be compared as bytes, in constant time.
	if !ValidSignature(signature) {
		return false
	}
	if _, err := hex.Decode(v.got[:], []byte(signature)); err != nil {
		return false
	}
	query := CanonicalQuery(rawQuery)
	if v.check(method, rawPath, query, bodySHA256Hex, timestamp, nonce) {
		return true
	}
	if rawQuery == "" {
		return false
	}
	alt := plainSortedQuery(rawQuery)
	if alt == query {
		return false
	}
	return v.check(method, rawPath, alt, bodySHA256Hex, timestamp, nonce)
}

func (v *Verifier) check(method, rawPath, query, bodySHA256Hex, timestamp, nonce string) bool {
	v.buf = appendStringToSign(v.buf[:0], method, rawPath, query, bodySHA256Hex, timestamp, nonce)
	v.mac.Reset()
	v.mac.Write(v.buf)
	v.sum = v.mac.Sum(v.sum[:0])
	return hmac.Equal(v.sum, v.got[:])
}

// ValidNonce tells whether an X-Nonce has the contract's form: 16 to 64 of [A-Za-z0-9_-].
func ValidNonce(n string) bool {
	if len(n) < 16 || len(n) > 64 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
