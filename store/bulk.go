package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/acv/acv/api/contract"
)

// bulkWhere builds the filter's predicate on codes c of project $1, enabled codes only.
func (s *Store) bulkWhere(ctx context.Context, projectID string, f contract.CodeFilter, now int64) (string, []any, error) {
	args, where, err := s.codeFilter(ctx, projectID, f.State, now)
	if err != nil {
		return "", nil, err
	}
	where = append(where, "NOT c.is_disabled")
	arg := args.bind
	if f.BatchID != "" {
		if err := checkID("batch", f.BatchID); err != nil {
			return "", nil, err
		}
		where = append(where, `EXISTS (SELECT 1 FROM code_batch_ranges r WHERE r.batch_id = `+arg(f.BatchID)+
			` AND r.project_id = c.project_id AND c.seq BETWEEN r.seq_from AND r.seq_to)`)
	}
	if f.State == contract.StateUsed {
		// The used codes are found through code_used, not by checking every code of the
		// project: early in a campaign they are few among millions.
		where = append(where, `EXISTS (SELECT 1 FROM code_used u WHERE u.project_id = c.project_id AND u.seq = c.seq)`)
	}
	if f.Search != "" {
		where = append(where, "c.code ILIKE "+arg(likePattern(f.Search))+` ESCAPE '\'`)
	}
	return strings.Join(where, " AND "), args, nil
}

// CountBulk counts the codes f selects that are not disabled yet: what a bulk disable would
// change. contract.ErrNotFound when the project does not exist.
func (s *Store) CountBulk(ctx context.Context, projectID string, f contract.CodeFilter, now int64) (int64, error) {
	where, args, err := s.bulkWhere(ctx, projectID, f, now)
	if err != nil {
		return 0, err
	}
	return one(ctx, s.pool, "count codes of project "+projectID, pgx.RowTo[int64], countBulkSQL(where), args...)
}

// BulkPage returns up to limit codes that f selects with a sequence number above afterSeq, in
// sequence order, and the last one's number: a bulk change walks them page by page.
func (s *Store) BulkPage(ctx context.Context, projectID string, f contract.CodeFilter, now, afterSeq int64, limit int) ([]contract.CodeRecord, int64, error) {
	where, args, err := s.bulkWhere(ctx, projectID, f, now)
	if err != nil {
		return nil, 0, err
	}
	args = append(args, afterSeq, limit)
	last := afterSeq
	out, err := collect(ctx, s.pool, "page codes of project "+projectID,
		func(r pgx.CollectableRow) (contract.CodeRecord, error) { return scanCodeSeq(r, &last) }, bulkPageSQL(where, len(args)), args...)
	if err != nil {
		return nil, 0, err
	}
	return out, last, nil
}

// countBulkSQL counts the codes c that the predicate where selects.
func countBulkSQL(where string) string {
	return `SELECT count(*) FROM codes c WHERE ` + where
}

// bulkPageSQL reads the codes c that where selects after the seq bound as $n-1, up to $n of
// them, in seq order.
func bulkPageSQL(where string, n int) string {
	return `SELECT ` + codeColumns + `, c.seq FROM codes c WHERE ` + where +
		` AND c.seq > $` + strconv.Itoa(n-1) + ` ORDER BY c.seq LIMIT $` + strconv.Itoa(n)
}

// ApplySnapshots is ApplySnapshot for many codes at once (a bulk disable): each snapshot is
// applied when newer than the code's stored version. The rows are locked in id order first,
// as the audit consumer locks them, so the two cannot deadlock.
func (s *Store) ApplySnapshots(ctx context.Context, snaps []contract.CodeRecord) error {
	if len(snaps) == 0 {
		return nil
	}
	ids := make([]string, len(snaps))
	vat := make([]int64, len(snaps))
	by := make([]string, len(snaps))
	dis := make([]bool, len(snaps))
	ver := make([]int64, len(snaps))
	for i, r := range snaps {
		if err := checkID("code", r.ID); err != nil {
			return err
		}
		ids[i], vat[i], by[i], dis[i], ver[i] = r.ID, r.VerifiedAtMs, r.VerifiedBy, r.Disabled, r.Version
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM codes WHERE id = ANY($1::uuid[]) ORDER BY id FOR NO KEY UPDATE`, ids); err != nil {
			return fmt.Errorf("lock codes: %w", err)
		}
		_, err := tx.Exec(ctx, `UPDATE codes c SET verified_at = `+msToTimestamptz("u.vat")+`,
			verified_by = nullif(u.by, ''), is_disabled = u.dis, version = u.ver
			FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::boolean[], $5::bigint[]) AS u(id, vat, by, dis, ver)
			WHERE c.id = u.id AND c.version < u.ver`, ids, vat, by, dis, ver)
		if err != nil {
			return fmt.Errorf("update codes: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("apply %d snapshots: %w", len(snaps), err)
	}
	return nil
}

// AfterBulkLoad readies the codes tables after a large insert: fresh planner statistics, so
// lists keep their index plans, and an emptied trigram pending list, which searches scan.
func (s *Store) AfterBulkLoad(ctx context.Context) error {
	if err := exec(ctx, s.pool, "analyze codes", `ANALYZE codes, code_values, code_used`); err != nil {
		return err
	}
	return exec(ctx, s.pool, "flush the search index",
		`SELECT gin_clean_pending_list('code_values_trgm_idx'::regclass)`)
}
