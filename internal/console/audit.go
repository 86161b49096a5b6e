package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
)

// The admin audit log: every change made through the console and every export, appended by
// the Service after the action (store.AppendAdminAudit chains each row to the one before). A
// row's detail names what changed, never a secret, a password or a token.

// record appends one row for actor; an action done but not recorded returns the error (a 500).
func (s *Service) record(ctx context.Context, a Actor, action, targetKind, targetID, projectID string, detail map[string]any) error {
	_, err := s.store.AppendAdminAudit(ctx, contract.AuditEntry{
		At: s.now(), AdminID: a.AdminID, AdminUsername: a.Username, Action: action,
		TargetKind: targetKind, TargetID: targetID, ProjectID: projectID, Detail: detail, ClientIP: a.IP,
	})
	if err != nil {
		s.log.ErrorContext(ctx, "admin audit: action done but not recorded", "action", action, "admin", a.Username,
			"target", targetKind+" "+targetID, "err", err)
		return fmt.Errorf("record %s in the admin audit log: %w", action, err)
	}
	return nil
}

// ChainReport is what VerifyChain found; when not OK, BrokenSeq is the first bad row.
type ChainReport struct {
	OK        bool   `json:"ok"`
	Rows      int64  `json:"rows"`
	AnchorSeq int64  `json:"anchor_seq"`
	HeadSeq   int64  `json:"head_seq"`
	HeadHash  string `json:"head_hash"`
	BrokenSeq int64  `json:"broken_seq,omitempty"`
	Problem   string `json:"problem,omitempty"`
}

// VerifyChain walks the audit log from its anchor, oldest first, and stops at the first row
// whose prev_hash is not the hash before it or whose hash is not SHA-256 over that and its
// canonical bytes. HeadHash, kept elsewhere, later proves no row up to it changed.
func (s *Service) VerifyChain(ctx context.Context) (ChainReport, error) {
	rep := ChainReport{OK: true}
	var expect []byte
	errBroken := errors.New("chain broken")
	anchor, err := s.store.WalkAdminAudit(ctx, func(anchor contract.AuditAnchor, r contract.AuditRecord) error {
		if expect == nil {
			expect = anchor.Hash
		}
		switch {
		case !bytes.Equal(r.PrevHash, expect):
			rep.Problem = "its prev_hash is not the hash of the row before it: a row was removed, inserted or changed before it"
		case !bytes.Equal(r.Hash, r.ComputeHash()):
			rep.Problem = "its content does not match its hash: the row was changed"
		default:
			rep.Rows++
			rep.HeadSeq, expect = r.Seq, r.Hash
			return nil
		}
		rep.OK, rep.BrokenSeq = false, r.Seq
		return errBroken
	})
	if err != nil && !errors.Is(err, errBroken) {
		return ChainReport{}, fmt.Errorf("verify admin audit chain: %w", err)
	}
	rep.AnchorSeq = anchor.Seq
	if expect == nil {
		expect = anchor.Hash
	}
	if rep.OK {
		rep.HeadHash = hex.EncodeToString(expect)
		if rep.HeadSeq == 0 {
			rep.HeadSeq = anchor.Seq
		}
	}
	return rep, nil
}

// PruneAudit removes the audit rows older than keep, moving the chain's anchor.
func (s *Service) PruneAudit(ctx context.Context, a Actor, keep time.Duration) (int64, error) {
	if keep < 24*time.Hour {
		return 0, contract.Errorf(contract.KindInvalid, "Audit retention must keep at least one day")
	}
	return s.prune(ctx, a, "audit.prune", keep, nil)
}

// prune removes the audit rows older than keep and records it with detail; a scheduled run
// (detail not nil) is recorded only when it removed rows.
func (s *Service) prune(ctx context.Context, a Actor, action string, keep time.Duration, detail map[string]any) (int64, error) {
	before := s.now().Add(-keep)
	n, err := s.store.PruneAdminAudit(ctx, before)
	if err != nil || (n == 0 && detail != nil) {
		return n, err
	}
	return n, s.record(ctx, a, action, "", "", "", withSet(map[string]any{"deleted": n, "before": before.Unix()}, detail))
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }

// ExportAudit checks and records an export of the audit rows matching f;
// the function returned then writes them, newest first, as spreadsheet-safe CSV. The export's
// own row is the file's newest, naming who took it.
func (s *Service) ExportAudit(ctx context.Context, a Actor, f contract.AuditFilter) (func(io.Writer) (int, error), error) {
	detail := withSet(map[string]any{"format": "csv"}, map[string]string{"admin": f.AdminUsername, "action": f.Action,
		"target_kind": f.TargetKind, "target_id": f.TargetID, "project_id": f.ProjectID})
	if !f.Since.IsZero() {
		detail["since"] = f.Since.Unix()
	}
	if !f.Until.IsZero() {
		detail["until"] = f.Until.Unix()
	}
	if err := s.record(ctx, a, "audit.export", "", "", f.ProjectID, detail); err != nil {
		return nil, err
	}
	f.Limit, f.BeforeSeq = 1000, 0 // rows read from the store at a time
	columns := []string{"seq", "at", "admin_id", "admin_username", "client_ip", "action", "target_kind", "target_id",
		"project_id", "detail", "prev_hash", "hash"}
	return func(w io.Writer) (int, error) {
		return writeCSV(w, columns, func(row func(...string) error) error {
			for {
				rows, err := s.store.AdminAudit(ctx, f)
				if err != nil {
					return err
				}
				for _, r := range rows {
					if err := row(strconv.FormatInt(r.Seq, 10), r.At.UTC().Format(time.RFC3339Nano), r.AdminID,
						r.AdminUsername, r.ClientIP, r.Action, r.TargetKind, r.TargetID, r.ProjectID, string(r.Detail),
						hexOf(r.PrevHash), hexOf(r.Hash)); err != nil {
						return err
					}
				}
				if len(rows) < f.Limit {
					return nil
				}
				f.BeforeSeq = rows[len(rows)-1].Seq
			}
		})
	}, nil
}

// AuditRetentionEvery is how often each console process applies the retention.
const AuditRetentionEvery = time.Hour

// ApplyAuditRetention removes the audit rows older than keep (moving the chain's anchor) and
// records a run that removed any. Several processes take turns on the chain's lock, so the log
// gains one row per run that changed it, not one per process.
func (s *Service) ApplyAuditRetention(ctx context.Context, keep time.Duration) (int64, error) {
	return s.prune(ctx, SystemActor("console:retention"), "audit.retention", keep, map[string]any{"keep_days": int64(keep / (24 * time.Hour))})
}

// RunAuditRetention applies the retention now and every interval (never when keep <= 0).
func (s *Service) RunAuditRetention(ctx context.Context, keep, every time.Duration) error {
	if keep <= 0 {
		return nil
	}
	keep = max(keep, 24*time.Hour)
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

// auditChange is one field an audited action changed: Before → After ("" when not said).
type auditChange struct {
	Field, Before, After string
}

// auditDetail is an audit entry's detail as a person reads it: changes, then other facts.
type auditDetail struct {
	Changes []auditChange
	Facts   []auditChange // Before unused
}

// impliedChanges are the changes an action itself says, its detail aside.
var impliedChanges = map[string]auditChange{
	"project.enable":         {"status", "disabled", "active"},
	"project.disable":        {"status", "active", "disabled"},
	"account.disable":        {"state", "active", "disabled"},
	"account.enable":         {"state", "disabled", "active"},
	"code.disable":           {"state", "enabled", "disabled"},
	"code.enable":            {"state", "disabled", "enabled"},
	"api_key.revoke":         {"state", "active", "revoked"},
	"project.clear_expiry":   {"expires_at", "set", "never"},
	"batch.revoke":           {"codes", "enabled", "disabled"},
	"codes.bulk_disable":     {"codes", "enabled", "disabled"},
	"account.reset_password": {"password", "set", "one-time password"},
}

// describeAudit turns an entry's canonical JSON detail into changes and facts: a from/to
// pair is one change, a time in Unix seconds (a field named *_at, from, to, before) is written
// as a date.
func describeAudit(r contract.AuditRecord) auditDetail {
	var d auditDetail
	if c, ok := impliedChanges[r.Action]; ok {
		d.Changes = append(d.Changes, c)
	}
	var m map[string]any
	if len(r.Detail) == 0 || json.Unmarshal(r.Detail, &m) != nil {
		if len(r.Detail) > 0 && string(r.Detail) != "null" {
			d.Facts = append(d.Facts, auditChange{Field: "detail", After: string(r.Detail)})
		}
		return d
	}
	if from, ok := m["from"]; ok {
		if to, ok := m["to"]; ok && !strings.Contains(r.Action, "export") {
			field := "value"
			if r.Action == "account.role" {
				field = "role"
			}
			d.Changes = append(d.Changes, auditChange{field, auditValue("", from), auditValue("", to)})
			delete(m, "from")
			delete(m, "to")
		}
	}
	if r.Action == "project.expire" {
		d.Changes = append(d.Changes, auditChange{"expires_at", "", auditValue("expires_at", m["expires_at"])})
		delete(m, "expires_at")
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] == "" {
			continue // an option left empty says nothing
		}
		d.Facts = append(d.Facts, auditChange{Field: strings.ReplaceAll(k, "_", " "), After: auditValue(k, m[k])})
	}
	return d
}

// auditValue writes one detail value: times as UTC dates, plain numbers, null as "none".
func auditValue(key string, v any) string {
	switch t := v.(type) {
	case nil:
		return "none"
	case float64:
		if key == "from" || key == "to" || key == "before" || strings.HasSuffix(key, "_at") {
			return time.Unix(int64(t), 0).UTC().Format("2006-01-02 15:04 UTC")
		}
		if t == float64(int64(t)) {
			return thousands(int64(t))
		}
		return fmt.Sprint(t)
	case bool:
		if t {
			return "yes"
		}
		return "no"
	case string:
		return t
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// auditTargetName is the name a person knows an entry's target by, "" when only an id.
func auditTargetName(r contract.AuditRecord, projects map[string]string) string {
	switch r.TargetKind {
	case "project":
		return projects[r.TargetID]
	case "code":
		return r.TargetID
	}
	var m struct{ Name, Username string } // a field of the wrong type stays ""
	_ = json.Unmarshal(r.Detail, &m)
	switch {
	case r.TargetKind == "batch":
		return m.Name
	case r.TargetKind == "admin" && m.Username != "":
		return m.Username
	case r.TargetKind == "admin" && r.TargetID == r.AdminID:
		return r.AdminUsername
	}
	return ""
}
