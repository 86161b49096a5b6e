package service_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/secrets"
	"github.com/acv/acv/internal/service"
	"github.com/acv/acv/internal/testkit"
)

func masterKey(t *testing.T, id string) secrets.MasterKey {
	t.Helper()
	k, err := secrets.GenerateKey(id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func keyring(t *testing.T, keys ...secrets.MasterKey) *secrets.Keyring {
	t.Helper()
	r, err := secrets.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// countLines counts the stack's log lines that contain every one of parts.
func countLines(s *testkit.Stack, parts ...string) int {
	n := 0
	for _, l := range s.Logs.Lines() {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			n++
		}
	}
	return n
}

// Keys sealed under an older master key and keys still in clear (issued before sealing)
// authenticate through the API; the replica warns once about the clear ones; `acv key rewrap`
// moves them all under the active key, after which the old key can be dropped. A sealed
// secret copied onto another key's row authenticates nothing.
func TestSealedSecretsAuthenticate(t *testing.T) {
	s := testkit.NewStack(t)
	ctx := context.Background()
	oldK, curK := masterKey(t, "old"), masterKey(t, "cur")
	rotated := keyring(t, curK, oldK)
	with := func(r *secrets.Keyring) *admin.Admin {
		return &admin.Admin{Store: s.Deps.Store, Cache: s.Deps.Cache, Keys: r}
	}
	p, err := s.Admin.CreateProject(ctx, contract.NewProject{Name: "sealed"})
	if err != nil {
		t.Fatal(err)
	}
	s.ImportCodes(p.ID, nil, "SEAL-1", "SEAL-2", "SEAL-3")

	// A key in clear as issued before sealing, one under the old master key, one under the new.
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	clearKey := contract.APIKey{ID: contract.NewKeyID(), ProjectID: p.ID, Secret: hex.EncodeToString(raw)}
	if _, err := s.Deps.Store.Pool().Exec(ctx, `INSERT INTO api_keys (id, project_id, secret) VALUES ($1, $2, $3)`,
		clearKey.ID, p.ID, clearKey.Secret); err != nil {
		t.Fatal(err)
	}
	oldKey, err := with(keyring(t, oldK)).CreateAPIKey(ctx, p.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	curKey, err := with(rotated).CreateAPIKey(ctx, p.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]contract.APIKey{"clear": clearKey, "old": oldKey, "cur": curKey}

	get := func(base string, k contract.APIKey) int {
		t.Helper()
		return s.Signer(t, base, k).Send(testkit.Request{Method: http.MethodGet, Path: testkit.ProjectPath(p.ID), Nonce: testkit.Nonce()}).Status
	}
	allAuthenticate := func(base string) {
		t.Helper()
		for name, k := range keys {
			if st := get(base, k); st != http.StatusOK {
				t.Fatalf("%s key: %d, want 200", name, st)
			}
		}
	}

	s.Config.MasterKeys = rotated
	before := s.StartAPI()
	allAuthenticate(before)
	var o Outcome
	s.Signer(t, before, oldKey).Post(testkit.VerifyPath(p.ID), map[string]any{"code": "SEAL-1"}, nil).Decode(t, http.StatusOK, &o)
	if !o.Success {
		t.Fatalf("verify with the old-key secret: %+v", o)
	}
	if n := countLines(s, "stored in clear", "acv key rewrap", `"count":1`); n != 1 {
		t.Fatalf("%d warnings about secrets in clear, want 1:\n%s", n, strings.Join(s.Logs.Lines(), "\n"))
	}
	if n := countLines(s, "older master key", `"count":1`); n != 1 {
		t.Fatalf("%d notes about secrets under an older master key, want 1", n)
	}
	// The HTTP layer signs with the secret in clear, not with what the table holds.
	stored, err := s.Deps.Store.APIKey(ctx, curKey.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st := get(before, contract.APIKey{ID: curKey.ID, Secret: stored.Secret}); st != http.StatusUnauthorized {
		t.Fatalf("signing with the sealed value: %d, want 401", st)
	}

	res, err := with(rotated).RewrapKeys(ctx)
	if err != nil || res != (contract.RewrapResult{Sealed: 1, Rewrapped: 1, Current: 1}) {
		t.Fatalf("rewrap = %+v, %v", res, err)
	}
	for name, k := range keys {
		st, err := s.Deps.Store.APIKey(ctx, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		if kid, err := secrets.KeyID(st.Secret); err != nil || kid != "cur" || strings.Contains(st.Secret, k.Secret) {
			t.Fatalf("%s key after rewrap: not sealed by the active key (%v)", name, err)
		}
	}

	// The old master key dropped: a fresh replica still authenticates every key, and has
	// nothing to warn about.
	s.Config.MasterKeys = keyring(t, curK)
	after := s.StartAPI()
	allAuthenticate(after)
	s.Signer(t, after, clearKey).Post(testkit.VerifyPath(p.ID), map[string]any{"code": "SEAL-2"}, nil).Decode(t, http.StatusOK, &o)
	if !o.Success {
		t.Fatalf("verify with the formerly clear secret: %+v", o)
	}
	if n := countLines(s, "stored in clear"); n != 1 {
		t.Fatalf("the replica after rewrap warned about secrets in clear")
	}

	// The cur key's sealed secret copied onto the old key's row opens for neither the old key
	// (its id is bound into the ciphertext) nor as anything else; the cur key still works. The
	// row's version goes up as any change's does, so the replica starting next mirrors it.
	if _, err := s.Deps.Store.Pool().Exec(ctx, `UPDATE api_keys SET secret = (SELECT secret FROM api_keys WHERE id = $2), version = version + 1 WHERE id = $1`,
		oldKey.ID, curKey.ID); err != nil {
		t.Fatal(err)
	}
	moved := s.StartAPI()
	if st := get(moved, oldKey); st == http.StatusOK || st < 400 {
		t.Fatalf("the old key with a moved ciphertext: %d, want a refusal", st)
	}
	if st := get(moved, contract.APIKey{ID: oldKey.ID, Secret: curKey.Secret}); st == http.StatusOK {
		t.Fatalf("the moved ciphertext authenticated as the key it was moved to")
	}
	if st := get(moved, curKey); st != http.StatusOK {
		t.Fatalf("cur key: %d", st)
	}
}

// An API replica without a master key does not start; the pipeline needs none.
func TestServeNeedsMasterKey(t *testing.T) {
	cfg := service.Config{RedisURL: "redis://127.0.0.1:1/0", DatabaseURL: "postgres://x@127.0.0.1:1/x",
		KafkaBrokers: []string{"127.0.0.1:1"}, Roles: service.Roles{API: true}}
	err := service.Run(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "ACV_MASTER_KEY") || !strings.Contains(err.Error(), "ACV_MASTER_KEY_FILE") {
		t.Fatalf("api role without a master key: %v (want the message naming ACV_MASTER_KEY and ACV_MASTER_KEY_FILE)", err)
	}
	cfg.Roles = service.Roles{Relay: true, Consumer: true}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the pipeline without a master key: %v", err)
	}
}

func TestMasterKeysFromEnv(t *testing.T) {
	a, b := masterKey(t, "a"), masterKey(t, "b")
	path := filepath.Join(t.TempDir(), "master.key")
	if err := os.WriteFile(path, []byte("# rotated\n"+b.Line()+"\n"+a.Line()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sealed, err := keyring(t, a).Seal("r", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, inline, file string
		active             string
		err                string
	}{
		{name: "none"},
		{name: "inline list", inline: a.Line() + "," + b.Line(), active: "a"},
		{name: "inline bare", inline: hex.EncodeToString(a.Key), active: secrets.Fingerprint(a.Key)},
		{name: "file", file: path, active: "b"},
		{name: "both", inline: a.Line(), file: path, err: "both set"},
		{name: "malformed", inline: "a:" + hex.EncodeToString(a.Key)[:60], err: "ACV_MASTER_KEY: master key entry 1"},
		{name: "missing file", file: path + ".none", err: "ACV_MASTER_KEY_FILE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("ACV_MASTER_KEY", tt.inline)
			t.Setenv("ACV_MASTER_KEY_FILE", tt.file)
			cfg, err := service.FromEnv()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				if strings.Contains(err.Error(), hex.EncodeToString(a.Key)[:16]) {
					t.Fatalf("the error quotes key material")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.active == "" {
				if cfg.MasterKeys != nil {
					t.Fatalf("keys without configuration: %v", cfg.MasterKeys)
				}
				return
			}
			if cfg.MasterKeys == nil || cfg.MasterKeys.ActiveID() != tt.active {
				t.Fatalf("keys %v, want active %q", cfg.MasterKeys, tt.active)
			}
			if !cfg.MasterKeys.Has("a") {
				return // the bare key has its fingerprint for id
			}
			if got, err := cfg.MasterKeys.Open("r", sealed); err != nil || string(got) != "x" {
				t.Fatalf("key a from the environment does not open its value: %v", err)
			}
		})
	}
}
