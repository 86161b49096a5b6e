package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5/pgtype"
)

// CreateAPIKey issues a key for a project: a time-ordered id and a secret of 32 random bytes as
// 64 lowercase hex characters. ratePerSec <= 0 or burst <= 0 leaves that limit unset.
// contract.ErrNotFound when the project does not exist.
func (s *Store) CreateAPIKey(ctx context.Context, projectID string, ratePerSec float64, burst int) (contract.APIKey, error) {
	if err := checkID("project", projectID); err != nil {
		return contract.APIKey{}, err
	}
	if err := checkRate(ratePerSec, burst); err != nil {
		return contract.APIKey{}, err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return contract.APIKey{}, fmt.Errorf("generate secret: %w", err)
	}
	k := contract.APIKey{ID: contract.NewID(), ProjectID: projectID, Secret: hex.EncodeToString(raw[:])}
	var expiresAt *time.Time
	err := s.pool.QueryRow(ctx,
		`WITH k AS (
			INSERT INTO api_keys (id, project_id, secret, rate_per_sec, burst)
			VALUES ($1, $2, $3, $4, $5)
			RETURNING project_id, coalesce(rate_per_sec, 0) AS rate, coalesce(burst, 0) AS burst)
		 SELECT k.rate, k.burst, p.enabled, p.expires_at
		 FROM k JOIN projects p ON p.id = k.project_id`,
		k.ID, projectID, k.Secret, optRate(ratePerSec), optBurst(burst),
	).Scan(&k.RatePerSec, &k.Burst, &k.ProjectEnabled, &expiresAt)
	if err != nil {
		return contract.APIKey{}, fmt.Errorf("insert api key for project %s: %w", projectID, translate(err))
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
	tag, err := s.pool.Exec(ctx,
		`UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("revoke api key %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("api key %s: %w", id, contract.ErrNotFound)
	}
	return nil
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
	tag, err := s.pool.Exec(ctx,
		`UPDATE api_keys SET rate_per_sec = $2, burst = $3 WHERE id = $1`,
		id, optRate(ratePerSec), optBurst(burst))
	if err != nil {
		return fmt.Errorf("update api key %s rate limit: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("api key %s: %w", id, contract.ErrNotFound)
	}
	return nil
}

// APIKey reads a key joined with its project's flags, for authentication. contract.ErrNotFound when the
// key does not exist.
func (s *Store) APIKey(ctx context.Context, id string) (contract.APIKey, error) {
	if err := checkID("api key", id); err != nil {
		return contract.APIKey{}, err
	}
	var (
		k         contract.APIKey
		kid, pid  pgtype.UUID
		expiresAt *time.Time
	)
	err := s.pool.QueryRow(ctx,
		`SELECT k.id, k.project_id, k.secret, k.revoked_at IS NOT NULL,
		        coalesce(k.rate_per_sec, 0), coalesce(k.burst, 0), p.enabled, p.expires_at
		 FROM api_keys k JOIN projects p ON p.id = k.project_id
		 WHERE k.id = $1`, id,
	).Scan(&kid, &pid, &k.Secret, &k.Revoked, &k.RatePerSec, &k.Burst, &k.ProjectEnabled, &expiresAt)
	if err != nil {
		return contract.APIKey{}, fmt.Errorf("select api key %s: %w", id, translate(err))
	}
	k.ID, k.ProjectID = hexID(kid), hexID(pid)
	k.ProjectExpiresAt = toUnix(expiresAt)
	return k, nil
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

// optRate stores an unset (non-positive) rate as NULL.
func optRate(r float64) *float64 {
	if r <= 0 {
		return nil
	}
	return &r
}

// optBurst stores an unset (non-positive) burst as NULL.
func optBurst(b int) *int32 {
	if b <= 0 {
		return nil
	}
	v := int32(b)
	return &v
}
