package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/jackc/pgx/v5"
)

const batchColumns = `b.id, b.project_id, b.name, b.requested, b.done, b.status, b.error, b.spec,
	b.created_by, b.created_at, b.started_at, b.finished_at, b.revoked_at, b.revoked_by, b.cancel_requested`

func scanBatch(row pgx.CollectableRow) (contract.Batch, error) {
	var (
		b                     contract.Batch
		spec                  []byte
		created               time.Time
		started, fin, revoked *time.Time
	)
	if err := row.Scan(hexIDInto(&b.ID), hexIDInto(&b.ProjectID), &b.Name, &b.Requested, &b.Done, &b.Status, &b.Error, &spec,
		&b.CreatedBy, &created, &started, &fin, &revoked, &b.RevokedBy, &b.CancelRequested); err != nil {
		return contract.Batch{}, err
	}
	if err := json.Unmarshal(spec, &b.Spec); err != nil {
		return contract.Batch{}, fmt.Errorf("batch spec: %w", err)
	}
	b.CreatedAt = created.Unix()
	b.StartedAt, b.FinishedAt, b.RevokedAt = toUnix(started), toUnix(fin), toUnix(revoked)
	return b, nil
}

// CreateBatch records a queued batch. contract.ErrNotFound when the project does not exist.
func (s *Store) CreateBatch(ctx context.Context, nb contract.NewBatch) (contract.Batch, error) {
	if err := checkID("project", nb.ProjectID); err != nil {
		return contract.Batch{}, err
	}
	spec, err := json.Marshal(nb.Spec)
	if err != nil {
		return contract.Batch{}, fmt.Errorf("batch spec: %w", err)
	}
	return one(ctx, s.pool, "create batch in project "+nb.ProjectID, scanBatch, `INSERT INTO code_batches AS b
		(id, project_id, name, requested, spec, created_by) VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING `+batchColumns, contract.NewID(), nb.ProjectID, nb.Name, nb.Requested, spec, nb.CreatedBy)
}

// Batch reads one batch of a project. contract.ErrNotFound when the project has no such batch.
func (s *Store) Batch(ctx context.Context, projectID, id string) (contract.Batch, error) {
	if err := checkID("project", projectID); err != nil {
		return contract.Batch{}, err
	}
	if err := checkID("batch", id); err != nil {
		return contract.Batch{}, err
	}
	return one(ctx, s.pool, "batch "+id+" of project "+projectID, scanBatch, `SELECT `+batchColumns+` FROM code_batches b
		WHERE b.id = $1 AND b.project_id = $2`, id, projectID)
}

// Batches lists a project's batches, newest first, at most limit.
func (s *Store) Batches(ctx context.Context, projectID string, limit int) ([]contract.Batch, error) {
	if err := checkID("project", projectID); err != nil {
		return nil, err
	}
	return collect(ctx, s.pool, "batches of project "+projectID, scanBatch, `SELECT `+batchColumns+` FROM code_batches b
		WHERE b.project_id = $1 ORDER BY b.created_at DESC, b.id DESC LIMIT $2`, projectID, limit)
}

// StartBatch moves a queued batch to running; false when it was not queued any more (it was
// cancelled before it started, or another instance took it).
func (s *Store) StartBatch(ctx context.Context, id string) (bool, error) {
	n, err := affected(ctx, s.pool, "start batch "+id, `UPDATE code_batches SET status = 'running', started_at = now(),
		heartbeat_at = now() WHERE id = $1 AND status = 'queued' AND NOT cancel_requested`, id)
	return n == 1, err
}

// BatchProgress records how many codes a running batch made, refreshes its heartbeat, and
// returns whether an operator asked it to stop.
func (s *Store) BatchProgress(ctx context.Context, id string, done int) (cancel bool, err error) {
	return one(ctx, s.pool, "batch "+id+" progress", pgx.RowTo[bool], `UPDATE code_batches SET done = greatest(done, $2), heartbeat_at = now()
		WHERE id = $1 RETURNING cancel_requested`, id, done)
}

// BatchHeartbeat is BatchProgress without a count (done never goes down), for the ticker that
// keeps a batch alive between rounds.
func (s *Store) BatchHeartbeat(ctx context.Context, id string) (cancel bool, err error) {
	return s.BatchProgress(ctx, id, 0)
}

// FinishBatch ends a batch with status (done, failed or cancelled), its final count and an
// error text for a failure. A batch already ended is left as it is.
func (s *Store) FinishBatch(ctx context.Context, id, status string, done int, errText string) error {
	return exec(ctx, s.pool, "finish batch "+id, `UPDATE code_batches SET status = $2, done = greatest(done, $3), error = $4,
		finished_at = now() WHERE id = $1 AND status IN ('queued', 'running')`, id, status, done, errText)
}

// RequestBatchCancel stops a queued batch at once and asks a running one's instance to stop at
// its next heartbeat, returning the batch as it is now; contract.ErrNotFound when there is none.
func (s *Store) RequestBatchCancel(ctx context.Context, projectID, id string) (contract.Batch, error) {
	if _, err := s.Batch(ctx, projectID, id); err != nil {
		return contract.Batch{}, err
	}
	if err := exec(ctx, s.pool, "cancel batch "+id, `UPDATE code_batches SET cancel_requested = true,
		status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END,
		finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END
		WHERE id = $1 AND status IN ('queued', 'running')`, id); err != nil {
		return contract.Batch{}, err
	}
	return s.Batch(ctx, projectID, id)
}

// MarkBatchRevoked records that a batch's codes were disabled, and by whom.
func (s *Store) MarkBatchRevoked(ctx context.Context, id, by string) error {
	return exec(ctx, s.pool, "mark batch "+id+" revoked",
		`UPDATE code_batches SET revoked_at = now(), revoked_by = $2 WHERE id = $1`,
		id, by)
}

// FailStaleBatches marks failed every queued or running batch of the project whose heartbeat
// is older than stale: the instance that ran it stopped. It returns how many it marked.
func (s *Store) FailStaleBatches(ctx context.Context, projectID string, stale time.Duration) (int64, error) {
	if err := checkID("project", projectID); err != nil {
		return 0, err
	}
	return affected(ctx, s.pool, "fail stale batches of project "+projectID, `UPDATE code_batches SET status = 'failed', finished_at = now(),
		error = 'interrupted: the console instance running it stopped'
		WHERE project_id = $1 AND status IN ('queued', 'running') AND heartbeat_at < now() - make_interval(secs => $2)`,
		projectID, stale.Seconds())
}
