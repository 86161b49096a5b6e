package contract

import (
	"fmt"
	"unicode"
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

// ConsoleByPrefix begins the verified_by (or reactivated_by) of an operation an operator made by
// hand in the console: "console:<username>". The client API refuses it (ValidateBy), so a log
// entry carrying it was made in the console, never by an API key claiming to be an operator.
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

// hasPrefixFoldASCII tells whether v begins with prefix (lowercase ASCII) in any ASCII case:
// the OpenAPI document's pattern says the same, so the two never disagree on a string.
func hasPrefixFoldASCII(v, prefix string) bool {
	if len(v) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := v[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
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
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return fmt.Errorf("Idempotency-Key must be printable ASCII")
		}
	}
	return nil
}
