// Package secrets encrypts the API keys' HMAC secrets at rest with AES-256-GCM under master
// keys kept outside the database, so a copy of the database alone signs nothing. A sealed
// secret is "v1:<kid>:<base64url, unpadded, of nonce(12) | ciphertext | tag(16)>"; random
// nonces bound a key to 2^32 seals. The additional data is "v1:<kid>:" and the record's id, so
// a value moved to another record or relabelled does not open. No error carries key material.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
)

const (
	// KeySize is the length of a master key: 32 bytes, AES-256.
	KeySize = 32
	// version is the format tag every sealed value starts with.
	version = "v1"
	// maxKeyIDLen bounds a master key id, which every sealed value repeats.
	maxKeyIDLen = 32
)

// Errors of Open and of parsing master keys, wrapped: test them with errors.Is.
var (
	// ErrNotSealed: the value is not in the sealed form (it may be a secret kept in clear).
	ErrNotSealed = errors.New("not a sealed secret")
	// ErrMalformed: the value has the sealed form's prefix but not its shape.
	ErrMalformed = errors.New("malformed sealed secret")
	// ErrUnknownKey: the value was sealed by a master key the keyring does not hold.
	ErrUnknownKey = errors.New("master key not configured")
	// ErrNotAuthentic: the value does not open — a wrong master key under the same id, a
	// tampered ciphertext, or a sealed value moved to another record.
	ErrNotAuthentic = errors.New("sealed secret does not authenticate")
	// ErrNoKeys: a keyring needs at least one master key.
	ErrNoKeys = errors.New("no master key")
)

// MasterKey is one master key: its id, as sealed values name it, and its 32 bytes.
type MasterKey struct {
	ID  string
	Key []byte
}

// String names the key without its material, so a MasterKey printed by accident leaks nothing.
func (m MasterKey) String() string { return "master key " + m.ID }

// GoString is String, for %#v.
func (m MasterKey) GoString() string { return m.String() }

// LogValue logs the id only.
func (m MasterKey) LogValue() slog.Value { return slog.StringValue(m.ID) }

// Line is the key in the key-file form, "<kid>:<64 hex>", for writing a key file.
func (m MasterKey) Line() string { return m.ID + ":" + hex.EncodeToString(m.Key) }

// GenerateKey makes a random master key named id.
func GenerateKey(id string) (MasterKey, error) {
	if err := checkKeyID(id); err != nil {
		return MasterKey{}, err
	}
	k := MasterKey{ID: id, Key: make([]byte, KeySize)}
	if _, err := rand.Read(k.Key); err != nil {
		return MasterKey{}, fmt.Errorf("generate master key: %w", err)
	}
	return k, nil
}

// Fingerprint is the id of a master key given without one: 8 hex digits of a labelled SHA-256
// of the key, so a bare key keeps its id when it later becomes one of several.
func Fingerprint(key []byte) string {
	h := sha256.New()
	h.Write([]byte("acv master key id\x00"))
	h.Write(key)
	return hex.EncodeToString(h.Sum(nil))[:8]
}

// Keyring seals with its active (first) master key and opens with any of its keys, so older
// keys work until `acv key rewrap`. It is safe for concurrent use.
type Keyring struct {
	active string
	ids    []string
	aeads  map[string]cipher.AEAD
}

// New makes a keyring of keys; the first is the active one. Ids must be unique, 1 to 32 of
// [A-Za-z0-9_-], and every key 32 bytes.
func New(keys ...MasterKey) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, ErrNoKeys
	}
	k := &Keyring{active: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys))}
	for i, m := range keys {
		if err := checkKeyID(m.ID); err != nil {
			return nil, fmt.Errorf("master key %d: %w", i+1, err)
		}
		if _, dup := k.aeads[m.ID]; dup {
			return nil, fmt.Errorf("master key %d: id %q is used twice", i+1, m.ID)
		}
		if len(m.Key) != KeySize {
			return nil, fmt.Errorf("master key %q: %d bytes, want %d", m.ID, len(m.Key), KeySize)
		}
		block, err := aes.NewCipher(m.Key)
		if err != nil {
			return nil, fmt.Errorf("master key %q: %w", m.ID, err)
		}
		aead, err := cipher.NewGCMWithRandomNonce(block)
		if err != nil {
			return nil, fmt.Errorf("master key %q: %w", m.ID, err)
		}
		k.aeads[m.ID] = aead
		k.ids = append(k.ids, m.ID)
	}
	return k, nil
}

// Parse reads master keys, the first active, from entries separated by commas or newlines:
// "<kid>:<64 hex>" or a bare "<64 hex>" (id its Fingerprint); lines starting with '#' are skipped.
func Parse(text string) (*Keyring, error) {
	var keys []MasterKey
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, e := range strings.Split(line, ",") {
			if e = strings.TrimSpace(e); e == "" {
				continue
			}
			m, err := parseEntry(e)
			if err != nil {
				return nil, fmt.Errorf("master key entry %d: %w", len(keys)+1, err)
			}
			keys = append(keys, m)
		}
	}
	return New(keys...)
}

// ParseFile reads master keys from a file in Parse's form.
func ParseFile(path string) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read master key file: %w", err)
	}
	k, err := Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("master key file %s: %w", path, err)
	}
	return k, nil
}

// parseEntry reads one "<kid>:<hex>" or "<hex>"; its errors never quote the entry (a key).
func parseEntry(e string) (MasterKey, error) {
	id, hx, named := strings.Cut(e, ":")
	if !named {
		hx = e
	}
	if len(hx) != 2*KeySize {
		return MasterKey{}, fmt.Errorf("want %d hex characters of key, got %d", 2*KeySize, len(hx))
	}
	key, err := hex.DecodeString(hx)
	if err != nil {
		return MasterKey{}, errors.New("key is not hexadecimal")
	}
	if !named {
		id = Fingerprint(key)
	}
	if err := checkKeyID(id); err != nil {
		return MasterKey{}, err
	}
	return MasterKey{ID: id, Key: key}, nil
}

var keyIDChars = regexp.MustCompile(`^[A-Za-z0-9_-]*$`)

func checkKeyID(id string) error {
	if id == "" || len(id) > maxKeyIDLen {
		return fmt.Errorf("master key id must be 1 to %d characters", maxKeyIDLen)
	}
	if !keyIDChars.MatchString(id) {
		return fmt.Errorf("master key id %q: only letters, digits, '_' and '-'", id)
	}
	return nil
}

// ActiveID is the id of the key Seal uses.
func (k *Keyring) ActiveID() string { return k.active }

// IDs are the ids of every key, the active one first.
func (k *Keyring) IDs() []string { return append([]string(nil), k.ids...) }

// Has tells whether the keyring holds the key id.
func (k *Keyring) Has(id string) bool { _, ok := k.aeads[id]; return ok }

// String shows the key ids, never their material.
func (k *Keyring) String() string {
	if k == nil {
		return "keyring(none)"
	}
	return fmt.Sprintf("keyring(active %s, keys %s)", k.active, strings.Join(k.ids, ","))
}

// GoString is String, for %#v.
func (k *Keyring) GoString() string { return k.String() }

// LogValue logs the key ids only.
func (k *Keyring) LogValue() slog.Value { return slog.StringValue(k.String()) }

// Seal encrypts plaintext, the secret of the record recordID, with the active master key.
func (k *Keyring) Seal(recordID string, plaintext []byte) (string, error) {
	if recordID == "" {
		return "", errors.New("seal secret: the record id must not be empty")
	}
	prefix := version + ":" + k.active + ":"
	ct := k.aeads[k.active].Seal(nil, nil, plaintext, aad(prefix, recordID))
	return prefix + base64.RawURLEncoding.EncodeToString(ct), nil
}

// Open decrypts sealed, the sealed secret of the record recordID, with the master key it
// names; ErrNotSealed, ErrMalformed, ErrUnknownKey or ErrNotAuthentic when it cannot.
func (k *Keyring) Open(recordID, sealed string) ([]byte, error) {
	kid, body, err := split(sealed)
	if err != nil {
		return nil, fmt.Errorf("open secret of %s: %w", recordID, err)
	}
	aead, ok := k.aeads[kid]
	if !ok {
		return nil, fmt.Errorf("open secret of %s: sealed by master key %q: %w", recordID, kid, ErrUnknownKey)
	}
	ct, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(ct) < aead.Overhead() {
		return nil, fmt.Errorf("open secret of %s: %w", recordID, ErrMalformed)
	}
	pt, err := aead.Open(nil, nil, ct, aad(version+":"+kid+":", recordID))
	if err != nil {
		return nil, fmt.Errorf("open secret of %s with master key %q: %w", recordID, kid, ErrNotAuthentic)
	}
	return pt, nil
}

// IsSealed tells whether s has the sealed form's prefix; a secret kept in clear has not.
func IsSealed(s string) bool { return strings.HasPrefix(s, version+":") }

// KeyID is the id of the master key that sealed s; ErrNotSealed or ErrMalformed when none.
func KeyID(sealed string) (string, error) {
	kid, _, err := split(sealed)
	return kid, err
}

func split(sealed string) (kid, body string, err error) {
	if !IsSealed(sealed) {
		return "", "", ErrNotSealed
	}
	kid, body, ok := strings.Cut(sealed[len(version)+1:], ":")
	if !ok || checkKeyID(kid) != nil || body == "" {
		return "", "", ErrMalformed
	}
	return kid, body, nil
}

// aad is the additional data a value is sealed with: its prefix, then the record id.
func aad(prefix, recordID string) []byte { return []byte(prefix + recordID) }
