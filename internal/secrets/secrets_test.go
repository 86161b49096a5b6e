package secrets_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/acv/acv/internal/secrets"
)

func mustKey(t *testing.T, id string) secrets.MasterKey {
	t.Helper()
	k, err := secrets.GenerateKey(id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustRing(t *testing.T, keys ...secrets.MasterKey) *secrets.Keyring {
	t.Helper()
	r, err := secrets.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const (
	recordA = "0190b2c4d5e6f708192a3b4c5d6e7f80"
	recordB = "0190b2c4d5e6f708192a3b4c5d6e7f81"
)

var sealedForm = regexp.MustCompile(`^v1:k1:[A-Za-z0-9_-]+$`)

func TestSealOpenRoundTrip(t *testing.T) {
	r := mustRing(t, mustKey(t, "k1"))
	secret := []byte(strings.Repeat("ab", 32))
	s1, err := r.Seal(recordA, secret)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := r.Seal(recordA, secret)
	if !sealedForm.MatchString(s1) || s1 == s2 {
		t.Fatalf("sealed %q and %q: want the v1:k1: form and a fresh nonce each time", s1, s2)
	}
	if !secrets.IsSealed(s1) || secrets.IsSealed(string(secret)) {
		t.Fatalf("IsSealed misclassifies")
	}
	if kid, err := secrets.KeyID(s1); kid != "k1" || err != nil {
		t.Fatalf("KeyID = %q, %v", kid, err)
	}
	if strings.Contains(s1, string(secret)) {
		t.Fatalf("the sealed value carries the plaintext")
	}
	for _, s := range []string{s1, s2} {
		got, err := r.Open(recordA, s)
		if err != nil || !bytes.Equal(got, secret) {
			t.Fatalf("open = %q, %v", got, err)
		}
	}
	// An empty secret seals and opens too (GCM authenticates it).
	e, _ := r.Seal(recordA, nil)
	if got, err := r.Open(recordA, e); err != nil || len(got) != 0 {
		t.Fatalf("empty secret: %q, %v", got, err)
	}
	if _, err := r.Seal("", secret); err == nil {
		t.Fatalf("sealing for no record succeeded")
	}
}

func TestOpenRefuses(t *testing.T) {
	k1 := mustKey(t, "k1")
	r := mustRing(t, k1)
	secret := []byte(strings.Repeat("cd", 32))
	sealed, err := r.Seal(recordA, secret)
	if err != nil {
		t.Fatal(err)
	}
	body := sealed[len("v1:k1:"):]
	raw, _ := base64.RawURLEncoding.DecodeString(body)
	flip := func(i int) string {
		b := append([]byte(nil), raw...)
		b[i] ^= 1
		return "v1:k1:" + base64.RawURLEncoding.EncodeToString(b)
	}
	otherSameID := mustRing(t, mustKey(t, "k1")) // another key that claims the same id
	tests := []struct {
		name   string
		ring   *secrets.Keyring
		record string
		sealed string
		want   error
	}{
		{"unknown master key id", mustRing(t, mustKey(t, "k2")), recordA, sealed, secrets.ErrUnknownKey},
		{"wrong key under the same id", otherSameID, recordA, sealed, secrets.ErrNotAuthentic},
		{"AAD mismatch: another record", r, recordB, sealed, secrets.ErrNotAuthentic},
		{"relabelled kid", mustRing(t, k1, mustKey(t, "k2")), recordA, "v1:k2:" + body, secrets.ErrNotAuthentic},
		{"tampered nonce", r, recordA, flip(0), secrets.ErrNotAuthentic},
		{"tampered ciphertext", r, recordA, flip(20), secrets.ErrNotAuthentic},
		{"tampered tag", r, recordA, flip(len(raw) - 1), secrets.ErrNotAuthentic},
		{"truncated", r, recordA, "v1:k1:" + base64.RawURLEncoding.EncodeToString(raw[:20]), secrets.ErrMalformed},
		{"not base64", r, recordA, "v1:k1:***", secrets.ErrMalformed},
		{"no body", r, recordA, "v1:k1:", secrets.ErrMalformed},
		{"bad kid", r, recordA, "v1:k 1:" + body, secrets.ErrMalformed},
		{"clear text", r, recordA, string(secret), secrets.ErrNotSealed},
		{"other version", r, recordA, "v2:k1:" + body, secrets.ErrNotSealed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.ring.Open(tt.record, tt.sealed)
			if !errors.Is(err, tt.want) || got != nil {
				t.Fatalf("open = %q, %v; want %v", got, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.record) {
				t.Errorf("error %q does not name the record", err)
			}
			if strings.Contains(err.Error(), string(secret)) || strings.Contains(err.Error(), body) {
				t.Errorf("error %q carries the secret or the sealed value", err)
			}
		})
	}
}

func TestRotation(t *testing.T) {
	old, cur := mustKey(t, "old"), mustKey(t, "new")
	before := mustRing(t, old)
	after := mustRing(t, cur, old)
	secret := []byte("s3cret")
	sealedOld, _ := before.Seal(recordA, secret)
	if got, err := after.Open(recordA, sealedOld); err != nil || string(got) != "s3cret" {
		t.Fatalf("the old key no longer opens: %q, %v", got, err)
	}
	sealedNew, _ := after.Seal(recordA, secret)
	if kid, _ := secrets.KeyID(sealedNew); kid != "new" || after.ActiveID() != "new" {
		t.Fatalf("sealed by %q (active %q), want the first key", kid, after.ActiveID())
	}
	if _, err := before.Open(recordA, sealedNew); !errors.Is(err, secrets.ErrUnknownKey) {
		t.Fatalf("a keyring without the new key opened its value: %v", err)
	}
	// Dropping the old key after re-sealing keeps the secret.
	if got, err := mustRing(t, cur).Open(recordA, sealedNew); err != nil || string(got) != "s3cret" {
		t.Fatalf("after dropping the old key: %q, %v", got, err)
	}
	if ids := after.IDs(); len(ids) != 2 || ids[0] != "new" || ids[1] != "old" || !after.Has("old") || after.Has("x") {
		t.Fatalf("ids %v", ids)
	}
}

func TestParse(t *testing.T) {
	a, b := mustKey(t, "a"), mustKey(t, "b-2")
	bare := strings.Repeat("0f", 32)
	bareKey, _ := hex.DecodeString(bare)
	tests := []struct {
		name, text string
		active     string
		ids        []string
	}{
		{"bare hex", bare, secrets.Fingerprint(bareKey), []string{secrets.Fingerprint(bareKey)}},
		{"one named", a.Line(), "a", []string{"a"}},
		{"comma list", b.Line() + ", " + a.Line(), "b-2", []string{"b-2", "a"}},
		{"file lines", "# rotated 2026-01\n\n" + b.Line() + "\n" + a.Line() + "\n" + bare + "\n", "b-2",
			[]string{"b-2", "a", secrets.Fingerprint(bareKey)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := secrets.Parse(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if r.ActiveID() != tt.active || fmt.Sprint(r.IDs()) != fmt.Sprint(tt.ids) {
				t.Fatalf("active %q ids %v, want %q %v", r.ActiveID(), r.IDs(), tt.active, tt.ids)
			}
		})
	}
	// A parsed key opens what the generated one sealed.
	sealed, _ := mustRing(t, a).Seal(recordA, []byte("x"))
	r, _ := secrets.Parse(a.Line())
	if got, err := r.Open(recordA, sealed); err != nil || string(got) != "x" {
		t.Fatalf("parsed key: %q, %v", got, err)
	}

	secretHex := hex.EncodeToString(a.Key)
	for name, text := range map[string]string{
		"empty":         " \n# nothing\n",
		"short":         "a:" + secretHex[:62],
		"long":          secretHex + "00",
		"not hex":       "a:" + strings.Repeat("zz", 32),
		"duplicate id":  a.Line() + "," + "a:" + strings.Repeat("11", 32),
		"bad id":        "a b:" + secretHex,
		"id too long":   strings.Repeat("x", 33) + ":" + secretHex,
		"empty id":      ":" + secretHex,
		"odd separator": a.Line() + ";" + b.Line(),
	} {
		_, err := secrets.Parse(text)
		if err == nil {
			t.Errorf("%s: parsed", name)
			continue
		}
		if strings.Contains(err.Error(), secretHex[:16]) || strings.Contains(err.Error(), "zzzz") {
			t.Errorf("%s: error %q quotes key material", name, err)
		}
	}
}

func TestParseFile(t *testing.T) {
	k := mustKey(t, "file")
	path := filepath.Join(t.TempDir(), "master.key")
	if err := os.WriteFile(path, []byte(k.Line()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := secrets.ParseFile(path)
	if err != nil || r.ActiveID() != "file" {
		t.Fatalf("%v, %v", r, err)
	}
	if _, err := secrets.ParseFile(filepath.Join(t.TempDir(), "none")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestNewRefuses(t *testing.T) {
	if _, err := secrets.New(); !errors.Is(err, secrets.ErrNoKeys) {
		t.Fatalf("no keys: %v", err)
	}
	if _, err := secrets.New(secrets.MasterKey{ID: "a", Key: make([]byte, 16)}); err == nil {
		t.Fatalf("a 16-byte key was accepted")
	}
	if _, err := secrets.GenerateKey("no:colons"); err == nil {
		t.Fatalf("an id with ':' was accepted")
	}
}

// Printing or logging keys shows their ids, never their bytes.
func TestKeysDoNotPrint(t *testing.T) {
	k := mustKey(t, "k1")
	r := mustRing(t, k)
	hx := hex.EncodeToString(k.Key)
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "ring", r, "key", k)
	out := fmt.Sprintf("%v %+v %#v %s %v %+v %#v", r, r, r, k, k, k, k) + buf.String()
	if strings.Contains(out, hx) || strings.Contains(out, fmt.Sprint(k.Key)) || !strings.Contains(out, "k1") {
		t.Fatalf("printed keys: %s", out)
	}
}

func TestNilKeyringPrints(t *testing.T) {
	var r *secrets.Keyring
	if s := fmt.Sprint(r); s != "keyring(none)" {
		t.Fatalf("nil keyring prints %q", s)
	}
}
