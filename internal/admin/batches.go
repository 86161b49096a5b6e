package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/acv/acv/internal/plural"

	"github.com/acv/acv/api/contract"
)

// How a running batch shows it is alive: its instance refreshes the heartbeat every
// BatchHeartbeat (and after every round), and a batch whose heartbeat is older than
// BatchStaleAfter lost its instance.
const (
	BatchHeartbeat  = 2 * time.Second
	BatchStaleAfter = 30 * time.Second
)

// errCancelled is the cause of a batch's context when an operator cancelled it.
var errCancelled = errors.New("cancelled by an operator")

// CreateBatch checks spec and records a queued generation batch named name in the project;
// RunBatch then generates its codes. createdBy names who asked, for the batch's page.
func (a *Admin) CreateBatch(ctx context.Context, projectID, name string, spec contract.GenerateSpec, createdBy string) (contract.Batch, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return contract.Batch{}, contract.Errorf(contract.KindInvalid, "a batch needs a name")
	}
	if err := contract.ValidateText("name", name, 200); err != nil {
		return contract.Batch{}, contract.Errorf(contract.KindInvalid, "%v", err)
	}
	if err := checkSpec(&spec); err != nil {
		return contract.Batch{}, err
	}
	if _, err := a.Store.Project(ctx, projectID); err != nil {
		return contract.Batch{}, notFound(err, "project", projectID)
	}
	charset := spec.Charset
	if charset == DefaultCharset {
		charset = ""
	}
	b, err := a.Store.CreateBatch(ctx, contract.NewBatch{ProjectID: projectID, Name: name, Requested: spec.Count,
		CreatedBy: createdBy, Spec: contract.BatchSpec{Length: spec.Length, Charset: charset, Prefix: spec.Prefix,
			Suffix: spec.Suffix, ExpiresAt: spec.ExpiresAt}})
	return b, notFound(err, "project", projectID)
}

// RunBatch generates the codes of a queued batch, each tied to it, and returns the batch as
// it ended. Its progress is written to PostgreSQL after every round of step codes (50,000
// when 0) and its heartbeat every BatchHeartbeat, where any instance reads them; an operator's
// cancel (CancelBatch, from any instance) stops it at the next heartbeat or round. A batch
// cancelled before it started is returned as it is. The error is the generation's, when it
// failed; the batch records it too.
func (a *Admin) RunBatch(ctx context.Context, projectID, batchID string, step int, progress func(done int)) (contract.Batch, error) {
	b, err := a.Store.Batch(ctx, projectID, batchID)
	if err != nil {
		return contract.Batch{}, notFound(err, "batch", batchID)
	}
	started, err := a.Store.StartBatch(ctx, batchID)
	if err != nil || !started {
		if err == nil {
			b, err = a.Store.Batch(ctx, projectID, batchID)
		}
		return b, err
	}
	jctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop, beating := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(beating)
		t := time.NewTicker(BatchHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if c, err := a.Store.BatchHeartbeat(jctx, batchID); err == nil && c {
					cancel(errCancelled)
				}
			}
		}
	}()
	spec := contract.GenerateSpec{Count: b.Requested, Length: b.Spec.Length, Charset: b.Spec.Charset, Prefix: b.Spec.Prefix,
		Suffix: b.Spec.Suffix, ExpiresAt: b.Spec.ExpiresAt, Step: step}
	n, gerr := a.generateInto(jctx, projectID, batchID, spec, func(done int) {
		if c, err := a.Store.BatchProgress(jctx, batchID, done); err == nil && c {
			cancel(errCancelled)
		}
		if progress != nil {
			progress(done)
		}
	})
	close(stop)
	<-beating

	status, text := contract.BatchDone, ""
	switch {
	case gerr == nil:
	case errors.Is(context.Cause(jctx), errCancelled):
		status, gerr = contract.BatchCancelled, nil
	case ctx.Err() != nil:
		status, text = contract.BatchFailed, "interrupted: the console instance running it stopped"
	default:
		status, text = contract.BatchFailed, failureText(gerr)
	}
	// The batch's end is written even when ctx is ending (a shutdown), so it does not wait to
	// be found stale.
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer fcancel()
	if err := a.Store.FinishBatch(fctx, batchID, status, n, text); err != nil {
		return b, errors.Join(gerr, err)
	}
	b, err = a.Store.Batch(fctx, projectID, batchID)
	if err != nil {
		return b, errors.Join(gerr, err)
	}
	return b, gerr
}

// Batch reads one batch of a project; a queued or running batch whose instance stopped is
// marked failed first (see BatchStaleAfter).
func (a *Admin) Batch(ctx context.Context, projectID, batchID string) (contract.Batch, error) {
	if _, err := a.Store.FailStaleBatches(ctx, projectID, BatchStaleAfter); err != nil {
		return contract.Batch{}, notFound(err, "project", projectID)
	}
	b, err := a.Store.Batch(ctx, projectID, batchID)
	return b, notFound(err, "batch", batchID)
}

// Batches lists a project's batches, newest first, at most limit, marking stale ones failed
// first.
func (a *Admin) Batches(ctx context.Context, projectID string, limit int) ([]contract.Batch, error) {
	if _, err := a.Store.Project(ctx, projectID); err != nil {
		return nil, notFound(err, "project", projectID)
	}
	if _, err := a.Store.FailStaleBatches(ctx, projectID, BatchStaleAfter); err != nil {
		return nil, err
	}
	return a.Store.Batches(ctx, projectID, limit)
}

// CancelBatch asks a queued or running batch to stop and returns it as it is now. The codes
// it made so far stay, tied to it: RevokeBatch disables them.
func (a *Admin) CancelBatch(ctx context.Context, projectID, batchID string) (contract.Batch, error) {
	b, err := a.Store.RequestBatchCancel(ctx, projectID, batchID)
	return b, notFound(err, "batch", batchID)
}

// RevokeBatch disables every code a batch made, on the hot path and in PostgreSQL, and marks
// the batch revoked by by. With expected, it refuses (contract.ErrCountChanged) when the number of
// codes to disable is no longer the one shown. A batch still generating is refused: cancel
// it first, or its next rounds would add codes after the revoke.
func (a *Admin) RevokeBatch(ctx context.Context, projectID, batchID, by string, expected *int64, now int64) (int, error) {
	b, err := a.Batch(ctx, projectID, batchID)
	if err != nil {
		return 0, err
	}
	if !b.Final() {
		return 0, contract.Errorf(contract.KindConflict, "Batch %s is still %s: cancel it first", b.Name, b.Status)
	}
	n, err := a.DisableMatching(ctx, projectID, contract.CodeFilter{BatchID: batchID}, expected, now)
	if err != nil {
		return n, err
	}
	if err := a.Store.MarkBatchRevoked(ctx, batchID, by); err != nil {
		return n, fmt.Errorf("batch %s: %s disabled: %w", batchID, plural.N(n, "code", "codes"), err)
	}
	return n, nil
}

// failureText is what a failed batch shows operators: a refusal's own message (the code space
// is exhausted), else a sentence that names no internals; RunBatch returns the cause to be
// logged.
func failureText(err error) string {
	var ce *contract.Error
	if errors.As(err, &ce) && ce.Kind != contract.KindInternal && ce.Kind != contract.KindUnavailable {
		return ce.Message
	}
	if contract.KindOf(err) == contract.KindUnavailable {
		return "a store was unavailable; the codes made so far are kept"
	}
	return "an internal error stopped it (the console's log has the cause); the codes made so far are kept"
}
