package admin_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/admin"
	"github.com/acv/acv/internal/secrets"
	"github.com/acv/acv/store"
	"github.com/redis/go-redis/v9"
)

// tableRows is every api_keys row as text, each column included, as a database dump shows it.
func tableRows(t *testing.T, a *admin.Admin) []string {
	t.Helper()
	rows, err := a.Store.(*store.Store).Pool().Query(context.Background(), `SELECT k::text || ' ' || row_to_json(k)::text FROM api_keys k`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// encodings are the forms a secret could take in a row: its hex text in both cases, its 32
// bytes in base64 (every alphabet) and the hex text itself in base64.
func encodings(secretHex string) []string {
	raw, _ := hex.DecodeString(secretHex)
	var out []string
	for _, b := range [][]byte{raw, []byte(secretHex)} {
		out = append(out, base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
			base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b))
	}
	return append(out, secretHex, strings.ToUpper(secretHex), hex.EncodeToString([]byte(secretHex)))
}

func TestCreateAPIKeyStoresNoPlaintext(t *testing.T) {
	a, rdb, pid := newAdmin(t)
	ctx := context.Background()
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	var keys []contract.APIKey
	for i := 0; i < 5; i++ {
		k, err := a.CreateAPIKey(ctx, pid, float64(i), i)
		if err != nil {
			t.Fatal(err)
		}
		if !hex64.MatchString(k.Secret) || !contract.KeyIDChecksumOK(k.ID) || k.ProjectID != pid {
			t.Fatalf("created key %s: want a 64-hex secret shown once and a checksummed id", k.ID)
		}
		keys = append(keys, k)
	}
	// The key mirror too, after every kind of write to it: revoke, limit, a replica's sync.
	if err := a.RevokeAPIKey(ctx, keys[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := a.SetAPIKeyRateLimit(ctx, keys[1].ID, 9, 9); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SyncKeys(ctx); err != nil {
		t.Fatal(err)
	}
	mirrored := redisValues(t, rdb)
	if len(mirrored) < len(keys) {
		t.Fatalf("redis holds %d values, want at least the %d keys' mirrors", len(mirrored), len(keys))
	}
	rows := append(tableRows(t, a), mirrored...)
	for _, k := range keys {
		for _, row := range rows {
			for _, enc := range encodings(k.Secret) {
				// A base64 form of 32 bytes is 43 characters: a chance match is impossible.
				if strings.Contains(row, enc) || strings.Contains(strings.ToLower(row), strings.ToLower(k.Secret)) {
					t.Fatalf("a row of api_keys carries key %s's secret (as %d characters)", k.ID, len(enc))
				}
			}
		}
		stored, err := a.Store.APIKey(ctx, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		if kid, err := secrets.KeyID(stored.Secret); err != nil || kid != a.Keys.ActiveID() {
			t.Fatalf("stored secret of %s is not sealed by the active master key (%v)", k.ID, err)
		}
		if plain, err := a.Keys.Open(k.ID, stored.Secret); err != nil || string(plain) != k.Secret {
			t.Fatalf("stored secret of %s does not open to the issued one: %v", k.ID, err)
		}
		// Bound to its key: under another key's id it does not open.
		if k.ID != keys[0].ID {
			if _, err := a.Keys.Open(keys[0].ID, stored.Secret); !errors.Is(err, secrets.ErrNotAuthentic) {
				t.Fatalf("the secret of %s opens as key %s's: %v", k.ID, keys[0].ID, err)
			}
		}
	}

	noKeys := &admin.Admin{Store: a.Store, Cache: a.Cache}
	if _, err := noKeys.CreateAPIKey(ctx, pid, 0, 0); !errors.Is(err, admin.ErrNoMasterKey) {
		t.Fatalf("create without master keys: %v", err)
	}
	if _, err := noKeys.RewrapKeys(ctx); !errors.Is(err, admin.ErrNoMasterKey) {
		t.Fatalf("rewrap without master keys: %v", err)
	}
	if _, err := a.CreateAPIKey(ctx, contract.NewID(), 0, 0); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("a key of no project: %v", err)
	}
}

// insertClearKey writes a key the way versions before sealing did: its secret in clear.
func insertClearKey(t *testing.T, a *admin.Admin, projectID string) (id, secret string) {
	t.Helper()
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	id, secret = contract.NewKeyID(), hex.EncodeToString(raw)
	if _, err := a.Store.(*store.Store).Pool().Exec(context.Background(),
		`INSERT INTO api_keys (id, project_id, secret) VALUES ($1, $2, $3)`, id, projectID, secret); err != nil {
		t.Fatal(err)
	}
	return id, secret
}

// ring is a keyring of the master keys, the first active.
func ring(t *testing.T, keys ...secrets.MasterKey) *secrets.Keyring {
	t.Helper()
	r, err := secrets.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func masterKey(t *testing.T, id string) secrets.MasterKey {
	t.Helper()
	k, err := secrets.GenerateKey(id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRewrapKeys(t *testing.T) {
	a0, _, pid := newAdmin(t)
	ctx := context.Background()
	with := func(r *secrets.Keyring) *admin.Admin { return &admin.Admin{Store: a0.Store, Cache: a0.Cache, Keys: r} }
	oldK, curK, nextK := masterKey(t, "old"), masterKey(t, "cur"), masterKey(t, "next")

	// Keys issued over time: two in clear, two under the old master key, then the operator
	// rotates (the new key first, the old one kept to open) and issues one more.
	plain := map[string]string{}
	for i := 0; i < 2; i++ {
		id, s := insertClearKey(t, a0, pid)
		plain[id] = s
	}
	for i := 0; i < 2; i++ {
		k, err := with(ring(t, oldK)).CreateAPIKey(ctx, pid, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		plain[k.ID] = k.Secret
	}
	rotated, err := secrets.Parse(curK.Line() + "," + oldK.Line())
	if err != nil {
		t.Fatal(err)
	}
	k, err := with(rotated).CreateAPIKey(ctx, pid, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	plain[k.ID] = k.Secret

	res, err := with(rotated).RewrapKeys(ctx)
	if err != nil || res != (contract.RewrapResult{Sealed: 2, Rewrapped: 2, Current: 1}) {
		t.Fatalf("rewrap = %+v, %v", res, err)
	}
	// Every secret now opens with the new master key alone, and no row shows one.
	opensWith := func(r *secrets.Keyring) {
		t.Helper()
		for id, secret := range plain {
			stored, err := a0.Store.APIKey(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := r.Open(id, stored.Secret); err != nil || string(got) != secret {
				t.Fatalf("key %s: %v", id, err)
			}
		}
		for _, row := range tableRows(t, a0) {
			for _, secret := range plain {
				for _, enc := range encodings(secret) {
					if strings.Contains(row, enc) {
						t.Fatalf("a row of api_keys carries a secret")
					}
				}
			}
		}
	}
	opensWith(ring(t, curK))
	if res, err := with(rotated).RewrapKeys(ctx); err != nil || res != (contract.RewrapResult{Current: 5}) {
		t.Fatalf("second rewrap = %+v, %v; want every secret current", res, err)
	}

	// Two operators rewrapping at once after another rotation: every key is moved once.
	again := ring(t, nextK, curK)
	var wg sync.WaitGroup
	results := make([]contract.RewrapResult, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := with(again).RewrapKeys(ctx)
			if err != nil {
				t.Errorf("concurrent rewrap: %v", err)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	if moved := results[0].Rewrapped + results[1].Rewrapped; moved != 5 || results[0].Failed+results[1].Failed != 0 {
		t.Fatalf("concurrent rewraps moved %d keys (%+v), want 5", moved, results)
	}
	opensWith(ring(t, nextK))

	// A secret whose master key is gone, and one copied onto another key's row, fail; the
	// rest are still done, and the command says how many failed and why.
	lost, err := with(ring(t, masterKey(t, "lost"))).CreateAPIKey(ctx, pid, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, len(plain))
	for id := range plain {
		ids = append(ids, id)
	}
	victim, donor := ids[0], ids[1]
	if _, err := a0.Store.(*store.Store).Pool().Exec(ctx, `UPDATE api_keys SET secret = (SELECT secret FROM api_keys WHERE id = $2) WHERE id = $1`,
		victim, donor); err != nil {
		t.Fatal(err)
	}
	clearID, _ := insertClearKey(t, a0, pid)
	res, err = with(again).RewrapKeys(ctx)
	if err == nil || !strings.Contains(err.Error(), "2 API key secrets") ||
		res != (contract.RewrapResult{Sealed: 1, Current: 4, Failed: 2}) {
		t.Fatalf("rewrap with a lost and a moved secret = %+v, %v", res, err)
	}
	if !errors.Is(err, secrets.ErrUnknownKey) && !errors.Is(err, secrets.ErrNotAuthentic) {
		t.Fatalf("the error does not say why: %v", err)
	}
	if strings.Contains(err.Error(), plain[donor]) || strings.Contains(err.Error(), lost.Secret) {
		t.Fatalf("the error carries a secret")
	}
	if stored, _ := a0.Store.APIKey(ctx, clearID); !secrets.IsSealed(stored.Secret) {
		t.Fatalf("the clear key was not sealed beside the failures")
	}
}

// redisValues is every key of Redis with all its values, one string a key.
func redisValues(t *testing.T, rdb *redis.Client) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		typ, err := rdb.Type(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		var vals []string
		switch typ {
		case "hash":
			m, err := rdb.HGetAll(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			for f, v := range m {
				vals = append(vals, f, v)
			}
		case "string":
			v, err := rdb.Get(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			vals = append(vals, v)
		default:
			t.Fatalf("redis key %q of type %s: extend this test", key, typ)
		}
		out = append(out, key+" "+strings.Join(vals, " "))
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
