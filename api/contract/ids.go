package contract

import (
	"encoding/hex"
	"fmt"

	"github.com/google/uuid"
)

// NewID returns a time-ordered UUIDv7 as 32 lowercase hex characters, so ids sort by creation.
func NewID() string {
	u, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only when crypto/rand does; nothing can be identified without it.
		panic(fmt.Sprintf("generate uuidv7: %v", err))
	}
	return hex.EncodeToString(u[:])
}

// ValidID tells whether s has the wire form of an id: 32 lowercase hex characters.
func ValidID(s string) bool { return len(s) == 32 && lowerHex(s) }

// HexDigit is the value of the hex digit c, either case, or 255 when c is none.
func HexDigit(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10
	}
	return 255
}

// RawID is an id as its 16 raw bytes, the form Redis keys and outbox entries hold it in;
// anything but 32 hex digits is returned as it is (it names nothing that exists, so it only has
// to stay distinct).
func RawID(id string) string {
	if len(id) != 32 {
		return id
	}
	var b [16]byte
	if _, err := hex.Decode(b[:], []byte(id)); err != nil {
		return id
	}
	return string(b[:])
}

// HexID is the wire form of an id held as its 16 raw bytes; anything else is returned as it is.
func HexID(raw string) string {
	if len(raw) != 16 {
		return raw
	}
	return hex.EncodeToString([]byte(raw))
}
