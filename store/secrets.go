package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/acv/acv/api/contract"
)

// APIKeySecrets reads every key's stored secret, in id order, for re-sealing them under
// another master key (`acv key rewrap`) and for counting the ones still in clear.
func (s *Store) APIKeySecrets(ctx context.Context) ([]contract.StoredSecret, error) {
	return collect(ctx, s.pool, "select api key secrets", func(r pgx.Row) (contract.StoredSecret, error) {
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
	tag, err := s.pool.Exec(ctx,
		`UPDATE api_keys SET secret = $3, version = version + 1 WHERE id = $1 AND secret = $2`, keyID, old, next)
	if err != nil {
		return false, fmt.Errorf("replace secret of api key %s: %w", keyID, err)
	}
	return tag.RowsAffected() == 1, nil
}
