package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/acv/acv/api/contract"
)

// The admin audit log: every change made through the console and every export, appended by
// the Service after the action (store.AppendAdminAudit chains each row to the one before). The
// detail of a row names what changed (ids, flags, counts, a reason), never a secret, a
// password or a token; the tests check it.

// record appends one row for actor. An action that succeeded but could not be recorded
// returns the error: the caller answers 500 and the log has the cause, so an unrecorded change
// does not pass silently.
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

// AuditLog reads the admin audit log, newest first (viewer and above).
func (s *Service) AuditLog(ctx context.Context, a Actor, f contract.AuditFilter) ([]contract.AuditRecord, error) {
	if err := a.require(RoleViewer); err != nil {
		return nil, err
	}
	rs, err := s.store.AdminAudit(ctx, f)
	if rs == nil && err == nil {
		rs = []contract.AuditRecord{}
	}
	return rs, err
}

// ChainReport is what VerifyChain found. When OK is false, BrokenSeq is the first row whose
// link (prev_hash) or content (hash) does not match, and Problem says which.
type ChainReport struct {
	OK        bool   `json:"ok"`
	Rows      int64  `json:"rows"`
	AnchorSeq int64  `json:"anchor_seq"`
	HeadSeq   int64  `json:"head_seq"`
	HeadHash  string `json:"head_hash"`
	BrokenSeq int64  `json:"broken_seq,omitempty"`
	Problem   string `json:"problem,omitempty"`
}

// VerifyChain walks the admin audit log from its anchor, oldest first, and checks each row:
// its prev_hash is the hash of the row before (the anchor's, for the oldest row kept), and its
// hash is SHA-256 over that and the row's canonical bytes. It stops at the first row that
// fails. HeadHash is the newest row's hash: an operator who keeps it elsewhere can later tell
// that no row up to it changed, even after someone able to rewrite the whole table did.
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

// PruneAudit removes the audit rows older than keep, moving the chain's anchor so the rows
// kept still verify (store.PruneAdminAudit), and records the run itself (admin only).
func (s *Service) PruneAudit(ctx context.Context, a Actor, keep time.Duration) (int64, error) {
	if err := a.require(RoleAdmin); err != nil {
		return 0, err
	}
	if keep < 24*time.Hour {
		return 0, contract.Errorf(contract.KindInvalid, "Audit retention must keep at least one day")
	}
	before := s.now().Add(-keep)
	n, err := s.store.PruneAdminAudit(ctx, before)
	if err != nil {
		return n, err
	}
	return n, s.record(ctx, a, "audit.prune", "", "", "", map[string]any{"deleted": n, "before": before.Unix()})
}

// dayDuration is n days.
func dayDuration(n int) time.Duration { return time.Duration(n) * 24 * time.Hour }

// hexOf renders a hash for the API.
func hexOf(b []byte) string { return hex.EncodeToString(b) }
