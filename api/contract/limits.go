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
