package console

import (
	"context"
	"errors"
	"io"
	"math"

	"github.com/acv/acv/api/contract"
)

// The operator actions on projects, their API keys, codes and generation batches: each runs
// internal/admin's action (Operations) and records a change in the audit log. The route that
// calls one has already checked the actor's role.

func (s *Service) change(ctx context.Context, a Actor, action, kind, id, projectID string, detail map[string]any, f func() error) error {
	if err := f(); err != nil {
		return err
	}
	return s.record(ctx, a, action, kind, id, projectID, detail)
}

// recordPartial records an action that may have stopped part way, with whether it finished.
func (s *Service) recordPartial(ctx context.Context, a Actor, action, kind, id, projectID string, detail map[string]any, err error) error {
	detail["complete"] = err == nil
	if rerr := s.record(ctx, a, action, kind, id, projectID, detail); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// pick is yes when cond holds, else no.
func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

// maxUnix is the last second PostgreSQL's timestamptz and the hot path's fields both hold
// comfortably (the year 9999).
const maxUnix = 253402300799

// checkExpiry refuses an expiry outside [0, maxUnix]; nil is none.
func checkExpiry(expiresAt *int64) error {
	if expiresAt != nil && (*expiresAt < 0 || *expiresAt > maxUnix) {
		return contract.Errorf(contract.KindInvalid, "expires_at must be Unix seconds between 0 and %d", int64(maxUnix))
	}
	return nil
}

// CreateProject creates a project whose text and expiry the record holds.
func (s *Service) CreateProject(ctx context.Context, a Actor, p contract.NewProject) (contract.Project, error) {
	if err := contract.ValidateText("name", p.Name, 200); err != nil {
		return contract.Project{}, invalid(err)
	}
	if err := contract.ValidateText("description", p.Description, 2000); err != nil {
		return contract.Project{}, invalid(err)
	}
	if err := checkExpiry(p.ExpiresAt); err != nil {
		return contract.Project{}, err
	}
	proj, err := s.admin.CreateProject(ctx, p)
	if err != nil {
		return proj, err
	}
	return proj, s.record(ctx, a, "project.create", "project", proj.ID, proj.ID, map[string]any{"name": p.Name, "expires_at": p.ExpiresAt})
}

// SetProjectEnabled enables or disables a project everywhere at once.
func (s *Service) SetProjectEnabled(ctx context.Context, a Actor, id string, enabled bool) error {
	return s.change(ctx, a, pick(enabled, "project.enable", "project.disable"), "project", id, id, nil,
		func() error { return s.admin.SetProjectEnabled(ctx, id, enabled) })
}

// SetProjectExpiry sets or, with nil, clears a project's expiry.
func (s *Service) SetProjectExpiry(ctx context.Context, a Actor, id string, expiresAt *int64) error {
	return s.change(ctx, a, pick(expiresAt == nil, "project.clear_expiry", "project.expire"), "project", id, id,
		map[string]any{"expires_at": expiresAt}, func() error {
			if err := checkExpiry(expiresAt); err != nil {
				return err
			}
			return s.admin.SetProjectExpiry(ctx, id, expiresAt)
		})
}

// checkLimit refuses a token bucket no key can have; 0 leaves a limit unset.
func checkLimit(rate float64, burst int) error {
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 || rate > 1e6 {
		return contract.Errorf(contract.KindInvalid, "rate_per_sec must be 0 (unlimited) to 1000000")
	}
	if burst < 0 || burst > math.MaxInt32 {
		return contract.Errorf(contract.KindInvalid, "burst must be 0 (unset) to %d", math.MaxInt32)
	}
	return nil
}

// CreateAPIKey issues a key for a project. The returned key holds its
// secret in clear, to be shown once; the audit log records the key's id and limits only.
func (s *Service) CreateAPIKey(ctx context.Context, a Actor, projectID string, rate float64, burst int) (contract.APIKey, error) {
	if err := checkLimit(rate, burst); err != nil {
		return contract.APIKey{}, err
	}
	k, err := s.admin.CreateAPIKey(ctx, projectID, rate, burst)
	if err != nil {
		return k, err
	}
	return k, s.record(ctx, a, "api_key.create", "api_key", k.ID, projectID, map[string]any{"rate_per_sec": rate, "burst": burst})
}

// changeKey runs a change of an API key and records it under the key's project.
func (s *Service) changeKey(ctx context.Context, a Actor, action, keyID string, detail map[string]any, f func() error) error {
	k, err := s.store.APIKey(ctx, keyID)
	if errors.Is(err, contract.ErrNotFound) {
		return contract.Errorf(contract.KindNotFound, "API key %s not found", keyID)
	}
	if err != nil {
		return err
	}
	if err := f(); err != nil {
		return err
	}
	return s.record(ctx, a, action, "api_key", keyID, k.ProjectID, detail)
}

// RevokeAPIKey revokes a key for good.
func (s *Service) RevokeAPIKey(ctx context.Context, a Actor, keyID string) error {
	return s.changeKey(ctx, a, "api_key.revoke", keyID, nil, func() error { return s.admin.RevokeAPIKey(ctx, keyID) })
}

// SetAPIKeyRateLimit changes a key's token bucket.
func (s *Service) SetAPIKeyRateLimit(ctx context.Context, a Actor, keyID string, rate float64, burst int) error {
	if err := checkLimit(rate, burst); err != nil {
		return err
	}
	return s.changeKey(ctx, a, "api_key.limit", keyID, map[string]any{"rate_per_sec": rate, "burst": burst},
		func() error { return s.admin.SetAPIKeyRateLimit(ctx, keyID, rate, burst) })
}

// RewrapKeys seals every API key's secret with the active master key, whose id it returns
// too: the server holds the master keys, an operator's machine does not.
func (s *Service) RewrapKeys(ctx context.Context, a Actor) (contract.RewrapResult, string, error) {
	res, err := s.admin.RewrapKeys(ctx)
	if rerr := s.record(ctx, a, "keys.rewrap", "api_key", "", "", map[string]any{
		"sealed": res.Sealed, "rewrapped": res.Rewrapped, "current": res.Current, "failed": res.Failed,
	}); rerr != nil && err == nil {
		err = rerr
	}
	return res, s.admin.ActiveKeyID(), err
}

// SetCodeDisabled disables or enables one code, at once on the hot path.
func (s *Service) SetCodeDisabled(ctx context.Context, a Actor, projectID, value string, disabled bool) error {
	return s.change(ctx, a, pick(disabled, "code.disable", "code.enable"), "code", value, projectID, nil,
		func() error { return s.admin.SetCodeDisabled(ctx, projectID, value, disabled) })
}

// Import reads codes from CSV into a project, skipping and reporting the
// bad rows. A real import is recorded with its totals, whatever stopped it; a dry run is not.
func (s *Service) Import(ctx context.Context, a Actor, projectID string, r io.Reader, dryRun bool) (contract.ImportReport, error) {
	rep, err := s.admin.ImportCSV(ctx, projectID, r, contract.ImportOptions{DryRun: dryRun})
	if dryRun || (err != nil && rep.Read == 0) {
		return rep, err
	}
	return rep, s.recordPartial(ctx, a, "codes.import", "project", projectID, projectID, map[string]any{"read": rep.Read,
		"inserted": rep.Inserted, "duplicates": rep.Duplicates, "existing": rep.Existing, "invalid": rep.Invalid}, err)
}

// Export records an export of a project's codes; the function returned then streams them
// from PostgreSQL as CSV. A refusal comes before the first byte.
func (s *Service) Export(ctx context.Context, a Actor, projectID string) (func(io.Writer) (int, error), error) {
	if _, err := s.admin.Project(ctx, projectID, s.now().Unix()); err != nil {
		return nil, err
	}
	if err := s.record(ctx, a, "codes.export", "project", projectID, projectID, map[string]any{"format": "csv"}); err != nil {
		return nil, err
	}
	return func(w io.Writer) (int, error) { return s.admin.ExportCSV(ctx, projectID, s.now().Unix(), w) }, nil
}

// MaxGenerate bounds one generation batch; batchesShown is how many of a project's latest
// batches the API and the pages list.
const (
	MaxGenerate  = 1_000_000
	batchesShown = 100
)

// StartGenerate records a generation batch and starts it in the background, answering with
// the queued batch whose progress Batch reads on any instance.
func (s *Service) StartGenerate(ctx context.Context, a Actor, projectID, name string, spec contract.GenerateSpec) (contract.Batch, error) {
	if spec.Count > MaxGenerate {
		return contract.Batch{}, contract.Errorf(contract.KindInvalid, "count must be at most %d", MaxGenerate)
	}
	b, err := s.admin.CreateBatch(ctx, projectID, name, spec, a.Username)
	if err != nil {
		return contract.Batch{}, err
	}
	err = s.record(ctx, a, "codes.generate", "batch", b.ID, projectID, map[string]any{
		"name": b.Name, "requested": b.Requested, "length": b.Spec.Length, "prefix": b.Spec.Prefix,
		"suffix": b.Spec.Suffix, "charset": b.Spec.Charset, "expires_at": b.Spec.ExpiresAt})
	if err == nil {
		// A round small enough that the progress moves several times a second.
		step := orDefault(s.cfg.GenerateStep, 10_000)
		err = s.jobs.start(func(jctx context.Context) {
			end, err := s.admin.RunBatch(jctx, projectID, b.ID, step)
			if err != nil {
				s.log.ErrorContext(jctx, "console: generation batch failed", "batch", b.ID, "project", projectID,
					"status", end.Status, "done", end.Done, "err", err)
			}
		})
	}
	if err != nil {
		// Not recorded or never started: cancel it rather than leave it queued until found stale.
		_, _ = s.admin.CancelBatch(context.WithoutCancel(ctx), projectID, b.ID)
		return contract.Batch{}, err
	}
	return b, nil
}

// CancelBatch stops a queued or running batch; the codes it made stay.
func (s *Service) CancelBatch(ctx context.Context, a Actor, projectID, batchID string) (contract.Batch, error) {
	b, err := s.admin.CancelBatch(ctx, projectID, batchID)
	if err != nil {
		return contract.Batch{}, err
	}
	return b, s.record(ctx, a, "batch.cancel", "batch", batchID, projectID, map[string]any{
		"name": b.Name, "status": b.Status, "done": b.Done})
}

// RevokeBatch disables a batch's codes while expected is their count.
func (s *Service) RevokeBatch(ctx context.Context, a Actor, projectID, batchID string, expected *int64) (int, error) {
	n, err := s.admin.RevokeBatch(ctx, projectID, batchID, a.Username, expected, s.now().Unix())
	if n == 0 && err != nil {
		return 0, err
	}
	// Codes were disabled, maybe not all: the log says how many, whatever followed.
	return n, s.recordPartial(ctx, a, "batch.revoke", "batch", batchID, projectID, map[string]any{"disabled": n}, err)
}

// BulkDisable disables the codes filter f selects only while expected is still their count,
// else contract.ErrCountChanged (409); the audit log records the filter and the count.
func (s *Service) BulkDisable(ctx context.Context, a Actor, projectID string, f contract.CodeFilter, expected int64) (int, error) {
	n, err := s.admin.DisableMatching(ctx, projectID, f, &expected, s.now().Unix())
	if n == 0 && err != nil || errors.Is(err, contract.ErrCountChanged) {
		return 0, err
	}
	return n, s.recordPartial(ctx, a, "codes.bulk_disable", "project", projectID, projectID, map[string]any{
		"filter": f, "confirmed": expected, "disabled": n}, err)
}

// ManualResult is the outcome of a manual verify or reactivate: the client API's result body,
// and the id of the verification-log event it made (also in the admin audit log).
type ManualResult struct {
	Success    bool   `json:"success"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	ErrorCode  string `json:"error_code,omitempty"`
	VerifiedAt *int64 `json:"verified_at,omitempty"`
	EventID    string `json:"event_id"`
}

// manual verifies or reactivates a code by hand through the client API's hot path, verified_by
// "console:<username>" (a prefix clients may not use), a replay key of its own per operation;
// the reason, required, is recorded.
func (s *Service) manual(ctx context.Context, a Actor, action contract.Action, projectID, value, reason string) (ManualResult, error) {
	if s.hot == nil {
		return ManualResult{}, errNoOperatorActions
	}
	if err := contract.ValidateCode(value); err != nil {
		return ManualResult{}, invalid(err)
	}
	if reason == "" {
		return ManualResult{}, contract.Errorf(contract.KindInvalid, "A reason is required")
	}
	if err := contract.ValidateText("reason", reason, contract.MaxReasonLen); err != nil {
		return ManualResult{}, invalid(err)
	}
	if _, err := s.admin.Project(ctx, projectID, s.now().Unix()); err != nil {
		return ManualResult{}, err
	}
	eventID := contract.NewID()
	op := contract.Operation{Action: action, ProjectID: projectID, KeyID: "console", Code: value,
		By: contract.ConsoleByPrefix + a.Username, IP: a.IP, ReplayKey: "console:" + eventID, EventID: eventID, Now: s.now()}
	run := s.hot.Verify
	if action == contract.ActionReactivate {
		op.Reason = reason
		run = s.hot.Reactivate
	}
	r, err := run(ctx, op)
	if err != nil {
		return ManualResult{}, err
	}
	res := ManualResult{Success: r.Outcome.Success(), Code: value, EventID: eventID, ErrorCode: string(r.Outcome.Error),
		Message: contract.Message(action, r.Outcome.Error)}
	if r.Outcome.VerifiedAt != 0 {
		v := r.Outcome.VerifiedAt / 1000
		res.VerifiedAt = &v
	}
	err = s.record(ctx, a, "code.manual_"+string(action), "code", value, projectID, map[string]any{
		"reason": reason, "success": res.Success, "error_code": res.ErrorCode, "event_id": eventID})
	return res, err
}
