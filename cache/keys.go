package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/acv/acv/api/contract"
)

// unknownKeyTTL is how long the mirror remembers that a key id with a valid checksum names no
// key, so guessing such ids costs Postgres one query each, not one per request.
const unknownKeyTTL = 5 * time.Minute

// PutKey mirrors an API key (its secret sealed) into Redis unless Redis holds a newer version;
// it reports whether it stored.
func (c *Cache) PutKey(ctx context.Context, k contract.APIKey) (bool, error) {
	return c.runDone(ctx, "put api key", putKeyScript, []string{apiKeyKey(k.ID)}, k.ProjectID, k.Secret,
		strconv.FormatFloat(k.RatePerSec, 'f', -1, 64), k.Burst, flag(k.Revoked), k.Version)
}

// RevokeKey marks a key revoked in the mirror, before Postgres hears of it, so a revocation
// reaches every replica even while Postgres is down.
func (c *Cache) RevokeKey(ctx context.Context, keyID string) error {
	_, err := c.runDone(ctx, "revoke api key in redis", revokeKeyScript, []string{apiKeyKey(keyID)})
	return err
}

// APIKey reads an API key (secret sealed) with its project's state from the mirror, asking the
// Loader only for what it lacks: an unmirrored id failing the checksum is unknown at once, and
// one no key has is remembered as unknown for a while. contract.ErrNotFound (wrapped) if none.
func (c *Cache) APIKey(ctx context.Context, id string) (contract.APIKey, error) {
	m, err := c.rdb.HGetAll(ctx, apiKeyKey(id)).Result()
	if err != nil {
		return contract.APIKey{}, fmt.Errorf("read api key: %w", translate(err))
	}
	var k contract.APIKey
	switch {
	case m[fUnknown] == "1":
		return contract.APIKey{}, fmt.Errorf("api key %s: %w", id, contract.ErrNotFound)
	case m[fKeyProject] != "":
		if k, err = keyFromHash(id, m); err != nil {
			return contract.APIKey{}, err
		}
	default:
		// Not mirrored (or a revoked stub): only an id that may have been issued is looked up.
		if len(m) == 0 && !contract.KeyIDChecksumOK(id) {
			return contract.APIKey{}, fmt.Errorf("api key %s: %w", id, contract.ErrNotFound)
		}
		if k, err = c.loadKey(ctx, id); err != nil {
			return contract.APIKey{}, err
		}
		if m[fKeyRevoked] == "1" {
			k.Revoked = true
		}
	}
	p, err := c.projectState(ctx, k.ProjectID)
	if err != nil {
		return contract.APIKey{}, err
	}
	k.ProjectEnabled, k.ProjectExpiresAt = p.Status, p.ExpiresAt
	return k, nil
}

func (c *Cache) loadKey(ctx context.Context, id string) (contract.APIKey, error) {
	if c.loader == nil {
		return contract.APIKey{}, errors.New("api key not in redis and no loader configured")
	}
	k, err := c.loader.APIKey(ctx, id)
	if errors.Is(err, contract.ErrNotFound) {
		if _, err := c.runDone(ctx, "mark unknown api key", unknownScript, []string{apiKeyKey(id)}, int64(unknownKeyTTL/time.Second)); err != nil {
			return contract.APIKey{}, err
		}
		return contract.APIKey{}, fmt.Errorf("api key %s: %w", id, contract.ErrNotFound)
	}
	if err != nil {
		return contract.APIKey{}, fmt.Errorf("load api key: %w", err)
	}
	if _, err := c.PutKey(ctx, k); err != nil {
		return contract.APIKey{}, err
	}
	return k, nil
}

// keyFromHash reads a mirrored key strictly: a field that does not parse is an error.
func keyFromHash(id string, m map[string]string) (contract.APIKey, error) {
	k := contract.APIKey{ID: id, ProjectID: m[fKeyProject], Secret: m[fKeySecret], Revoked: m[fKeyRevoked] == "1"}
	var err error
	if k.RatePerSec, err = strconv.ParseFloat(m[fKeyRate], 64); err != nil {
		return contract.APIKey{}, fmt.Errorf("api key %s field %s: %w", id, fKeyRate, err)
	}
	if k.Burst, err = strconv.Atoi(m[fKeyBurst]); err != nil {
		return contract.APIKey{}, fmt.Errorf("api key %s field %s: %w", id, fKeyBurst, err)
	}
	if k.Version, err = strconv.ParseInt(m[fVersion], 10, 64); err != nil {
		return contract.APIKey{}, fmt.Errorf("api key %s field %s: %w", id, fVersion, err)
	}
	return k, nil
}

// projectState reads the project's enabled flag and expiry from its home shard's copy,
// loading it when Redis lacks it.
func (c *Cache) projectState(ctx context.Context, projectID string) (contract.Project, error) {
	home := homeShard(projectID)
	for attempt := 0; attempt < 2; attempt++ {
		v, err := c.rdb.HMGet(ctx, projectKey(home, projectID), fEnabled, fExpiresAt).Result()
		if err != nil {
			return contract.Project{}, fmt.Errorf("read project state: %w", translate(err))
		}
		if en, ok := v[0].(string); ok {
			p := contract.Project{ID: projectID, Status: en == "1"}
			if x, ok := v[1].(string); ok {
				exp, err := strconv.ParseInt(x, 10, 64)
				if err != nil {
					return contract.Project{}, fmt.Errorf("project %s field %s: %w", projectID, fExpiresAt, err)
				}
				p.ExpiresAt = &exp
			}
			return p, nil
		}
		if err := c.loadProject(ctx, home, projectID); err != nil {
			return contract.Project{}, err
		}
	}
	return contract.Project{}, errors.New("project state did not settle in redis after loading")
}
