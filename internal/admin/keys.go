package admin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/plural"
	"github.com/acv/acv/internal/secrets"
)

// ErrNoMasterKey: an action that seals or opens API-key secrets ran without a keyring.
var ErrNoMasterKey = errors.New("no master key configured: set ACV_MASTER_KEY or ACV_MASTER_KEY_FILE")

// clearSecret is the form of a secret issued before secrets were sealed.
var clearSecret = regexp.MustCompile(`^[0-9a-f]{64}$`)

// CreateAPIKey issues a key with a random 64-hex-digit secret, stored sealed by the active
// master key; the key returned carries it in clear, to show once. A limit <= 0 is unset.
func (a *Admin) CreateAPIKey(ctx context.Context, projectID string, ratePerSec float64, burst int) (contract.APIKey, error) {
	if a.Keys == nil {
		return contract.APIKey{}, ErrNoMasterKey
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return contract.APIKey{}, fmt.Errorf("generate secret: %w", err)
	}
	secret := hex.EncodeToString(raw[:])
	id := contract.NewKeyID()
	sealed, err := a.Keys.Seal(id, []byte(secret))
	if err != nil {
		return contract.APIKey{}, fmt.Errorf("create api key: %w", err)
	}
	k, err := a.Store.CreateAPIKey(ctx, contract.NewAPIKey{
		ID: id, ProjectID: projectID, Secret: sealed, RatePerSec: ratePerSec, Burst: burst,
	})
	if err != nil {
		return contract.APIKey{}, notFound(err, "project", projectID)
	}
	if _, err := a.Cache.PutKey(ctx, k); err != nil {
		return contract.APIKey{}, fmt.Errorf("publish api key %s to redis: %w", k.ID, err)
	}
	k.Secret = secret
	return k, nil
}

// RewrapKeys seals every API key's secret with the active master key, replacing a row only if
// unchanged since read (concurrent runs are safe); one that does not open is counted, not fatal.
func (a *Admin) RewrapKeys(ctx context.Context) (contract.RewrapResult, error) {
	var res contract.RewrapResult
	if a.Keys == nil {
		return res, ErrNoMasterKey
	}
	rows, err := a.Store.APIKeySecrets(ctx)
	if err != nil {
		return res, err
	}
	var first error
	for _, r := range rows {
		if err := a.rewrapOne(ctx, r, &res); err != nil {
			if ctx.Err() != nil {
				return res, err
			}
			res.Failed++
			if first == nil {
				first = err
			}
		}
	}
	if first != nil {
		return res, fmt.Errorf("%s could not be re-sealed; the first: %w", plural.N(res.Failed, "API key secret", "API key secrets"), first)
	}
	return res, nil
}

// rewrapOne seals one key's secret anew, reading it again when another writer changed it.
func (a *Admin) rewrapOne(ctx context.Context, r contract.StoredSecret, res *contract.RewrapResult) error {
	for attempt := 0; ; attempt++ {
		var plain []byte
		wasClear := !secrets.IsSealed(r.Secret)
		if wasClear {
			if !clearSecret.MatchString(r.Secret) {
				return fmt.Errorf("api key %s: its secret is neither sealed nor a secret in clear", r.KeyID)
			}
			plain = []byte(r.Secret)
		} else {
			kid, err := secrets.KeyID(r.Secret)
			if err != nil {
				return fmt.Errorf("api key %s: %w", r.KeyID, err)
			}
			if plain, err = a.Keys.Open(r.KeyID, r.Secret); err != nil {
				return err
			}
			if kid == a.Keys.ActiveID() {
				res.Current++
				return nil
			}
		}
		sealed, err := a.Keys.Seal(r.KeyID, plain)
		if err != nil {
			return err
		}
		ok, err := a.Store.ReplaceAPIKeySecret(ctx, r.KeyID, r.Secret, sealed)
		if err != nil {
			return err
		}
		if ok {
			if err := a.publishKey(ctx, r.KeyID); err != nil {
				return err
			}
			if wasClear {
				res.Sealed++
			} else {
				res.Rewrapped++
			}
			return nil
		}
		// Changed since it was read (another rewrap, most likely): look again.
		k, err := a.Store.APIKey(ctx, r.KeyID)
		if errors.Is(err, contract.ErrNotFound) {
			return nil // deleted meanwhile: nothing to protect
		}
		if err != nil {
			return err
		}
		if attempt == 2 {
			return fmt.Errorf("api key %s: its secret keeps changing; run again", r.KeyID)
		}
		r.Secret = k.Secret
	}
}

// ActiveKeyID is the id of the master key that seals new secrets ("" without master keys).
func (a *Admin) ActiveKeyID() string {
	if a.Keys == nil {
		return ""
	}
	return a.Keys.ActiveID()
}

// APIKeys lists a project's API keys without their secrets.
func (a *Admin) APIKeys(ctx context.Context, projectID string) ([]contract.KeyInfo, error) {
	ks, err := a.Store.ProjectAPIKeys(ctx, projectID)
	return orEmpty(ks), notFound(err, "project", projectID)
}

// publishKey copies a key's stored state to the mirror, which keeps only its newest version.
func (a *Admin) publishKey(ctx context.Context, keyID string) error {
	k, err := a.Store.APIKey(ctx, keyID)
	if err != nil {
		return err
	}
	if _, err := a.Cache.PutKey(ctx, k); err != nil {
		return fmt.Errorf("publish api key %s to redis: %w", keyID, err)
	}
	return nil
}

// RevokeAPIKey revokes a key for good: in the Redis mirror first, so it takes effect even while
// Postgres is unreachable, then in Postgres (run it again if that failed).
func (a *Admin) RevokeAPIKey(ctx context.Context, keyID string) error {
	if err := a.Cache.RevokeKey(ctx, keyID); err != nil {
		return err
	}
	if err := a.Store.RevokeAPIKey(ctx, keyID); err != nil {
		if errors.Is(err, contract.ErrNotFound) {
			return contract.NotFound("API key %s not found", keyID)
		}
		return fmt.Errorf("api key %s is revoked in redis, which the service reads, but not yet in postgres (run the command again): %w", keyID, err)
	}
	return a.publishKey(ctx, keyID)
}

// SetAPIKeyRateLimit changes a key's token bucket in Postgres and then in the mirror.
func (a *Admin) SetAPIKeyRateLimit(ctx context.Context, keyID string, ratePerSec float64, burst int) error {
	if err := a.Store.SetAPIKeyRateLimit(ctx, keyID, ratePerSec, burst); err != nil {
		return notFound(err, "API key", keyID)
	}
	return a.publishKey(ctx, keyID)
}

// SyncKeys copies every key to the Redis mirror, as replicas do at start, and counts them.
func (a *Admin) SyncKeys(ctx context.Context) (int, error) {
	keys, err := a.Store.APIKeys(ctx)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, k := range keys {
		if _, err := a.Cache.PutKey(ctx, k); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return len(keys), fmt.Errorf("mirror %d of %d api keys: %w", len(errs), len(keys), err)
	}
	return len(keys), nil
}
