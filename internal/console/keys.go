package console

import (
	"context"
	"errors"
	"math"

	"github.com/acv/acv/api/contract"
)

// APIKeys lists a project's API keys, never a secret (viewer and above).
func (s *Service) APIKeys(ctx context.Context, a Actor, projectID string) ([]contract.KeyInfo, error) {
	ad, err := s.operator(a, RoleViewer)
	if err != nil {
		return nil, err
	}
	return ad.APIKeys(ctx, projectID)
}

// checkLimit refuses a token bucket no key can have; 0 leaves a limit unset.
func checkLimit(rate float64, burst int) error {
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 || rate > 1e6 {
		return contract.Errorf(contract.KindInvalid, "rate_per_sec must be 0 (unlimited) to 1000000")
	}
	if burst < 0 || burst > math.MaxInt32 {
		return contract.Errorf(contract.KindInvalid, "burst must be 0 (unset) to %d", math.MaxInt32)
	}
	return nil
}

// CreateAPIKey issues a key for a project (operator and above). The returned key holds its
// secret in clear, to be shown once; the audit log records the key's id and limits only.
func (s *Service) CreateAPIKey(ctx context.Context, a Actor, projectID string, rate float64, burst int) (contract.APIKey, error) {
	ad, err := s.operator(a, RoleOperator)
	if err != nil {
		return contract.APIKey{}, err
	}
	if err := checkLimit(rate, burst); err != nil {
		return contract.APIKey{}, err
	}
	k, err := ad.CreateAPIKey(ctx, projectID, rate, burst)
	if err != nil {
		return k, err
	}
	return k, s.record(ctx, a, "api_key.create", "api_key", k.ID, projectID, map[string]any{
		"rate_per_sec": rate, "burst": burst})
}

// keyProject is the project of an API key, for the audit log, as a refusal naming the key when
// it does not exist.
func (s *Service) keyProject(ctx context.Context, keyID string) (string, error) {
	k, err := s.store.APIKey(ctx, keyID)
	if errors.Is(err, contract.ErrNotFound) {
		return "", contract.Errorf(contract.KindNotFound, "API key %s not found", keyID)
	}
	return k.ProjectID, err
}

// RevokeAPIKey revokes a key for good (operator and above).
func (s *Service) RevokeAPIKey(ctx context.Context, a Actor, keyID string) error {
	ad, err := s.operator(a, RoleOperator)
	if err != nil {
		return err
	}
	pid, err := s.keyProject(ctx, keyID)
	if err != nil {
		return err
	}
	if err := ad.RevokeAPIKey(ctx, keyID); err != nil {
		return err
	}
	return s.record(ctx, a, "api_key.revoke", "api_key", keyID, pid, nil)
}

// SetAPIKeyRateLimit changes a key's token bucket (operator and above).
func (s *Service) SetAPIKeyRateLimit(ctx context.Context, a Actor, keyID string, rate float64, burst int) error {
	ad, err := s.operator(a, RoleOperator)
	if err != nil {
		return err
	}
	if err := checkLimit(rate, burst); err != nil {
		return err
	}
	pid, err := s.keyProject(ctx, keyID)
	if err != nil {
		return err
	}
	if err := ad.SetAPIKeyRateLimit(ctx, keyID, rate, burst); err != nil {
		return err
	}
	return s.record(ctx, a, "api_key.limit", "api_key", keyID, pid, map[string]any{"rate_per_sec": rate, "burst": burst})
}
