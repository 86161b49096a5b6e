package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/acv/acv/api/contract"
)

// The key mirror: every change of an API key goes to Postgres (the record) and to Redis, where
// the replicas authenticate from, so authentication needs no Postgres query and a change
// reaches every replica within its key cache's TTL.

// publishKey copies a key's stored state (secret sealed) from Postgres to the mirror; the
// mirror keeps it only if it is the newest version it has seen.
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

// RevokeAPIKey revokes a key for good: in the mirror first, so the revocation takes effect on
// every replica within the key cache's TTL even while Postgres is unreachable, then in
// Postgres. When Postgres fails, the key is revoked for the service all the same; the error
// says so, and running the command again records it.
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

// SyncKeys copies every key from Postgres to the mirror, where a newer state is kept. Replicas
// run it at start, so keys issued before the mirror existed, or lost with a Redis that lost its
// data, authenticate without a Postgres query; it returns how many keys it read.
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
