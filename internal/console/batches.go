package console

import (
	"context"
	"errors"

	"github.com/acv/acv/api/contract"
)

// MaxGenerate bounds one generation batch.
const MaxGenerate = 1_000_000

// defaultGenerateStep is how many codes a round of a batch the console runs inserts: small
// enough that its progress moves several times a second, large enough that 100,000 codes still
// take seconds.
const defaultGenerateStep = 10_000

// StartGenerate records a generation batch named name and starts it in the background
// (operator and above): it answers with the queued batch, whose progress Batch then reads, on
// this instance or any other. The start is recorded in the audit log; how the batch ended is
// on the batch.
func (s *Service) StartGenerate(ctx context.Context, a Actor, projectID, name string, spec contract.GenerateSpec) (contract.Batch, error) {
	ad, err := s.operator(a, RoleOperator)
	if err != nil {
		return contract.Batch{}, err
	}
	if spec.Count > MaxGenerate {
		return contract.Batch{}, contract.Errorf(contract.KindInvalid, "count must be at most %d", MaxGenerate)
	}
	b, err := ad.CreateBatch(ctx, projectID, name, spec, a.Username)
	if err != nil {
		return contract.Batch{}, err
	}
	if err := s.record(ctx, a, "codes.generate", "batch", b.ID, projectID, map[string]any{
		"name": b.Name, "requested": b.Requested, "length": b.Spec.Length, "prefix": b.Spec.Prefix,
		"suffix": b.Spec.Suffix, "charset": b.Spec.Charset, "expires_at": b.Spec.ExpiresAt}); err != nil {
		// Not recorded, so not run: cancel it rather than leave it queued.
		_, _ = ad.CancelBatch(context.WithoutCancel(ctx), projectID, b.ID)
		return contract.Batch{}, err
	}
	step := s.cfg.GenerateStep
	if step <= 0 {
		step = defaultGenerateStep
	}
	err = s.jobs.start(func(jctx context.Context) {
		end, err := ad.RunBatch(jctx, projectID, b.ID, step, nil)
		if err != nil {
			s.log.ErrorContext(jctx, "console: generation batch failed", "batch", b.ID, "project", projectID,
				"status", end.Status, "done", end.Done, "err", err)
		}
	})
	if err != nil {
		// Never started: cancel it rather than leave it queued until it is found stale.
		_, _ = ad.CancelBatch(context.WithoutCancel(ctx), projectID, b.ID)
		return contract.Batch{}, err
	}
	return b, nil
}

// Batch reads one generation batch with its progress (viewer and above).
func (s *Service) Batch(ctx context.Context, a Actor, projectID, batchID string) (contract.Batch, error) {
	ad, err := s.operator(a, RoleViewer)
	if err != nil {
		return contract.Batch{}, err
	}
	return ad.Batch(ctx, projectID, batchID)
}

// Batches lists a project's latest generation batches, newest first (viewer and above).
func (s *Service) Batches(ctx context.Context, a Actor, projectID string) ([]contract.Batch, error) {
	ad, err := s.operator(a, RoleViewer)
	if err != nil {
		return nil, err
	}
	bs, err := ad.Batches(ctx, projectID, 100)
	if bs == nil && err == nil {
		bs = []contract.Batch{}
	}
	return bs, err
}

// CancelBatch stops a queued or running batch (operator and above); the codes it made stay.
func (s *Service) CancelBatch(ctx context.Context, a Actor, projectID, batchID string) (contract.Batch, error) {
	ad, err := s.operator(a, RoleOperator)
	if err != nil {
		return contract.Batch{}, err
	}
	b, err := ad.CancelBatch(ctx, projectID, batchID)
	if err != nil {
		return contract.Batch{}, err
	}
	return b, s.record(ctx, a, "batch.cancel", "batch", batchID, projectID, map[string]any{
		"name": b.Name, "status": b.Status, "done": b.Done})
}

// RevokeBatch disables every code of a batch (operator and above); with expected, only if
// that is still how many there are to disable. The audit log records the count.
func (s *Service) RevokeBatch(ctx context.Context, a Actor, projectID, batchID string, expected *int64) (int, error) {
	ad, err := s.operator(a, RoleOperator)
	if err != nil {
		return 0, err
	}
	n, err := ad.RevokeBatch(ctx, projectID, batchID, a.Username, expected, s.now().Unix())
	if n == 0 && err != nil {
		return 0, err
	}
	// Codes were disabled, maybe not all: the log says how many, whatever followed.
	if rerr := s.record(ctx, a, "batch.revoke", "batch", batchID, projectID, map[string]any{
		"disabled": n, "complete": err == nil}); rerr != nil && err == nil {
		err = rerr
	}
	return n, err
}

// BulkCount counts the codes a bulk disable with filter f would disable (operator and above):
// the number shown, and confirmed, before it runs.
func (s *Service) BulkCount(ctx context.Context, a Actor, projectID string, f contract.CodeFilter) (int64, error) {
	ad, err := s.operator(a, RoleOperator)
	if err != nil {
		return 0, err
	}
	return ad.CountMatching(ctx, projectID, f, s.now().Unix())
}

// BulkDisable disables the codes filter f selects (operator and above), only when expected is
// still their count: else contract.ErrCountChanged (409). The audit log
// records the filter and the count.
func (s *Service) BulkDisable(ctx context.Context, a Actor, projectID string, f contract.CodeFilter, expected int64) (int, error) {
	ad, err := s.operator(a, RoleOperator)
	if err != nil {
		return 0, err
	}
	n, err := ad.DisableMatching(ctx, projectID, f, &expected, s.now().Unix())
	if n == 0 && err != nil || errors.Is(err, contract.ErrCountChanged) {
		return 0, err
	}
	if rerr := s.record(ctx, a, "codes.bulk_disable", "project", projectID, projectID, map[string]any{
		"filter": f, "confirmed": expected, "disabled": n, "complete": err == nil}); rerr != nil && err == nil {
		err = rerr
	}
	return n, err
}
