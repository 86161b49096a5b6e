package contract

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"slices"
	"strconv"
	"strings"
)

// EmptyBodySHA256 is the hex SHA-256 of the empty string, the body hash of a request without body.
const EmptyBodySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// StringToSign builds the contract's string to sign: METHOD, PATH (still percent-encoded),
// QUERY (pairs as sent, sorted by key), BODY_SHA256_HEX and TIMESTAMP on five lines, and the
// nonce on a sixth when one is sent. rawQuery is the query as sent, without '?'.
func StringToSign(method, rawPath, rawQuery string, bodySHA256Hex, timestamp, nonce string) string {
	q := CanonicalQuery(rawQuery)
	b := make([]byte, 0, len(method)+len(rawPath)+len(q)+len(bodySHA256Hex)+len(timestamp)+len(nonce)+6)
	return string(appendStringToSign(b, method, rawPath, q, bodySHA256Hex, timestamp, nonce))
}

// appendStringToSign is the one place the signed form is written, query already in its order.
func appendStringToSign[P, Q string | []byte](b []byte, method string, rawPath P, query Q, bodySHA256Hex, timestamp, nonce string) []byte {
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

// maxExplained bounds how many bytes of PATH and of QUERY ExplainSignature shows.
const maxExplained = 2048

// ExplainSignature says, for the detail of a refused signature, what X-Signature must be the
// HMAC of. It comes from the request alone (no secret, no MAC, not the signature sent), so it
// reads the same for an unknown key id and a wrong signature.
func ExplainSignature(method, rawPath, rawQuery, bodySHA256Hex, timestamp, nonce string) string {
	query := CanonicalQuery(rawQuery)
	cut := len(rawPath) > maxExplained || len(query) > maxExplained
	rawPath, query = rawPath[:min(len(rawPath), maxExplained)], query[:min(len(query), maxExplained)]
	var b strings.Builder
	b.WriteString("X-Signature must be the lowercase hex HMAC-SHA256, keyed with the API secret, of ")
	b.WriteString(strconv.Quote(string(appendStringToSign(nil, method, rawPath, query, bodySHA256Hex, timestamp, nonce))))
	b.WriteString(" (METHOD, PATH as sent, QUERY as sent with its pairs sorted by key, SHA-256 hex of the body, X-Timestamp")
	if nonce != "" {
		b.WriteString(", X-Nonce)")
	} else {
		b.WriteString("; no X-Nonce line, as none was sent)")
	}
	if cut {
		b.WriteString("; PATH and QUERY are shown up to " + strconv.Itoa(maxExplained) + " bytes each")
	}
	return b.String()
}

// CanonicalQuery sorts the key=value pairs of a raw query by key (then value, so repeated keys
// have one order), leaving their encoding untouched, and joins them with '&'.
func CanonicalQuery(rawQuery string) string {
	if rawQuery == "" {
		return ""
	}
	return string(appendSorted(nil, rawQuery, splitSpans(nil, rawQuery), false))
}

// span is one key=value pair of a query: key s[k0:k1], value s[v0:v1].
type span struct{ k0, k1, v0, v1 int32 }

// splitSpans cuts rawQuery at '&' into pairs (empty ones dropped), appending them to dst.
func splitSpans(dst []span, rawQuery string) []span {
	dst = dst[:0]
	for i := 0; i < len(rawQuery); {
		pair, _, _ := strings.Cut(rawQuery[i:], "&")
		if k, _, eq := strings.Cut(pair, "="); pair != "" {
			end := int32(i + len(pair))
			sp := span{k0: int32(i), k1: int32(i + len(k)), v0: end, v1: end}
			if eq {
				sp.v0 = sp.k1 + 1
			}
			dst = append(dst, sp)
		}
		i += len(pair) + 1
	}
	return dst
}

// appendSorted appends the pairs, sorted in place and still encoded as sent: by key then value,
// or, plain, as whole "k=v" strings, as some original clients sort them.
func appendSorted(dst []byte, rawQuery string, spans []span, plain bool) []byte {
	slices.SortStableFunc(spans, func(a, b span) int {
		if plain {
			return strings.Compare(rawQuery[a.k0:a.v1], rawQuery[b.k0:b.v1])
		}
		return cmp.Or(strings.Compare(rawQuery[a.k0:a.k1], rawQuery[b.k0:b.k1]), strings.Compare(rawQuery[a.v0:a.v1], rawQuery[b.v0:b.v1]))
	})
	for i, sp := range spans {
		if i > 0 {
			dst = append(dst, '&')
		}
		dst = append(dst, rawQuery[sp.k0:sp.v1]...)
	}
	return dst
}

// appendUnescaped appends s percent-decoded, with form rules ('+' is a space) as the handlers
// read a query component, or path rules ('+' stays); ok is false on a malformed escape.
func appendUnescaped(dst []byte, s string, form bool) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+' && form:
			dst = append(dst, ' ')
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return dst, false
			}
			dst = append(dst, HexDigit(s[i+1])<<4|HexDigit(s[i+2]))
			i += 2
		default:
			dst = append(dst, c)
		}
	}
	return dst, true
}

func isHex(c byte) bool { return HexDigit(c) < 16 }

// The two component encodings of the original SDKs, both writing other bytes as upper-case %XX.
const (
	encPython = iota // Python's quote_plus: letters, digits and _.-~ as they are, a space as '+'
	encJS            // JavaScript's encodeURIComponent: letters, digits and -_.!~*'() as they are
)

func appendEncoded(dst []byte, s []byte, enc int) []byte {
	const hexUpper = "0123456789ABCDEF"
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == '~':
			dst = append(dst, c)
		case enc == encPython && c == ' ':
			dst = append(dst, '+')
		case enc == encJS && (c == '!' || c == '\'' || c == '(' || c == ')' || c == '*'):
			dst = append(dst, c)
		default:
			dst = append(dst, '%', hexUpper[c>>4], hexUpper[c&15])
		}
	}
	return dst
}

func appendEncodedPairs(dst, dec []byte, spans []span, enc int) []byte {
	for i, sp := range spans {
		if i > 0 {
			dst = append(dst, '&')
		}
		dst = appendEncoded(dst, dec[sp.k0:sp.k1], enc)
		dst = append(dst, '=')
		dst = appendEncoded(dst, dec[sp.v0:sp.v1], enc)
	}
	return dst
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

// Verifier checks signatures made with one secret, reusing its HMAC state and buffers so it
// allocates nothing once grown; pool it, it is not safe for concurrent use.
type Verifier struct {
	mac   hash.Hash
	buf   []byte // the string to sign
	sum   []byte
	got   [sha256.Size]byte
	raw   []span // pairs of the raw query
	dspan []span // pairs of the decoded query (into dec)
	dec   []byte // decoded keys and values
	q     [nQueries][]byte
	path  []byte // the decoded path
}

// NewVerifier prepares a Verifier for secret.
func NewVerifier(secret string) *Verifier {
	return &Verifier{mac: hmac.New(sha256.New, []byte(secret)), buf: make([]byte, 0, 256), sum: make([]byte, 0, sha256.Size)}
}

// Verify checks a signature, comparing MACs in constant time. The contract accepts QUERY as
// sent sorted by key (then value), or sorted as whole "k=v" strings, or rebuilt from the
// decoded pairs in Python's or JavaScript's encoding; or the original server's form: the path
// decoded and QUERY as Python's urlencode keeping a repeated key's last value, accepted only
// when a repeated key's values are equal (the handlers read the first). All name the same
// decoded request, and the replay identity is the signature, which has one spelling.
func (v *Verifier) Verify(signature, method, rawPath, rawQuery, bodySHA256Hex, timestamp, nonce string) bool {
	if !ValidSignature(signature) {
		return false
	}
	_, _ = hex.Decode(v.got[:], []byte(signature)) // 64 lowercase hex: cannot fail
	// v.q[:tried] holds the queries already tried with rawPath.
	tried := 0
	try := func(i int) bool {
		for _, prev := range v.q[:tried] {
			if bytes.Equal(prev, v.q[i]) {
				return false
			}
		}
		tried = i + 1
		return v.check(appendStringToSign(v.buf[:0], method, rawPath, v.q[i], bodySHA256Hex, timestamp, nonce))
	}
	v.raw = splitSpans(v.raw, rawQuery)
	v.q[qAsSent] = appendSorted(v.q[qAsSent][:0], rawQuery, v.raw, false)
	if ok := try(qAsSent); ok || rawQuery == "" && !strings.Contains(rawPath, "%") {
		return ok // with neither query nor escape, every other form is the same string
	}
	if v.q[qPlain] = appendSorted(v.q[qPlain][:0], rawQuery, v.raw, true); try(qPlain) {
		return true
	}
	// The decoded pairs, sorted by key then value, for the SDKs' encodings and the server's form.
	v.dec, v.dspan = v.dec[:0], v.dspan[:0]
	for _, sp := range v.raw {
		var okK, okV bool
		d := span{k0: int32(len(v.dec))}
		v.dec, okK = appendUnescaped(v.dec, rawQuery[sp.k0:sp.k1], true)
		d.k1, d.v0 = int32(len(v.dec)), int32(len(v.dec))
		if v.dec, okV = appendUnescaped(v.dec, rawQuery[sp.v0:sp.v1], true); !okK || !okV {
			return false
		}
		d.v1 = int32(len(v.dec))
		v.dspan = append(v.dspan, d)
	}
	dec := v.dec
	key := func(s span) []byte { return dec[s.k0:s.k1] }
	val := func(s span) []byte { return dec[s.v0:s.v1] }
	slices.SortFunc(v.dspan, func(a, b span) int { return cmp.Or(bytes.Compare(key(a), key(b)), bytes.Compare(val(a), val(b))) })
	if v.q[qPython] = appendEncodedPairs(v.q[qPython][:0], dec, v.dspan, encPython); try(qPython) {
		return true
	}
	if v.q[qJS] = appendEncodedPairs(v.q[qJS][:0], dec, v.dspan, encJS); try(qJS) {
		return true
	}
	// The original server's form keeps a repeated key's last value; the handlers read the
	// first, so it is accepted only when they are equal.
	for i := 1; i < len(v.dspan); i++ {
		if a, b := v.dspan[i-1], v.dspan[i]; bytes.Equal(key(a), key(b)) && !bytes.Equal(val(a), val(b)) {
			return false
		}
	}
	v.dspan = slices.CompactFunc(v.dspan, func(a, b span) bool { return bytes.Equal(key(a), key(b)) })
	v.q[qServer] = appendEncodedPairs(v.q[qServer][:0], dec, v.dspan, encPython)
	var ok bool
	if v.path, ok = appendUnescaped(v.path[:0], rawPath, false); !ok || slices.Contains(v.path, '\n') {
		return false // a decoded line break would move the string to sign's lines
	}
	if string(v.path) == rawPath {
		return try(qServer)
	}
	return v.check(appendStringToSign(v.buf[:0], method, v.path, v.q[qServer], bodySHA256Hex, timestamp, nonce))
}

// The candidate queries a Verifier builds, in the order they are tried.
const (
	qAsSent = iota
	qPlain
	qPython
	qJS
	qServer
	nQueries
)

func (v *Verifier) check(buf []byte) bool {
	v.buf = buf
	v.mac.Reset()
	v.mac.Write(v.buf)
	v.sum = v.mac.Sum(v.sum[:0])
	return hmac.Equal(v.sum, v.got[:])
}

// ValidNonce tells whether an X-Nonce has the contract's form: 16 to 64 of [A-Za-z0-9_-].
func ValidNonce(n string) bool {
	return len(n) >= 16 && len(n) <= 64 && !strings.ContainsFunc(n, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-')
	})
}

// The authentication headers have one accepted spelling each, so a captured request
// re-spelled (signature in upper case, a leading zero, a padded nonce) cannot vary its replay
// identity.
//
// ValidSignature tells whether s is an X-Signature: exactly 64 lowercase hex characters.
func ValidSignature(s string) bool { return len(s) == 64 && lowerHex(s) }

// ParseTimestamp reads an X-Timestamp: Unix seconds in canonical decimal, with no sign, no
// leading zero and at most 12 digits (until the year 33658).
func ParseTimestamp(s string) (int64, error) {
	if len(s) <= 12 && (len(s) < 2 || s[0] != '0') {
		if n, err := ParseDigits(s); err == nil {
			return n, nil
		}
	}
	return 0, errors.New("X-Timestamp must be Unix seconds")
}

// ReplayIdentity is what the server remembers of an accepted request to refuse it a second
// time: its nonce when it sent one, else its verified signature; "n:" and "s:" keep the two
// kinds apart. Call it only with headers that passed ValidNonce and ValidSignature.
func ReplayIdentity(signature, nonce string) string {
	if nonce != "" {
		return "n:" + nonce
	}
	return "s:" + signature
}

func lowerHex(s string) bool {
	return !strings.ContainsFunc(s, func(c rune) bool { return !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') })
}
