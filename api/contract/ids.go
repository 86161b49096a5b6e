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
