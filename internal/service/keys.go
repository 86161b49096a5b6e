package service

import (
	"context"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/store"
)

// mirroredKeys is the HTTP layer's Records with API keys read from the key mirror in Redis
// (which loads a key it lacks from Postgres once), so authentication costs no Postgres query;
// everything else is read from Postgres. Secrets stay sealed here: withOpenedSecrets wraps it.
type mirroredKeys struct {
	*store.Store
	mirror *cache.Cache
}

// APIKey reads the key from the mirror.
func (m mirroredKeys) APIKey(ctx context.Context, id string) (contract.APIKey, error) {
	return m.mirror.APIKey(ctx, id)
}
