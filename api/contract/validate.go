package contract

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Limits of the contract.
const (
	MaxBodyBytes      = 64 << 10
	MaxCodeLen        = 100
	MaxByLen          = 100
	MaxReasonLen      = 500
	DefaultPageSize   = 20
	MaxPageSize       = 100
	SignatureWindow   = 300 // seconds either side of the server clock
	MaxIdempotencyKey = 255
)

// ConsoleByPrefix begins the verified_by of a console operation ("console:<username>"); the
// client API refuses it (ValidateBy), so it cannot be forged.
const ConsoleByPrefix = "console:"

// ValidateBy checks verified_by or reactivated_by as the client API receives it: free text
// (ValidateText) that does not begin with ConsoleByPrefix, in any ASCII case.
func ValidateBy(field, v string) error {
	if err := ValidateText(field, v, MaxByLen); err != nil {
		return err
	}
	if hasPrefixFoldASCII(v, ConsoleByPrefix) {
		return fmt.Errorf("%s must not begin with %q: it marks operations made in the console", field, ConsoleByPrefix)
	}
	return nil
}

// hasPrefixFoldASCII tells whether v begins with prefix in any ASCII case, as the OpenAPI
// document's pattern says (strings.EqualFold alone would also fold non-ASCII runes).
func hasPrefixFoldASCII(v, prefix string) bool {
	head := v[:min(len(v), len(prefix))]
	return strings.EqualFold(head, prefix) && !strings.ContainsFunc(head, func(r rune) bool { return r >= utf8.RuneSelf })
}

// ValidateCode checks a code value: 1 to 100 characters of printable UTF-8, no control characters.
func ValidateCode(v string) error {
	if v == "" {
		return fmt.Errorf("code must not be empty")
	}
	return ValidateText("code", v, MaxCodeLen)
}

// ValidateText checks a free-text field such as a code value, verified_by or reason.
func ValidateText(field, v string, max int) error {
	if !utf8.ValidString(v) {
		return fmt.Errorf("%s must be valid UTF-8", field)
	}
	if n := utf8.RuneCountInString(v); n > max {
		return fmt.Errorf("%s must be at most %d characters", field, max)
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s must not contain control characters", field)
		}
	}
	return nil
}

// ValidateIdempotencyKey checks an Idempotency-Key: 1 to 255 printable ASCII characters.
func ValidateIdempotencyKey(k string) error {
	if k == "" || len(k) > MaxIdempotencyKey {
		return fmt.Errorf("Idempotency-Key must be 1 to %d characters", MaxIdempotencyKey)
	}
	if strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		return fmt.Errorf("Idempotency-Key must be printable ASCII")
	}
	return nil
}

// ValidateBodyUTF8 refuses (400, saying where) a body that is not valid UTF-8 or whose JSON
// escapes half a surrogate pair ("\ud800"): encoding/json would turn either into U+FFFD, so
// two byte strings would name one code.
func ValidateBodyUTF8(body []byte) error {
	if !utf8.Valid(body) {
		return Errorf(KindInvalid, "Request body must be valid UTF-8 (invalid byte at offset %d)", invalidUTF8At(body))
	}
	if at := loneSurrogateAt(body); at >= 0 {
		return Errorf(KindInvalid, "Request body must be valid UTF-8: the JSON escape %s at offset %d is half a surrogate pair without the other half", body[at:at+6], at)
	}
	return nil
}

// ErrQueryNotUTF8 refuses a query string whose names or values, percent-decoded, are not UTF-8.
var ErrQueryNotUTF8 = &Error{Kind: KindInvalid, Message: "Query string must be valid UTF-8 once percent-decoded (%ff and the like are refused)"}

// ValidateQueryUTF8 refuses a raw query whose bytes, percent-decoded, are not valid UTF-8 (a
// malformed escape stays as sent).
func ValidateQueryUTF8(rawQuery string) error {
	if !strings.Contains(rawQuery, "%") {
		if utf8.ValidString(rawQuery) {
			return nil
		}
		return ErrQueryNotUTF8
	}
	dec := make([]byte, 0, len(rawQuery))
	for i := 0; i < len(rawQuery); i++ {
		c := rawQuery[i]
		if c == '%' && i+2 < len(rawQuery) && isHex(rawQuery[i+1]) && isHex(rawQuery[i+2]) {
			c = HexDigit(rawQuery[i+1])<<4 | HexDigit(rawQuery[i+2])
			i += 2
		}
		dec = append(dec, c)
	}
	if !utf8.Valid(dec) {
		return ErrQueryNotUTF8
	}
	return nil
}

// ErrFormNotUTF8 refuses a posted form whose field names or values are not UTF-8.
var ErrFormNotUTF8 = &Error{Kind: KindInvalid, Message: "Form fields must be valid UTF-8"}

// ValidateFormUTF8 refuses a decoded form (url.Values) holding a name or value not in UTF-8.
func ValidateFormUTF8(form map[string][]string) error {
	for k, vs := range form {
		if !utf8.ValidString(k) || slices.ContainsFunc(vs, func(v string) bool { return !utf8.ValidString(v) }) {
			return ErrFormNotUTF8
		}
	}
	return nil
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// loneSurrogateAt is the offset of the first \uXXXX escape of b naming an unpaired surrogate,
// or -1 (in valid JSON a backslash occurs only inside strings).
func loneSurrogateAt(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		switch r, ok := uEscape(b, i); {
		case !ok:
			i++ // \" \\ \n and the like, or a malformed escape the decoder refuses
		case !utf16.IsSurrogate(r):
			i += 5
		case r >= 0xDC00: // a low half with no high half before it
			return i
		default:
			if lo, ok := uEscape(b, i+6); !ok || utf16.DecodeRune(r, lo) == utf8.RuneError {
				return i
			}
			i += 11
		}
	}
	return -1
}

// uEscape reads the escape \uXXXX at b[i:], if there is one.
func uEscape(b []byte, i int) (rune, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	r, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
	return rune(r), err == nil
}
