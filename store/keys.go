package store

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/acv/acv/api/contract"
)

// CreateAPIKey records a key for a project and returns it with its project's flags; its
// Secret is as stored (sealed). contract.ErrNotFound when the project does not exist,
// contract.ErrConflict when the id is taken.
func (s *Store) CreateAPIKey(ctx context.Context, nk contract.NewAPIKey) (contract.APIKey, error) {
	if err := checkID("api key", nk.ID); err != nil {
		return contract.APIKey{}, err
	}
	if err := checkID("project", nk.ProjectID); err != nil {
		return contract.APIKey{}, err
	}
	if err := checkRate(nk.RatePerSec, nk.Burst); err != nil {
		return contract.APIKey{}, err
	}
	if nk.Secret == "" {
		return contract.APIKey{}, fmt.Errorf("api key %s: empty secret", nk.ID)
	}
	k := contract.APIKey{ID: nk.ID, ProjectID: nk.ProjectID, Secret: nk.Secret}
	var expiresAt *time.Time
	err := s.pool.QueryRow(ctx,
		`WITH k AS (
			INSERT INTO api_keys (id, project_id, secret, rate_per_sec, burst)
			VALUES ($1, $2, $3, $4, $5)
			RETURNING project_id, coalesce(rate_per_sec, 0) AS rate, coalesce(burst, 0) AS burst, version)
		 SELECT k.rate, k.burst, k.version, p.enabled, p.expires_at
		 FROM k JOIN projects p ON p.id = k.project_id`,
		k.ID, nk.ProjectID, k.Secret, positive(nk.RatePerSec), positive(nk.Burst),
	).Scan(&k.RatePerSec, &k.Burst, &k.Version, &k.ProjectEnabled, &expiresAt)
	if err != nil {
		return contract.APIKey{}, fmt.Errorf("insert api key for project %s: %w", nk.ProjectID, translate(err))
	}
	k.ProjectExpiresAt = toUnix(expiresAt)
	return k, nil
}

// RevokeAPIKey revokes a key for good; revoking a revoked key keeps its first revocation time.
// contract.ErrNotFound when the key does not exist.
func (s *Store) RevokeAPIKey(ctx context.Context, id string) error {
	if err := checkID("api key", id); err != nil {
		return err
	}
	return update(ctx, s.pool, "api key", id,
		`UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()), version = version + 1 WHERE id = $1`, id)
}

// SetAPIKeyRateLimit changes a key's token bucket; ratePerSec <= 0 or burst <= 0 clears that
// limit. contract.ErrNotFound when the key does not exist.
func (s *Store) SetAPIKeyRateLimit(ctx context.Context, id string, ratePerSec float64, burst int) error {
	if err := checkID("api key", id); err != nil {
		return err
	}
	if err := checkRate(ratePerSec, burst); err != nil {
		return err
	}
	return update(ctx, s.pool, "api key", id,
		`UPDATE api_keys SET rate_per_sec = $2, burst = $3, version = version + 1 WHERE id = $1`,
		id, positive(ratePerSec), positive(burst))
}

// keySelect reads keys joined with their project's flags; scanKey reads one of its rows.
const keySelect = `SELECT k.id, k.project_id, k.secret, k.revoked_at IS NOT NULL,
	        coalesce(k.rate_per_sec, 0), coalesce(k.burst, 0), k.version, p.enabled, p.expires_at
	 FROM api_keys k JOIN projects p ON p.id = k.project_id`

func scanKey(row pgx.CollectableRow) (contract.APIKey, error) {
	var (
		k         contract.APIKey
		expiresAt *time.Time
	)
	err := row.Scan(hexIDInto(&k.ID), hexIDInto(&k.ProjectID), &k.Secret, &k.Revoked, &k.RatePerSec, &k.Burst, &k.Version, &k.ProjectEnabled, &expiresAt)
	k.ProjectExpiresAt = toUnix(expiresAt)
	return k, err
}

// APIKey reads a key with its project's flags, for authentication; its Secret is as stored
// (sealed, or in clear from before sealing). contract.ErrNotFound when there is no such key.
func (s *Store) APIKey(ctx context.Context, id string) (contract.APIKey, error) {
	if err := checkID("api key", id); err != nil {
		return contract.APIKey{}, err
	}
	return one(ctx, s.pool, "select api key "+id, scanKey, keySelect+` WHERE k.id = $1`, id)
}

// APIKeys reads every key, in id order, to fill the key mirror in Redis.
func (s *Store) APIKeys(ctx context.Context) ([]contract.APIKey, error) {
	return collect(ctx, s.pool, "select api keys", scanKey, keySelect+` ORDER BY k.id`)
}

// checkRate rejects limits no token bucket can honour.
func checkRate(ratePerSec float64, burst int) error {
	if math.IsNaN(ratePerSec) || math.IsInf(ratePerSec, 0) {
		return fmt.Errorf("rate per second must be a finite number, got %v", ratePerSec)
	}
	if burst > math.MaxInt32 {
		return fmt.Errorf("burst %d is too large", burst)
	}
	return nil
}

// TouchAPIKeys moves each key ids[i]'s last_used_at forward to at[i], in the order given (sorted
// by the caller, so concurrent flushes lock rows alike); keys since deleted are skipped.
func (s *Store) TouchAPIKeys(ctx context.Context, ids []string, at []time.Time) error {
	if len(ids) != len(at) {
		return fmt.Errorf("touch api keys: %d ids, %d times", len(ids), len(at))
	}
	if len(ids) == 0 {
		return nil
	}
	for _, id := range ids {
		if err := checkID("api key", id); err != nil {
			return err
		}
	}
	return exec(ctx, s.pool, fmt.Sprintf("touch %d api keys", len(ids)),
		`UPDATE api_keys k SET last_used_at = u.at
		 FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, at)
		 WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`, ids, at)
}

// APIKeySecrets reads every key's stored secret, in id order, for re-sealing them under
// another master key (`acv key rewrap`) and for counting the ones still in clear.
func (s *Store) APIKeySecrets(ctx context.Context) ([]contract.StoredSecret, error) {
	return collect(ctx, s.pool, "select api key secrets", func(r pgx.CollectableRow) (contract.StoredSecret, error) {
		var k contract.StoredSecret
		err := r.Scan(hexIDInto(&k.KeyID), &k.Secret)
		return k, err
	}, `SELECT id, secret FROM api_keys ORDER BY id`)
}

// ReplaceAPIKeySecret stores next as the key's secret if the key still holds old, and tells
// whether it did: a key changed or deleted since old was read is left alone.
func (s *Store) ReplaceAPIKeySecret(ctx context.Context, keyID, old, next string) (bool, error) {
	if err := checkID("api key", keyID); err != nil {
		return false, err
	}
	n, err := affected(ctx, s.pool, "replace secret of api key "+keyID,
		`UPDATE api_keys SET secret = $3, version = version + 1 WHERE id = $1 AND secret = $2`, keyID, old, next)
	return n == 1, err
}
