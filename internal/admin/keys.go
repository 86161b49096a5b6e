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

// CreateAPIKey issues a key for a project: a fresh key id and a secret of 32 random bytes as
// 64 lowercase hex characters, stored sealed by the active master key (bound to the key id).
// The returned key carries the secret in clear: show it once, it is not kept anywhere in
// clear. ratePerSec <= 0 or burst <= 0 leaves that limit unset. contract.ErrNotFound when the
// project does not exist.
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

// RewrapKeys seals every API key's secret with the active master key: secrets in clear are
// sealed, secrets sealed by another configured master key are opened and sealed again, and
// secrets already under the active key are checked to open. Each row is replaced only if it
// still holds what was read, so running it twice, or beside another run, is safe; a second run
// finds every secret current. When some secret does not open, the others are still done and
// the error names how many failed and why the first did.
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

// rewrapOne brings one key's secret under the active master key, reading it again when
// another writer changed it meanwhile.
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
