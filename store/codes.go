package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/acv/acv/api/contract"
)

// codeColumns is the select list scanCode reads, on a codes table aliased c.
const codeColumns = `c.id, c.project_id, c.code, c.is_disabled, c.expires_at, c.verified_at,
	c.verified_by, c.created_at, c.version`

// scanCode reads one row of codeColumns.
func scanCode(row pgx.CollectableRow) (contract.CodeRecord, error) { return scanCodeSeq(row, nil) }

// scanCodeSeq reads one row of codeColumns followed, when seq is not nil, by c.seq into seq.
func scanCodeSeq(row pgx.CollectableRow, seq *int64) (contract.CodeRecord, error) {
	var (
		r                     contract.CodeRecord
		expiresAt, verifiedAt *time.Time
		verifiedBy            *string
		createdAt             time.Time
	)
	dst := []any{hexIDInto(&r.ID), hexIDInto(&r.ProjectID), &r.Code, &r.Disabled, &expiresAt, &verifiedAt, &verifiedBy, &createdAt, &r.Version}
	if seq != nil {
		dst = append(dst, seq)
	}
	if err := row.Scan(dst...); err != nil {
		return contract.CodeRecord{}, err
	}
	r.ExpiresAt, r.CreatedAt = toUnix(expiresAt), createdAt.Unix()
	if verifiedAt != nil {
		r.VerifiedAtMs = verifiedAt.UnixMilli()
	}
	if verifiedBy != nil {
		r.VerifiedBy = *verifiedBy
	}
	return r, nil
}

// InsertCodes inserts codes in bulk and returns the rows inserted, in input order; a value the
// project holds (or repeated) is skipped. Under the project row's lock they get the next seqs and
// one created_at later than every earlier code's. contract.ErrNotFound when there is no project.
func (s *Store) InsertCodes(ctx context.Context, projectID string, codes []contract.NewCode) ([]contract.CodeRecord, error) {
	return s.insertCodes(ctx, projectID, "", codes)
}

// InsertBatchCodes is InsertCodes for a generation batch, recording the sequence numbers the
// codes took as the batch's, so it can later find (and revoke) every code it made.
func (s *Store) InsertBatchCodes(ctx context.Context, projectID, batchID string, codes []contract.NewCode) ([]contract.CodeRecord, error) {
	if err := checkID("batch", batchID); err != nil {
		return nil, err
	}
	return s.insertCodes(ctx, projectID, batchID, codes)
}

func (s *Store) insertCodes(ctx context.Context, projectID, batchID string, codes []contract.NewCode) ([]contract.CodeRecord, error) {
	if err := checkID("project", projectID); err != nil {
		return nil, err
	}
	if len(codes) == 0 {
		return []contract.CodeRecord{}, nil
	}
	for i, c := range codes {
		if err := contract.ValidateCode(c.Code); err != nil {
			return nil, fmt.Errorf("code %d: %w", i, err)
		}
	}
	// Only the first occurrence of a value is a candidate; ids are drawn in input order, so they
	// ascend with it.
	cand := make([]int, 0, len(codes)) // indexes into codes of the candidates, ascending
	ids := make([]string, len(codes))
	seen := make(map[string]struct{}, len(codes))
	for i := range codes {
		if _, dup := seen[codes[i].Code]; dup {
			continue
		}
		seen[codes[i].Code] = struct{}{}
		cand = append(cand, i)
		ids[i] = contract.NewID()
	}
	var (
		createdAt time.Time // the batch's, the same for every row
		taken     []int32   // indexes into cand of the candidates the project already holds
	)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		taken = taken[:0]
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE codes_in (
			ord int NOT NULL, id uuid NOT NULL, code text NOT NULL, expires_at timestamptz
		) ON COMMIT DROP`); err != nil {
			return fmt.Errorf("create temp table: %w", err)
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"codes_in"}, []string{"ord", "id", "code", "expires_at"},
			pgx.CopyFromSlice(len(cand), func(j int) ([]any, error) {
				i := cand[j]
				return []any{int32(j), ids[i], codes[i].Code, toTime(codes[i].ExpiresAt)}, nil
			}))
		if err != nil {
			return fmt.Errorf("copy codes: %w", err)
		}
		// Serialize with every other insert into the project (NO KEY: foreign-key checks of
		// other tables are not blocked). From here on no one else adds codes to it.
		var base int64
		if err := tx.QueryRow(ctx, `SELECT code_seq FROM projects WHERE id = $1 FOR NO KEY UPDATE`,
			projectID).Scan(&base); err != nil {
			return fmt.Errorf("lock project: %w", translate(err))
		}
		// Read after the lock, so it is later than the created_at of every batch before; and
		// never earlier than the newest code's even if the clock stepped back.
		if err := tx.QueryRow(ctx, `SELECT greatest(clock_timestamp(),
			(SELECT created_at + interval '1 microsecond' FROM codes WHERE project_id = $1 AND seq = $2))`,
			projectID, base).Scan(&createdAt); err != nil {
			return fmt.Errorf("read clock: %w", err)
		}
		// Drop the values the project holds. OFFSET 0 keeps the subquery a per-row probe of the
		// (project_id, code) index of code_values, which costs the batch's size, not the
		// project's.
		rows, err := tx.Query(ctx, `DELETE FROM codes_in i
			WHERE EXISTS (SELECT 1 FROM code_values v WHERE v.project_id = $1 AND v.code = i.code OFFSET 0)
			RETURNING ord`, projectID)
		if err != nil {
			return fmt.Errorf("find existing codes: %w", err)
		}
		taken, err = pgx.AppendRows(taken, rows, pgx.RowTo[int32])
		if err != nil {
			return fmt.Errorf("find existing codes: %w", err)
		}
		want := int64(len(cand) - len(taken))
		if want == 0 {
			return nil
		}
		tag, err := tx.Exec(ctx, `INSERT INTO codes (id, project_id, code, expires_at, created_at, seq)
			SELECT id, $1, code, expires_at, $2, $3::bigint + row_number() OVER (ORDER BY ord)
			FROM codes_in ORDER BY ord`, projectID, createdAt, base)
		if err != nil {
			return fmt.Errorf("insert codes: %w", translate(err))
		}
		if tag.RowsAffected() != want {
			return fmt.Errorf("inserted %d codes, want %d", tag.RowsAffected(), want)
		}
		if _, err := tx.Exec(ctx, `UPDATE projects SET code_seq = $2 WHERE id = $1`,
			projectID, base+want); err != nil {
			return fmt.Errorf("advance code sequence: %w", err)
		}
		if batchID != "" {
			if _, err := tx.Exec(ctx, `INSERT INTO code_batch_ranges (batch_id, project_id, seq_from, seq_to)
				VALUES ($1, $2, $3, $4)`, batchID, projectID, base+1, base+want); err != nil {
				return fmt.Errorf("record batch range: %w", translate(err))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("insert codes into project %s: %w", projectID, err)
	}
	slices.Sort(taken) // RETURNING promises no order
	out := make([]contract.CodeRecord, 0, len(cand)-len(taken))
	for j, i := range cand {
		if _, found := slices.BinarySearch(taken, int32(j)); found {
			continue
		}
		out = append(out, contract.CodeRecord{
			ID:        ids[i],
			ProjectID: projectID,
			Code:      codes[i].Code,
			ExpiresAt: codes[i].ExpiresAt,
			CreatedAt: createdAt.Unix(),
		})
	}
	return out, nil
}

// CodeByValue reads a code by its value within a project: the lookup verify, reactivate and
// the cache loader make. contract.ErrNotFound when the project holds no such value.
func (s *Store) CodeByValue(ctx context.Context, projectID, value string) (contract.CodeRecord, error) {
	if err := checkID("project", projectID); err != nil {
		return contract.CodeRecord{}, err
	}
	return one(ctx, s.pool, "select code by value in project "+projectID, scanCode,
		`SELECT `+codeColumns+` FROM code_values v JOIN codes c ON c.id = v.code_id
		 WHERE v.project_id = $1 AND v.code = $2`,
		projectID, value)
}

// ExistingValues returns which of values the project already holds, so a generator can draw
// replacements before inserting instead of after.
func (s *Store) ExistingValues(ctx context.Context, projectID string, values []string) ([]string, error) {
	if err := checkID("project", projectID); err != nil {
		return nil, err
	}
	return collect(ctx, s.pool, "look up existing codes in project "+projectID, pgx.RowTo[string],
		`SELECT code FROM code_values WHERE project_id = $1 AND code = ANY($2)`, projectID, values)
}

// CodeByID reads a code by id within a project. contract.ErrNotFound also when the id belongs to
// another project, so one project never sees another's codes.
func (s *Store) CodeByID(ctx context.Context, projectID, id string) (contract.CodeRecord, error) {
	if err := checkID("project", projectID); err != nil {
		return contract.CodeRecord{}, err
	}
	if err := checkID("code", id); err != nil {
		return contract.CodeRecord{}, err
	}
	return one(ctx, s.pool, "select code "+id+" in project "+projectID, scanCode,
		`SELECT `+codeColumns+` FROM codes c WHERE c.id = $2 AND c.project_id = $1`, projectID, id)
}

// ExportCodes streams a project's codes in creation order to fn; an error of fn stops it.
func (s *Store) ExportCodes(ctx context.Context, projectID string, fn func(contract.CodeRecord) error) error {
	if err := checkID("project", projectID); err != nil {
		return err
	}
	return each(ctx, s.pool, "export codes of project "+projectID, scanCode, fn,
		`SELECT `+codeColumns+` FROM codes c WHERE c.project_id = $1 ORDER BY c.seq`, projectID)
}
