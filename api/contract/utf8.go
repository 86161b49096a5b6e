package contract

import (
	"strings"
	"unicode/utf8"
)

// ValidateBodyUTF8 refuses a request body that is not valid UTF-8, or whose JSON strings
// escape half of a UTF-16 surrogate pair without the other half ("\ud800"). Both would reach a
// handler changed: encoding/json rewrites each invalid byte and each lone surrogate to U+FFFD,
// so "X\xff" and "X\ufffd" would name the same code and a stored verified_by would not be the
// bytes the client sent. The servers call it on the raw body, before anything decodes it. The
// error is a 400 whose message says where the body went wrong.
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

// ValidateQueryUTF8 refuses a raw query string (as sent, without '?') whose bytes, once
// percent-decoded, are not valid UTF-8: a handler would hold bytes no JSON answer, log line or
// database text column can carry unchanged. An escape that is not %XX stays as sent, so a
// query the handlers' parser would partly skip is still checked whole: nothing a handler reads
// escapes the check. The servers call it before a handler reads a query parameter.
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

// ValidateFormUTF8 refuses a decoded form (url.Values) holding a name or value that is not
// valid UTF-8: the console's pages read forms where the API reads JSON, and the same rule holds.
func ValidateFormUTF8(form map[string][]string) error {
	for k, vs := range form {
		if !utf8.ValidString(k) {
			return ErrFormNotUTF8
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return ErrFormNotUTF8
			}
		}
	}
	return nil
}

// invalidUTF8At is the offset of the first byte of b that starts no UTF-8 character; len(b)
// when b is valid.
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

// loneSurrogateAt is the offset of the first \uXXXX escape of b naming a UTF-16 surrogate that
// is not part of a pair (a high one followed at once by a low one), as encoding/json pairs
// them; -1 when there is none. In JSON a backslash occurs only inside strings, so scanning
// escapes from the start stays aligned on every valid document; an invalid one is refused by
// the decoder anyway.
func loneSurrogateAt(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		r, ok := uEscape(b, i)
		if !ok {
			i++ // \" \\ \n and the like, or a malformed escape the decoder refuses
			continue
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if lo, ok := uEscape(b, i+6); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				i += 11
				continue
			}
			return i
		case r >= 0xDC00 && r <= 0xDFFF:
			return i
		}
		i += 5
	}
	return -1
}

// uEscape reads the escape \uXXXX at b[i:]; ok is false when there is none.
func uEscape(b []byte, i int) (rune, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[i+2 : i+6] {
		if !isHex(c) {
			return 0, false
		}
		r = r<<4 | rune(HexDigit(c))
	}
	return r, true
}
