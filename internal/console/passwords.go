package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// PasswordParams are argon2id's cost parameters for new hashes. A stored hash carries its own
// parameters, so raising them later leaves existing passwords valid.
type PasswordParams struct {
	MemoryKiB uint32
	Time      uint32
	Threads   uint8
}

// The default cost is OWASP's first argon2id recommendation (19 MiB, 2 passes, 1 lane): tens
// of milliseconds a login on one core, so a guessing attacker with a stolen table pays the same.
const (
	defaultMemoryKiB = 19 * 1024
	defaultTime      = 2
	defaultThreads   = 1
	saltLen          = 16
	hashLen          = 32
)

// DefaultPasswordParams is the cost new passwords are hashed with unless a Config says otherwise.
func DefaultPasswordParams() PasswordParams {
	return PasswordParams{MemoryKiB: defaultMemoryKiB, Time: defaultTime, Threads: defaultThreads}
}

// Password length bounds: 12 characters is the least a human-chosen password may have; the
// upper bound keeps one login's hashing input small.
const (
	minPasswordLen = 12
	maxPasswordLen = 256
)

// HashPassword hashes password with argon2id and a fresh random salt, in the PHC string format
// ($argon2id$v=19$m=…,t=…,p=…$salt$hash, unpadded standard base64) that other tools read.
func HashPassword(p PasswordParams, password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password salt: %w", err)
	}
	sum := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, hashLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(sum)), nil
}

// errBadHash: a stored hash is not an argon2id PHC string this code can check.
var errBadHash = errors.New("password hash is not an argon2id PHC string")

// CheckPassword tells whether password matches the PHC string phc, hashing it with phc's own
// salt and parameters and comparing in constant time.
func CheckPassword(phc, password string) (bool, error) {
	parts := strings.Split(phc, "$")
	// "", "argon2id", "v=19", "m=…,t=…,p=…", salt, hash
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var p PasswordParams
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &p.Threads); err != nil ||
		p.MemoryKiB == 0 || p.Time == 0 || p.Threads == 0 || p.MemoryKiB > 4<<20 || p.Time > 64 {
		return false, errBadHash
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return false, errBadHash
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) < 16 {
		return false, errBadHash
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// oneTimeAlphabet has no look-alike characters, so a bootstrap password read off a terminal
// and typed into a browser survives.
const oneTimeAlphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// NewOneTimePassword draws a 20-character password from crypto/rand (about 116 bits), for an
// account's first login: the account must change it before doing anything else.
func NewOneTimePassword() (string, error) {
	const n = 20
	b := make([]byte, n)
	out := make([]byte, n)
	limit := byte(256 - 256%len(oneTimeAlphabet)) // reject above it: no modulo bias
	for i := 0; i < n; {
		if _, err := rand.Read(b); err != nil {
			return "", fmt.Errorf("one-time password: %w", err)
		}
		for _, v := range b {
			if i == n {
				break
			}
			if v < limit {
				out[i] = oneTimeAlphabet[int(v)%len(oneTimeAlphabet)]
				i++
			}
		}
	}
	return string(out), nil
}

// checkNewPassword refuses a password an account may not choose.
func checkNewPassword(pw, username string) error {
	switch n := utf8.RuneCountInString(pw); {
	case !utf8.ValidString(pw):
		return errors.New("password must be valid UTF-8")
	case n < minPasswordLen:
		return fmt.Errorf("password must be at least %d characters", minPasswordLen)
	case len(pw) > maxPasswordLen:
		return fmt.Errorf("password must be at most %d bytes", maxPasswordLen)
	case strings.EqualFold(pw, username):
		return errors.New("password must not be the username")
	}
	return nil
}
