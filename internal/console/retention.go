package console

import (
	"context"
	"time"
)

// AuditRetentionEvery is how often each console process applies the retention.
const AuditRetentionEvery = time.Hour

// auditRetentionActor is who the audit log names for a scheduled retention run.
const auditRetentionActor = "console:retention"

// ApplyAuditRetention removes the audit rows older than keep (store.PruneAdminAudit moves the
// chain's anchor, so the rows kept still verify) and records the run when it removed any. It
// is safe with several console processes: PruneAdminAudit holds the chain's advisory lock, so
// runs take turns, and a run after another finds nothing to remove and records nothing — the
// log gains one row per run that changed it, not one per process and hour.
func (s *Service) ApplyAuditRetention(ctx context.Context, keep time.Duration) (int64, error) {
	before := s.now().Add(-keep)
	n, err := s.store.PruneAdminAudit(ctx, before)
	if err != nil || n == 0 {
		return n, err
	}
	return n, s.record(ctx, SystemActor(auditRetentionActor), "audit.retention", "", "", "",
		map[string]any{"deleted": n, "before": before.Unix(), "keep_days": int64(keep / (24 * time.Hour))})
}

// RunAuditRetention applies the retention at once and then every interval until ctx ends; a
// keep of 0 or less keeps every row and runs nothing. A failed run is logged and retried at
// the next tick.
func (s *Service) RunAuditRetention(ctx context.Context, keep, every time.Duration) error {
	if keep <= 0 {
		return nil
	}
	if keep < 24*time.Hour {
		keep = 24 * time.Hour
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := s.ApplyAuditRetention(ctx, keep)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.WarnContext(ctx, "admin audit retention failed; retried at the next run", "err", err)
		case n > 0:
			s.log.InfoContext(ctx, "admin audit retention removed old rows", "deleted", n, "keep_days", int(keep/(24*time.Hour)))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
