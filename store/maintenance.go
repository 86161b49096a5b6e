package store

import (
	"context"
)

// AfterBulkLoad readies the codes tables after a large insert: fresh planner statistics, so
// lists keep their index plans, and an emptied trigram pending list, which searches scan.
func (s *Store) AfterBulkLoad(ctx context.Context) error {
	if err := exec(ctx, s.pool, "analyze codes", `ANALYZE codes, code_values, code_used`); err != nil {
		return err
	}
	return exec(ctx, s.pool, "flush the search index",
		`SELECT gin_clean_pending_list('code_values_trgm_idx'::regclass)`)
}
