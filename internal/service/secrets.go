package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/secrets"
	"github.com/acv/acv/store"
)

// errMasterKeyRequired is what a process that must open API-key secrets says without a key.
var errMasterKeyRequired = errors.New("no master key: set ACV_MASTER_KEY (64 hex characters, or kid:hex entries) " +
	"or ACV_MASTER_KEY_FILE; the api role and the admin commands need it to seal and open API-key secrets")

// masterKeys reads the keyring from ACV_MASTER_KEY's value inline or from the file
// ACV_MASTER_KEY_FILE names (not both); nil when neither is set. Its errors never quote key
// material.
func masterKeys(inline, file string) (*secrets.Keyring, error) {
	var k *secrets.Keyring
	var err error
	switch {
	case inline != "" && file != "":
		return nil, errors.New("ACV_MASTER_KEY and ACV_MASTER_KEY_FILE are both set; set one")
	case inline != "":
		if k, err = secrets.Parse(inline); err != nil {
			return nil, fmt.Errorf("ACV_MASTER_KEY: %w", err)
		}
	case file != "":
		if k, err = secrets.ParseFile(file); err != nil {
			return nil, fmt.Errorf("ACV_MASTER_KEY_FILE: %w", err)
		}
	}
	return k, nil
}

// clearSecret is the form of a secret issued before secrets were sealed: 64 lowercase hex.
var clearSecret = regexp.MustCompile(`^[0-9a-f]{64}$`)

// apiRecords is the Records the HTTP layer reads: API keys from the key mirror in Redis, so
// authentication costs no Postgres query, with each secret opened by the keyring (no store
// holds it in clear); the rest from Postgres. A secret still in clear (issued before sealing)
// is used as it is; anything else that does not open is an error, never a secret.
type apiRecords struct {
	*store.Store
	mirror *cache.Cache
	keys   *secrets.Keyring
}

func (r apiRecords) APIKey(ctx context.Context, id string) (contract.APIKey, error) {
	k, err := r.mirror.APIKey(ctx, id)
	if err != nil {
		return contract.APIKey{}, err
	}
	if !secrets.IsSealed(k.Secret) {
		if !clearSecret.MatchString(k.Secret) {
			return contract.APIKey{}, fmt.Errorf("api key %s: its secret is neither sealed nor a secret in clear", k.ID)
		}
		return k, nil
	}
	plain, err := r.keys.Open(k.ID, k.Secret)
	if err != nil {
		return contract.APIKey{}, fmt.Errorf("api key %s: %w", k.ID, err)
	}
	k.Secret = string(plain)
	return k, nil
}

type secretCensus struct {
	Clear   int // in clear: usable, but `acv key rewrap` should seal them
	Active  int // sealed by the active master key
	Older   int // sealed by another configured master key: `acv key rewrap` moves them
	Unknown int // sealed by a master key not configured, or malformed: these keys cannot authenticate
}

func takeCensus(rows []contract.StoredSecret, keys *secrets.Keyring) secretCensus {
	var c secretCensus
	for _, r := range rows {
		kid, err := secrets.KeyID(r.Secret)
		switch {
		case errors.Is(err, secrets.ErrNotSealed) && clearSecret.MatchString(r.Secret):
			c.Clear++
		case err != nil || !keys.Has(kid):
			c.Unknown++
		case kid == keys.ActiveID():
			c.Active++
		default:
			c.Older++
		}
	}
	return c
}

// reportSecrets logs once, as an API replica starts, what an operator must act on: secrets in
// clear, or under a master key that is not configured. It counts, never shows a secret.
func reportSecrets(ctx context.Context, d *Deps, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := d.Store.APIKeySecrets(ctx)
	if err != nil {
		log.Warn("could not count the api keys whose secret is in clear", "err", err)
		return
	}
	c := takeCensus(rows, d.Config.MasterKeys)
	if c.Clear > 0 {
		log.Warn("api key secrets are stored in clear; run `acv key rewrap` to seal them", "count", c.Clear)
	}
	if c.Unknown > 0 {
		log.Warn("api key secrets are sealed by a master key that is not configured (or malformed); those keys cannot authenticate",
			"count", c.Unknown, "master_keys", strings.Join(d.Config.MasterKeys.IDs(), ","))
	}
	if c.Older > 0 {
		log.Info("api key secrets are sealed by an older master key; `acv key rewrap` moves them to the active one",
			"count", c.Older, "active_master_key", d.Config.MasterKeys.ActiveID())
	}
}
