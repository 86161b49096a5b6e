package store

import (
	"context"
	"fmt"
)

// AfterBulkLoad readies the codes tables for queries after a large insert: fresh planner
// statistics, so filtered lists keep their index plans instead of sorting a whole project, and
// an emptied trigram pending list, which every search would otherwise scan in full until
// autovacuum gets to it.
func (s *Store) AfterBulkLoad(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `ANALYZE codes, code_values, code_used`); err != nil {
		return fmt.Errorf("analyze codes: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `SELECT gin_clean_pending_list('code_values_trgm_idx'::regclass)`); err != nil {
		return fmt.Errorf("flush the search index: %w", err)
	}
	return nil
}
