package contract

import (
	"errors"
	"strconv"
)

// The authentication headers have exactly one accepted spelling each, so that nothing the
// server derives from them (above all the replay identity) can be varied by re-spelling a
// header: a captured request sent again with its signature in upper case, its timestamp with a
// leading zero or its nonce padded is either refused or recognised as the same request.

// ValidSignature tells whether s is in the contract's encoding of an X-Signature: exactly 64
// lowercase hex characters.
func ValidSignature(s string) bool { return len(s) == 64 && lowerHex(s) }

// ParseTimestamp reads an X-Timestamp: Unix seconds in canonical decimal, with no sign, no
// leading zero and at most 12 digits (until the year 33658).
func ParseTimestamp(s string) (int64, error) {
	if len(s) == 0 || len(s) > 12 || (len(s) > 1 && s[0] == '0') {
		return 0, errors.New("X-Timestamp must be Unix seconds")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("X-Timestamp must be Unix seconds")
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

// ReplayIdentity is what the server remembers of an accepted request to refuse it a second
// time: the request's nonce when it sent one, otherwise its signature, which the server has
// verified to be the HMAC of exactly what was signed, so two requests share an identity only
// when they are the same signed request (or reuse a nonce, which the contract forbids). The
// two kinds live apart ("n:" and "s:"), so a nonce that happens to spell a signature cannot
// collide with it. Call it only with headers that passed ValidNonce and ValidSignature.
func ReplayIdentity(signature, nonce string) string {
	if nonce != "" {
		return "n:" + nonce
	}
	return "s:" + signature
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
