package store_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/acv/acv/api/contract"
)

// newAPIKey is a key to record with a fresh id and an opaque secret of the sealed form (the
// store neither seals nor opens: internal/admin does).
func newAPIKey(projectID string, rate float64, burst int) contract.NewAPIKey {
	b := make([]byte, 92)
	_, _ = rand.Read(b)
	return contract.NewAPIKey{ID: contract.NewID(), ProjectID: projectID,
		Secret: "v1:t:" + base64.RawURLEncoding.EncodeToString(b), RatePerSec: rate, Burst: burst}
}

// clearHex is a secret as keys issued before sealing hold it.
func clearHex() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// The schema takes a secret sealed or as 64 hex in clear (a key issued before sealing, until
// `acv key rewrap`) and refuses anything else; the rows can be listed and swapped one by one,
// only when unchanged since read.
func TestSecretsAndRewrapPrimitives(t *testing.T) {
	ctx := testCtx(t)
	s := newStore(t)
	p := mustProject(t, s, nil)
	oldID, oldSecret := contract.NewID(), clearHex()
	if _, err := s.Pool().Exec(ctx, `INSERT INTO api_keys (id, project_id, secret) VALUES ($1, $2, $3)`,
		oldID, p.ID, oldSecret); err != nil {
		t.Fatalf("a key in clear: %v", err)
	}
	got, err := s.APIKey(ctx, oldID)
	if err != nil || got.Secret != oldSecret {
		t.Fatalf("the key in clear: %v (secret kept: %v)", err, got.Secret == oldSecret)
	}
	sealed, err := s.CreateAPIKey(ctx, newAPIKey(p.ID, 0, 0))
	if err != nil {
		t.Fatalf("a sealed secret: %v", err)
	}
	for name, secret := range map[string]string{
		"uppercase hex": "ABCDEF" + clearHex()[6:],
		"short hex":     clearHex()[:63],
		"no kid":        "v1::abc",
		"bad kid":       "v1:a b:abc",
		"bad base64":    "v1:k:a+b/c=",
		"other text":    "secret",
	} {
		nk := newAPIKey(p.ID, 0, 0)
		nk.Secret = secret
		if _, err := s.CreateAPIKey(ctx, nk); err == nil {
			t.Errorf("%s: stored", name)
		}
	}

	rows, err := s.APIKeySecrets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []contract.StoredSecret{{KeyID: oldID, Secret: oldSecret}, {KeyID: sealed.ID, Secret: sealed.Secret}}
	if oldID > sealed.ID {
		want[0], want[1] = want[1], want[0]
	}
	if len(rows) != 2 || rows[0] != want[0] || rows[1] != want[1] {
		t.Fatalf("secrets = %v, want %v in id order", rows, want)
	}
	next := newAPIKey(p.ID, 0, 0).Secret
	if ok, err := s.ReplaceAPIKeySecret(ctx, oldID, oldSecret, next); !ok || err != nil {
		t.Fatalf("replace: %v %v", ok, err)
	}
	if ok, err := s.ReplaceAPIKeySecret(ctx, oldID, oldSecret, newAPIKey(p.ID, 0, 0).Secret); ok || err != nil {
		t.Fatalf("replace from a stale value: %v %v, want false", ok, err)
	}
	if ok, err := s.ReplaceAPIKeySecret(ctx, contract.NewID(), oldSecret, next); ok || err != nil {
		t.Fatalf("replace of no key: %v %v, want false", ok, err)
	}
	if ok, err := s.ReplaceAPIKeySecret(ctx, oldID, next, "garbage"); ok || err == nil {
		t.Fatalf("replace with a malformed secret: %v %v, want an error", ok, err)
	}
	if got, _ := s.APIKey(ctx, oldID); got.Secret != next {
		t.Fatalf("after replace the key holds another secret")
	}

	if _, err := s.CreateAPIKey(ctx, newAPIKey("not-an-id", 0, 0)); err == nil || errors.Is(err, contract.ErrConflict) {
		t.Fatalf("a malformed project id: %v", err)
	}
}
