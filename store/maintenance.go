package store

import (
	"context"
	"fmt"
)

// AfterBulkLoad readies the codes tables after a large insert: fresh planner statistics, so
// lists keep their index plans, and an emptied trigram pending list, which searches scan.
func (s *Store) AfterBulkLoad(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `ANALYZE codes, code_values, code_used`); err != nil {
		return fmt.Errorf("analyze codes: %w", err)
	}
	return exec(ctx, s.pool, "flush the search index",
		`SELECT gin_clean_pending_list('code_values_trgm_idx'::regclass)`)
}
